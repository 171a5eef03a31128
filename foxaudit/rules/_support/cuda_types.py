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
        node = _declared_name(child)
        if node is not None:
            names.append(node.text.decode())
    return names


def _declared_name(declarator: tree_sitter.Node) -> tree_sitter.Node | None:
    """The name a declarator chain ends at (`p` of `*const p[4] = …`); None for a function's."""
    node: tree_sitter.Node | None = declarator
    while node is not None and node.type in _DECLARATOR_WRAPPERS:
        # reference_declarator has no `declarator` field: its one named child is the name
        node = node.child_by_field_name("declarator") or (node.named_children[0] if node.named_children else None)
    return node if node is not None and node.type in ("identifier", "field_identifier") else None


def _nearest_declaration(name: str, scope: tree_sitter.Node | None) -> tuple[tree_sitter.Node, tree_sitter.Node] | None:
    """(declaration, its declarator that names ``name``), looked for in ``scope`` then the file."""
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


def _find_declaration(name: str, node: tree_sitter.Node) -> tuple[tree_sitter.Node, tree_sitter.Node] | None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in _DECLARATIONS:
            declarator = _declarator_of(current, name)
            if declarator is not None:
                return current, declarator
        if current.type == "function_definition" and current is not node:
            # another function's locals are not in scope (its parameters are not either)
            continue
        stack.extend(reversed(current.named_children))
    return None


def _declarator_of(declaration: tree_sitter.Node, name: str) -> tree_sitter.Node | None:
    """The declarator of ``declaration`` that introduces ``name`` (`*p` of `float a, *p`)."""
    for child in declaration.children_by_field_name("declarator"):
        node = _declared_name(child)
        if node is not None and node.text.decode() == name:
            return child
    return None


def _indirection(declarator: tree_sitter.Node, stop: str = "") -> int:
    """Levels of pointer or array in a declarator chain (`**p` 2, `a[4][4]` 2), down to the name
    or, with ``stop``, to the first node of that type (a function's declarator)."""
    levels = 0
    node: tree_sitter.Node | None = declarator
    while node is not None and node.type != stop and node.type in _DECLARATOR_WRAPPERS:
        levels += node.type in ("pointer_declarator", "array_declarator")
        node = node.child_by_field_name("declarator") or (node.named_children[0] if node.named_children else None)
    return levels


def _function_returning(name: str, scope: tree_sitter.Node | None) -> tuple[str, int] | None:
    """(return type text, levels of pointer) of the function ``name`` this file defines or
    declares (`int32_t* rebuild_int_ptr(…)` → ("int32_t", 1)); None when it does not."""
    root = scope
    while root is not None and root.parent is not None:
        root = root.parent
    stack = [root] if root is not None else []
    while stack:
        current = stack.pop()
        if current.type in ("function_definition", "declaration", "field_declaration"):
            for declarator in current.children_by_field_name("declarator"):
                function = declarator
                while function is not None and function.type in _DECLARATOR_WRAPPERS:
                    function = function.child_by_field_name("declarator")
                named = function.child_by_field_name("declarator") if function is not None and \
                    function.type == "function_declarator" else None
                type_node = current.child_by_field_name("type")
                if named is not None and named.text.decode() == name and type_node is not None:
                    return type_node.text.decode(), _indirection(declarator, stop="function_declarator")
        if current.type not in _BODIES:
            stack.extend(reversed(current.named_children))
    return None


# Where no function is declared that a call outside it could name.
_BODIES = frozenset({"compound_statement", "function_definition", "parameter_list", "template_argument_list"})


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


