"""Named integer constants read from layout definition sites (Python modules, CUDA headers).

FX801 names the constant to use instead of a raw index. The constants come from the files its
``constants-from`` option lists: module-level ``NAME = <int expression>`` (also annotated, and
``A, B, C = range(3)`` unpacking) in Python; ``#define NAME <expr>``, ``constexpr``/``const``
integer declarations and enumerators (with C's implicit increments) in CUDA/C++ headers.
Expressions may use integer literals, earlier constants, parentheses and ``+ - * / // % << >>
| & ^ ~``. Files are parsed with tree-sitter, never imported. Results are cached per process,
keyed by the files' paths, sizes and modification times.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import tree_sitter

from foxaudit.sources.base import SourceFile, language_of
from foxaudit.sources.constexpr import Dialect, evaluate_int

UPPER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


@dataclass(frozen=True)
class NamedConstant:
    name: str
    value: int
    path: str  # repository-relative file that defines it ("" for constants given inline in options)
    module: str  # dotted Python module to import it from ("" when it is not importable from Python)


def python_module_for(path: str) -> str:
    """``trainer/layout.py`` → ``trainer.layout``; a leading ``src/`` is not part of the name."""
    stem = path[: -len(".pyi")] if path.endswith(".pyi") else path[: -len(".py")]
    parts = [part for part in stem.split("/") if part]
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def evaluate(expression: str, known: Mapping[str, int], dialect: Dialect = "python") -> int | None:
    """The integer value of a small constant expression, or None (``foxaudit.sources.constexpr``)."""
    return evaluate_int(expression, known, dialect)


def _range_values(expression: str, known: Mapping[str, int]) -> list[int] | None:
    """``range(n)`` / ``range(a, b)`` / ``range(a, b, s)`` with constant arguments."""
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "range"):
        return None
    arguments = [evaluate_int(ast.unparse(argument), known, "python") for argument in tree.args]
    if not 1 <= len(arguments) <= 3 or None in arguments:
        return None
    try:
        values = range(*arguments)  # type: ignore[arg-type]
    except ValueError:  # a zero step
        return None
    return list(values) if len(values) <= 4096 else None


def _python_constants(source: SourceFile) -> tuple[dict[str, int], set[str]]:
    """Evaluable module-level constants, and every UPPER_CASE name the module binds (a layout
    module may compute its constants, ``PS_CASH: int = PS.offsets["CASH"]``; their values then
    come from the generated header)."""
    found: dict[str, int] = {}
    bound: set[str] = set()
    for statement in source.tree.root_node.named_children:
        if statement.type != "expression_statement" or statement.named_child_count != 1:
            continue
        assignment = statement.named_child(0)
        if assignment.type != "assignment":
            continue
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        if left is None:
            continue
        if left.type == "identifier":
            name = left.text.decode()
            if not UPPER_NAME.match(name):
                continue
            bound.add(name)
            value = evaluate(source.node_text(right), found) if right is not None else None
            if value is not None:
                found[name] = value
        elif left.type in ("pattern_list", "tuple_pattern") and right is not None:
            names = [child.text.decode() for child in left.named_children if child.type == "identifier"]
            bound.update(name for name in names if UPPER_NAME.match(name))
            text = source.node_text(right)
            values = _range_values(text, found)
            if values is None and right.type in ("expression_list", "tuple"):
                values = [evaluate(source.node_text(child), found) for child in right.named_children]
            if values is not None and len(values) == len(names):
                for name, value in zip(names, values):
                    if value is not None and UPPER_NAME.match(name):
                        found[name] = value
    return found, bound


def _cuda_constants(source: SourceFile) -> dict[str, int]:
    found: dict[str, int] = {}
    stack: list[tree_sitter.Node] = [source.tree.root_node]
    ordered: list[tree_sitter.Node] = []
    while stack:  # document order: pop from the end, push children reversed
        node = stack.pop()
        ordered.append(node)
        stack.extend(reversed(node.named_children))
    for node in ordered:
        if node.type == "preproc_def":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None and value is not None and UPPER_NAME.match(name.text.decode()):
                number = evaluate(source.node_text(value), found, "c")
                if number is not None:
                    found[name.text.decode()] = number
        elif node.type == "init_declarator" and node.parent is not None and node.parent.type == "declaration":
            qualifiers = {child.text.decode() for child in node.parent.named_children if child.type == "type_qualifier"}
            name, value = node.child_by_field_name("declarator"), node.child_by_field_name("value")
            if qualifiers & {"const", "constexpr"} and name is not None and value is not None \
                    and name.type == "identifier" and UPPER_NAME.match(name.text.decode()):
                number = evaluate(source.node_text(value), found, "c")
                if number is not None:
                    found[name.text.decode()] = number
        elif node.type == "enumerator_list":
            next_value: int | None = 0
            for enumerator in node.named_children:
                if enumerator.type != "enumerator":
                    continue
                name, value = enumerator.child_by_field_name("name"), enumerator.child_by_field_name("value")
                if value is not None:
                    next_value = evaluate(source.node_text(value), found, "c")
                if name is not None and next_value is not None:
                    if UPPER_NAME.match(name.text.decode()):
                        found[name.text.decode()] = next_value
                    next_value += 1
    return found


def _signature(root: Path, paths: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
    signature = []
    for path in paths:
        try:
            status = os.stat(root / path)
        except OSError:
            continue
        signature.append((path, status.st_size, status.st_mtime_ns))
    return tuple(signature)


def load_constants(root: Path, paths: tuple[str, ...]) -> tuple[NamedConstant, ...]:
    """Every named integer constant the files define, in file order; missing files are skipped."""
    resolved = root.resolve()
    return _load(resolved, paths, _signature(resolved, paths))


@functools.lru_cache(maxsize=16)
def _load(root: Path, paths: tuple[str, ...], signature: tuple[tuple[str, int, int], ...]) -> tuple[NamedConstant, ...]:
    """Python constants first (module set: importable), then header constants (module empty).
    A name a Python module binds without a static value takes its value from a header."""
    python: list[NamedConstant] = []
    headers: list[NamedConstant] = []
    unvalued: dict[str, tuple[str, str]] = {}  # name → (path, module) bound in Python, value unknown
    for path, _size, _mtime in signature:
        language = language_of(path) or ("cuda" if path.endswith((".h", ".hpp")) else None)
        if language is None:
            continue
        try:
            source = SourceFile(path=path, data=(root / path).read_bytes(), language=language)
        except (OSError, UnicodeDecodeError):
            continue
        if language == "python":
            values, bound = _python_constants(source)
            module = python_module_for(path)
            python.extend(NamedConstant(name, value, path, module) for name, value in values.items())
            for name in sorted(bound - set(values)):
                unvalued.setdefault(name, (path, module))
        else:
            headers.extend(NamedConstant(name, value, path, "") for name, value in _cuda_constants(source).items())
    known = {constant.name for constant in python}
    for constant in headers:
        if constant.name in unvalued and constant.name not in known:
            path, module = unvalued[constant.name]
            python.append(NamedConstant(constant.name, constant.value, path, module))
            known.add(constant.name)
    return tuple(python + headers)
