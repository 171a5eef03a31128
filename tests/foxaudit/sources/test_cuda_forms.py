"""Normalised CUDA forms: each nvcc-accepted construct parses, with its columns kept."""

from __future__ import annotations

import pytest
import tree_sitter
import tree_sitter_cuda

from foxaudit.sources.base import SourceFile
from foxaudit.sources.cuda_forms import normalise, prepare

FORMS = {
    "align": "struct __align__(16) Acc { float s; };\n",
    "align in a declaration": "__shared__ int __align__(8) s_data[1024];\n",
    "device lambda": "void f(float* a) {\n  auto add = [=] __device__ (float v) { a[0] = v; };\n}\n",
    "host device lambda": "void f(int* a) { g(x, [=] __host__ __device__ (int i) { a[i] = 0; }); }\n",
    "new of pointers": "void f(int n) { float** p = new float*[n]; const float** q = new const float *[n]; }\n",
    "asm operands": '__device__ void f(unsigned r, void* a) { asm volatile("st [%1], %0;" ::"r"(r) "l"(a) : "memory"); }\n',
    "typeid": "template <class R> bool f() { return typeid(R) == typeid(double); }\n",
    "typename temporary": "template <class X> void f() { auto v = typename X::type{}; g(typename X::type()); }\n",
    "typename temporary as a statement": "template <class K> void f(float v) { v = 1; typename K::Reduce(s).Sum(v); }\n",
    "calling convention macro": "static void CUDART_CB myHostNodeCallback(void *data) {\n  int x = 1;\n}\n",
    "explicit instantiation": "template class PiEstimator<float>;\nextern template class A<int>;\n",
    "cluster dimensions": "__global__ void __cluster_dims__(C::CLUSTER_SIZE, 1, 1) k(float* x) { x[0] = 0; }\n",
    "pragma as an unbraced body": "__global__ void k(float* a, int n) {\n#pragma unroll\n  for (int i = 0; i < 4; i++)\n"
                                  "#pragma unroll  // inner\n    for (int j = 0; j < 4; j++) a[i] += j;\n"
                                  "  if (n) {\n    a[0] = 1;\n  } else\n#pragma unroll\n    for (int k = 0; k < 4; k++) a[k] = 0;\n}\n",
    "anonymous enum with a base": "typedef enum : int { ADAM_MODE_0 = 0, ADAM_MODE_1 = 1 } adamMode_t;\n",
    "GNU attribute in a type": "using v4sf = float __attribute__((vector_size(16)));\n"
                               "typedef __attribute__((__vector_size__(4 * sizeof(float)))) float floatx4_t;\n",
    "pointer default of a type parameter": "struct S {\n  template <typename ptr_t = void*, class U = float **>\n"
                                           "  __device__ ptr_t get() const { return nullptr; }\n};\n",
    "restrict reference": "__device__ void f(float &__restrict__ x, int& __restrict y) { x = y; }\n",
    "braces as a default argument": "__device__ int f(int a, int s = {}, int t = { }, int u = {1}) { return a + s + t + u; }\n",
    "conversion operator called by name": "struct H { __device__ operator float() const { return 1.0f; } };\n"
                                          "__device__ float f(const H h, const H* p) { return h.operator float()"
                                          " + p->operator  float(); }\n",
    "operator called by name in an expression": "struct R { int* p; __host__ __device__ int& operator*() const { return *p; }\n"
                                                "  __host__ __device__ int* operator->() const { return &(operator*()); } };\n",
    "unnamed pointer parameter of a template": "template <typename T, typename std::enable_if_t<std::is_integral<T>::value>* = nullptr>\n"
                                               "__device__ T f(T a);\n"
                                               "template <typename T, typename Foo<T>::type * = 0, int* = NULL> T g();\n",
    # instant-ngp: a string literal glued to a string macro (a `-D` definition, `__FILE__`, `PRId64`).
    "string literal glued to a string macro": "#include <cstdio>\nvoid banner(int v) {\n"
                                              "  std::cout << \"tool v\" TOOL_VERSION;\n  printf(\"at \" __FILE__ \": %\" PRId64 \"\\n\", v);\n}\n",
    # MatX: a statement that opens with a parenthesised comma expression of assignments.
    "comma expression of assignments": "void f(T x, T y) {\n  (x = 1, y = 2).run();\n  (ta = T{1}, tb = T{2}).run(exec);\n"
                                       "  (a[0] = 1, b = 2).run();\n}\n",
    # instant-ngp's testbed.cu: three template closers after a user type.
    "three template closers in a row": "template <typename T> struct Opt { T v; };\n"
                                       "void load(const Json& j) {\n  auto v = j.at(\"offset\").get<std::vector<Opt<vec3>>>();\n}\n",
    # Eigen's gpu_basic.cu: `bool verify(const T& a, typename T::Scalar* = 0)`, a function's last parameter.
    "unnamed pointer parameter of a function": "template <typename T>\nbool approx(const T& a, typename T::Scalar* = 0)\n"
                                               "{\n  return true;\n}\nvoid h(int* = 0, float* = nullptr);\n",
    "static assertion with a named message": "#define errmsg_cast \"size mismatch\"\n"
                                             "template <typename T> __device__ T f(T* a) {\n"
                                             "  static_assert(sizeof(T) == 8, errmsg_cast);\n  return *a;\n}\n",
    "pointer-to-member type in a cast": "int x = def(\"set_key\", (void (Key::*)(int, std::string)) &Key::set_key);\n"
                                        "int y = def(\"get\", (int (ns::Map<int, int>::*)() const) &ns::Map<int, int>::get);\n",
    "reference initialised in parentheses": "void g(std::pair<int, int> const &q, P* p) {\n  auto const &firsts(q.first);\n"
                                            "  const std::vector<int> &seconds(q.second);\n  float *v(p->values);\n}\n",
    "launch bounds with a cluster limit": "__global__ void __launch_bounds__(128, 1, 1)\nk(float* x) { x[0] = 0; }\n"
                                          "__global__ void __launch_bounds__(MAX_T(a, b), 2, C::N) j(float* x) { x[0] = 1; }\n",
    "deleted function outside a class": "template <class T>\nstruct Traits {\n  template <class S>\n"
                                        "  friend constexpr void\n  copy_unpack(Traits const& t, S const& src) = delete;\n"
                                        "  friend bool operator==(Traits, Traits) noexcept = delete;\n};\n"
                                        "template <class S> void copy(S const& src) = delete;\n",
    "execution-space macros": "#define KERNEL_FUNCTION static __global__\nKERNEL_FUNCTION void k(int* x) { x[0] = 1; }\n"
                              "CUTLASS_GLOBAL __launch_bounds__(32, 1) void g(int* x) { atomicAdd(x, 1); }\n"
                              "CUTLASS_DEVICE int h() { return 1; }\n",
    # xgboost: a lambda's execution space from a header the file does not read.
    "lambda execution-space macro": "void run(float* out, int n) {\n  apply(n, [=] XGBOOST_DEVICE(int i) { out[i] = 1.0f; });\n"
                                    "  apply(n, [&, out] MY_HOST_DEVICE (int i) mutable { out[i] = 0.0f; });\n"
                                    "  apply(n, [=] _CCCL_DEVICE __host__(int i) { out[i] = 2.0f; });\n}\n",
    # cccl's CUDASTF: `->*` applied to a lambda (245 files).
    "member-pointer operator applied to a lambda": "int main() {\n  context ctx;\n"
                                                   "  ctx.task(lX.read(), lY.rw())->*[&](cudaStream_t s, auto dX, auto dY) {\n"
                                                   "    axpy<<<16, 128, 0, s>>>(alpha, dX, dY);\n  };\n}\n",
    # cccl: execution-space qualifiers written before `friend` (53 files).
    "qualifiers before friend": "struct half_t {\n  unsigned short v;\n"
                                "  __host__ __device__ __forceinline__ friend bool operator==(const half_t& a, const half_t& b)\n"
                                "  {\n    return a.v == b.v;\n  }\n"
                                "  [[nodiscard]] _CCCL_HOST_DEVICE_API friend constexpr bool\n"
                                "  operator!=(const half_t& a, const half_t& b) noexcept { return a.v != b.v; }\n"
                                "  [[nodiscard]] friend half_t twice(half_t a);\n};\n",
    "try block with a macro handler": "#define THRUST_CATCH catch (std::exception const &e) { throw; }\n"
                                      "int g(int* k, int n) {\n  int m;\n  try {\n    m = n + k[0];\n    if (m) { m++; }\n  }\n"
                                      "  THRUST_CATCH;\n  try { m = 1; } CUDA_CATCH(m)\n  return m;\n}\n",
}
RAW = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


