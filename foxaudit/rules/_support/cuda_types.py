"""What type a CUDA expression has, as far as one file's declarations tell: enough to say
whether an atomic accumulates floating point or counts integers."""

from __future__ import annotations

import re
from typing import Literal

import tree_sitter

Kind = Literal["float", "integer", "unknown"]

# llm.c's `floatX`, CUDA's half/bfloat16 types, vector and complex types all count as floating.
_FLOAT = re.compile(r"\b(?:float\w*|double\w*|\w*half\w*|\w*bfloat16\w*|\w*bf16\w*|cuComplex|cuDoubleComplex|floatX)\b")
_INTEGER = re.compile(
    r"\b(?:int|unsigned|signed|long|short|char|bool|size_t|ptrdiff_t|u?int(?:8|16|32|64)_t|uint|ulong|ull|"
    r"unsigned\s+long\s+long|int2|int4|uint2|uint4)\b"
)
_DECLARATIONS = frozenset({"parameter_declaration", "declaration", "field_declaration"})
_DECLARATOR_WRAPPERS = frozenset({"pointer_declarator", "reference_declarator", "array_declarator",
                                  "init_declarator", "parenthesized_declarator"})


def kind_of_type(text: str) -> Kind:
    if _FLOAT.search(text):
        return "float"
    if _INTEGER.search(text):
        return "integer"
    return "unknown"


def declared_names(declaration: tree_sitter.Node) -> list[str]:
    """Names a declaration node introduces (``float *a, b[4] = {...}`` → a, b)."""
    names = []
    for child in declaration.children_by_field_name("declarator"):
        node = child
        while node is not None and node.type in _DECLARATOR_WRAPPERS:
            # reference_declarator has no `declarator` field: its one named child is the name
            node = node.child_by_field_name("declarator") or (node.named_children[0] if node.named_children else None)
        if node is not None and node.type in ("identifier", "field_identifier"):
            names.append(node.text.decode())
    return names


def declared_type(name: str, scope: tree_sitter.Node | None) -> str | None:
    """The type text of the nearest declaration of ``name`` in ``scope`` (a function, then the
    file); None when this file does not declare it."""
    root = scope
    while root is not None and root.parent is not None:
        root = root.parent
    for node in (scope, root):
        if node is None:
            continue
        found = _find_declaration(name, node)
        if found is not None:
            return found
    return None


def _find_declaration(name: str, node: tree_sitter.Node) -> str | None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in _DECLARATIONS and name in declared_names(current):
            type_node = current.child_by_field_name("type")
            return current.text.decode() if type_node is None else type_node.text.decode()
        if current.type == "function_definition" and current is not node:
            # another function's locals are not in scope (its parameters are not either)
            continue
        stack.extend(reversed(current.named_children))
    return None


def base_identifier(expression: tree_sitter.Node) -> tree_sitter.Node | None:
    """The variable an lvalue-ish expression is rooted at: ``&x[i]``, ``x + i``, ``*(x)``, ``x``.
    Member access (``a->s``) has no answer here: its type needs the struct's declaration."""
    node: tree_sitter.Node | None = expression
    while node is not None:
        if node.type == "identifier":
            return node
        if node.type in ("pointer_expression", "parenthesized_expression"):
            node = node.child_by_field_name("argument") or (node.named_children[0] if node.named_children else None)
        elif node.type == "subscript_expression":
            node = node.child_by_field_name("argument")
        elif node.type == "binary_expression":
            node = node.child_by_field_name("left")
        else:
            return None
    return None


def kind_of_expression(expression: tree_sitter.Node, scope: tree_sitter.Node | None) -> Kind:
    """float / integer / unknown for an argument: a literal, a cast, or a declared variable."""
    node = expression
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node.type == "number_literal":
        text = node.text.decode().lower()
        if text.startswith("0x"):
            return "integer"
        return "float" if any(mark in text for mark in ".ef") else "integer"
    if node.type == "cast_expression":
        type_node = node.child_by_field_name("type")
        if type_node is not None:
            return kind_of_type(type_node.text.decode())
    if node.type == "call_expression":
        callee = node.child_by_field_name("function")
        if callee is not None and callee.type in ("primitive_type", "identifier", "template_function"):
            kind = kind_of_type(callee.text.decode())  # float(x), __float2half(x) → float
            if kind != "unknown":
                return kind
    if node.type == "binary_expression":
        # The usual arithmetic conversions: `width * w * g` is floating point when any operand is
        # (an integer first operand does not make the product an integer).
        operator = node.child_by_field_name("operator")
        if operator is not None and operator.type in ("+", "-", "*", "/", "%"):
            sides = [kind_of_expression(side, scope) for side in (node.child_by_field_name("left"),
                                                                  node.child_by_field_name("right")) if side is not None]
            if "float" in sides:
                return "float"
            return "integer" if sides and all(side == "integer" for side in sides) else "unknown"
    identifier = base_identifier(node)
    if identifier is None:
        return "unknown"
    declared = declared_type(identifier.text.decode(), scope)
    return kind_of_type(declared) if declared is not None else "unknown"
