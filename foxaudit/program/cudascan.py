"""One CUDA file (``.cu``/``.cuh``) → a ``CudaSummary``: kernels, constants, host memcpy sites,
and every place C++ code launches or takes a kernel.

tree-sitter-cuda is error-tolerant, so a file with ERROR nodes still yields the kernels and
constants that parsed. Kernel names inside Python strings (CuPy ``RawKernel``/``RawModule``
source given inline) are found by :func:`kernels_in_source_text` with the same rules.

Kernel uses (``Launch``) are syntactic: the callee of ``<<<…>>>`` (templates, ``ns::k``, split
over lines), a function passed to a launch API (``cudaLaunchKernel*``,
``cudaLaunchCooperativeKernel``, ``cuLaunchKernel``, ...), the ``func`` of a graph kernel node,
a function taken as a value (a pointer initialised or assigned, an argument, an initializer
list entry, through casts and ``&``), and a string given to ``cuModuleGetFunction`` & co. The
scanner does not know which names are kernels; the linkage keeps the uses of defined kernels.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter

from foxaudit.program.pyscan import Span
from foxaudit.sources.base import SourceFile, ts_language
from foxaudit.sources.constexpr import evaluate
from foxaudit.sources.cuda import enclosing_function, execution_spaces, function_name
from foxaudit.sources.preprocess import DEAD_CONDITION

_QUERY_TEXT = """
(function_definition) @def
(preproc_def) @define
(declaration) @decl
(call_expression) @call
(init_declarator value: (_)) @init
(assignment_expression right: (_)) @assign
(initializer_list) @list
(return_statement) @return
(template_function) @template
(string_literal) @string
(raw_string_literal) @raw
"""

_GLOBAL_IN_TEXT = re.compile(r"__global__[^;{(]*?\b([A-Za-z_]\w*)\s*\(", re.DOTALL)
# Launch attributes between `void` and the name take a parenthesised argument list themselves:
# `__global__ void __launch_bounds__(256) k(...)` names `k`, not `__launch_bounds__`.
_LAUNCH_ATTRIBUTE = re.compile(r"\b__(?:launch_bounds|cluster_dims|maxnreg|block_size)__\s*\((?:[^()]|\([^()]*\))*\)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
# APIs that launch the function they are given (runtime, driver, graph nodes).
_LAUNCH_API = re.compile(r"^(cudaLaunch\w*|cuLaunch\w*|cudaGraphAddKernelNode|cudaGraphExecKernelNodeSetParams|cudaGraphKernelNodeSetParams|cudaGraphAddNode)$")
# APIs that look a kernel up by its (extern "C") name; the CUfunction is then launched.
_BY_NAME_API = frozenset({"cuModuleGetFunction", "cuLibraryGetKernel", "cudaLibraryGetKernel", "cuModuleGetFunction_v2", "nvrtcAddNameExpression", "nvrtcGetLoweredName"})
# Nodes that wrap a function used as a value: `(void*)k`, `&k`, `(k)`, `k<float>`, `ns::k`.
_VALUE_WRAPPERS = frozenset({"cast_expression", "pointer_expression", "parenthesized_expression", "template_function", "qualified_identifier"})
_MEMCPY = re.compile(r"^(cuda|cu)Memcpy\w*$")
_DIRECTIONS = {
    "DtoH": "DeviceToHost",
    "HtoD": "HostToDevice",
    "DtoD": "DeviceToDevice",
    "HtoH": "HostToHost",
    "DtoA": "DeviceToArray",
    "AtoD": "ArrayToDevice",
    "AtoH": "ArrayToHost",
    "HtoA": "HostToArray",
}


@functools.cache
def _query() -> tree_sitter.Query:
    return tree_sitter.Query(ts_language("cuda"), _QUERY_TEXT)


@dataclass(frozen=True)
class Kernel:
    name: str
    path: str
    span: Span
    template: bool
    end_line: int  # last line of the definition (its body)


@dataclass(frozen=True)
class CudaConstant:
    name: str
    text: str  # the value as written
    value: float | int | None  # evaluated when it is a plain number or simple arithmetic
    span: Span
    kind: str  # define | constexpr


@dataclass(frozen=True)
class Memcpy:
    function: str  # cudaMemcpyAsync, cuMemcpyDtoH_v2, ...
    direction: str  # DeviceToHost | HostToDevice | DeviceToDevice | Default | unknown
    enclosing: str  # name of the enclosing C++ function
    device_code: bool  # inside a __global__/__device__ function
    span: Span


@dataclass(frozen=True)
class Launch:
    """A C++ use of a function that may be a kernel (the linkage keeps those of kernels)."""

    kernel: str  # for a name pasted together (how == PASTED): its pattern, `*` for each pasted parameter
    enclosing: str  # unused by the linkage (self-uses are told apart by line); '' when not computed
    span: Span
    how: str = "<<<>>>"  # <<<>>> | the launch API | graph node | pointer | the by-name API


@dataclass
class CudaSummary:
    path: str
    kernels: list[Kernel] = field(default_factory=list)
    constants: list[CudaConstant] = field(default_factory=list)
    memcpys: list[Memcpy] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    generated: bool = False
    includes: list[str] = field(default_factory=list)
    # `#include <ATen/native/cuda/SortUtils.cuh>`: found through the include path, not beside the file.
    angle_includes: list[str] = field(default_factory=list)
    # A compile test: FileCheck (or lit) directives in its comments (`// CHECK:`, `; SMXX-LABEL:`,
    # `// RUN:`) check what nvcc makes of it; its kernels are the test's subjects, never launched.
    compile_test: bool = False


# A FileCheck directive (`CHECK:`, `CHECK-NEXT:`, a custom prefix's `SMXX-LABEL:`) or lit's `RUN:`
# line, at the start of a comment line.
_FILECHECK_DIRECTIVE = re.compile(
    r"^[ \t]*(?://+|;+|\*|#)?[ \t]*(?:RUN|CHECK(?:-[A-Z]+)?|[A-Z][A-Z0-9_]*-(?:LABEL|NEXT|SAME|DAG|NOT|EMPTY)):",
    re.MULTILINE)


def scan_cuda(source: SourceFile) -> CudaSummary:
    summary = CudaSummary(path=source.path)
    head = source.text[:600].lower()
    summary.generated = "@generated" in head or ("generated" in head and "do not edit" in head)
    summary.includes = re.findall(r'^\s*#\s*include\s*"([^"]+)"', source.text, re.MULTILINE)
    summary.angle_includes = re.findall(r'^\s*#\s*include\s*<([^>]+)>', source.text, re.MULTILINE)
    summary.compile_test = _FILECHECK_DIRECTIVE.search(source.text) is not None
    captures = {
        # Document order, nested nodes that start together innermost first (stable across runs).
        name: sorted(nodes, key=lambda node: (node.start_byte, node.end_byte))
        for name, nodes in tree_sitter.QueryCursor(_query()).captures(source.tree.root_node).items()
    }

    def span(node: tree_sitter.Node) -> Span:
        line, column = source.position(node.start_byte)
        end_line, end_column = source.position(node.end_byte)
        return Span(line, column, end_line, end_column)

    for node in captures.get("def", ()):
        if "__global__" not in execution_spaces(node):
            continue
        name = function_name(node)
        if name is None:
            continue
        template = node.parent is not None and node.parent.type == "template_declaration"
        summary.kernels.append(
            Kernel(source.node_text(name), source.path, span(name), template, source.position(node.end_byte)[0])
        )
    constants: dict[str, float | int | None] = {}
    for node in captures.get("define", ()):
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or value is None:
            continue
        text = _strip_comment(source.node_text(value))
        number = evaluate_c(text, constants)
        constants[source.node_text(name)] = number
        summary.constants.append(CudaConstant(source.node_text(name), text, number, span(name), "define"))
    for node in captures.get("decl", ()):
        if not any(c.type == "type_qualifier" and source.node_text(c) == "constexpr" for c in node.children):
            continue
        for declarator in node.children_by_field_name("declarator"):
            if declarator.type != "init_declarator":
                continue
            name = declarator.child_by_field_name("declarator")
            value = declarator.child_by_field_name("value")
            if name is None or value is None or name.type != "identifier":
                continue
            text = source.node_text(value).strip()
            number = evaluate_c(text, constants)
            constants[source.node_text(name)] = number
            summary.constants.append(CudaConstant(source.node_text(name), text, number, span(name), "constexpr"))
    uses: dict[tuple[str, str, int], Launch] = {}

    def use(node: tree_sitter.Node | None, how: str) -> None:
        while node is not None and node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]  # `a ? (b ? &k1 : &k2) : (…)`: nested choices, each in parentheses
        if node is not None and node.type == "conditional_expression":
            # `auto k = cond ? &k1<T> : &k2<T>; k<<<g, b>>>(p)`: either branch is the kernel taken.
            use(node.child_by_field_name("consequence"), how)
            use(node.child_by_field_name("alternative"), how)
            return
        name = node if node is not None and node.type == "type_identifier" else _function_value(node)
        if name is not None:
            where = span(name)
            uses.setdefault((source.node_text(name), how, where.line), Launch(source.node_text(name), "", where, how))

    for node in captures.get("call", ()):
        function = node.child_by_field_name("function")
        if function is None:
            continue
        if any(child.type == "kernel_call_syntax" for child in node.children):
            use(function, "<<<>>>")
            continue
        callee = source.node_text(function) if function.type == "identifier" else ""
        arguments = node.child_by_field_name("arguments")
        if arguments is not None:
            how = callee if _LAUNCH_API.match(callee) else "pointer"
            for argument in arguments.named_children:
                if callee in _BY_NAME_API and argument.type == "string_literal":
                    name = _string_literal(source.node_text(argument))
                    if name:
                        where = span(argument)
                        uses.setdefault((name, callee, where.line), Launch(name, "", where, callee))
                else:
                    use(argument, how)
        if not callee or not _MEMCPY.match(callee):
            continue
        enclosing, device_code = _enclosing_function(source, node)
        summary.memcpys.append(
            Memcpy(callee, _direction(source, callee, node), enclosing, device_code, span(node))
        )
    for node in captures.get("template", ()):
        # launch_kernel<G, ns::quantize_kernel<true>>(g): a kernel given as a template argument.
        arguments = node.child_by_field_name("arguments")
        for argument in arguments.named_children if arguments is not None else ():
            use(_template_value(argument), "pointer")
    for node in captures.get("init", ()):
        use(node.child_by_field_name("value"), "pointer")
    for node in captures.get("assign", ()):
        left = node.child_by_field_name("left")
        field_name = left.child_by_field_name("field") if left is not None and left.type == "field_expression" else None
        # cudaKernelNodeParams.func / CUDA_KERNEL_NODE_PARAMS.func: the kernel a graph node runs.
        graph_node = field_name is not None and source.node_text(field_name) == "func"
        use(node.child_by_field_name("right"), "graph kernel node" if graph_node else "pointer")
    for node in captures.get("list", ()):
        for entry in node.named_children:
            if entry.type != "string_literal":  # strings: with every other string, below
                use(entry, "pointer")
    for node in captures.get("return", ()):
        for entry in node.named_children:
            use(entry, "pointer")
    # Text the grammar does not parse (macro bodies, hidden macro uses): the first use of each name
    # per kind is enough (each is a whole-file mention; the linkage keeps those of kernels).
    seen: set[tuple[str, str]] = set()
    for line, name, how in (*_hidden_uses(source), *_macro_uses(source)):
        if (name, how) not in seen:
            seen.add((name, how))
            uses.setdefault((name, how, line), Launch(name, "", Span(line, 1, line, 1), how))
    for node in captures.get("string", ()):
        # `kernel_name = swap ? "gemm_swap_ab" : "gemm"`, `GET_KERNEL(module, "k_bf16")`: a string
        # that is a function's name names it for a by-name lookup (the by-name APIs, or any other).
        name = _named_in_string(source.node_text(node))
        if name:
            where = span(node)
            uses.setdefault((name, "name string", where.line), Launch(name, "", where, "name string"))
    for node in captures.get("raw", ()):
        # DeepEP's and DeepGEMM's JIT: host code writes the source of an instantiation in a raw
        # string (`fmt::format(R"(... reinterpret_cast<void*>(&barrier_impl<{}, {}>); ...)", ...)`),
        # compiled at run time and launched by handle: the kernel the text takes is launched.
        content = next((child for child in node.children if child.type == "raw_string_content"), None)
        if content is None:
            continue
        line, column = source.position(content.start_byte)
        body = source.node_text(content)
        for offset, name, how in _code_uses_in_text(body):
            where = _offset_span(body, offset, line, column)
            uses.setdefault((name, how, where.line), Launch(name, "", where, how))
    for line, name in _conditional_names(source):
        where = Span(line, 1, line, 1)
        uses.setdefault((name, "conditional", line), Launch(name, "", where, "conditional"))
    summary.launches = sorted(uses.values(), key=lambda launch: (launch.span.line, launch.span.column, launch.kernel, launch.how))
    return summary


def _function_value(node: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The identifier a function-valued expression names (``(void*)&ns::k<T>`` → ``k``), or None."""
    while node is not None and node.type in _VALUE_WRAPPERS:
        if node.type == "cast_expression":
            node = node.child_by_field_name("value")
        elif node.type == "pointer_expression":
            operator = node.child_by_field_name("operator")
            if operator is None or operator.type != "&":
                return None  # *p is a dereference, not a function taken
            node = node.child_by_field_name("argument")
        elif node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        else:  # template_function, qualified_identifier
            node = node.child_by_field_name("name")
    return node if node is not None and node.type == "identifier" else None


