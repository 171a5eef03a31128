"""FX001: a source file foxaudit cannot read or parse."""

from __future__ import annotations

import ast
import errno
import functools
import itertools
import os
import re
from typing import ClassVar

import tree_sitter

from foxaudit.diagnostics import Diagnostic
from foxaudit.rules.base import Example, FileContext, Rule
from foxaudit.sources.base import Language, SourceFile, ts_language

CODE = "FX001"


class ParseError(Rule):
    """Reports a file that cannot be read or parsed, at the first place where it goes wrong.

    ## What it does
    Flags a source file (``.py``, ``.pyi``, ``.cu``, ``.cuh``) that foxaudit cannot analyse
    completely: a Python syntax error (located and worded by CPython's own parser), a CUDA
    file where tree-sitter-cuda produced ERROR or MISSING nodes (reported once per file, at
    the first one), bytes that are not UTF-8, a binary file (NUL bytes) with a source
    extension, an empty (0-byte) CUDA file, and any internal failure while checking the file
    (the exception text is the message: no traceback ever reaches the user). The run goes on
    with the next file; CUDA rules still run on the parts of a CUDA file that parsed.

    A CUDA file is checked as nvcc sees it (foxaudit/sources/preprocess.py and cuda_forms.py):
    `#if`/`#ifdef`/`#elif`/`#else` are resolved first (only the compiled branch is parsed, so a
    statement split across branches is fine and code under `#if 0` is not looked at), then the
    forms nvcc accepts and tree-sitter-cuda does not are normalised column for column
    (`__align__(n)`, `__device__` lambdas, `new T*[n]`, asm operand lists, `typeid`,
    `typename X::type{}` and a statement `typename K::BlockReduceT(smem).Sum(v);` (CUB's block
    primitives), `CUDART_CB`-style attribute macros, explicit template instantiations),
    and a macro-like name that still breaks the parse (`CUB_NAMESPACE_BEGIN`,
    `_CCCL_HOST_DEVICE`) is hidden when that lets the parse go further. What still fails is
    reported once per file, at the first failing region, as a note that names the construct
    and how many regions failed. Vendored third-party headers are best excluded (`exclude`)
    or given a `per-file-ignores` entry.

    An empty Python file is legal (an empty ``__init__.py`` is the normal way to mark a
    package) and is not reported. An empty ``.cu``/``.cuh`` is: such a file only exists to be
    compiled or included, an empty one declares nothing that a loader or an ``#include`` could
    use, and in practice it is a truncated write or a placeholder (C's grammar even requires a
    translation unit to declare something).

    ## Why is this bad
    Every other rule is blind to what it cannot parse: a file with a syntax error or a bad
    encoding silently escapes every invariant, and so would a kernel hidden behind a construct
    the CUDA grammar does not understand.

    ## Example
    ```python
    def launch(grid:
        return grid
    ```

    ## Use instead
    ```python
    def launch(grid):
        return grid
    ```
    For CUDA, rewrite the construct the grammar cannot read (for example an attribute-like
    macro in front of a function) or suppress FX001 for the file with a reason.

    ## Options
    None.
    """

    code: ClassVar[str] = CODE
    name: ClassVar[str] = "parse-error"
    summary: ClassVar[str] = "A source file that cannot be read or parsed (syntax error, bad encoding, binary, empty CUDA)"
    invariant: ClassVar[int] = 0
    languages: ClassVar[frozenset[Language]] = frozenset({"python", "cuda"})
    VALID: ClassVar[list[Example]] = [
        Example("def launch(grid):\n    return grid\n"),
        Example("", path="pkg/__init__.py"),
        Example("__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }\n", path="k.cu"),
        # nvcc's view: one branch of the #if, the forms the grammar lacks normalised.
        Example("__global__ void k(float* x, int n) {\n#if USE_REVERSE\n  for (int i = n - 1; i >= 0; i--) {\n"
                "#else\n  for (int i = 0; i < n; i++) {\n#endif\n    x[i] = 0.0f;\n  }\n}\n", path="k.cu"),
        Example("#if 0\nthis is not C at all {\n#endif\n", path="dead.cu"),
        Example("struct __align__(16) Acc { float s; };\n", path="a.cuh"),
        Example("void f(float* a) {\n  auto g = [=] __host__ __device__ (int i) { a[i] = 0; };\n}\n", path="l.cu"),
        Example("void f(int n) { const float** p = new const float*[n]; }\n", path="n.cu"),
        Example('__device__ void st(unsigned v, void* p) { asm volatile("st [%1], %0;" ::"r"(v) "l"(p) : "memory"); }\n',
                path="a.cu"),
        Example("template <class R> bool f() { return typeid(R) == typeid(double); }\n", path="t.cu"),
        Example("template <class X> auto f() { return typename X::type{}; }\n", path="t.cu"),
        # CUB's block primitives: a temporary of a dependent type whose member is called at once.
        Example("template <class K> __global__ void k(float* x) {\n  float v = x[0];\n"
                "  typename K::BlockReduceT(smem).Sum(v);\n  typename K::BlockStoreT(smem)\n      .Store(x, v);\n}\n",
                path="scan.cuh"),
        Example("static void CUDART_CB done(cudaStream_t s, cudaError_t e, void* d) { }\n", path="cb.cu"),
        Example("template class Estimator<float>;\n", path="e.cu"),
        Example("CUB_NAMESPACE_BEGIN\n\nnamespace detail\n{\nint x;\n}\nCUB_NAMESPACE_END\n", path="agent.cuh"),
    ]
    INVALID: ClassVar[list[Example]] = [
        Example("def launch(grid:\n    return grid\n", expect=1),
        Example("x = (1,\ny = 2\n", expect=1),
        Example("__global__ void k(float* x) { x[0] = ; }\n", path="k.cu", expect=1),
        Example("", path="empty.cu", expect=1),
        Example("#if 1\n__global__ void k(float* x) { x[0] = ; }\n#else\nint fine;\n#endif\n", path="k.cu", expect=1),
        Example("__global__ void k(float* x) { x[0] = ; }\nvoid g() { int y = ; }\n", path="k.cu", expect=1),
    ]

    def begin(self, ctx: FileContext) -> None:
        source = ctx.source
        if source.language == "cuda" and not source.data:
            ctx.report(
                CODE,
                (1, 1, 1, 1),
                "empty CUDA file (0 bytes vs at least one declaration)",
                hint="fill it or delete it",
            )
            return
        if not source.tree.root_node.has_error:
            # tree-sitter has no nesting limits; CPython does (200 open brackets, 100 indentation
            # levels, a recursion limit while building the AST). Ask CPython when a cheap scan
            # says the file may be past one of them, so such a file is not reported clean.
            if source.language == "python" and may_exceed_cpython_limits(source.data):
                located = python_syntax_error(source)
                if located is not None:
                    ctx.report(CODE, located[0], located[1], hint="split the nested expression or block; CPython cannot compile it")
            return
        located = python_syntax_error(source) if source.language == "python" else first_tree_error(source)
        if located is not None:
            span, message = located
            hint = ("rewrite the construct the grammar cannot read, or exclude a vendored header (`exclude`, or"
                    " FX001 in `per-file-ignores`); the other rules still check the parts that parsed"
                    if source.language == "cuda" else "fix the syntax; no other rule sees past a parse error")
            ctx.report(CODE, span, message, hint=hint)


