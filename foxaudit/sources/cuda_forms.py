"""CUDA text prepared for tree-sitter-cuda: preprocessed, normalised, column for column.

``prepare`` runs ``preprocess`` (conditional compilation), then rewrites the forms nvcc accepts
and the grammar does not, without moving a byte (a rewrite replaces text by text of the same
length, usually spaces), so every node of the resulting tree keeps its line and column:

====================================  ===========================================================
nvcc accepts                          the grammar is given
====================================  ===========================================================
``struct __align__(16) Acc``          ``struct               Acc`` (alignment is not analysed)
``__cluster_dims__(2, 1, 1) void k``  ``                          void k`` (also ``__maxnreg__(n)``)
``__launch_bounds__(128, 1, 1)``      ``__launch_bounds__(128, 1   )`` (CUDA 12's cluster limit)
``friend void f(S) = delete;``        ``friend void f(S)         ;`` (a deleted function: a declaration)
``[=] __device__ (float v) {``        ``[=]            (float v) {`` (a plain lambda)
``new const float *[n]``              ``new const float  [n]`` (same allocation, one level less)
``typeid(Real) == typeid(double)``    ``sizeof(Real) == sizeof(double)`` (same shape of call)
``auto v = typename X::type{};``      ``auto v =          X::type{};``
``typename K::Scan(s).Sum(v);``       ``         K::Scan(s).Sum(v);`` (a temporary's member called)
``void CUDART_CB f(void*)``           ``void           f(void*)`` (calling-convention macros)
``float __attribute__((vector_size(16)))``  ``float`` and spaces (GNU attributes, wherever written)
``for (…)`` / ``#pragma unroll`` / ``for (…)``  the pragma blanked (unbraced ``for``/``if``/``else`` body)
``typedef enum : int { A } m_t;``     ``typedef enum       { A } m_t;`` (an anonymous enum's base)
``float &__restrict__ x``             ``float &            x`` (a restrict reference: a reference)
``int s = {}``, ``int t = {1}``       ``int s = 0 ``, ``int t =  1 `` (a brace-initialised default argument)
``h.operator float()``                ``h.operator_float()`` (a conversion called by name)
``&(operator*())``                    ``&(operator_())`` (an operator called by name in an expression)
``template <typename T = void*>``     ``template <typename T = void >`` (a pointer type's default)
``enable_if_t<C>* = nullptr``         ``enable_if_t<C>  = nullptr`` (an unnamed pointer parameter of
                                      a template, SFINAE: the same parameter, not a pointer)
``static_assert(c, kMessage)``        ``static_assert(c          )`` (a message that is no literal)
``(void (K::*)(int)) &K::f``          ``(void (   *)(int)) &K::f`` (a pointer-to-member type in a cast)
``auto const &a(q.first);``           ``auto const &a=q.first ;`` (a reference or pointer initialised
                                      in parentheses from a member, read as a function declarator)
``try { … } THRUST_CATCH;``           ``    { … }             `` (a macro that expands to the handler)
``[=] XGBOOST_DEVICE(int i) {``       ``[=]               (int i) {`` (a lambda's execution-space macro)
``ctx.task(d)->*[&](auto s) {``       ``ctx.task(d) * [&](auto s) {`` (CUDASTF's member-pointer operator
                                      applied to a lambda: a product of the same two operands)
``__device__ friend bool f(…)``       ``friend __device__ bool f(…)`` (qualifiers, attributes and execution-space
                                      macros before ``friend``: ``[[nodiscard]] _CCCL_HOST_DEVICE_API friend``)
``CUTLASS_GLOBAL void k(…)``          ``__global__     void k(…)`` (an execution-space macro: CUTLASS's,
                                      CuTe's, or one the file defines as ``__global__``/``__device__``)
====================================  ===========================================================

A rewrite keeps every newline and every backslash that ends a line, so text blanked inside a
``#define`` (an ``asm(...)``'s operands) leaves the macro's continuation lines in the macro.

When the tree still has errors, the file-scope uses of the function-like macros the file itself
defines (instantiation macros, any case) are hidden with their arguments, kept when that moves the
first error further down; then an upper-case, macro-like name on the first error's line or up to
eight code lines above it (``CUB_NAMESPACE_BEGIN``, ``_CCCL_HOST_DEVICE``, ``EXTENSION_LIST(X)``,
a ``TORCH_CHECK(…)`` over several lines) or up to three below it (a MISSING ``;`` is placed before
the line whose macro caused it), a function-like macro the file defines used there (any
case: ``callranks(2) callranks(4)`` in a function; an object-like one as a statement: ``else {
undefined_error }``), a name right after ``if``/``while``/``switch`` (``if check_cu (f(x))``,
a macro whose body brings the condition's parentheses), or an upper-case name whose argument list,
however long, holds the error (``TYPE_SWITCH(dtype, T, launcher(…););``, outermost first: nested
dispatch macros) is hidden, with its argument list, wherever it occurs — kept only when that moves
the first error further down — up to ``_MAX_REPAIRS`` times. Two uses keep part of the macro's
effect: after ``if``/``while``/``switch`` only the name is hidden, its argument list staying as the
condition (unless the file defines the macro with a body not in parentheses), and a use whose first
argument is empty right after an expression without ``;`` (``kernel<<<g, b>>>(p)`` then
``CHECK_CUDA(, debug)``, the macro ``A; if (debug) …``) is replaced by the ``;`` it leaves (unless
the file defines the macro with a body that does not open with that argument and ``;``). What was
hidden is recorded, so a remaining parse error can say what foxaudit already tried. Comments and string literals are never rewritten.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import tree_sitter

from foxaudit.sources.preprocess import InactiveRegion, comment_spans, preprocess


@dataclass(frozen=True)
class PreparedCuda:
    data: bytes  # what tree-sitter parses: same length and newlines as the file
    tree: tree_sitter.Tree
    # What this configuration compiles, before the forms the grammar lacks are rewritten and the
    # macro uses that broke the parse are hidden: ``data`` differs from it where those were blanked.
    compiled: bytes
    inactive: tuple[InactiveRegion, ...]  # branches not compiled (#if 0, #else of a true #if, ...)
    hidden_macros: tuple[str, ...]  # macro-like names hidden because they broke the parse

    def is_inactive(self, line: int) -> bool:
        return any(region.first_line <= line <= region.last_line for region in self.inactive)


def prepare(data: bytes, parser: tree_sitter.Parser, defines: Mapping[str, str | None] | None = None) -> PreparedCuda:
    # Blanking keeps comments where they were, so one lexing pass serves both steps.
    comments = comment_spans(data)
    preprocessed = preprocess(data, defines, comments)
    text = normalise(preprocessed.data, comments)
    tree = parser.parse(text)
    hidden: list[str] = []
    if tree.root_node.has_error:
        text, tree, hidden = _hide_file_scope_macro_uses(text, tree, parser)
    if tree.root_node.has_error:
        text, tree, more = _repair(text, tree, parser)
        hidden.extend(more)
        if more and not hidden[: -len(more)] and tree.root_node.has_error:
            # The file-scope uses were tried first, when an error above them (a macro the repair
            # has hidden since: ggml's `CONFIG_CASE(…)` in a function) kept them from moving it.
            text, tree, again = _hide_file_scope_macro_uses(text, tree, parser)
            hidden.extend(again)
    return PreparedCuda(text, tree, preprocessed.data, preprocessed.inactive, tuple(hidden))


def normalise(data: bytes, comments: list[tuple[int, int]] | None = None) -> bytes:
    """``data`` with the table's forms rewritten (same length; comments and strings untouched)."""
    wanted = [(pattern, rewrite) for needle, pattern, rewrite in _NORMALISATIONS if needle in data]
    spaces = _execution_space_macros(data)
    if not wanted and not spaces:
        return data
    view = _code_view(data, comments)
    out = bytearray(data)
    for pattern, rewrite in wanted:
        for match in pattern.finditer(view):
            rewrite(match, out, view)
    if spaces:
        directives = [found.span() for found in _DIRECTIVE_TEXT.finditer(view)]
        uses = re.compile(rb"(?<![\w#])(" + b"|".join(re.escape(name) for name in spaces) + rb")\b")
        for match in uses.finditer(view):
            if not any(start <= match.start() < stop for start, stop in directives):
                keyword = spaces[match.group(1)]
                out[match.start() : match.end()] = keyword + b" " * (match.end() - match.start() - len(keyword))
    return bytes(out)