def _template_value(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """A template argument that may name a function: ``k``, ``ns::k``, ``k<true>`` (as the grammar
    reads it, often a type), else None."""
    if node.type == "type_descriptor":
        node = node.child_by_field_name("type")
    while node is not None and node.type in ("qualified_identifier", "template_type", "template_function"):
        node = node.child_by_field_name("name")
    if node is not None and node.type in ("type_identifier", "identifier"):
        return node
    return None


_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")


# A `#define` with its continuation lines: the name, the parameter list, the body.
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)\n]*\))?((?:[^\n\\]|\\\r?\n|\\.)*)", re.MULTILINE)
# A launch in a macro body: the kernel's name, its template arguments (one level of nesting), `<<<`
# (line continuations between them).
_MACRO_LAUNCH = re.compile(r"(?<![\w#])([A-Za-z_]\w*)[\s\\]*(?:<(?:[^<>;]|<[^<>;]*>)*>)?[\s\\]*<<<")
# What follows a name in a macro body, blanks and line continuations skipped: template arguments
# (two levels of nesting), then the next character — `(` for a call, none for a value.
_AFTER_NAME = re.compile(r"[\s\\]*(?:<(?:[^<>;(){}]|<(?:[^<>;(){}]|<[^<>;(){}]*>)*>)*>)?[\s\\]*(.?)", re.DOTALL)
# A name pasted together with `##` (`kernel_grouped_##T##_##U`): its tokens, blanks and continuations between.
_PASTED = re.compile(r"[A-Za-z_0-9]\w*(?:[\s\\]*##[\s\\]*[A-Za-z_0-9]\w*)+")
_BLANKS = re.compile(r"[\s\\]*")
_PASTED_PART = re.compile(r"[\s\\]*##[\s\\]*")
# A string naming a function: an identifier, template arguments allowed (`"k<float>"`).
_NAME_IN_STRING = re.compile(r"[A-Za-z_]\w*(?:<[^\"]*>)?")
# ``Launch.how`` of a name pasted together in a macro body: its ``kernel`` is a pattern then.
PASTED = "pasted in a macro"