def python_syntax_error(source: SourceFile) -> tuple[tuple[int, int, int, int], str] | None:
    """CPython's verdict on a file tree-sitter found an error in (None: CPython accepts it)."""
    try:
        # A re-encoded file is compiled as text: its bytes no longer match its coding declaration.
        code = source.data if source.encoding == "utf-8" else source.text
        compile(code, source.path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        line = max(error.lineno or 1, 1)
        column = max(error.offset or 1, 1)
        end_line = error.end_lineno or line
        end_column = error.end_offset or column + 1
        if (end_line, end_column) <= (line, column):
            end_line, end_column = line, column + 1
        return (line, column, end_line, end_column), f"syntax error: {error.msg}"
    except ValueError as error:
        return (1, 1, 1, 1), f"syntax error: {error}"
    except (RecursionError, MemoryError) as error:
        # CPython's own verdict on a too deeply nested file (e.g. a 100,000-term sum).
        return (1, 1, 1, 1), f"syntax error: nested too deeply for CPython ({type(error).__name__}: {error})"
    # tree-sitter's grammar lags CPython's: trust CPython, which accepts this file.
    return None


# CPython's tokenizer limits (MAXLEVEL, MAXINDENT) and a line long enough to hold an expression
# whose AST outgrows the recursion limit. Crossing one only means "ask CPython": brackets in
# strings or comments count too, which costs a compile, never a false report.
_CPYTHON_MAX_BRACKETS = 200
_DEEP_INDENT = re.compile(rb"^[ \t]{100,}\S", re.MULTILINE)
_HUNDRED_SPACES = b" " * 100
_LONG_LINE = 10_000
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"()[]{}")))
_BRACKET_STEP = bytes.maketrans(b"([{)]}", b"\x02\x02\x02\x00\x00\x00")