@pytest.mark.parametrize("name", sorted(FORMS))
def test_form_fails_raw_and_parses_prepared(name: str) -> None:
    data = FORMS[name].encode()
    assert RAW.parse(data).root_node.has_error, "the grammar learnt this form: drop the normalisation"
    prepared = normalise(data)
    assert len(prepared) == len(data) and prepared.count(b"\n") == data.count(b"\n")
    assert not RAW.parse(prepared).root_node.has_error, prepared.decode()


def test_an_execution_space_macro_makes_a_kernel() -> None:
    from foxaudit.sources.cuda import execution_spaces

    data = b"#define KERNEL_FUNCTION static __global__\nKERNEL_FUNCTION void k(int* x) { x[0] = 1; }\n" \
           b"CUTLASS_GLOBAL void g(int* x) { x[0] = 2; }\n#define K __global__\nK void short_name(int* x) {}\n"
    tree = RAW.parse(normalise(data))
    spaces = {node.child_by_field_name("declarator").child_by_field_name("declarator").text.decode(): execution_spaces(node)
              for node in tree.root_node.children if node.type == "function_definition"}
    # (`K` is shorter than `__global__`: no rewrite keeps its length, so it stays unknown.)
    assert spaces == {"k": {"__global__"}, "g": {"__global__"}, "short_name": frozenset()}