def _macro_uses(source: SourceFile) -> list[tuple[int, str, str]]:
    """(line, name, how) of each function a ``#define`` body uses with a literal name (the grammar
    keeps a macro body as text, and every use of the macro makes the use): launched (``#define
    LAUNCH(N) fused_ln<T, N><<<grid, block>>>(x)``), taken as a value (``auto k = topk<T, V>;``,
    ``&allreduce<W, T>``, ``KL(n, reduce_2stage)``, ``#define Kernel gemm<A, B>``), named in a string,
    or pasted together with ``##`` — then ``name`` is a pattern, ``*`` for each pasted parameter
    (``kernel_grouped_*_*``). A name the macro takes as a parameter is not a function's, and a name
    followed by ``(`` is called or declared, which no kernel is from the host."""
    text = source.text
    if "define" not in text:
        return []
    found: list[tuple[int, str, str]] = []
    line_at = _line_counter(text)
    for define in _DEFINE.finditer(text):
        uncommented = _blank(_COMMENT, define.group(3))
        body = _blank(_STRING, uncommented)
        parameters = set(re.findall(r"\w+", define.group(2) or ""))
        start = define.start(3)

        def line_of(offset: int) -> int:
            return line_at(start + offset)

        launched: set[int] = set()
        for launch in _MACRO_LAUNCH.finditer(body):
            name = launch.group(1)
            if name in parameters or body[launch.end(1) : launch.end(1) + 2] == "##":
                continue
            launched.add(launch.start(1))
            found.append((line_of(launch.start(1)), name, "<<<>>> in a macro"))
        for offset, name in _mentions(body, 0, len(body), parameters):
            if offset not in launched:
                found.append((line_of(offset), name, "named in a macro"))
        for pasted in _PASTED.finditer(body):
            pattern = _pasted_pattern(pasted.group(), parameters)
            if pattern is not None:
                found.append((line_of(pasted.start()), pattern, PASTED))
        for string in _STRING.finditer(uncommented):
            name = _named_in_string(string.group())
            if name:
                found.append((line_of(string.start()), name, "name string"))
    return found


