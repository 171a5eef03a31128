"""One CUDA file (``.cu``/``.cuh``) → a ``CudaSummary``: kernels, constants, host memcpy sites.

tree-sitter-cuda is error-tolerant, so a file with ERROR nodes still yields the kernels and
constants that parsed. Kernel names inside Python strings (CuPy ``RawKernel``/``RawModule``
source given inline) are found by :func:`kernels_in_source_text` with the same rules.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import tree_sitter

from foxaudit.program.pyscan import Span
from foxaudit.sources.base import SourceFile, ts_language
from foxaudit.sources.constexpr import evaluate
from foxaudit.sources.cuda import enclosing_function, execution_spaces, function_name

_QUERY_TEXT = """
(function_definition) @def
(preproc_def) @define
(declaration) @decl
(call_expression) @call
"""

_GLOBAL_IN_TEXT = re.compile(r"__global__[^;{(]*?\b([A-Za-z_]\w*)\s*\(", re.DOTALL)
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
    kernel: str
    enclosing: str
    span: Span


@dataclass
class CudaSummary:
    path: str
    kernels: list[Kernel] = field(default_factory=list)
    constants: list[CudaConstant] = field(default_factory=list)
    memcpys: list[Memcpy] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    generated: bool = False
    includes: list[str] = field(default_factory=list)


def scan_cuda(source: SourceFile) -> CudaSummary:
    summary = CudaSummary(path=source.path)
    head = source.text[:600].lower()
    summary.generated = "@generated" in head or ("generated" in head and "do not edit" in head)
    summary.includes = re.findall(r'^\s*#\s*include\s*"([^"]+)"', source.text, re.MULTILINE)
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
    for node in captures.get("call", ()):
        function = node.child_by_field_name("function")
        if function is None or function.type != "identifier":
            continue
        callee = source.node_text(function)
        enclosing, device_code = _enclosing_function(source, node)
        if any(child.type == "kernel_call_syntax" for child in node.children):
            summary.launches.append(Launch(callee, enclosing, span(node)))
            continue
        if not _MEMCPY.match(callee):
            continue
        summary.memcpys.append(
            Memcpy(callee, _direction(source, callee, node), enclosing, device_code, span(node))
        )
    return summary


def kernels_in_source_text(text: str) -> list[str]:
    """Kernel names declared ``__global__`` in CUDA source held in a Python string."""
    return _GLOBAL_IN_TEXT.findall(text)


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