def test_comments_and_strings_are_never_rewritten() -> None:
    data = b'// typeid(x) and __align__(4)\nconst char* s = "new float*[n] __align__(8)";\n'
    assert normalise(data) == data


@pytest.mark.parametrize("code", [
    "void f(float a, int n) { for (int i = 0; i < n; a *= 0, i++) {} }\n",  # a compound assignment, no pointer
    "__device__ float f(float x, P p) { return x * g(p.y); }\n",  # a product, not a declaration
    "__device__ int f(int x, P p) { int y; y = x & g(p.y); return y; }\n",
    "static_assert(std::is_same_v<A, B>);\nstatic_assert(sizeof(T) == 8, \"size\");\n"  # no message, a literal one
    "static_assert(a >= b - div(c, d));\n",
    "int f() { try { return g(); } catch (...) { return 0; } }\n",  # a handler the grammar reads
    "__global__ void __launch_bounds__(256, 2) k(float* x) { x[0] = 0; }\n",  # no cluster limit
    "void f(int* p, int** q) { delete p; delete[] *q; }\nstruct S { S(const S&) = default; };\n",
    "extern \"C\" MY_API void exported();\nvoid g() { f(\"a\", B); h(\"%d\" , C); k(\"x\" MAKE(1)); }\n",  # linkage, arguments, a call
    "void f() { k<<<grid, Opt<vec3>>>>(x); auto s = \"A\"\n  B; }\n",  # a launch's configuration; a literal ends its line
    "void f() { (x = 1).run(); if (a) (b = 2); g((c = 3), d); }\n",  # no top-level comma; an argument
    # A literal continued over a line (FlashMLA): the next literal's text is no macro after a quote.
    "static_assert(M == 64, \"SM100_MMA_TS size should be 64,\\\n  or 128.\");\nstatic_assert(a == b, \"SM100_MMA_TS A from TMEM\");\n",
])
def test_code_near_the_normalised_forms_is_kept(code: str) -> None:
    assert normalise(code.encode()) == code.encode()


def test_the_typename_of_a_declaration_is_kept() -> None:
    data = b"template <typename T> void f() { typename T::type v; }\n"
    assert normalise(data) == data
    data = b"template <typename T> void f() { int x; typename T::type (v); typename T::type w(x); }\n"
    assert normalise(data) == data