def _mentions(text: str, start: int, end: int, parameters: set[str]) -> list[tuple[int, str]]:
    """(offset, name) of each identifier in ``text[start:end]`` used as a value: not a macro
    parameter, not a member or a qualified name's tail, not pasted (``##``), not followed by ``(``
    (a call or a declaration) or ``<<<`` (a launch, found on its own)."""
    found: list[tuple[int, str]] = []
    for match in _IDENTIFIER.finditer(text, start, end):
        name = match.group()
        if name in parameters or name[0].isdigit():
            continue
        before = text[max(0, match.start() - 2) : match.start()]
        if before.endswith((".", "->", "::", "#")) or before.rstrip(" \t\\").endswith("##"):
            continue
        after = _AFTER_NAME.match(text, match.end())
        follows = after.group(1) if after is not None else ""
        if follows in ("(", "#") or text.startswith("<<<", match.end() + len(_BLANKS.match(text, match.end()).group())):
            continue
        found.append((match.start(), name))
    return found


# A function's address taken in source text: `&k`, `&ns::k<T, {}>`, right after what may precede
# a value (an opening bracket, a comma, `=`, `?`, `:`, `return`, a line's start), so that `a & b`
# and `R&D` in prose take nothing; `&f(x)` (a call's result, `{}`: an fmt placeholder) neither.
_ADDRESS_TAKEN = re.compile(
    r"(?:(?<=[(,={?:])|(?<=\breturn)|^)[ \t]*&[ \t]*(?:\w+[ \t]*::[ \t]*)*([A-Za-z_]\w*)\b"
    r"(?![ \t]*(?:<(?:[^<>;(){}]|\{[^{}<>]*\}|<[^<>;]*>)*>)?[ \t]*\()",
    re.MULTILINE,
)


