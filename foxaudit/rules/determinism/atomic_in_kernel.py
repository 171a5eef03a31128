"""FX401: atomic read-modify-write calls in CUDA code."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import tree_sitter

from foxaudit.rules._support.cuda import enclosing_function, function_name
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
    # Declared as TOML gives it (tables of strings); __post_init__ turns each into an AllowEntry.
    allow: tuple[dict[str, str], ...] = field(
        default=(),
        metadata={"help": "Accepted uses: tables {function = glob, path = glob, reason = text}; reason is required."},
    )

    def __post_init__(self) -> None:
        freeze(self, "functions", string_tuple(CODE, "functions", self.functions, allow_empty=False))
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


class AtomicInKernel(Rule):
    """Flags atomic read-modify-write calls (`atomicAdd`, `atomicCAS`, ...) in CUDA sources.

    ## What it does
    Reports every call in a `.cu`/`.cuh` file of one of the `functions` — by default
    `atomicAdd`, `atomicSub`, `atomicExch`, `atomicMin`, `atomicMax`, `atomicInc`, `atomicDec`,
    `atomicCAS`, `atomicAnd`, `atomicOr`, `atomicXor` — and their scoped variants
    (`atomicAdd_block`, `atomicAdd_system`), whether called plainly, through a namespace
    (`::atomicAdd`) or with template arguments (`atomicAdd<float>`), in kernels, device
    functions, lambdas and templates alike, and inside `#define` macro bodies (which the parser
    keeps as raw text; the macro's name stands in for the enclosing function). Mentions in
    comments and string literals are not calls. Where the grammar could not parse a region (an
    ERROR node, e.g. behind an unexpanded attribute macro), a name followed by `(` still counts
    as a call; only `path` entries of `allow` apply there, since the enclosing function cannot
    be known. A call inside a function (or macro) or file
    matched by an `allow` entry is accepted; every entry must give a `reason`.

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
    - `allow`: accepted uses, e.g.
      `allow = [{function = "claim_slot", reason = "integer ticket counter, order-independent"}]`;
      `function` and `path` are globs (the function is the enclosing function's name), and an
      entry without a `reason` is a configuration error.
    """

    code = CODE
    name = "atomic-in-kernel"
    summary = "Atomic read-modify-write call (atomicAdd, atomicCAS, ...) makes a reduction nondeterministic"
    invariant = 4
    languages = frozenset({"cuda"})
    cuda_nodes = ("call_expression", "preproc_arg", "ERROR")
    options_class = AtomicInKernelOptions

    VALID: ClassVar[list[Example]] = [
        Example("__global__ void scale(float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "  if (i < n) x[i] *= 2.0f;\n}\n", path="scale.cu"),
        Example("// atomicAdd would be nondeterministic here\n__device__ float f(float a) { return a; }\n",
                path="f.cuh"),
        Example('static const char* kBanned = "atomicAdd";\n', path="names.cu"),
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
    ]

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        if node.type == "preproc_arg":
            self._visit_macro(node, ctx)
            return
        if node.type == "ERROR":
            self._visit_unparsed(node, ctx)
            return
        callee = node.child_by_field_name("function")
        while callee is not None and callee.type in _CALLEE_WRAPPERS:
            callee = callee.child_by_field_name("name")
        if callee is None or callee.type != "identifier":
            return
        options: AtomicInKernelOptions = ctx.options(CODE)
        name = callee.text.decode()
        if name not in _atomic_names(options.functions):
            return
        encloser = enclosing_function(node)
        encloser_name = function_name(encloser) if encloser is not None else None
        function = encloser_name.text.decode() if encloser_name is not None else ""
        if any(entry.allows(function, ctx.path) for entry in options.allow):
            return
        self._report(ctx, callee, name, f" in `{function}`" if function else "")

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
            self._report(ctx, child, name, " (in code the CUDA grammar could not parse)")

    def _visit_macro(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        text = ctx.source.node_text(node)
        if "atomic" not in text:
            return
        options: AtomicInKernelOptions = ctx.options(CODE)
        names = _atomic_names(options.functions)
        macro = node.parent.child_by_field_name("name") if node.parent is not None else None
        macro_name = macro.text.decode() if macro is not None else ""
        if any(entry.allows(macro_name, ctx.path) for entry in options.allow):
            return
        for match in _MACRO_TOKENS.finditer(text):
            name = match.group(1)
            if name is None or name not in names:
                continue
            start_byte = node.start_byte + len(text[: match.start(1)].encode("utf-8"))
            line, column = ctx.source.position(start_byte)
            self._report(ctx, (line, column, line, column + len(name)), name, f" in macro `{macro_name}`")

    @staticmethod
    def _report(ctx: FileContext, where: tree_sitter.Node | tuple[int, int, int, int], name: str, place: str) -> None:
        ctx.report(
            CODE,
            where,
            f"`{name}`{place}: atomics make the result depend on thread order, so runs are not bitwise "
            "reproducible — invariant 4: deterministic reductions only",
            hint="reduce with a shared-memory tree or per-sample partials summed in a second pass; "
            "or add an `allow` entry with a reason",
        )