def test_macro_that_breaks_the_parse_is_hidden_and_recorded() -> None:
    source = SourceFile.from_text("h.cuh", "#define HD __host__ __device__\nHD float f() { return 1.0f; }\n")
    assert not source.tree.root_node.has_error
    assert source.cuda.hidden_macros == ("HD",)
    assert source.cuda.data.startswith(b"#define HD")  # the definition itself is kept


def test_a_double_underscore_macro_statement_is_hidden() -> None:
    source = SourceFile.from_text("tma.cuh", "#define __DEFINE_OP__(op) void op();\n__DEFINE_OP__(load_async)\nint x;\n")
    assert not source.tree.root_node.has_error
    assert source.cuda.hidden_macros == ("__DEFINE_OP__",)


def test_a_block_macro_with_an_upper_case_name_is_hidden() -> None:
    # tiny-cuda-nn's Catch2 tests: `SECTION(fmt::format("Testing {}", name)) {` opens a block; an
    # upper-case word of four letters or more counts as a macro when it is given arguments.
    source = SourceFile.from_text("t.cu", 'void run(int n) {\n  SECTION("case") {\n    use(n);\n  }\n}\n')
    assert not source.tree.root_node.has_error
    assert source.cuda.hidden_macros == ("SECTION",)


_ARGUMENTS = "".join(f"      reinterpret_cast<const T *>(in->a{i}),\n" for i in range(9))
_INITIALISERS = ",\n".join(f"      {name}(x)" for name in "abcdefghi")
# (what nvcc accepts, the macro the repair hides, where it comes from)
REPAIRS = {
    # A dispatch macro whose last argument is statements, its name ten lines above the error.
    "argument list far above": (
        f"void permute(const Tensor *in, int n) {{\n  TYPE_SWITCH(\n      in->dtype, T,\n      launcher(\n{_ARGUMENTS}"
        "      n););\n}\n", "TYPE_SWITCH"),  # TransformerEngine's permutation
    # Dispatch macros nested four deep around an `if constexpr`, the outermost nine lines above the
    # error: the outermost is hidden.
    "nested dispatch macros": (
        "void run(const Tensor* in, bool a, bool b) {\n  SWITCH_INPUT(\n      in->dtype(), IType,\n"
        "      SWITCH_OUTPUT(\n          out->dtype(),\n          OType,\n          kScale,\n"
        "      SWITCH_CONDITION(\n          a, kA,\n          SWITCH_CONDITION(\n              b, kB, if constexpr (kA) {\n"
        "                in->data[0] = 1.0f;\n              }))));\n}\n", "SWITCH_INPUT"),  # TransformerEngine
    # The file's own lower-case statement macro, no `;` between uses.
    "own function-like macro": (
        "#define callranks(x) \\\n  if (nranks == x) { reduce<x><<<1, 32>>>(buf); }\n"
        "void reduce(float* buf, int nranks) {\n  callranks(2) callranks(4)\n  done(buf);\n}\n", "callranks"),
    # A MISSING `;` placed at the end of a long constructor, the line before the macro.
    "macro below a missing semicolon": (
        "struct Scheduler {\n  unsigned a, b, c, d, e, f, g, h, i;\n  LIBX_DEVICE_FN Scheduler(unsigned x):\n"
        f"{_INITIALISERS} {{}}\n\n  // advance\n  LIBX_DEVICE_FN bool next(unsigned& out) {{\n    out = a;\n"
        "    return true;\n  }\n};\n", "LIBX_DEVICE_FN"),  # DeepGEMM
    # An ERROR starting at `template`, two lines above the macro in the body it opens.
    "macro below a template": (
        "template <uint32_t K, uint32_t N = 256 / K>\nstruct MegaMoEScheduler {\n"
        "    DG_STATIC_ASSERT(N % 2 == 0, \"even\");\n};\n", "DG_STATIC_ASSERT"),  # DeepGEMM
    # An object-like statement macro the file defines, used with no `;`.
    # A launch (its `<<<g, b>>>` cannot be a macro argument) ended by a header's `CHECK_CUDA(A, d)`,
    # `A; if (d) { … }`, whose empty first argument leaves the `;`.
    "macro that supplies the semicolon": (
        "int run(int* p, bool debug) {\n  fill<<<1, 32>>>(\n      p)\n  CHECK_CUDA(, debug)\n\n  int bit = 3;\n"
        "  return bit;\n}\n", "CHECK_CUDA"),
    # A header's `#define check_cu(code) (check(code, __FILE__))` as an `if`/`while` condition.
    "parenthesised macro as a condition": (
        "int open(int code) {\n  if check_cu (code)\n    return 1;\n  while check_cu(code - 1) {\n    code--;\n  }\n"
        "  return 0;\n}\n", "check_cu"),
    "own object-like macro": (
        "void dispatch(int bits) {\n#define undefined_error report(bits);\n  if (bits == 4) {\n    four();\n"
        "  } else {\n    undefined_error\n  }\n}\n", "undefined_error"),  # ktransformers' Marlin kernels
}