def pointer_depth(expression: tree_sitter.Node, scope: tree_sitter.Node | None) -> int | None:
    """Levels of pointer (or array) an expression has, as far as the file's declarations tell:
    `p` of `int** p` 2, `p[i]` 1, `*p` 1, `&x` one more than `x`, `f(x)` its declared return's;
    None when unknown."""
    node: tree_sitter.Node | None = expression
    applied = 0  # levels taken off by subscripts and dereferences (added back by `&`)
    while node is not None:
        if node.type == "parenthesized_expression":
            node = node.named_children[0] if node.named_children else None
        elif node.type == "subscript_expression":
            applied += 1
            node = node.child_by_field_name("argument")
        elif node.type == "pointer_expression":
            operator = node.child_by_field_name("operator")
            applied += -1 if operator is not None and operator.type == "&" else 1
            node = node.child_by_field_name("argument")
        elif node.type == "identifier":
            found = _nearest_declaration(node.text.decode(), scope)
            return None if found is None else _indirection(found[1]) - applied
        elif node.type == "call_expression":
            callee = _callee_name(node)
            returned = _function_returning(callee, scope) if callee is not None else None
            return None if returned is None else returned[1] - applied
        else:
            return None
    return None


def _callee_name(call: tree_sitter.Node) -> str | None:
    """The called function's own name: `f` of `f(x)`, `ns::f(x)` and `f<T>(x)`."""
    callee = call.child_by_field_name("function")
    while callee is not None and callee.type in ("qualified_identifier", "template_function"):
        callee = callee.child_by_field_name("name")
    return callee.text.decode() if callee is not None and callee.type == "identifier" else None


# CUDA's built-in index variables: `threadIdx.x`, `blockDim.y`, … are unsigned integers.
_BUILTIN_INDICES = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})


def kind_of_expression(expression: tree_sitter.Node, scope: tree_sitter.Node | None, depth: int = 0) -> Kind:
    """float / integer / unknown for an argument: a literal, a cast, a declared variable (an
    ``auto`` one by its initialiser: ``auto p = reinterpret_cast<uint64_t*>(d)``), a built-in
    index, a call of a function the file declares, or arithmetic on those. For a pointer, the
    kind of what it points to."""
    node = expression
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node.type == "field_expression":
        argument = node.child_by_field_name("argument")
        if argument is not None and argument.type == "identifier" and argument.text.decode() in _BUILTIN_INDICES:
            return "integer"
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
        name = _callee_name(node)
        returned = _function_returning(name, scope) if name is not None else None
        if returned is not None:
            return kind_of_type(returned[0])  # `int32_t* slot(…)` → integer
    if node.type == "binary_expression":
        operator = node.child_by_field_name("operator")
        operands = [side for side in (node.child_by_field_name("left"), node.child_by_field_name("right")) if side is not None]
        if operator is not None and operator.type in ("+", "-"):
            # Pointer arithmetic (`p[i] + threadIdx.x` on an `int**`): what the pointer points to
            # decides, whatever the offset; the difference of two pointers is an integer.
            pointers = [side for side in operands if (pointer_depth(side, scope) or 0) >= 1]
            if len(pointers) == 2 and operator.type == "-":
                return "integer"
            if pointers:
                return kind_of_expression(pointers[0], scope)
        if operator is not None and operator.type in ("+", "-", "*", "/", "%"):
            # The usual arithmetic conversions: `width * w * g` is floating point when any operand
            # is (an integer first operand does not make the product an integer).
            sides = [kind_of_expression(side, scope) for side in operands]
            if "float" in sides:
                return "float"
            return "integer" if sides and all(side == "integer" for side in sides) else "unknown"
    identifier = base_identifier(node)
    if identifier is None:
        return "unknown"
    found = _nearest_declaration(identifier.text.decode(), scope)
    if found is None:
        return "unknown"
    declaration, declarator = found
    type_node = declaration.child_by_field_name("type")
    declared = declaration.text.decode() if type_node is None else type_node.text.decode()
    kind = kind_of_type(declared)
    if kind == "unknown" and _AUTO.fullmatch(declared) and declarator.type == "init_declarator" and depth < 4:
        value = declarator.child_by_field_name("value")
        if value is not None:
            return kind_of_expression(value, scope, depth + 1)
    return kind


# A declaration whose type comes from its initialiser: `auto`, `const auto`, `auto const`.
_AUTO = re.compile(r"\s*(?:const\s+)?auto(?:\s+const)?\s*")