def _code_uses_in_text(text: str) -> list[tuple[int, str, str]]:
    """(offset, name, how) of each function source text held in a C++ raw string launches
    (``k<T><<<g, b>>>(x)``) or takes the address of (``reinterpret_cast<void*>(&k<{}, {}>)``,
    ``auto f = &ns::k;``): the text is code the program compiles at run time. Only these two
    forms count — a name in prose, or called (``k(x)``), is no use."""
    code = _blank(_STRING, _blank(_COMMENT, text))
    found = [(launch.start(1), launch.group(1), "<<<>>> in a raw string") for launch in _MACRO_LAUNCH.finditer(code)]
    found.extend((taken.start(1), taken.group(1), "pointer in a raw string") for taken in _ADDRESS_TAKEN.finditer(code))
    return found


def _offset_span(text: str, offset: int, line: int, column: int) -> Span:
    """The span of the name at ``offset`` in ``text``, a raw string's body starting at ``line``:``column``."""
    before = text[:offset]
    newlines = before.count("\n")
    at = column + len(before) if not newlines else len(before) - before.rfind("\n")
    return Span(line + newlines, at, line + newlines, at)


def _pasted_pattern(tokens: str, parameters: set[str]) -> str | None:
    """``kernel_grouped_##T##_##U`` → ``kernel_grouped_*_*`` (a parameter pastes any name); None
    when fewer than three letters of it are literal (``A##B`` could be any name)."""
    parts = [part for part in _PASTED_PART.split(tokens) if part]
    pattern = "".join("*" if part in parameters else part for part in parts)
    if "*" not in pattern or sum(character.isalpha() for character in pattern) < 3:
        return None
    return pattern