@pytest.mark.parametrize("name", sorted(REPAIRS))
def test_a_macro_that_breaks_the_parse_is_hidden(name: str) -> None:
    text, macro = REPAIRS[name]
    data = text.encode()
    assert RAW.parse(data).root_node.has_error, "the grammar reads this now: drop the repair"
    prepared = prepare(data, RAW)
    assert not prepared.tree.root_node.has_error, prepared.data.decode()
    assert prepared.hidden_macros == (macro,)
    assert len(prepared.data) == len(data) and prepared.data.count(b"\n") == data.count(b"\n")


def test_a_missing_semicolon_before_a_statement_macro_stays_an_error() -> None:
    # The look-ahead hides attribute-like macros below a MISSING `;` (`CUTLASS_DEVICE bool next()`),
    # not a statement `CHECK_INDEX(i, n);`: hiding that would make a real missing `;` parse.
    source = SourceFile.from_text("k.cu", "__global__ void add(float* x, int i, int n) {\n  x[i] = 1.0f\n"
                                          "  CHECK_INDEX(i, n);\n}\n")
    assert source.tree.root_node.has_error
    assert source.cuda.hidden_macros == ()


def test_a_macro_statement_whose_empty_argument_leaves_a_semicolon_stays_an_error_when_its_body_does_not() -> None:
    # `CHECK(, d)` after an unterminated expression supplies the `;` only when the file's
    # definition opens with that argument and `;`; this one does not, so the `;` is really missing.
    source = SourceFile.from_text("k.cu", "#define CHECK(A, d) if (d) { A; }\n"
                                          "void f(float* x, bool d) {\n  x[0] = 1.0f\n  CHECK(, d)\n}\n")
    assert source.tree.root_node.has_error
    assert b";" not in source.cuda.data.split(b"1.0f", 1)[1]


def test_a_macro_as_a_condition_whose_body_has_no_parentheses_stays_an_error() -> None:
    # `if check(c) return 1;` does not compile when `check(c)` expands to no parenthesised expression.
    source = SourceFile.from_text("k.cu", "#define check_cu(c) check(c)\nint f(int c) {\n  if check_cu(c)\n"
                                          "    return 1;\n  return 0;\n}\n")
    assert source.tree.root_node.has_error


def test_a_rewrite_inside_a_macro_keeps_its_continuation_lines() -> None:
    # An `asm volatile(…)` whose operands are blanked, in a `#define` inside a function: a blanked
    # `\` before the newline would end the macro there and leave its last lines as code.
    data = (b"__device__ long long policy(float fraction) {\n  long long result;\n  #define EMIT(HINT) \\\n"
            b"    asm volatile( \\\n      \"createpolicy.fractional.L2::\" HINT \".b64 %0, %1;\" \\\n"
            b"      : \"=l\"(result) \\\n      : \"f\"(fraction) \\\n    );\n  EMIT(\"evict_first\");\n"
            b"  #undef EMIT\n  return result;\n}\n")
    prepared = prepare(data, RAW)
    assert not prepared.tree.root_node.has_error, prepared.data.decode()
    assert [line.endswith(b"\\") for line in prepared.data.split(b"\n")] == [line.endswith(b"\\") for line in data.split(b"\n")]


def test_a_real_syntax_error_survives_the_repairs() -> None:
    source = SourceFile.from_text("k.cu", "__global__ void k(float* x) { x[0] = ; }\n")
    assert source.tree.root_node.has_error
    assert source.cuda.hidden_macros == ()


