"""FX401 on the forms the peers document: cuda-samples' atomic intrinsics and system-wide
atomics, CCCL's (libcu++) atomic_ref/atomic members and operators, PTX red/atom, NVIDIA's
__nv_atomic builtins. Cases are re-typed from what those projects show, not copied; each one
checks that it is found (100 % recall of what the rule documents) and how its order dependence
is worded."""

from __future__ import annotations

import pytest
from rules_harness import check_text

from foxaudit.rules.determinism.atomic_in_kernel import AtomicInKernel

DEPENDS = "the result depends on thread order"
INDEPENDENT = "order-independent"

# (form, code, expected wording per finding in source order)
CASES = [
    # cuda-samples simpleAtomicIntrinsics: every intrinsic on an int/unsigned array.
    ("intrinsics on integers",
     "__global__ void testKernel(int* g_odata) {\n  const unsigned tid = blockDim.x * blockIdx.x + threadIdx.x;\n"
     "  atomicAdd(&g_odata[0], 10);\n  atomicExch(&g_odata[1], tid);\n  atomicMax(&g_odata[2], tid);\n"
     "  atomicMin(&g_odata[3], tid);\n  atomicInc((unsigned int*)&g_odata[4], 17);\n"
     "  atomicDec((unsigned int*)&g_odata[5], 137);\n  atomicCAS(&g_odata[6], tid - 1, tid);\n"
     "  atomicAnd(&g_odata[8], 2 * tid + 7);\n  atomicOr(&g_odata[9], 1 << tid);\n  atomicXor(&g_odata[10], tid);\n}\n",
     [INDEPENDENT, DEPENDS, INDEPENDENT, INDEPENDENT, INDEPENDENT, INDEPENDENT, DEPENDS, INDEPENDENT, INDEPENDENT,
      INDEPENDENT]),
    # cuda-samples systemWideAtomics: the _system variants, on managed memory.
    ("system-wide variants",
     "__global__ void atomicKernel(int* atom_arr) {\n  unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;\n"
     "  atomicAdd_system(&atom_arr[0], 10);\n  atomicExch_system(&atom_arr[1], tid);\n"
     "  atomicCAS_system(&atom_arr[6], tid - 1, tid);\n}\n",
     [INDEPENDENT, DEPENDS, DEPENDS]),
    ("float accumulation through a parameter",
     "__global__ void dot(const float* a, const float* b, float* result, int n) {\n"
     "  int i = threadIdx.x;\n  float p = a[i] * b[i];\n  atomicAdd(result, p);\n}\n",
     [DEPENDS]),
    ("half and double",
     "__global__ void k(__half* h, double* d) { atomicAdd(h, __float2half(1.f)); atomicAdd(d, 1.0); }\n",
     [DEPENDS, DEPENDS]),
    ("float max picks a signed zero",
     "__global__ void k(float* m, float v) { atomicMax(m, v); }\n", [DEPENDS]),
    # CCCL libcu++ atomic_ref: every fetch_* member and the operators.
    ("atomic_ref members on int",
     "__global__ void k(int* p) {\n  cuda::atomic_ref<int, cuda::thread_scope_device> a(*p);\n"
     "  a.fetch_add(1); a.fetch_sub(1); a.fetch_and(1); a.fetch_or(1); a.fetch_xor(1); a.fetch_min(1); a.fetch_max(1);\n"
     "  int expected = 0; a.compare_exchange_weak(expected, 1); a.compare_exchange_strong(expected, 2); a.exchange(3);\n"
     "  a += 1; a -= 1; a &= 1; a |= 1; a ^= 1; a++; --a;\n}\n",
     [INDEPENDENT] * 7 + [DEPENDS] * 3 + [INDEPENDENT] * 7),
    ("atomic_ref on float",
     "__global__ void k(float* p, float v) {\n  cuda::std::atomic_ref<float> a(*p);\n  a.fetch_add(v);\n  a += v;\n}\n",
     [DEPENDS, DEPENDS]),
    ("cuda::atomic and cuda::std::atomic with scopes",
     "__device__ cuda::atomic<unsigned, cuda::thread_scope_block> tickets;\n"
     "__device__ cuda::std::atomic<float> total;\n"
     "__global__ void k(float v) { unsigned t = tickets.fetch_add(1u); total.fetch_add(v); (void)t; }\n",
     [INDEPENDENT, DEPENDS]),
    ("a temporary atomic_ref",
     "__global__ void k(unsigned long long* c) { cuda::atomic_ref<unsigned long long>(*c).fetch_add(1ull); }\n",
     [INDEPENDENT]),
    # PTX: red (no return) and atom, by type suffix.
    ("PTX red and atom",
     '__device__ void k(float* f, unsigned* u, int* i) {\n'
     '  asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" :: "l"(f), "f"(1.f) : "memory");\n'
     '  asm volatile("red.global.add.u32 [%0], 1;" :: "l"(u));\n'
     '  asm volatile("atom.global.exch.b32 %0, [%1], 0;" : "=r"(*i) : "l"(i));\n'
     '  asm volatile("atom.shared.max.s32 %0, [%1], 3;" : "=r"(*i) : "l"(i));\n}\n',
     [DEPENDS, INDEPENDENT, DEPENDS, INDEPENDENT]),
    # sm_90 state spaces written with `::` (DeepEP's shared-memory locks, cluster reductions).
    ("PTX with a qualified state space",
     '__device__ int k(int* a, float* f, unsigned* u) {\n  int ret;\n'
     '  asm volatile("atom.acquire.cta.shared::cta.cas.b32 %0, [%1], %2, %3;" : "=r"(ret) : "l"(a), "r"(0), "r"(1));\n'
     '  asm volatile("red.shared::cluster.add.f32 [%0], %1;" :: "l"(f), "f"(1.f));\n'
     '  asm volatile("red.release.gpu.shared::cta.add.u32 [%0], 1;" :: "l"(u));\n  return ret;\n}\n',
     [DEPENDS, DEPENDS, INDEPENDENT]),
    # Pointer arithmetic: the pointer's element decides, whatever the offset (a built-in index, a
    # member of an unknown struct); DeepEP's `atomicAdd_system(signals[rank] + threadIdx.x, TAG)`.
    ("pointer arithmetic on a subscripted double pointer",
     "__device__ void barrier(int** signals, int rank, const Slot* slot) {\n"
     "  atomicAdd_system(signals[rank] + threadIdx.x, TAG);\n  atomicSub_system(signals[threadIdx.x] + rank, TAG);\n"
     "  atomicAdd(*signals + slot->offset, SIGNAL);\n  atomicAdd(signals[blockIdx.y] - slot->base, SIGNAL);\n}\n",
     [INDEPENDENT] * 4),
    # A pointer from a call of a function the file declares: its declared return type.
    ("pointer returned by a function of the file",
     "__device__ inline int32_t* rebuild_int_ptr(void* data, long i) { return (int32_t*)data + i; }\n"
     "__device__ float* cell(Grid g, int i);\n"
     "__global__ void expand(void* data, Grid g, Coord lo) {\n  atomicMin(rebuild_int_ptr(data, 0), lo.x);\n"
     "  atomicAdd(cell(g, 1), lo.w);\n}\n",
     [INDEPENDENT, DEPENDS]),
    # cuCollections' hyperloglog: the element type is a class's alias of int; a float alias too.
    ("element type through the file's type aliases",
     "template <cuda::thread_scope Scope>\nclass sketch {\n  using register_type = int;\n  typedef float weight_t;\n"
     "  register_type* regs_;\n  weight_t* sums_;\n public:\n  __device__ void update(int i, register_type v, weight_t w) {\n"
     "    cuda::atomic_ref<register_type, Scope> r(this->regs_[i]);\n    r.fetch_max(v, cuda::memory_order_relaxed);\n"
     "    cuda::atomic_ref<weight_t, Scope> s(this->sums_[i]);\n    s.fetch_add(w, cuda::memory_order_relaxed);\n  }\n};\n",
     [INDEPENDENT, DEPENDS]),
    ("__nv_atomic builtins",
     "__device__ void k(float* f, int* i) {\n  __nv_atomic_fetch_add(f, 1.f, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);\n"
     "  __nv_atomic_fetch_max(i, 2, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);\n"
     "  __nv_atomic_compare_exchange_n(i, &i[1], 3, false, __NV_ATOMIC_SEQ_CST, __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE);\n}\n",
     [DEPENDS, INDEPENDENT, DEPENDS]),
    ("cooperative groups reduce_update_async",
     "__global__ void k(int* c, float* f, int v) {\n  auto t = cg::tiled_partition<32>(cg::this_thread_block());\n"
     "  cuda::atomic_ref<int> ci(*c);\n  cuda::atomic_ref<float> cf(*f);\n"
     "  cg::reduce_update_async(t, ci, v, cg::plus<int>());\n  cg::reduce_update_async(t, cf, 1.f, cg::plus<float>());\n}\n",
     [INDEPENDENT, DEPENDS]),
    ("token pasting and aliases",
     "#define UPDATE(op) atomic##op(p, v)\n#define ATOMIC_ADD atomicAdd\n"
     "__global__ void k(int* c) { ATOMIC_ADD(c, 1); }\n",
     [DEPENDS, INDEPENDENT]),
]