# Macros that stand for an execution space (CUTLASS's and CuTe's, defined in their headers):
# `CUTLASS_GLOBAL void k(...)` is a kernel. Each is written as the keyword it expands to, padded.
_KNOWN_EXECUTION_SPACES = {
    b"CUTLASS_GLOBAL": b"__global__", b"CUTLASS_DEVICE": b"__device__", b"CUTLASS_HOST_DEVICE": b"__host__ __device__",
    b"CUTE_DEVICE": b"__device__",
}  # fmt: skip
# A macro the file defines as an execution space (`#define KERNEL_FN static __global__`).
_SPACE_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+((?:(?:static|inline|__inline__|__forceinline__|"
                           rb"__global__|__device__|__host__)[ \t]*)+)$", re.MULTILINE)


def _execution_space_macros(data: bytes) -> dict[bytes, bytes]:
    """Name → the keyword(s) to write for each execution-space macro ``data`` uses: the known ones,
    and those the file defines (``__global__`` where the body holds it, else ``__device__``), when
    the name is at least as long as what replaces it (every rewrite keeps the length)."""
    found = {name: keyword for name, keyword in _KNOWN_EXECUTION_SPACES.items() if name in data}
    if b"define" in data:
        for match in _SPACE_DEFINE.finditer(data):
            body = match.group(2)
            keyword = b"__global__" if b"__global__" in body else b"__device__" if b"__device__" in body else None
            if keyword is not None and len(match.group(1)) >= len(keyword):
                found.setdefault(match.group(1), keyword)
    return found


def _blank_group(group: int) -> Callable[[re.Match[bytes], bytearray, bytes], None]:
    def rewrite(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
        _blank_span(out, *match.span(group))

    return rewrite


def _replace_group(group: int, replacement: bytes) -> Callable[[re.Match[bytes], bytearray, bytes], None]:
    def rewrite(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
        start, end = match.span(group)
        if end - start == len(replacement):
            out[start:end] = replacement

    return rewrite


def _friend_first(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `[[nodiscard]] __host__ __device__ friend` → `friend [[nodiscard]] __host__ __device__` (the
    # words' last blank moved); an upper-case macro among them (`_CCCL_HOST_DEVICE_API`, defined
    # in a header not read) is written as the execution space its name says, padded, or blanked.
    start = match.start(1)
    end = match.end(0)
    qualifiers = bytearray(view[start : match.end(1)])
    for word in re.finditer(rb"(?<![\w\[])_*[A-Z][A-Z0-9_]{2,}\b", bytes(qualifiers)):
        name = word.group(0)
        keyword = (b"__host__ __device__" if b"HOST" in name and b"DEVICE" in name else b"__device__" if b"DEVICE" in name
                   else b"__host__" if b"HOST" in name else b"")
        keyword = keyword if len(keyword) <= len(name) else b""
        qualifiers[word.start() : word.end()] = keyword + b" " * (len(name) - len(keyword))
    out[start:end] = b"friend " + bytes(qualifiers[:-1])


def _replace_braces_by_zero(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `{}` → `0` and spaces; `{1}` → ` 1 `: a value the grammar reads anywhere.
    start, end = match.span(1)
    inner = view[start + 1 : end - 1].strip()
    out[start] = out[end - 1] = 0x20
    if not inner:
        _blank_span(out, start, end)
        out[start] = 0x30


def _underscore_group(group: int) -> Callable[[re.Match[bytes], bytearray, bytes], None]:
    def rewrite(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
        start, end = match.span(group)
        out[start:end] = b"_" * (end - start)

    return rewrite


def _macro_as_string_literal(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `"v" NGP_VERSION` → `"v" "_________"`: adjacent literals, one concatenation to the grammar;
    # not the linkage macro of `extern "C" MY_API void f();`.
    start, end = match.span(1)
    if end - start >= 2 and not re.search(rb'\bextern\s*"[^"\n]*"[ \t]*\Z', view[max(0, start - 64) : start]):
        out[start:end] = b'"' + b"_" * (end - start - 2) + b'"'


def _flatten_innermost_template(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `get<std::vector<Opt<vec3>>>()` → `get<std::vector<Opt_vec3_>>()`: the grammar reads `>>>` as
    # a launch's closer; with the innermost template-id one name, `>>` closes the outer two. Not
    # inside a launch's configuration (`k<<<grid, T<int>>>>`): a `<<<` open in the statement.
    statement_start = max(view.rfind(b";", 0, match.start()), view.rfind(b"{", 0, match.start()),
                          view.rfind(b"}", 0, match.start()))
    if view.find(b"<<<", statement_start + 1, match.start()) >= 0:
        return
    for group in (1, 2):
        start, end = match.span(group)
        out[start:end] = b"_"


def _blank_qualifiers_and_stars(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `new const float *[n]` → `new       float  [n]`: the grammar takes neither in a new-expression.
    start, end = match.span(1)
    for word in re.finditer(rb"\b(?:const|volatile)\b|\*", view[start:end]):
        out[start + word.start() : start + word.end()] = b" " * (word.end() - word.start())


def _blank_asm_operands(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `asm volatile("st [%1], %0;" ::"r"(v) "l"(p) : "memory")`: the operand lists (`:` ...) are
    # blanked, the instruction template (the string, which FX401 reads) is kept.
    depth = 0
    colon = None
    for index in range(match.end() - 1, len(view)):
        byte = view[index]
        if byte == 0x28:  # (
            depth += 1
        elif byte == 0x29:  # )
            depth -= 1
            if depth == 0:
                if colon is not None:
                    _blank_span(out, colon, index)
                return
        elif byte == 0x3A and depth == 1 and colon is None:  # :
            colon = index
        elif byte == 0x3B:  # ; before the closing parenthesis: not an asm statement
            return


def _blank_span(out: bytearray, start: int, end: int) -> None:
    """Spaces over ``out[start:end]``, keeping its line structure: newlines, and a backslash that
    continues a line (blanking it would end a `#define` early: an `asm(...)` over continuation
    lines in a macro body)."""
    blank = out[start:end].translate(_SPACES_BUT_LINE_BREAKS)
    for backslash in _LINE_CONTINUATION.finditer(out, start, min(len(out), end + 2)):
        if backslash.start() < end:
            blank[backslash.start() - start] = 0x5C
    out[start:end] = blank


_SPACES_BUT_LINE_BREAKS = bytes(byte if byte in (0x0A, 0x0D) else 0x20 for byte in range(256))
_LINE_CONTINUATION = re.compile(rb"\\(?=\r?\n)")


def _blank_non_literal_message(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `static_assert(c, kMessage)` → `static_assert(c          )`: only a message that is one
    # (qualified) name after the last comma outside parentheses, so a condition's template
    # arguments (`is_same_v<A, B>`) and a literal message on a continuation line stay as written.
    close = _argument_list_end(view, match.end() - 1)
    if close is None:
        return
    commas = _top_level_commas(view, match.end(), close - 1)
    if commas and _MESSAGE_NAME.fullmatch(view, commas[-1] + 1, close - 1):
        _blank_span(out, commas[-1], close - 1)


def _top_level_commas(view: bytes, start: int, end: int) -> list[int]:
    """Positions of the commas in ``view[start:end]`` outside any nested bracket: the separators
    of one argument list."""
    depth, commas = 0, []
    for index in range(start, end):
        byte = view[index]
        if byte in b"([{":
            depth += 1
        elif byte in b")]}":
            depth -= 1
        elif byte == 0x2C and depth == 0:  # ,
            commas.append(index)
    return commas


def _blank_cluster_limit(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `__launch_bounds__(256, 1, 1)`: CUDA 12's third argument (the most thread blocks of a
    # cluster); the grammar reads at most two. The first two stay as written.
    close = _argument_list_end(view, match.end() - 1)
    if close is None:
        return
    commas = _top_level_commas(view, match.end(), close - 1)
    if len(commas) >= 2:
        _blank_span(out, commas[1], close - 1)


_MESSAGE_NAME = re.compile(rb"\s*[A-Za-z_][\w:]*\s*")


def _blank_unnamed_pointer(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # After a type (`…>` or a name), not after an operator: `a *= 0` has no space and no type.
    if re.search(rb"[\w>]\s*\Z", view[max(0, match.start() - 64) : match.start()]):
        _blank_group(1)(match, out, view)


def _parenthesised_initialiser(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # Only a declaration: the statement so far is a type (qualifiers, a name, template arguments),
    # so `return x * f(p.y);` and `y = x & f(p.y);` stay as written.
    statement = max(view.rfind(b";", 0, match.start()), view.rfind(b"{", 0, match.start()),
                    view.rfind(b"}", 0, match.start())) + 1
    if _DECLARED_TYPE.fullmatch(view, statement, match.start()):
        out[match.start(1)] = 0x3D  # `(` → `=`
        out[match.start(3)] = 0x20  # `)` → ` `


_DECLARED_TYPE = re.compile(rb"\s*(?:(?:const|volatile|static|constexpr)\s+)*[A-Za-z_][\w:]*(?:\s*<[^;{}()]*>)?(?:\s+const)?\s*")


def _blank_try_of_macro_handler(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # The `try` block's `}` followed by an upper-case macro (with or without arguments and `;`)
    # instead of `catch`: `try` and the macro are blanked, the block stays.
    close = _block_end(view, match.end() - 1)
    if close is None:
        return
    handler = re.compile(rb"\s*(_*[A-Z][A-Z0-9_]*)\b(?:\s*\([^()]*\))?\s*;?").match(view, close)
    if handler is None:
        return
    _blank_group(1)(match, out, view)
    _blank_span(out, handler.start(1), handler.end())


def _blank_deleted_definition(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `= delete` after a function's parameter list and qualifiers, and nothing else (`delete p;`
    # stays). The pattern is only `delete;` so that it is searched for as a literal: a pattern
    # opening at every `)` of a file costs more.
    if match.start() and _WORD_BYTE.match(view, match.start() - 1):
        return  # `undelete;`
    head = _DELETED_FUNCTION_HEAD.search(view, max(0, match.start() - _DELETED_LOOKBACK_BYTES), match.start())
    if head is not None:
        _blank_span(out, head.start(1), match.start() + len(b"delete"))


_WORD_BYTE = re.compile(rb"\w")
_DELETED_LOOKBACK_BYTES = 256
_DELETED_FUNCTION_HEAD = re.compile(rb"\)\s*(?:(?:const|volatile|noexcept|override|final)\b\s*|&&?\s*)*(=)\s*\Z")


def _block_end(view: bytes, opening: int) -> int | None:
    """The byte after the `}` that closes the `{` at ``opening``; None when it never closes."""
    return _balanced_end(view, opening, 0x7B, 0x7D)


def _balanced_end(view: bytes, opening: int, open_byte: int, close_byte: int) -> int | None:
    """The byte after the ``close_byte`` that balances the ``open_byte`` at ``opening`` (nested
    pairs counted); None when it never closes."""
    depth = 0
    for index in range(opening, len(view)):
        if view[index] == open_byte:
            depth += 1
        elif view[index] == close_byte:
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _comma_assignment(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # `(X = Xm, Y = Ym).run(exec);` (MatX's operator sets): the grammar cannot read a parenthesised
    # comma expression whose first operand is an assignment; with that `=` written `|` (one byte)
    # the shape parses. Only where the parentheses hold a top-level comma.
    opening = match.start(1)
    end = _balanced_end(view, opening, ord("("), ord(")"))
    if end is None:
        return
    depth = 0
    for index in range(opening + 1, end - 1):
        byte = view[index]
        if byte in b"([{":
            depth += 1
        elif byte in b")]}":
            depth -= 1
        elif byte == ord(",") and depth == 0:
            out[match.start(2)] = ord("|")
            return


def _blank_typename(match: re.Match[bytes], out: bytearray, view: bytes) -> None:
    # Only in an expression (after `=`, `(`, `,`, `{`, `return`, `?`, `:`): in a declaration
    # (`typename X::type v;`) or a template parameter list the grammar reads `typename` fine.
    before = view[: match.start()].rstrip()
    if before.endswith((b"=", b"(", b",", b"{", b"?", b"return")) or (before.endswith(b":") and not before.endswith(b"::")):
        _blank_group(1)(match, out, view)
    elif before.endswith((b";", b"}")) and _member_of_temporary(view, match.end()):
        # A statement that opens with a temporary whose member it calls — CUB's block primitives,
        # `typename K::BlockReduceT(smem).Sum(v);` — is an expression; `typename X::T (v);` stays
        # the declaration it is.
        _blank_group(1)(match, out, view)


def _member_of_temporary(view: bytes, start: int) -> bool:
    """The type name at ``start`` is followed by an argument list (`(...)` or `{...}`) and then
    by `.` or `->`: a temporary whose member is used, not a declarator."""
    opening = re.compile(rb"[\w:<>, ]*?\s*([({])").match(view, start)
    if opening is None:
        return False
    close = {0x28: 0x29, 0x7B: 0x7D}[view[opening.start(1)]]
    depth = 0
    for index in range(opening.start(1), len(view)):
        byte = view[index]
        if byte == view[opening.start(1)]:
            depth += 1
        elif byte == close:
            depth -= 1
            if depth == 0:
                return view[index + 1 :].lstrip().startswith((b".", b"->"))
        elif byte == 0x3B:  # `;` before the argument list closes: not an expression
            return False
    return False


# Calling-convention and export macros that sit between a return type and a function name.
ATTRIBUTE_MACROS = ("CUDART_CB", "CUDA_CB", "CUDAAPI", "CALLBACK", "WINAPI", "APIENTRY", "__stdcall", "__cdecl")

# (needle, pattern, rewrite): a pattern runs only on files that contain its needle.
_NORMALISATIONS: tuple[tuple[bytes, re.Pattern[bytes], Callable[[re.Match[bytes], bytearray, bytes], None]], ...] = (
    (b"__align__", re.compile(rb"\b(__align__\s*\((?:[^()\n]|\([^()\n]*\))*\))"), _blank_group(1)),
    # A `#pragma` as the body of an unbraced `for (…)`/`if (…)`/`else` (`for (…)` then `#pragma
    # unroll` then the inner loop): the grammar wants a statement there. Its trailing comment stays.
    (b"pragma", re.compile(rb"(?:\)|\belse)[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*(#[ \t]*pragma\b(?:[ \t]*[^\s])*)"),
     _blank_group(1)),
    # An anonymous enum with an underlying type (`typedef enum : int { A, B } mode_t;`): the grammar
    # reads the base only after a name.
    (b"enum", re.compile(rb"\benum(?:\s+(?:class|struct))?\s*(:\s*[A-Za-z_][\w:]*(?:\s+[A-Za-z_][\w:]*)*)\s*\{"),
     _blank_group(1)),
    # GNU attributes: the grammar reads them before a declaration, not in a type
    # (`using v4 = float __attribute__((vector_size(16)));`, HIP's vector typedefs); nothing is
    # analysed from them. Up to three levels of parentheses inside the double ones.
    (b"__attribute__", re.compile(rb"\b(__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\))"), _blank_group(1)),
    (b"__cluster_dims__", re.compile(rb"\b(__cluster_dims__\s*\([^()\n]*\))"), _blank_group(1)),
    (b"__maxnreg__", re.compile(rb"\b(__maxnreg__\s*\([^()\n]*\))"), _blank_group(1)),
    # (No `\b` before the name: a pattern that opens with a literal is searched for as one.)
    (b"__launch_bounds__", re.compile(rb"__launch_bounds__\s*\("), _blank_cluster_limit),
    # `friend void f(S const&) = delete;`, `template <class S> void f(S) = delete;`: the grammar
    # reads a deleted function only as a member definition; outside one (a friend, file scope) it
    # takes `delete` for an expression. A deleted function is a declaration without a body.
    (b"delete", re.compile(rb"delete\s*;"), _blank_deleted_definition),
    (b"]", re.compile(rb"\]\s*((?:__host__|__device__)(?:\s+(?:__host__|__device__))*)(?=\s*(?:\(|\{|mutable\b))"),
     _blank_group(1)),
    # `[=] XGBOOST_DEVICE(int i) {`: a lambda's execution space as a macro of a header the file does
    # not define (an upper-case name that says DEVICE or HOST, right after a capture list).
    (b"]", re.compile(rb"\[\s*(?:[=&]|\*?this|&?\w+)?(?:\s*,\s*(?:[=&]|\*?this|&?\w+))*\s*\]\s*"
                      rb"((?:__host__\s+|__device__\s+)*_*[A-Z][A-Z0-9_]*(?:DEVICE|HOST)[A-Z0-9_]*"
                      rb"(?:\s+(?:__host__|__device__|_*[A-Z][A-Z0-9_]*(?:DEVICE|HOST)[A-Z0-9_]*))*)(?=\s*(?:\(|\{|mutable\b))"),
     _blank_group(1)),
    # `ctx.task(lX.read())->*[&](cudaStream_t s) { … };` (CUDASTF): a member-pointer operator whose
    # right operand is a lambda, which the grammar reads only as a member name; a product keeps the
    # call and the lambda as its two operands.
    (b"->*", re.compile(rb"(->\*)(?=\s*\[)"), _replace_group(1, b" * ")),
    # `__host__ __device__ __forceinline__ friend bool operator==(…)`: the grammar reads `friend`
    # first; the words are swapped on their line, the same length.
    (b"friend", re.compile(rb"(?:^|(?<=[;{}]))[ \t]*((?:(?:\[\[[^\[\]\n]*\]\]|__host__|__device__|__forceinline__|__inline__"
                           rb"|inline|constexpr|_*[A-Z][A-Z0-9_]{2,})[ \t]+)+)friend\b", re.MULTILINE), _friend_first),
    (b"new", re.compile(rb"\bnew\s+((?:(?:const|volatile|unsigned|signed|struct)\s+)*[\w:]+(?:\s*<[^<>;\n]*>)?\s*[*\s]*\*\s*)(?=\[)"),
     _blank_qualifiers_and_stars),
    (b"asm", re.compile(rb"\b(?:asm|__asm__|__asm)\s*(?:volatile\s*|__volatile__\s*)?\("), _blank_asm_operands),
    (b"template", re.compile(rb"\b((?:extern\s+)?template\s+(?:class|struct)\s+[\w:]+\s*<[^;{}]*>\s*;)"), _blank_group(1)),
    (b"typeid", re.compile(rb"\b(typeid)(?=\s*\()"), _replace_group(1, b"sizeof")),
    # `template <typename T = void*>`: the grammar reads no pointer in a type parameter's default.
    (b"*", re.compile(rb"\b(?:typename|class)\s+\w+\s*=\s*(?:const\s+)?[\w:]+(?:\s*<[^<>;{}()]*>)?\s*(\*+)(?=\s*[,>])"),
     _blank_group(1)),
    # `float &__restrict__ x`: the grammar takes the qualifier after `*`, not after `&`.
    (b"__restrict", re.compile(rb"&\s*(__restrict__|__restrict)\b"), _blank_group(1)),
    # `int s = {}` as a default argument: the grammar wants a type before the braces there.
    (b"{", re.compile(rb"=\s*(\{\s*[\w.+\-]*\s*\})(?=\s*[,)])"), _replace_braces_by_zero),
    # `h.operator float()`: a conversion operator called by name, read as one member name.
    (b"operator", re.compile(rb"(?:\.|->)\s*operator(\s+)[A-Za-z_]\w*\s*\(\s*\)"), _underscore_group(1)),
    # `&(operator*())`, `return operator->();`: an operator called by name inside an expression (not
    # its declaration, which a return type precedes) is read as one name.
    (b"operator", re.compile(rb"(?:[(,=!]|\breturn)\s*operator(\*|->|\[\]|\(\)|[+\-~!]|==|!=|<=|>=)(?=\s*\()"),
     _underscore_group(1)),
    (b"typename", re.compile(rb"\b(typename)\s+(?=[\w:<>, ]+::\s*\w+\s*[{(])"), _blank_typename),
    # `template <typename T, std::enable_if_t<C>* = nullptr>`, a function's `typename T::Scalar* = 0)`:
    # the grammar wants a declarator name after a pointer parameter's `*` (`*p = nullptr` parses); only a null default (`0` only
    # after a space), so `a *= 0` is never touched.
    (b"*", re.compile(rb"(?<![*/])(\*+)(?:\s+=\s*(?:nullptr|NULL|0)|\s*=\s*(?:nullptr|NULL))\s*(?=[,>)])"),
     _blank_unnamed_pointer),
    # `"v" NGP_VERSION`, `"%" PRId64`: a string literal glued to a macro that expands to one (a `-D`
    # definition, <cinttypes>'s format macros); written as a literal of the same length.
    (b'"', re.compile(rb'"[ \t]*(_*[A-Z][A-Z0-9_]*|PRI[diouxX]\w*)\b(?=[ \t]*(?:[;,)"]|<<))'), _macro_as_string_literal),
    # `(X = Xm, Y = Ym).run(exec);`: a statement that opens with a parenthesised comma expression.
    (b"=", re.compile(rb"(?:^|[;{}])[ \t\r\n]*(\()[ \t]*[A-Za-z_][\w.]*(?:\[[^\]\n]*\])*[ \t]*(=)(?!=)"), _comma_assignment),
    # `.get<std::vector<Opt<vec3>>>()`: three template closers in a row.
    (b">>>", re.compile(rb"\b[A-Za-z_]\w*(<)[A-Za-z_][\w:]*(>)>>"), _flatten_innermost_template),
    # `static_assert(cond, kMessage)`: the grammar reads only a string literal as the message.
    (b"static_assert", re.compile(rb"\bstatic_assert\s*\("), _blank_non_literal_message),
    # `(void (K::*)(int, std::string)) &K::f` (pybind11's overload cast): the grammar has no
    # pointer-to-member type in an abstract declarator; a plain function pointer keeps the shape.
    (b"::*", re.compile(rb"\(\s*((?:\w+(?:\s*<[^<>()]*>)?\s*::\s*)+)\*\s*(?:const\s*)?\)"), _blank_group(1)),
    # `auto const &a(q.first);` in a body: a reference or pointer initialised in parentheses from a
    # member is read as a function declarator whose parameter is `q.first`; written with `=`.
    (b"(", re.compile(rb"[&*]\s*\w+\s*(\()([^(),;]*(?:\.|->)[^(),;]*)(\))\s*;"), _parenthesised_initialiser),
    # `try { … } THRUST_CATCH;`: the handler comes from a macro the grammar cannot expand; the
    # block is read as a plain compound statement and the macro blanked.
    (b"try", re.compile(rb"\b(try)\s*\{"), _blank_try_of_macro_handler),
    *((name.encode(), re.compile(rb"(?<![\w#])(" + re.escape(name.encode()) + rb")\b(?=\s*[\w*(])"), _blank_group(1))
      for name in ATTRIBUTE_MACROS),
)


def _code_view(data: bytes, comments: list[tuple[int, int]] | None = None) -> bytes:
    """``data`` with comments and string/char literal contents replaced by filler of equal length,
    so the normalisation patterns only ever match code."""
    view = bytearray(data)
    for start, end in comment_spans(data) if comments is None else comments:
        view[start:end] = _NOT_NEWLINE.sub(b" ", data[start:end])
    for match in _LITERAL.finditer(bytes(view)):
        start, end = match.span()
        view[start + 1 : end - 1] = b"x" * max(end - start - 2, 0)
    return bytes(view)


_NOT_NEWLINE = re.compile(rb"[^\n]")
# (`\` then a newline continues a literal on the next line: FlashMLA's long static_assert messages.)
_LITERAL = re.compile(rb'"(?:\\[\s\S]|[^"\\\n])*"' + rb"|(?<![\w'])'(?:\\[\s\S]|[^'\\\n])*'")

# ---------------------------------------------------------------------------------------------
# Repair: hide a macro-like name that the grammar reads as broken code.

# `CUB_NAMESPACE_BEGIN`, `_CCCL_HOST_DEVICE`, `__KITTENS_DEFINE_OP__(load)`, `HD`: upper case with
# an underscore or at most 3 letters, or any upper-case word given arguments (Catch2's
# `SECTION("name") {`); not followed by what makes it a value (`=`, `;`, `,`, `]`).
_MACRO_WORD = re.compile(rb"(?<![\w#.>:])(_*[A-Z][A-Z0-9]*_[A-Z0-9_]*|[A-Z]{2,3}|[A-Z][A-Z0-9]{3,}(?=\())\b(?!\s*[=:;,\]])")
_LOOKBACK_LINES = 8
_LOOKAHEAD_LINES = 3
# What follows a name used as a statement call: `(…);` to the line's end.
_CALL_STATEMENT = re.compile(rb"\s*\(.*\)\s*;\s*$")
# The end of an expression: what precedes a statement that is glued to an unterminated one.
_EXPRESSION_END = re.compile(rb"[\w.\]'\"]\s*\Z")


def _masks_an_error(text: bytes, start: int, code: bytes, name_end: int, missing: bool) -> bool:
    """Whether hiding the statement call `NAME(…);` at ``start`` would hide a real error: a MISSING
    `;` next to it, or an unterminated expression right before it (`x = 1.0f` then `CHECK(i, n);`
    parses once the call is blank). A use that supplies the `;` itself hides none: ``_hide``
    writes that `;`."""
    if not _CALL_STATEMENT.match(code, name_end):
        return False
    if _supplies_the_semicolon(text, start, text.rfind(b"\n", 0, start) + 1 + name_end):
        return False
    return missing or _EXPRESSION_END.search(text, max(0, start - 256), start) is not None


# `M(, x)`: a macro use whose first argument is empty.
_EMPTY_FIRST_ARGUMENT = re.compile(rb"[ \t]*\(\s*,")
# What ends an expression statement but its `;`: a name, a literal, `)` or `]`.
_EXPRESSION_LAST_BYTE = re.compile(rb"[\w)\]'\"]")
# A macro definition's parameter list, then its body's first word and a `;`.
_BODY_OPENS_WITH_STATEMENT = re.compile(rb"[ \t]*(\w+)[^)\n]*\)(?:[ \t]|\\\r?\n)*(\w+)[ \t]*;")


def _supplies_the_semicolon(text: bytes, start: int, name_end: int) -> bool:
    """Whether the macro use at ``start`` ends the expression statement before it: its first
    argument is empty and the code before it is an expression without `;` (`kernel<<<g, b>>>(p)`
    then `CHECK_CUDA(, debug)`, a macro `A; if (debug) sync();` whose empty `A` leaves the `;`;
    a launch's `<<<g, b>>>` cannot be a macro argument, its comma splits it). When the file
    defines the macro, its body must begin with that first parameter and `;`; a macro defined
    elsewhere is taken at its word, the empty argument being the idiom's mark."""
    if not _EMPTY_FIRST_ARGUMENT.match(text, name_end):
        return False
    before = _code_view(text[max(0, start - 256) : start]).rstrip()
    if not before or not _EXPRESSION_LAST_BYTE.match(before, len(before) - 1):
        return False
    definition = re.search(rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(text[start:name_end]) + rb"\(", text, re.MULTILINE)
    if definition is None:
        return True
    opening = _BODY_OPENS_WITH_STATEMENT.match(text, definition.end())
    return opening is not None and opening.group(1) == opening.group(2)


_MAX_REPAIRS = 6
_MAX_ATTEMPTS = 24


def first_error_byte(tree: tree_sitter.Tree) -> int | None:
    """Start byte of the earliest ERROR/MISSING node below the root (leading comments skipped)."""
    return _first_error(tree)[0]


def _first_error(tree: tree_sitter.Tree) -> tuple[int | None, bool]:
    """(start byte of the earliest ERROR/MISSING node, whether it is a MISSING token)."""
    nodes = tree_sitter.QueryCursor(_error_query()).captures(tree.root_node).get("e", [])
    if not nodes:
        return None, False
    inner = [candidate for candidate in nodes if candidate.parent is not None]
    node = min(inner or nodes, key=lambda candidate: (candidate.start_byte, -candidate.end_byte))
    if not node.is_missing:
        for child in node.children:
            if child.type != "comment":
                return child.start_byte, False
    return node.start_byte, node.is_missing


@functools.cache
def _error_query() -> tree_sitter.Query:
    import tree_sitter_cuda

    return tree_sitter.Query(tree_sitter.Language(tree_sitter_cuda.language()), "[(ERROR) (MISSING)] @e")


def _repair(text: bytes, tree: tree_sitter.Tree, parser: tree_sitter.Parser) -> tuple[bytes, tree_sitter.Tree, list[str]]:
    hidden: list[str] = []
    tried: set[bytes] = set()
    attempts = 0
    error, missing = _first_error(tree)
    while error is not None and len(hidden) < _MAX_REPAIRS and attempts < _MAX_ATTEMPTS:
        improved = False
        for name in _candidates(text, error, missing):
            if name in tried:
                continue
            tried.add(name)
            attempts += 1
            masked = _hide(text, name)
            candidate_tree = parser.parse(masked)
            candidate_error, candidate_missing = _first_error(candidate_tree)
            if candidate_error is None or candidate_error > error:
                text, tree, error, missing = masked, candidate_tree, candidate_error, candidate_missing
                hidden.append(name.decode())
                improved = True
                break
            if attempts >= _MAX_ATTEMPTS:
                break
        if not improved:
            break
    return text, tree, hidden


# A function-like macro the file defines: `#define MAKE_optimizer32bit(name, gtype) …`.
_FUNCTION_MACRO = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)\(", re.MULTILINE)
# What opens a scope that still counts as file scope: `namespace x {`, `extern "C" {`.
_OUTER_SCOPE = re.compile(rb"\b(?:namespace|extern)\b[^;{}]*$")
# A preprocessor directive with its continuation lines.
_DIRECTIVE_TEXT = re.compile(rb"^[ \t]*#(?:[^\n\\]|\\.|\\\r?\n)*", re.MULTILINE)
# An argument list that opens on the macro name's own line.
_SAME_LINE_OPENING = re.compile(rb"[ \t]*\(")


def _hide_file_scope_macro_uses(
    text: bytes, tree: tree_sitter.Tree, parser: tree_sitter.Parser
) -> tuple[bytes, tree_sitter.Tree, list[str]]:
    """Blank the uses, at file (or namespace) scope, of the function-like macros the file itself
    defines, with their argument lists over any number of lines: the instantiation macros
    (`MAKE_optimizer32bit(ADAM, half)`, several on a line or one per line with a `;`, any case)
    that expand to declarations nvcc sees and the grammar reads as a broken declaration. Kept
    only when it moves the first error further down (or removes every error)."""
    names = set(_FUNCTION_MACRO.findall(text))
    if not names:
        return text, tree, []
    view = _code_view(text)
    out = bytearray(text)
    hidden: list[str] = []
    scopes: list[bool] = []  # per open brace: whether it keeps file scope (namespace, extern "C")
    # Braces, directives (skipped whole, continuation lines too) and the macros' names, in order.
    tokens = re.compile(rb"[{}]|" + _DIRECTIVE_TEXT.pattern + rb"|(?<![\w#])(?:"
                        + b"|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)) + rb")\b",
                        re.MULTILINE)
    index = 0
    while (token := tokens.search(view, index)) is not None:
        index = token.end()
        lexeme = token.group()
        if lexeme == b"{":
            statement_start = max(view.rfind(b";", 0, token.start()), view.rfind(b"}", 0, token.start()),
                                  view.rfind(b"{", 0, token.start())) + 1
            scopes.append(bool(_OUTER_SCOPE.search(view[statement_start : token.start()])))
        elif lexeme == b"}":
            if scopes:
                scopes.pop()
        elif not lexeme.lstrip().startswith(b"#") and all(scopes):
            close = _argument_list_end(view, token.end())
            if close is None:
                continue
            _blank_span(out, _with_linkage_before(view, token.start()), close)
            if lexeme.decode() not in hidden:
                hidden.append(lexeme.decode())
            index = close
    if not hidden:
        return text, tree, []
    masked = bytes(out)
    before = first_error_byte(tree)
    candidate = parser.parse(masked)
    after_error = first_error_byte(candidate)
    if after_error is None or (before is not None and after_error > before):
        return masked, candidate, hidden
    return text, tree, []


# `extern` / `template` right before an instantiation macro's use (ggml's `extern
# DECL_FATTN_MMA_F16_CASE(…);`): the macro expands to the declaration it qualifies.
_LINKAGE_BEFORE = re.compile(rb"\b(?:extern|template)\s+\Z")


def _with_linkage_before(view: bytes, start: int) -> int:
    """``start``, or the start of an `extern`/`template` keyword written just before it."""
    found = _LINKAGE_BEFORE.search(view, max(0, start - 32), start)
    return found.start() if found is not None else start


def _argument_list_end(view: bytes, start: int) -> int | None:
    """The byte after the `)` that closes the argument list opening at ``start`` (spaces and
    newlines before its `(` allowed); None when none opens there or it never closes."""
    index = start
    while index < len(view) and view[index] in b" \t\r\n":
        index += 1
    if index >= len(view) or view[index] != 0x28:
        return None
    return _balanced_end(view, index, 0x28, 0x29)


def _candidates(text: bytes, error: int, missing: bool = False) -> list[bytes]:
    """Macro-like names on the error line and the few code lines above it, nearest first (an
    upper-case name, or a function-like macro the file defines, used with arguments), then on the
    three code lines below it; then the upper-case names whose open argument lists hold the
    error, outermost first."""
    defined = set(_FUNCTION_MACRO.findall(text))
    objects = set(_OBJECT_MACRO.findall(text))
    line_start = text.rfind(b"\n", 0, error) + 1
    names: list[bytes] = []
    lines_seen = 0
    end = text.find(b"\n", error)
    end = len(text) if end < 0 else end
    while line_start >= 0 and lines_seen <= _LOOKBACK_LINES:
        code = text[line_start:end].split(b"//", 1)[0]
        if code.strip() and not code.lstrip().startswith((b"*", b"/*", b"#")):
            names.extend(match.group(1) for match in _MACRO_WORD.finditer(code) if match.group(1) not in names
                         and not _masks_an_error(text, line_start + match.start(1), code, match.end(1), missing))
            if defined:
                names.extend(match.group(1) for match in _CALLED_NAME.finditer(code)
                             if match.group(1) in defined and match.group(1) not in names)
            if objects:  # `else { undefined_error }`: an object-like macro the file defines as a statement
                names.extend(word for word in _WORD.findall(code) if word in objects and word not in names)
            names.extend(name for name in _CONDITION_MACRO.findall(code) if name not in names)
            lines_seen += 1
        if line_start == 0:
            break
        end = line_start - 1
        line_start = text.rfind(b"\n", 0, end) + 1
    # The code lines just below: a MISSING `;` is placed at the end of the line before the macro
    # that caused it (`CUTLASS_DEVICE bool next()` after a constructor), and an ERROR may start at
    # `template` lines above the macro inside the body it opens.
    position, lines_seen = text.find(b"\n", error), 0
    while position >= 0 and lines_seen < _LOOKAHEAD_LINES:
        end = text.find(b"\n", position + 1)
        code = text[position + 1 : len(text) if end < 0 else end].split(b"//", 1)[0]
        if code.strip() and not code.lstrip().startswith((b"*", b"/*", b"#")):
            # (Around a MISSING `;`, a statement `CHECK(i, n);` is no cause: hiding it would hide the
            # real missing `;` before it. The same filter applies to the lines above.)
            names.extend(match.group(1) for match in _MACRO_WORD.finditer(code) if match.group(1) not in names
                         and not _masks_an_error(text, position + 1 + match.start(1), code, match.end(1), missing))
            lines_seen += 1
        position = end
    names.extend(name for name in _enclosing_macro_calls(text, error) if name not in names)
    return names


_CALLED_NAME = re.compile(rb"(?<![\w#.>:])([A-Za-z_]\w*)\s*\(")
# An object-like macro the file defines (`#define undefined_error TORCH_CHECK(false, "…");`).
_OBJECT_MACRO = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?=[ \t])", re.MULTILINE)
_WORD = re.compile(rb"(?<![\w#.>:])[A-Za-z_]\w*\b")
# How far back an enclosing argument list is looked for: a dispatch macro's body is rarely longer.
_ENCLOSING_LOOKBACK_BYTES = 16_384


def _enclosing_macro_calls(text: bytes, error: int) -> list[bytes]:
    """Upper-case names whose argument list is still open at ``error`` (TransformerEngine's
    `TYPE_SWITCH(dtype, T, launcher(…););`, nested dispatch macros), outermost first."""
    low = max(0, error - _ENCLOSING_LOOKBACK_BYTES)
    view = _code_view(text[low:error])
    names: list[bytes] = []
    depth = 0
    for index in range(len(view) - 1, -1, -1):
        byte = view[index]
        if byte == 0x29:  # )
            depth += 1
        elif byte == 0x28:  # (
            if depth:
                depth -= 1
                continue
            name = _NAME_BEFORE.search(view, 0, index)
            if name is None:
                continue
            macro = _MACRO_WORD.match(name.group(1) + b"(")
            if macro is not None and macro.end() == len(name.group(1)):
                names.append(name.group(1))
    return names[::-1]


_NAME_BEFORE = re.compile(rb"(?<![\w#.>:])([A-Za-z_]\w*)\s*\Z")
# A name right after `if`/`while`/`switch`, where C++ wants `(` (or `constexpr`/`consteval`): a
# macro whose expansion brings the condition's parentheses.
_CONDITION_MACRO = re.compile(rb"(?<![\w#])(?:if|while|switch)[ \t]+(?!constexpr\b|consteval\b)([A-Za-z_]\w*)(?=\s*\()")
_CONDITION_KEYWORD_BEFORE = re.compile(rb"(?<![\w#])(?:if|while|switch)[ \t]+\Z")


def _follows_condition_keyword(view: bytes, start: int) -> bool:
    return _CONDITION_KEYWORD_BEFORE.search(view, max(0, start - 80), start) is not None


def _hide(text: bytes, name: bytes) -> bytes:
    """``text`` with every use of the macro ``name`` blanked, with its argument list when one opens
    on the same line (balanced, over as many lines as it takes: `TORCH_CHECK(\n  n > 0,\n  "…")`)."""
    pattern = re.compile(rb"(?<![\w#])" + re.escape(name) + rb"\b")
    comments = comment_spans(text)
    view = _code_view(text, comments)
    out = bytearray(text)
    directives = [found.span() for found in _DIRECTIVE_TEXT.finditer(view)]
    # A body in parentheses, or one defined elsewhere (a header): the macro may stand as a condition.
    definition = re.search(rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(name) + rb"\([^)\n]*\)(?:[ \t]|\\\r?\n)*(.)",
                           view, re.MULTILINE)
    parenthesised = definition is None or definition.group(1) == b"("
    for match in pattern.finditer(view):
        if any(start <= match.start() < stop for start, stop in directives):
            continue  # a #define (its continuation lines too) or an #include stays as written
        end = match.end()
        if _follows_condition_keyword(view, match.start()) and parenthesised:
            # `if check_cu (f(x)) return;` with `#define check_cu(c) (check(c, __FILE__))`: the
            # macro's body is parenthesised, so the argument list stays as the `if`'s parentheses.
            _blank_span(out, match.start(), end)
            continue
        if _SAME_LINE_OPENING.match(view, end) is not None:
            end = _argument_list_end(view, end) or end
        semicolon = _supplies_the_semicolon(text, match.start(), match.end())
        _blank_span(out, match.start(), end)
        if semicolon:
            out[match.start()] = 0x3B  # the `;` the empty first argument leaves in the expansion
    for start, stop in comments:
        out[start:stop] = text[start:stop]  # a comment in the arguments stays: FX901 reads a marker there
    return bytes(out)