def test_a_blanked_pragma_keeps_its_trailing_comment() -> None:
    data = b"void f(float* a) {\n  for (int i = 0; i < 4; i++)\n#pragma unroll 2 // FIXME: tune\n    for (int j = 0; j < 4; j++) a[j] = i;\n}\n"
    prepared = normalise(data)
    assert b"#pragma" not in prepared and b"// FIXME: tune" in prepared
    assert prepared.replace(b" ", b"") == data.replace(b"#pragma unroll 2", b"").replace(b" ", b"")


INSTANTIATIONS = b"""\
template <typename T, int N> __global__ void kScale(T* p, int n) { p[0] = p[0] * T(N); }
#define MAKE_kScale(gtype, n) template __global__ void kScale<gtype, n>(gtype * p, int count);
#define LAUNCH_kScale(gtype) kScale<gtype, 1><<<1, 1>>>(p, 1)

MAKE_kScale(float, 2) MAKE_kScale(
    float, 4
) MAKE_kScale(double, 2)
namespace ops {
MAKE_kScale(half, 8);
}
void run(float* p) { LAUNCH_kScale(float); }
"""


def test_file_scope_uses_of_the_files_own_macros_are_hidden_and_no_other() -> None:
    # bitsandbytes' `MAKE_optimizer32bit(ADAM, half)` (any case, several on a line, split over
    # lines, with or without `;`, in a namespace): declarations nvcc sees after expansion.
    assert RAW.parse(INSTANTIATIONS).root_node.has_error
    prepared = prepare(INSTANTIATIONS, RAW)
    assert not prepared.tree.root_node.has_error, prepared.data.decode()
    assert prepared.hidden_macros == ("MAKE_kScale",)
    assert b"LAUNCH_kScale(float)" in prepared.data  # a use inside a function stays
    assert len(prepared.data) == len(INSTANTIATIONS) and prepared.data.count(b"\n") == INSTANTIATIONS.count(b"\n")


def test_an_instantiation_macro_declared_extern_is_hidden_with_its_linkage() -> None:
    # ggml's `extern DECL_FATTN_MMA_F16_CASE(512, 512, 4, 2);`: the macro expands to `template void f<…>(…)`.
    data = (b"template <int D> void run_case(int *ctx) { ctx[0] = D; }\n\n#define DECL_CASE(D) \\\n"
            b"    template void run_case<D>(int *ctx) \\\n\nextern DECL_CASE(40);\nextern DECL_CASE(64);\n")
    assert RAW.parse(data).root_node.has_error
    prepared = prepare(data, RAW)
    assert not prepared.tree.root_node.has_error, prepared.data.decode()
    assert prepared.hidden_macros == ("DECL_CASE",)
    # With an error above it that the repair hides first (ggml's `CONFIG_CASE(…)` lines in a
    # function), the file-scope uses are tried again once the repair has moved the first error.
    above = b"__host__ __device__ int config(int d) {\n    CONFIG_CASE( 40,  40,  2)\n    CONFIG_CASE( 64,  64,  4)\n    return 0;\n}\n"
    prepared = prepare(above + data, RAW)
    assert not prepared.tree.root_node.has_error, prepared.data.decode()
    assert prepared.hidden_macros == ("CONFIG_CASE", "DECL_CASE")


def test_a_macro_statement_split_over_lines_is_hidden_with_its_arguments_but_not_their_comments() -> None:
    # torchvision's `TORCH_CHECK(\n n > 0,\n "…",\n n)` with no `;` (it expands to a braced `if`).
    data = (b"void run(float* x, int n) {\n  TORCH_CHECK(\n      n > 0,  // FIXME: message\n      \"n must be positive\",\n"
            b"      n)\n\n  scale<<<1, 256>>>(x, n);\n}\n")
    assert RAW.parse(data).root_node.has_error
    prepared = prepare(data, RAW)
    assert not prepared.tree.root_node.has_error, prepared.data.decode()
    assert prepared.hidden_macros == ("TORCH_CHECK",)
    assert b"// FIXME: message" in prepared.data and b"scale<<<1, 256>>>(x, n);" in prepared.data