@pytest.mark.parametrize(("form", "code", "wording"), CASES, ids=[case[0] for case in CASES])
def test_every_documented_form_is_found_and_worded(form: str, code: str, wording: list[str]) -> None:
    found = check_text(code, "forms.cu", AtomicInKernel)
    assert [DEPENDS if DEPENDS in d.message else INDEPENDENT for d in found] == wording, "\n".join(
        f"{d.line}:{d.column} {d.message}" for d in found)
    for diagnostic in found:
        assert ("allow-order-independent" in diagnostic.hint) == (INDEPENDENT in diagnostic.message)


@pytest.mark.parametrize(("form", "code", "wording"), CASES, ids=[case[0] for case in CASES])
def test_allow_order_independent_keeps_exactly_the_order_dependent(form: str, code: str, wording: list[str]) -> None:
    found = check_text(code, "forms.cu", AtomicInKernel, {"allow-order-independent": True})
    assert len(found) == wording.count(DEPENDS)
    assert all(DEPENDS in d.message for d in found)


def test_the_message_names_the_reason() -> None:
    (float_add,) = check_text("__global__ void k(float* t) { atomicAdd(t, 1.f); }\n", "k.cu", AtomicInKernel)
    assert "floating-point accumulation" in float_add.message and "in `k`" in float_add.message
    (counter,) = check_text("__global__ void k(int* t) { atomicAdd(t, 1); }\n", "k.cu", AtomicInKernel)
    assert "integer add: the final value is the same in any order" in counter.message
    (unknown,) = check_text("__global__ void k(Acc* a, Val v) { atomicAdd(&a->s, v); }\n", "k.cu", AtomicInKernel)
    assert "element type not resolved" in unknown.message


def test_the_message_names_the_kernel_not_a_loop_macro_inside_it() -> None:
    # mmcv / detectron2: `CUDA_1D_KERNEL_LOOP(i, n) { … }` reads as a nested definition to the grammar.
    code = ("#define CUDA_1D_KERNEL_LOOP(i, n) for (int i = blockIdx.x; i < (n); i += gridDim.x)\n"
            "template <typename T>\n__global__ void roi_align_backward(const int n, const T* g, T* out) {\n"
            "  CUDA_1D_KERNEL_LOOP(index, n) {\n    atomicAdd(out + index / 2, g[index]);\n  }\n}\n")
    (found,) = check_text(code, "k.cu", AtomicInKernel)
    assert "in `roi_align_backward`" in found.message and "CUDA_1D_KERNEL_LOOP" not in found.message


def test_allow_order_independent_must_be_a_boolean() -> None:
    with pytest.raises(ValueError, match=r"allow-order-independent: expected a boolean \(got 'yes' vs true or false\)"):
        AtomicInKernel.options_class(allow_order_independent="yes")
