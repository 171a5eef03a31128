"""FX401: atomic read-modify-write calls in CUDA code."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import tree_sitter

from foxaudit.rules._support.cuda import enclosing_function, execution_spaces, function_name
from foxaudit.rules._support.cuda_types import Kind, declared_names, kind_of_expression, kind_of_type
from foxaudit.rules._support.options import freeze, option_error, string_tuple
from foxaudit.rules._support.paths import matches_any
from foxaudit.rules.base import Example, FileContext, Rule, RuleOptions

CODE = "FX401"
DEFAULT_FUNCTIONS = (
    "atomicAdd",
    "atomicSub",
    "atomicExch",
    "atomicMin",
    "atomicMax",
    "atomicInc",
    "atomicDec",
    "atomicCAS",
    "atomicAnd",
    "atomicOr",
    "atomicXor",
)
# Every function also matches with CUDA's scope suffixes: atomicAdd_block, atomicAdd_system.
SCOPE_SUFFIXES = ("", "_block", "_system")
_ENTRY_KEYS = frozenset({"function", "path", "reason"})


@dataclass(frozen=True)
class AllowEntry:
    """One accepted use: an enclosing-function glob and/or a path glob, and why it is fine."""

    reason: str
    function: str = ""
    path: str = ""

    def allows(self, function: str, path: str) -> bool:
        if self.function and not matches_any(function, (self.function,)):
            return False
        return not self.path or matches_any(path, (self.path,))


def _allow_entry(index: int, entry: object) -> AllowEntry:
    if isinstance(entry, AllowEntry):
        return entry
    where = f"allow[{index}]"
    if not isinstance(entry, Mapping):
        raise option_error(CODE, where, "expected a table", entry, '{function = "...", reason = "..."}',
                           'write allow = [{function = "kernel_name", reason = "why it is deterministic"}]')
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise option_error(CODE, where, f"unknown key {unknown[0]!r}", sorted(entry), "function, path, reason",
                           "use only `function`, `path` and `reason`")
    for key in _ENTRY_KEYS:
        if key in entry and not isinstance(entry[key], str):
            raise option_error(CODE, f"{where}.{key}", "expected a string", entry[key], "a string",
                               f'write {key} = "..."')
    reason = str(entry.get("reason", "")).strip()
    if not reason:
        raise option_error(CODE, where, "an allow entry needs a reason", dict(entry), 'a non-empty "reason"',
                           'add reason = "why this atomic cannot break determinism"')
    function, path = entry.get("function", ""), entry.get("path", "")
    if not function and not path:
        raise option_error(CODE, where, "an allow entry needs `function` or `path`", dict(entry),
                           "a function name or a path glob", 'add function = "kernel_name" or path = "cuda/x.cu"')
    return AllowEntry(reason=reason, function=function, path=path)


@dataclass(frozen=True)
class AtomicInKernelOptions(RuleOptions):
    functions: tuple[str, ...] = field(
        default=DEFAULT_FUNCTIONS,
        metadata={"help": "Atomic functions to report; each also matches with the _block and _system suffixes."},
    )
    allow_order_independent: bool = field(
        default=False,
        metadata={"help": "Accept atomics whose final value does not depend on thread order (integer counters,"
                          " tickets, integer min/max, bitwise and/or/xor); floating-point accumulation and"
                          " exchange/compare-and-swap are still reported."},
    )
    # Declared as TOML gives it (tables of strings); __post_init__ turns each into an AllowEntry.
    allow: tuple[dict[str, str], ...] = field(
        default=(),
        metadata={"help": "Accepted uses: tables {function = glob, path = glob, reason = text}; reason is required."},
    )

    def __post_init__(self) -> None:
        freeze(self, "functions", string_tuple(CODE, "functions", self.functions, allow_empty=False))
        if not isinstance(self.allow_order_independent, bool):
            raise option_error(CODE, "allow-order-independent", "expected a boolean", self.allow_order_independent,
                               "true or false", "write allow-order-independent = true")
        if isinstance(self.allow, (str, Mapping)) or not isinstance(self.allow, (list, tuple)):
            raise option_error(CODE, "allow", "expected a list of tables", self.allow,
                               '[{function = "...", reason = "..."}]', "wrap the entry in [ ... ]")
        freeze(self, "allow", tuple(_allow_entry(index, entry) for index, entry in enumerate(self.allow)))


@functools.lru_cache(maxsize=32)
def _atomic_names(functions: tuple[str, ...]) -> frozenset[str]:
    return frozenset(name + suffix for name in functions for suffix in SCOPE_SUFFIXES)


_CALLEE_WRAPPERS = frozenset({"qualified_identifier", "template_function"})
# Macro bodies are raw text to tree-sitter: skip literals and comments, find `name(` or `name<..>(`.
_MACRO_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/|(?:::\s*)?\b(\w+)\s*(?:<[^<>()]*>\s*)?\(',
                           re.DOTALL)
# `atomic##op(...)` in a macro body builds atomicAdd, atomicMax, ... from the macro's argument.
_PASTED = re.compile(r"\batomic\s*##\s*(\w+)")
_MACRO_NAME = re.compile(r"[A-Za-z_]\w*")
# A call of an atomic in raw text: `atomicAdd(`, `::atomicAdd<float>(`.
_CALLED = re.compile(rb"\b(atomic\w*)\s*(?:<[^<>()]*>\s*)?\(")

# What each atomic does, by the function's name (CUDA's scope suffixes removed first).
_FUNCTION_OPS = {"atomicAdd": "add", "atomicSub": "sub", "atomicExch": "exch", "atomicMin": "min", "atomicMax": "max",
                 "atomicInc": "inc", "atomicDec": "dec", "atomicCAS": "cas", "atomicAnd": "and", "atomicOr": "or",
                 "atomicXor": "xor"}
# cuda::atomic_ref / cuda::std::atomic members that read-modify-write.
_MEMBER_OPS = {"fetch_add": "add", "fetch_sub": "sub", "fetch_min": "min", "fetch_max": "max", "fetch_and": "and",
               "fetch_or": "or", "fetch_xor": "xor", "exchange": "exch", "compare_exchange_weak": "cas",
               "compare_exchange_strong": "cas"}
_COMPOUND_OPS = {"+=": "add", "-=": "sub", "&=": "and", "|=": "or", "^=": "xor", "++": "add", "--": "sub"}
# __nv_atomic_fetch_add, __nv_atomic_add, __nv_atomic_exchange_n, ... (loads, stores and fences are not RMW).
_NV_ATOMIC = re.compile(r"__nv_atomic_(?:fetch_)?(add|sub|min|max|and|or|xor|exchange|compare_exchange)(?:_n)?$")
_NV_OPS = {"exchange": "exch", "compare_exchange": "cas"}
# The atomic class templates: cuda::atomic_ref<T>, cuda::std::atomic<T>, cuda::atomic<T>, std::atomic_ref<T>.
_ATOMIC_TYPE = re.compile(r"(?:\b(?:cuda::(?:std::)?|std::))?\batomic(?:_ref)?\s*<\s*([^,<>]+(?:<[^<>]*>)?)")
# Inline PTX: red.global.add.f32, atom.shared.cas.b32, red.relaxed.gpu.global.add.u64, and the
# state spaces of sm_90 written with `::` (atom.acquire.cta.shared::cta.cas.b32, red.shared::cluster.add.f32).
_PTX = re.compile(r"\b(red|atom)((?:\.\w+(?:::\w+)*)+)")
_PTX_OPS = frozenset({"add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas"})
# cg::reduce_update_async(tile, atomic, value, op): the operator object names the operation.
_REDUCE_UPDATE = frozenset({"reduce_update_async"})
_CG_OPS = re.compile(r"\b(plus|less|greater|bit_and|bit_or|bit_xor)\s*<\s*([^<>]+)>")
_CG_OP_NAMES = {"plus": "add", "less": "min", "greater": "max", "bit_and": "and", "bit_or": "or", "bit_xor": "xor"}
_BITWISE = frozenset({"and", "or", "xor", "inc", "dec"})


def order_dependence(op: str, kind: Kind) -> tuple[bool, str]:
    """(depends on thread order, why) for one atomic operation on one element kind."""
    if op in ("exch", "cas"):
        return True, "which thread's value is kept depends on the order threads arrive"
    if op in _BITWISE:
        return False, f"integer {op}: the final value is the same in any order (the value each thread gets back is not)"
    if kind == "integer":
        return False, f"integer {op}: the final value is the same in any order (the value each thread gets back is not)"
    if kind == "float":
        if op in ("min", "max"):
            return True, f"floating-point {op}: the order threads arrive picks between -0.0 and +0.0 and among NaNs"
        return True, "floating-point accumulation: the rounding of the sum depends on the order threads arrive"
    return True, "element type not resolved in this file, so assumed to be floating point"


class AtomicInKernel(Rule):
    """Flags atomic read-modify-write operations (`atomicAdd`, `atomic_ref::fetch_add`, PTX `red.`) in CUDA sources.

    ## What it does
    Reports, in `.cu`/`.cuh` files, every form of atomic read-modify-write a CUDA programmer
    writes, and says whether its result depends on the order threads arrive:
    - calls of the `functions` — by default `atomicAdd`, `atomicSub`, `atomicExch`,
      `atomicMin`, `atomicMax`, `atomicInc`, `atomicDec`, `atomicCAS`, `atomicAnd`, `atomicOr`,
      `atomicXor` — and their scoped variants (`atomicAdd_block`, `atomicAdd_system`), plainly,
      through a namespace (`::atomicAdd`) or with template arguments (`atomicAdd<float>`);
    - libcu++ atomics: `fetch_add`/`fetch_sub`/`fetch_min`/`fetch_max`/`fetch_and`/`fetch_or`/
      `fetch_xor`/`exchange`/`compare_exchange_*` on a `cuda::atomic_ref<T>`,
      `cuda::std::atomic<T>` or `cuda::atomic<T>` (a variable, parameter or temporary), and
      compound assignment or `++`/`--` on such a variable — not in a plain host function (no
      `__device__`/`__global__`, no `__device__` lambda around it), where a `std::atomic` counts on the CPU;
    - NVIDIA's builtins `__nv_atomic_fetch_add`, `__nv_atomic_exchange`, ... (not loads, stores
      or fences);
    - inline PTX `red.*` and `atom.*` instructions in `asm(...)` statements, state spaces
      written with `::` included (`red.shared::cluster.add.f32`);
    - `cg::reduce_update_async` (a cooperative-groups reduction into an atomic);
    - inside `#define` bodies (raw text to the parser; the macro's name stands in for the
      enclosing function): calls of the functions, token pasting `atomic##op(...)`, and
      object-like aliases (`#define ATOMIC_ADD atomicAdd`, whose calls are reported where the
      alias is called).
    Code the preprocessor drops (`#if 0`, the branch of an `#ifdef` on an undefined macro) is
    not compiled and not reported. Mentions in comments and string literals are not calls.
    Where the grammar could not parse a region, a function name followed by `(` still counts
    as a call; only `path` entries of `allow` apply there. A call inside a function (or macro)
    or file matched by an `allow` entry is accepted; every entry must give a `reason`.

    The message says whether the result depends on thread order: floating-point accumulation,
    floating-point min/max (signed zeros, NaN), exchange and compare-and-swap do; integer
    add/sub/min/max (counters, tickets) and bitwise and/or/xor/inc/dec do not (the final value is
    the same in every run). The element type comes from the atomic's template argument (through
    the file's `using`/`typedef` aliases: `atomic_ref<register_type>` with `using register_type =
    int;`), the
    pointer's or value's declared type in the file (through subscripts and pointer arithmetic:
    `p[i] + threadIdx.x` on an `int**` is an `int*`; an `auto` variable's initialiser; a cast's
    type through the file's aliases), the declared return type of a function the
    file declares, CUDA's built-in indices (`threadIdx.x`), a cast or a literal (`1.0f`); when
    none is known the atomic is assumed to accumulate floating point.

    ## Why is this bad
    Invariant 4, deterministic reductions. Floating-point addition is not associative, and the
    order in which threads win an atomic varies from run to run, so a reduction built on
    `atomicAdd` gives different low bits each time: the same seed on the same device no longer
    gives a bitwise-identical run, and a regression hides in the noise.

    ## Example
    ```cuda
    __global__ void sum_rewards(const float* r, float* total, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) atomicAdd(total, r[i]);
    }
    ```

    ## Use instead
    A shared-memory tree reduction per block writing one partial per block, summed in a fixed
    order by a second pass (or per-sample outputs reduced afterwards):
    ```cuda
    __global__ void sum_rewards(const float* r, float* partials, int n) {
        __shared__ float tile[256];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        tile[threadIdx.x] = i < n ? r[i] : 0.0f;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) partials[blockIdx.x] = tile[0];
    }
    ```

    ## Options
    - `functions`: the atomic function names (scoped variants included automatically).
    - `allow-order-independent`: accept the atomics whose final value does not depend on thread
      order (integer counters and tickets, integer min/max, bitwise operations); default false.
    - `allow`: accepted uses, e.g.
      `allow = [{function = "claim_slot", reason = "integer ticket counter, order-independent"}]`;
      `function` and `path` are globs (the function is the enclosing function's name), and an
      entry without a `reason` is a configuration error.
    """

    code = CODE
    name = "atomic-in-kernel"
    summary = "Atomic read-modify-write (atomicAdd, atomic_ref::fetch_add, PTX red.) makes a reduction nondeterministic"
    invariant = 4
    languages = frozenset({"cuda"})
    cuda_nodes = ("call_expression", "preproc_arg", "ERROR", "declaration", "parameter_declaration",
                  "assignment_expression", "update_expression", "gnu_asm_expression")
    options_class = AtomicInKernelOptions

    VALID: ClassVar[list[Example]] = [
        Example("__global__ void scale(float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "  if (i < n) x[i] *= 2.0f;\n}\n", path="scale.cu"),
        Example("// atomicAdd would be nondeterministic here\n__device__ float f(float a) { return a; }\n",
                path="f.cuh"),
        Example('static const char* kBanned = "atomicAdd";\n', path="names.cu"),
        # A host function's std::atomic (a lock counter beside a mutex) runs on the CPU.
        Example("#include <atomic>\nstatic std::atomic<int> lock_counter;\n\nvoid graph_compute(bool capture) {\n"
                "  if (capture) lock_counter.fetch_add(1, std::memory_order_relaxed);\n  lock_counter += 1;\n}\n",
                path="backend.cu"),
        # ... and in a plain lambda a host thread pool runs (instant-ngp's octree builder).
        Example("#include <atomic>\ntemplate <typename F> void parallel_for(int n, F f) { for (int i = 0; i < n; ++i) f(i); }\n\n"
                "void number_nodes(int* ids, int n) {\n  std::atomic<int> counter{0};\n"
                "  parallel_for(n, [&](int i) { ids[i] = counter++; });\n}\n", path="octree.cu"),
        Example("__device__ float myatomicAdd(float* p, float v) { return *p + v; }\n"
                "__global__ void k(float* p) { myatomicAdd(p, 1.0f); }\n", path="k.cu"),
        Example("__global__ void claim(int* next, int* out) { out[threadIdx.x] = atomicAdd(next, 1); }\n",
                path="claim.cu",
                options={"allow": [{"function": "claim", "reason": "integer ticket counter, order-independent"}]}),
        Example("__global__ void k(int* c) { atomicAdd(c, 1); }\n", path="third_party/cub/k.cu",
                options={"allow": [{"path": "third_party/**", "reason": "vendored code, not our kernels"}]}),
        Example("__global__ void k(float* x) { atomicMax(x, 1.0f); }\n", path="k.cu",
                options={"functions": ["atomicAdd"]}),
        Example("__global__ void k(float* x) { atomicAdd(x, 1.0f); }\n", path="k.py"),
        Example("enum\n{\n  return atomicAdd(d_counters + FILL, num_items);\n", path="third_party/cub/grid_queue.cuh",
                options={"allow": [{"path": "third_party/**", "reason": "vendored CUB, not our kernels"}]}),
        Example("#define ATOMIC_NAME atomicAdd_name\n#define CLAIM(c) atomicAdd(c, 1)\n", path="m.cuh",
                options={"allow": [{"function": "CLAIM", "reason": "ticket counter macro"}]}),
        # Dead code: nvcc never compiles it.
        Example("__global__ void k(float* t) {\n#if 0\n  atomicAdd(t, 1.0f);\n#endif\n}\n", path="dead.cu"),
        Example("__global__ void k(float* t) {\n#ifdef USE_ATOMICS\n  atomicAdd(t, 1.0f);\n#endif\n}\n", path="opt.cu"),
        # Order-independent kinds, accepted with allow-order-independent.
        Example("__global__ void count(const float* x, unsigned* hits, int n) {\n"
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n && x[i] > 0.f) atomicAdd(hits, 1u);\n"
                "  atomicMax((int*)hits + 1, i); atomicOr(hits + 2, 4u);\n}\n",
                path="count.cu", options={"allow-order-independent": True}),
        Example("__global__ void k(int* c) {\n  cuda::atomic_ref<int, cuda::thread_scope_device> ref(*c);\n"
                "  ref.fetch_add(1); ref += 2; ++ref;\n}\n", path="ref.cu", options={"allow-order-independent": True}),
        Example('__device__ void bump(unsigned* p) { asm volatile("red.global.add.u32 [%0], 1;" :: "l"(p)); }\n',
                path="ptx.cu", options={"allow-order-independent": True}),
        # The element type through an `auto` pointer a cast initialised, or a function's own alias (xgboost).
        Example("__device__ void add(long long* d, long long g) {\n  auto p = reinterpret_cast<uint64_t*>(d);\n"
                "  atomicAdd(p, *reinterpret_cast<uint64_t const*>(&g));\n}\n"
                "__device__ long long mx(long long* a, long long v) {\n  using Type = unsigned long long int;\n"
                "  return atomicMax(reinterpret_cast<Type*>(a), static_cast<Type>(v));\n}\n",
                path="hist.cu", options={"allow-order-independent": True}),
        # Not atomics: a plain vector's members, a load, PTX that only loads, a compare-and-swap
        # that stores what it compares with (an atomic load: memory never changes).
        Example("__global__ void wait(unsigned* flags, int i) {\n  while (atomicCAS(flags + i, 0u, 0u) != 0u) {}\n"
                "  int seen = atomicCAS((int*)flags, i, i);\n}\n", path="wait.cu"),
        Example("void f(std::vector<float>& v, float x) { v.exchange(x); }\n", path="host.cu"),
        Example("__device__ int f(int* p) { return __nv_atomic_load_n(p, __NV_ATOMIC_ACQUIRE); }\n", path="ld.cu"),
        Example('__device__ float ld(const float* p) { float v; asm("ld.global.f32 %0, [%1];" : "=f"(v) : "l"(p));'
                " return v; }\n", path="ld.cu"),
    ]
    INVALID: ClassVar[list[Example]] = [
        Example("__global__ void sum(const float* r, float* total, int n) {\n"
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) atomicAdd(total, r[i]);\n}\n",
                path="sum.cu", expect=1),
        Example("__device__ void bump(unsigned* c) { atomicInc(c, 100u); atomicDec(c, 100u); }\n",
                path="bump.cuh", expect=2),
        Example("__global__ void k(int* a) { atomicSub(a, 1); atomicExch(a, 2); atomicMin(a, 0); atomicMax(a, 9);"
                " atomicCAS(a, 0, 1); atomicAnd(a, 1); atomicOr(a, 2); atomicXor(a, 3); }\n",
                path="k.cu", expect=8),
        Example("__global__ void k(float* a) { atomicAdd_block(a, 1.0f); atomicAdd_system(a, 1.0f); }\n",
                path="k.cu", expect=2),
        Example("__global__ void k(float* a) { ::atomicAdd(a, 1.0f); }\n", path="k.cu", expect=1),
        Example("template <typename T>\n__global__ void k(T* a) { atomicAdd<T>(a, T(1)); }\n", path="k.cuh",
                expect=1),
        Example('extern "C" {\n__global__ void k(float* a) {\n  atomicAdd(a, 1.0f);\n}\n}\n', path="k.cu",
                expect=1),
        Example("#define ACCUM(p, v) atomicAdd(p, v) /* atomicSub(p, v) in a comment */\n"
                "__global__ void k(float* a) { ACCUM(a, 1.0f); atomicAdd(a, 2.0f); }\n", path="k.cu", expect=2),
        Example('#define BUMP(c) \\\n  do { ::atomicInc_system((c), 8u); puts("atomicAdd(x)"); } while (0)\n',
                path="m.cuh", expect=1),
        Example("struct __align__(16) Acc { float s; };\n__global__ void k(Acc* a) { atomicAdd(&a->s, 1.0f); }\n",
                path="k.cu", expect=1),
        Example("__global__ void k(float* a) {\n  auto add = [=] __device__ (float v) { atomicAdd(a, v); };\n"
                "  add(1.0f);\n}\nvoid launch(float* a) { k<<<1, 32>>>(a); }\n", path="k.cu", expect=1),
        # A region the grammar gives up on (CUB's grid_queue.cuh, reduced): the call is loose tokens.
        Example("enum\n{\n  return atomicAdd(d_counters + FILL, num_items);\n", path="grid_queue.cuh", expect=1),
        Example("__global__ void claim(int* c) { atomicAdd(c, 1); }\n__global__ void other(int* c) { atomicAdd(c, 1); }\n",
                path="k.cu", options={"allow": [{"function": "claim", "reason": "ticket counter"}]}, expect=1),
        # libcu++: atomic_ref / atomic members, compound assignment, increments, temporaries.
        Example("__global__ void k(float* p, float v) {\n  cuda::atomic_ref<float, cuda::thread_scope_device> ref(*p);\n"
                "  ref.fetch_add(v);\n  ref += v;\n  ref.fetch_sub(v, cuda::memory_order_relaxed);\n}\n",
                path="ref.cu", expect=3),
        Example("__global__ void k(cuda::std::atomic<int>* counter, cuda::atomic<float>& sum, float v) {\n"
                "  counter->fetch_add(1); (*counter)++; sum.fetch_add(v); sum.exchange(0.f);"
                " sum.compare_exchange_strong(v, 1.f);\n}\n", path="std.cu", expect=5),
        Example("__host__ __device__ void bump(cuda::atomic<float>& sum) { sum.fetch_add(1.0f); }\n", path="both.cuh",
                expect=1),
        Example("void launch(float* d) {\n  run([=] __device__ (cuda::atomic_ref<float> r) { r.fetch_add(1.0f); });\n}\n",
                path="lambda.cu", expect=1),
        Example("__global__ void k(double* d, int* c) {\n  cuda::atomic_ref<double>(*d).fetch_add(1.0);\n"
                "  cuda::std::atomic_ref<int>{*c}.fetch_max(3);\n}\n", path="tmp.cu", expect=2),
        # Inline PTX reductions and atomics.
        Example('__device__ void acc(float* p, float v) { asm volatile("red.global.add.f32 [%0], %1;" :: "l"(p), "f"(v)); }\n'
                '__device__ int cas(int* p) { int old; asm volatile("atom.global.cas.b32 %0, [%1], 0, 1;" : "=r"(old) : "l"(p));'
                " return old; }\n", path="ptx.cu", expect=2),
        Example('__device__ void acc(float* p, float v) {\n'
                '  asm volatile("red.shared::cluster.add.f32 [%0], %1;" :: "l"(p), "f"(v) : "memory");\n}\n',
                path="cluster.cu", expect=1),
        # A bfloat16 reduction is floating point: its sum depends on the order, whatever is allowed.
        Example('__device__ void acc(__nv_bfloat16* p, unsigned short v) {\n'
                '  asm volatile("red.global.add.noftz.bf16 [%0], %1;" :: "l"(p), "h"(v));\n}\n',
                path="bf16.cu", options={"allow-order-independent": True}, expect=1),
        # NVIDIA's builtins.
        Example("__device__ void f(float* p, int* c) {\n  __nv_atomic_fetch_add(p, 1.0f, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);\n"
                "  __nv_atomic_add(c, 1, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE);\n"
                "  __nv_atomic_exchange_n(c, 0, __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_SYSTEM);\n}\n",
                path="nv.cu", expect=3),
        # Macros: token pasting and object-like aliases.
        Example("#define DEFINE_UPDATE(op) __device__ void update_##op(float* p, float v) { atomic##op(p, v); }\n"
                "DEFINE_UPDATE(Add)\n", path="paste.cuh", expect=1),
        Example("#define ATOMIC_ADD atomicAdd\n#define ACC ATOMIC_ADD\n"
                "__global__ void k(float* p) { ATOMIC_ADD(p, 1.0f); ACC(p, 2.0f); }\n", path="alias.cu", expect=2),
        # Cooperative groups: a tile's reduction applied to an atomic.
        Example("__global__ void k(float* total, float v) {\n  auto tile = cg::tiled_partition<32>(cg::this_thread_block());\n"
                "  cuda::atomic_ref<float, cuda::thread_scope_device> ref(*total);\n"
                "  cg::reduce_update_async(tile, ref, v, cg::plus<float>());\n}\n", path="cg.cu", expect=1),
        # An integer times a floating-point value is floating point (the usual arithmetic
        # conversions: Deformable-DETR's `atomicAdd(grad, width * w * g)`), reported with the
        # order-independent kinds allowed.
        Example("template <typename T>\n__device__ void col2im(const int width, const T w, const T g, T* grad) {\n"
                "  atomicAdd(grad, width * w * g);\n}\n", path="col2im.cu", options={"allow-order-independent": True},
                expect=1),
        # The order-dependent kinds stay reported when order-independent ones are allowed.
        Example("__global__ void k(float* t, int* c, float v) {\n  atomicAdd(t, v);\n  atomicAdd(c, 1);\n"
                "  atomicExch(c, 0);\n  atomicCAS(c, 0, 1);\n}\n",
                path="mixed.cu", options={"allow-order-independent": True}, expect=3),
        Example("#if 1\n__global__ void k(float* t) { atomicAdd(t, 1.0f); }\n#endif\n", path="live.cu", expect=1),
        # Inside a dispatch macro's argument list, which the parse repair hides so the rest parses.
        Example("__global__ void k(float* t, int dtype) {\n  TYPE_SWITCH(\n      dtype, T,\n      if constexpr (sizeof(T) > 2) {\n"
                "        atomicAdd(t, 1.0f);\n      });\n}\n", path="hidden.cu", expect=1),
    ]

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        kind = node.type
        if kind == "preproc_arg":
            self._visit_macro(node, ctx)
        elif kind == "ERROR":
            self._visit_unparsed(node, ctx)
        elif kind in ("declaration", "parameter_declaration"):
            self._record_atomic_variables(node, ctx)
        elif kind == "call_expression":
            self._visit_call(node, ctx)
        elif kind in ("assignment_expression", "update_expression"):
            self._visit_compound(node, ctx)
        elif kind == "gnu_asm_expression":
            self._visit_asm(node, ctx)

    def finish(self, ctx: FileContext) -> None:
        """Atomics in code the parse repairs hid (a dispatch macro's argument list, blanked so the
        rest parses: `TYPE_SWITCH(dtype, T, { … atomicAdd(p, v); … })`): found in the file's own
        text where the prepared text is blank, outside the branches the build does not compile."""
        cuda = ctx.source.cuda
        if not cuda.hidden_macros:
            return
        options: AtomicInKernelOptions = ctx.options(CODE)
        if any(entry.allows("", ctx.path) for entry in options.allow if not entry.function):
            return
        names = _atomic_names(options.functions)
        original, prepared = ctx.source.data, cuda.data
        for match in _CALLED.finditer(original):
            name = match.group(1).decode()
            start, end = match.span(1)
            if name not in names or prepared[start:end].strip():
                continue
            line, column = ctx.source.position(start)
            if cuda.is_inactive(line):
                continue
            self._report(ctx, (line, column, line, column + len(name)),
                         f"`{name}` (in code hidden as a macro's arguments so the rest could be parsed)",
                         *order_dependence(_function_op(name), "unknown"))

    # -- calls ------------------------------------------------------------------------------

    def _visit_call(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        callee = node.child_by_field_name("function")
        if callee is not None and callee.type == "field_expression":
            self._visit_member_call(node, callee, ctx)
            return
        while callee is not None and callee.type in _CALLEE_WRAPPERS:
            callee = callee.child_by_field_name("name")
        if callee is None or callee.type != "identifier":
            return
        options: AtomicInKernelOptions = ctx.options(CODE)
        name = callee.text.decode()
        arguments = _arguments(node)
        scope = enclosing_function(node)
        if name in _atomic_names(options.functions):
            if _function_op(name) == "cas" and _is_atomic_load(arguments):
                return
            self._report_op(ctx, node, callee, f"`{name}`", _function_op(name), _pointee_kind(arguments, scope, ctx))
            return
        alias = _state(ctx)["aliases"].get(name)
        if alias is not None and alias in _atomic_names(options.functions):
            self._report_op(ctx, node, callee, f"`{name}` (alias of `{alias}`)", _function_op(alias),
                            _pointee_kind(arguments, scope, ctx))
            return
        nv = _NV_ATOMIC.match(name)
        if nv is not None:
            op = _NV_OPS.get(nv.group(1), nv.group(1))
            self._report_op(ctx, node, callee, f"`{name}`", op, _pointee_kind(arguments, scope, ctx))
            return
        if name in _REDUCE_UPDATE:
            operator = _CG_OPS.search(ctx.source.node_text(node))
            op, kind = ("add", "unknown") if operator is None else (_CG_OP_NAMES[operator.group(1)],
                                                                    kind_of_type(operator.group(2)))
            self._report_op(ctx, node, callee, f"`{name}`", op, kind)

    def _visit_member_call(self, node: tree_sitter.Node, callee: tree_sitter.Node, ctx: FileContext) -> None:
        field_node = callee.child_by_field_name("field")
        receiver = callee.child_by_field_name("argument")
        if field_node is None or receiver is None:
            return
        op = _MEMBER_OPS.get(field_node.text.decode())
        if op is None:
            return
        element = _atomic_element(receiver, ctx)
        if element is None or _in_host_code(node, ctx.source.data):
            return
        self._report_op(ctx, node, field_node, f"`{field_node.text.decode()}` on an atomic", op, kind_of_type(_resolved_type(element, ctx)))

    def _visit_compound(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        operator = node.child_by_field_name("operator")
        op = _COMPOUND_OPS.get(operator.text.decode()) if operator is not None else None
        target = node.child_by_field_name("left") if node.type == "assignment_expression" else node.child_by_field_name("argument")
        if op is None or target is None:
            return
        element = _atomic_element(target, ctx)
        if element is None or _in_host_code(node, ctx.source.data):
            return
        self._report_op(ctx, node, node, f"`{operator.text.decode()}` on an atomic", op, kind_of_type(_resolved_type(element, ctx)))

    def _visit_asm(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        for string in (child for child in node.named_children if child.type in ("string_literal", "concatenated_string")):
            for match in _PTX.finditer(ctx.source.node_text(string)):
                parts = match.group(2).strip(".").split(".")
                op = next((part for part in parts if part in _PTX_OPS), None)
                if op is None:
                    continue  # e.g. atom.global.v4.f32 without an operation we know: not RMW
                suffix = parts[-1]
                kind: Kind = "float" if suffix.startswith(("f", "bf")) else "integer" if suffix[:1] in "usb" else "unknown"
                if suffix.startswith("b") and not suffix.startswith("bf") and op == "add":
                    kind = "integer"  # `.b32`: bits; `.bf16`/`.bf16x2` stay floating point
                self._report_op(ctx, node, string, f"inline PTX `{match.group(0)}`", op, kind)

    def _record_atomic_variables(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        type_node = node.child_by_field_name("type")
        if type_node is None:
            return
        match = _ATOMIC_TYPE.search(type_node.text.decode())
        if match is None:
            return
        for name in declared_names(node):
            _state(ctx)["atomics"][name] = match.group(1)

    # -- macros and unparsed regions -------------------------------------------------------

    def _visit_unparsed(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        """Inside an ERROR node the grammar gave up and a call is loose tokens (`atomicAdd`, `(`,
        ...): report a name followed by `(` (or by `<...>(`)."""
        options: AtomicInKernelOptions = ctx.options(CODE)
        names = _atomic_names(options.functions)
        children = node.children
        for index, child in enumerate(children):
            if child.type != "identifier" or index + 1 >= len(children):
                continue
            following = children[index + 1]
            if following.type not in ("(", "argument_list", "template_argument_list"):
                continue
            name = child.text.decode()
            if name not in names:
                continue
            # The enclosing definition around an ERROR is a guess of the parser's recovery (often
            # a function far above), so it is neither named nor matched against `function` globs.
            if any(entry.allows("", ctx.path) for entry in options.allow if not entry.function):
                continue
            self._report(ctx, child, f"`{name}` (in code the CUDA grammar could not parse)",
                         *order_dependence(_function_op(name), "unknown"))

    def _visit_macro(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        text = ctx.source.node_text(node)
        macro = node.parent.child_by_field_name("name") if node.parent is not None else None
        macro_name = macro.text.decode() if macro is not None else ""
        if node.parent is not None and node.parent.type == "preproc_def" and _MACRO_NAME.fullmatch(text.strip()):
            # `#define ATOMIC_ADD atomicAdd` (or an alias of an alias): calls of the alias are the
            # atomics, reported where they are called.
            target = text.strip()
            aliases = _state(ctx)["aliases"]
            aliases[macro_name] = aliases.get(target, target)
            return
        if "atomic" not in text:
            return
        options: AtomicInKernelOptions = ctx.options(CODE)
        names = _atomic_names(options.functions)
        if any(entry.allows(macro_name, ctx.path) for entry in options.allow):
            return
        if options.allow_order_independent and not _PASTED.search(text) and all(
                not order_dependence(_function_op(match.group(1)), "unknown")[0]
                for match in _MACRO_TOKENS.finditer(text) if match.group(1) in names):
            return
        found = [(match.start(1), match.group(1), _function_op(match.group(1)))
                 for match in _MACRO_TOKENS.finditer(text) if match.group(1) is not None and match.group(1) in names]
        found += [(match.start(), match.group(0).replace(" ", ""), "add") for match in _PASTED.finditer(text)]
        for offset, name, op in sorted(found):
            start_byte = node.start_byte + len(text[:offset].encode("utf-8"))
            line, column = ctx.source.position(start_byte)
            self._report(ctx, (line, column, line, column + len(name)), f"`{name}` in macro `{macro_name}`",
                         *order_dependence(op, "unknown"))

    # -- reporting --------------------------------------------------------------------------

    def _report_op(self, ctx: FileContext, node: tree_sitter.Node, where: tree_sitter.Node, what: str, op: str,
                   kind: Kind) -> None:
        options: AtomicInKernelOptions = ctx.options(CODE)
        depends, why = order_dependence(op, kind)
        if not depends and options.allow_order_independent:
            return
        encloser = enclosing_function(node)
        encloser_name = function_name(encloser) if encloser is not None else None
        function = encloser_name.text.decode() if encloser_name is not None else ""
        if any(entry.allows(function, ctx.path) for entry in options.allow):
            return
        self._report(ctx, where, what + (f" in `{function}`" if function else ""), depends, why)

    @staticmethod
    def _report(ctx: FileContext, where: tree_sitter.Node | tuple[int, int, int, int], what: str, depends: bool,
                why: str) -> None:
        if depends:
            message = (f"{what}: the result depends on thread order ({why}), so runs are not bitwise reproducible"
                       " — invariant 4: deterministic reductions only")
            hint = ("reduce with a shared-memory tree or per-sample partials summed in a second pass; "
                    "or add an `allow` entry with a reason")
        else:
            message = (f"{what}: order-independent ({why}) — invariant 4 allows it only where configured")
            hint = "set `allow-order-independent = true` to accept order-independent atomics, or add an `allow` entry"
        ctx.report(CODE, where, message, hint=hint)


def _state(ctx: FileContext) -> dict[str, dict[str, str]]:
    return ctx.state.setdefault(CODE, {"atomics": {}, "aliases": {}})


# A type alias the file declares: `using register_type = int;`, `typedef unsigned long long u64;`.
_USING = re.compile(r"\busing\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);")
_TYPEDEF = re.compile(r"\btypedef\s+([^;{}()]+?)\s+([A-Za-z_]\w*)\s*;")


def _resolved_type(element: str, ctx: FileContext) -> str:
    """An atomic's element type with the file's own aliases resolved (cuCollections'
    `cuda::atomic_ref<register_type>` where the class says `using register_type = int;`), up to
    a few steps; the text itself when it names no alias."""
    state = ctx.state.setdefault(CODE + ":types", {})
    if not state:
        text = ctx.source.text
        state.update({match.group(1): match.group(2).strip() for match in _USING.finditer(text)})
        state.update({match.group(2): match.group(1).strip() for match in _TYPEDEF.finditer(text)})
        state.setdefault("", "")  # (read once: an empty map is cached too)
    name = element.strip()
    for _ in range(4):
        if name not in state or not name:
            break
        name = state[name]
    return name


def _function_op(name: str) -> str:
    for suffix in ("_block", "_system"):
        name = name.removesuffix(suffix)
    return _FUNCTION_OPS.get(name, "add")


def _arguments(call: tree_sitter.Node) -> list[tree_sitter.Node]:
    arguments = call.child_by_field_name("arguments")
    return [child for child in arguments.named_children if child.type != "comment"] if arguments is not None else []


# Operands whose evaluation has no effect: `atomicCAS(p, 0, 0)` and `atomicCAS(p, v, v)` compare
# with and store the same value, so memory never changes — the idiom is an atomic load.
_PURE_OPERAND = frozenset({"number_literal", "identifier", "char_literal", "true", "false", "null", "nullptr"})


def _is_atomic_load(arguments: list[tree_sitter.Node]) -> bool:
    """A compare-and-swap whose compared and stored values are the same literal or name: a load."""
    if len(arguments) != 3:
        return False
    compare, value = arguments[1], arguments[2]
    return compare.type in _PURE_OPERAND and compare.type == value.type and compare.text == value.text


def _in_host_code(node: tree_sitter.Node, data: bytes) -> bool:
    """A `std::atomic` / `cuda::atomic` operation in a plain host function (no `__device__` or
    `__global__`, no `__device__` lambda around it): ggml's lock counter under a `std::lock_guard`,
    instant-ngp's node counter in a thread pool's lambda, run on the CPU, where no kernel's
    reduction order is at stake."""
    parent = node.parent
    while parent is not None and parent.type != "function_definition":
        if parent.type == "lambda_expression" and _device_lambda(parent, data):
            return False
        parent = parent.parent
    function = enclosing_function(node)
    return function is not None and not execution_spaces(function) & {"__device__", "__global__"}


def _device_lambda(lambda_node: tree_sitter.Node, data: bytes) -> bool:
    """The lambda is written `[…] __device__ (…) {…}` (or `__host__ __device__`): the qualifier is
    normalised away before parsing (foxaudit/sources/cuda_forms.py), so it is read from the file's
    own bytes between the captures and the body, at the same offsets."""
    captures = lambda_node.child_by_field_name("captures")
    body = lambda_node.child_by_field_name("body")
    if captures is None or body is None:
        return True  # a shape not read: it may run on the GPU
    return b"__device__" in data[captures.end_byte : body.start_byte]


def _pointee_kind(arguments: list[tree_sitter.Node], scope: tree_sitter.Node | None, ctx: FileContext) -> Kind:
    """float / integer from the pointer argument's declared type, else from the value argument;
    else from a type alias of the file a cast in either names (xgboost's `using Type = unsigned
    long long int;` then `atomicMax(reinterpret_cast<Type*>(address), static_cast<Type>(val))`)."""
    if not arguments:
        return "unknown"
    kind = kind_of_expression(arguments[0], scope)
    if kind == "unknown" and len(arguments) > 1:
        kind = kind_of_expression(arguments[1], scope)
    for argument in arguments[:2] if kind == "unknown" else ():
        for cast in _CAST_TYPE.finditer(ctx.source.node_text(argument)):
            kind = kind_of_type(_resolved_type(cast.group(1).rstrip("*& \t").removeprefix("const "), ctx))
            if kind != "unknown":
                return kind
    return kind


# The type a C++ cast names: `reinterpret_cast<Type*>(p)`, `static_cast<const T>(v)`.
_CAST_TYPE = re.compile(r"\b(?:reinterpret|static|const)_cast\s*<\s*([^<>]+?)\s*>")


def _atomic_element(expression: tree_sitter.Node, ctx: FileContext) -> str | None:
    """The element type when ``expression`` is an atomic object (a declared atomic variable,
    ``*p`` or ``p->`` of one, or a temporary ``cuda::atomic_ref<T>(x)``); None otherwise."""
    node: tree_sitter.Node | None = expression
    while node is not None and node.type in ("parenthesized_expression", "pointer_expression"):
        node = node.child_by_field_name("argument") or (node.named_children[0] if node.named_children else None)
    if node is None:
        return None
    if node.type == "identifier":
        return _state(ctx)["atomics"].get(node.text.decode())
    if node.type in ("call_expression", "compound_literal_expression", "initializer_list"):
        match = _ATOMIC_TYPE.search(ctx.source.node_text(node))
        head = ctx.source.node_text(node).split("(", 1)[0].split("{", 1)[0]
        if match is not None and _ATOMIC_TYPE.search(head):
            return match.group(1)
    return None