def may_exceed_cpython_limits(data: bytes) -> bool:
    """True when ``data`` may nest deeper than CPython compiles (C-speed scans, no parse). The
    answer for the last bytes object asked about is kept: the per-file pass asks twice per file
    (this rule, and whether the file's summary may be made as an index alone)."""
    last = _LAST_ANSWER[0]
    if last is not None and last[0] is data:
        return last[1]
    answer = _may_exceed(data)
    _LAST_ANSWER[0] = (data, answer)
    return answer


_LAST_ANSWER: list[tuple[bytes, bool] | None] = [None]


def _may_exceed(data: bytes) -> bool:
    brackets = data.translate(None, _NOT_BRACKETS)
    if len(brackets) > _CPYTHON_MAX_BRACKETS and _depth_reaches(brackets, _CPYTHON_MAX_BRACKETS):
        return True
    if len(data) > _LONG_LINE and max(map(len, data.split(b"\n"))) > _LONG_LINE:
        return True
    # (The pattern needs a run of 100 blanks: most files have neither that run nor a tab.)
    return (_HUNDRED_SPACES in data or b"\t" in data) and _DEEP_INDENT.search(data) is not None


def _depth_reaches(brackets: bytes, limit: int) -> bool:
    """Whether the running depth of ``brackets`` (+1 per opening, -1 per closing one) reaches
    ``limit``. A chunk of ``limit`` brackets is stepped through one by one only when its opening
    brackets could lift the depth it starts at that far (in most files none can)."""
    depth = 0
    for start in range(0, len(brackets), limit):
        chunk = brackets[start : start + limit]
        opening = chunk.count(b"(") + chunk.count(b"[") + chunk.count(b"{")
        if depth + opening >= limit:
            steps = map(int.__sub__, chunk.translate(_BRACKET_STEP), itertools.repeat(1))
            if depth + max(itertools.accumulate(steps)) >= limit:
                return True
        depth += opening - (len(chunk) - opening)
    return False


@functools.cache
def _error_query(language: Language) -> tree_sitter.Query:
    return tree_sitter.Query(ts_language(language), "[(ERROR) (MISSING)] @e")


def first_tree_error(source: SourceFile) -> tuple[tuple[int, int, int, int], str] | None:
    """The first ERROR or MISSING node of the tree, located and described, with the construct
    named and, for CUDA, how many separate regions of the file failed (one note per file).

    tree-sitter can wrap a whole file in one ERROR root that starts at its first byte (a licence
    comment, an ``#include``); that says nothing about where parsing failed, so the earliest
    error below the root is reported, and an error's leading comments are skipped."""
    start_byte, node = _first_error(source.tree, source.language) or (None, None)
    if node is None or start_byte is None:
        return None
    line, column = source.position(start_byte)
    note = ""
    if source.language == "cuda":
        regions = _error_regions(source.tree)
        construct = _construct(source, start_byte)
        hidden = source.cuda.hidden_macros
        note = f" ({construct}" + (
            f"; already hidden as macros: {', '.join(f'`{name}`' for name in hidden)}" if hidden else ""
        ) + (f"; {regions} unparsed regions in this file, reported once" if regions > 1 else "") + ")"
    if node.is_missing:
        return (line, column, line, column + 1), f"parse error: missing `{node.type}`{note}"
    first_line = source.data[start_byte : node.end_byte].split(b"\n", 1)[0]
    snippet = first_line.decode("utf-8", errors="replace").strip()
    if len(snippet) > 40:
        snippet = snippet[:37] + "..."
    end_line, end_column = source.position(start_byte + len(first_line))
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    what = f"cannot parse `{snippet}`" if snippet else "cannot parse this construct"
    return (line, column, end_line, end_column), f"parse error: {what}{note}; rules still run on the rest of the file"


def _first_error(tree: tree_sitter.Tree, language: Language) -> tuple[int, tree_sitter.Node] | None:
    """(start byte, node) of the earliest ERROR/MISSING node below the root, None without one."""
    captures = tree_sitter.QueryCursor(_error_query(language)).captures(tree.root_node)
    nodes = captures.get("e", [])
    if not nodes:
        return None
    inner = [candidate for candidate in nodes if candidate.parent is not None]
    node = min(inner or nodes, key=lambda candidate: (candidate.start_byte, -candidate.end_byte))
    start_byte = node.start_byte
    if not node.is_missing:
        for child in node.children:
            if child.type != "comment":
                start_byte = child.start_byte
                break
    return start_byte, node