def _named_in_string(literal: str) -> str:
    """The function a C string literal names (``"k<float>"`` → ``k``), '' for any other string."""
    content = _string_literal(literal)
    return content if content and _NAME_IN_STRING.fullmatch(literal[1:-1].strip()) else ""


def _line_counter(text: str) -> Callable[[int], int]:
    """offset in ``text`` → its 1-based line (a search over the newlines' offsets, made once)."""
    newlines = [match.start() for match in re.finditer("\n", text)]
    return lambda offset: bisect.bisect_left(newlines, offset) + 1


def _blank(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with each match of ``pattern`` replaced by spaces, its newlines kept (offsets and
    line numbers stay those of ``text``)."""
    return pattern.sub(lambda match: re.sub(r"[^\n]", " ", match.group()), text)


def _hidden_uses(source: SourceFile) -> list[tuple[int, str, str]]:
    """(line, name, how) of each function launched or taken as a value in text the parse could
    only read with a macro use hidden (``cuda_forms``: apex's `DISPATCH_FLOAT_AND_HALF(type, 0,
    "name", kernel<T><<<grid, block>>>(…);)`, a `SWITCH_TOP_K(k, K, { auto f = dispatch<K>;
    launch(f, …); })`: statements passed as an argument): the macro expands to code that uses it."""
    prepared = source.cuda
    if not prepared.hidden_macros:
        return []
    original = source.data
    text = source.text if len(source.text) == len(original) else original.decode("latin-1")

    def hidden(offset: int) -> bool:
        return prepared.data[offset : offset + 1] == b" " and original[offset : offset + 1] != b" "

    code = _blank(_STRING, _blank(_COMMENT, text))
    line_at = _line_counter(text)
    found: list[tuple[int, str, str]] = []
    for launch in _MACRO_LAUNCH.finditer(code):
        if hidden(launch.start(1)):
            found.append((line_at(launch.start(1)), launch.group(1), "<<<>>> in a hidden macro use"))
    # The hidden spans: where the prepared text is blank and the file's is not (a use's arguments).
    for run in re.finditer(rb" +", prepared.data):
        first, last = run.start(), run.end()
        if not original[first:last].strip():
            continue
        for start, name in _mentions(code, first, last, set()):
            if hidden(start):
                found.append((line_at(start), name, "named in a hidden macro use"))
    return found


def _conditional_names(source: SourceFile) -> list[tuple[int, str]]:
    """(line, identifier) in branches another build configuration compiles (``#ifdef
    TORCH_COMPILE``, the host pass's ``#ifndef __CUDA_ARCH__``): a kernel launched there is not
    dead code. Branches no configuration compiles (``#if 0``) give nothing. One entry per name
    and branch; strings and comments are skipped."""
    inactive = source.cuda.inactive
    if not inactive:
        return []
    lines = source.text.split("\n")
    found: list[tuple[int, str]] = []
    for region in inactive:
        seen: set[str] = set()
        stack = [region.dead]
        for line in range(region.first_line, min(region.last_line, len(lines)) + 1):
            text = lines[line - 1]
            directive = _DIRECTIVE.match(text)
            if directive is not None:
                kind = directive.group(1)
                if kind in ("if", "ifdef", "ifndef"):
                    stack.append(stack[-1] or bool(DEAD_CONDITION.match(text)))
                elif kind == "endif":
                    if len(stack) > 1:
                        stack.pop()
                else:
                    outer = stack[-2] if len(stack) > 1 else False
                    stack[-1] = outer or bool(DEAD_CONDITION.match(text))
                continue
            if stack[-1]:
                continue
            code = _STRING.sub('""', _COMMENT.sub(" ", text))
            for match in _IDENTIFIER.finditer(code):
                name = match.group()
                if _DECLARED.search(code, 0, match.start()):
                    continue  # `void k(` here is another definition of k, not a use
                if name not in seen:
                    seen.add(name)
                    found.append((line, name))
    return found


_DECLARED = re.compile(r"\b(void|__global__)\s+$")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _string_literal(text: str) -> str:
    """The kernel name in a C string literal (template arguments stripped), '' for anything else."""
    if len(text) < 2 or not text.startswith('"') or not text.endswith('"') or "\\" in text:
        return ""
    return text[1:-1].split("<", 1)[0].strip()


def kernels_in_source_text(text: str) -> list[str]:
    """Kernel names declared ``__global__`` in CUDA source held in a Python string."""
    return _GLOBAL_IN_TEXT.findall(_LAUNCH_ATTRIBUTE.sub(" ", _COMMENT.sub(" ", text)))


def _enclosing_function(source: SourceFile, node: tree_sitter.Node) -> tuple[str, bool]:
    """(name of the enclosing C++ function, whether it is device code)."""
    definition = enclosing_function(node)
    if definition is None:
        return "", False
    name = function_name(definition)
    spaces = execution_spaces(definition)
    device = bool(spaces & {"__global__", "__device__"}) and "__host__" not in spaces
    return (source.node_text(name) if name is not None else ""), device


def _direction(source: SourceFile, callee: str, node: tree_sitter.Node) -> str:
    for short, long in _DIRECTIONS.items():
        if short in callee:
            return long
    arguments = node.child_by_field_name("arguments")
    if arguments is not None:
        for child in arguments.named_children:
            text = source.node_text(child)
            match = re.search(r"cudaMemcpy(HostToDevice|DeviceToHost|DeviceToDevice|HostToHost|Default)", text)
            if match:
                return match.group(1)
    return "unknown"


def _strip_comment(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    return text.split("//", 1)[0].strip()




def evaluate_c(text: str, known: dict[str, float | int | None]) -> float | int | None:
    """Value of a C constant expression, or None (``foxaudit.sources.constexpr``, C dialect)."""
    return evaluate(text, known, "c")