def _error_regions(tree: tree_sitter.Tree) -> int:
    """How many separate ERROR/MISSING regions (outermost ones, the root excluded) the tree has."""
    nodes = tree_sitter.QueryCursor(_error_query("cuda")).captures(tree.root_node).get("e", [])
    spans = sorted((node.start_byte, node.end_byte) for node in nodes if node.parent is not None) or [(0, 0)]
    regions, reach = 0, -1
    for start, end in spans:
        if start >= reach:
            regions += 1
        reach = max(reach, end)
    return regions


# What the line of a CUDA parse error most likely holds, checked in order (first match names it).
_CONSTRUCTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\s*#"), "a preprocessor directive inside a declaration or statement"),
    (re.compile(r"\b(?:asm|__asm__)\b"), "an inline asm statement"),
    (re.compile(r"::\s*\*"), "a pointer to member"),
    (re.compile(r"\btemplate\b|<[^<>]*>\s*::"), "a template construct tree-sitter-cuda does not know"),
    (re.compile(r"\boperator\b"), "an operator declaration"),
    (re.compile(r"\[[^\]]*\]\s*(?:__\w+__\s*)*\("), "a lambda"),
)
# The failing token itself looks like a macro: `CUB_NAMESPACE_BEGIN`, `__KITTENS_OP__(x)`.
_MACRO_TOKEN = re.compile(r"_*[A-Z][A-Z0-9]*_[A-Z0-9_]*\b")


def _construct(source: SourceFile, start_byte: int) -> str:
    line, _ = source.position(start_byte)
    if _MACRO_TOKEN.match(source.data[start_byte : start_byte + 80].decode("utf-8", errors="replace")):
        return "construct: an unexpanded macro"
    text = source.line_text(line)
    for pattern, name in _CONSTRUCTS:
        if pattern.search(text):
            return "construct: " + name
    return "construct: one tree-sitter-cuda does not parse and foxaudit does not normalise"


def binary_file(path: str) -> Diagnostic:
    return _file_level(path, "binary file with a source extension (got NUL bytes vs text)", "rename it or exclude it")


def undecodable(path: str, data: bytes, error: UnicodeDecodeError) -> Diagnostic:
    """FX001 at the first byte that is not UTF-8."""
    prefix = data[: error.start]
    line = prefix.count(b"\n") + 1
    line_start = prefix.rfind(b"\n") + 1
    column = len(prefix[line_start:].decode("utf-8", errors="replace")) + 1
    return Diagnostic(
        path=path,
        line=line,
        column=column,
        code=CODE,
        message=f"invalid {_codec_name(error.encoding)} (got byte 0x{data[error.start]:02x} vs {_codec_name(error.encoding)} text)",
        end_line=line,
        end_column=column + 1,
        hint="re-save the file as UTF-8",
    )


def _codec_name(encoding: str) -> str:
    return "UTF-8" if encoding in ("utf-8", "utf8") else encoding


def unreadable(path: str, absolute: str, error: OSError) -> Diagnostic:
    """FX001 for a file that cannot be read: a broken symbolic link, permissions, an I/O error.

    These are problems of the checkout, not of foxaudit, so the hint says what to fix there."""
    if os.path.islink(absolute):
        try:
            target = os.readlink(absolute)
        except OSError:
            target = "?"
        if error.errno == errno.ELOOP:
            return _file_level(path, f"symbolic link loop (got {target!r}, which leads back to itself, vs a link to a file)",
                               "point the link at a real file or delete it")
        if not os.path.exists(absolute):
            return _file_level(path, f"dangling symbolic link (got {target!r} vs an existing file)",
                               "restore the link's target or delete the link")
    reason = error.strerror or type(error).__name__
    return _file_level(path, f"cannot read the file ({reason} vs a readable file)",
                       "fix its permissions (or the disk), or leave it out with `exclude`")


def internal_failure(path: str, what: str, error: BaseException) -> Diagnostic:
    """FX001 for an exception raised while checking ``path`` (the run goes on)."""
    text = f"{type(error).__name__}: {error}".strip()
    return _file_level(path, f"internal error in {what} ({text})", "report this to foxaudit with the file; the rest of the run is unaffected")


def _file_level(path: str, message: str, hint: str) -> Diagnostic:
    return Diagnostic(path=path, line=1, column=1, code=CODE, message=message, end_line=1, end_column=1, hint=hint)
