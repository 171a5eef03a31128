"""tree-sitter-cuda node helpers: function names, execution-space qualifiers.

The one set, shared by the per-file CUDA rules and the whole-program CUDA scanner
(``foxaudit.program.cudascan``), so a kernel is named the same way by both.
"""

from __future__ import annotations

import tree_sitter

# Declarators that wrap a function declarator: `int* f()`, `T& f()`, `(f)()`.
_WRAPPERS = frozenset({"pointer_declarator", "reference_declarator", "parenthesized_declarator"})
_NAME_NODES = frozenset({"identifier", "field_identifier", "destructor_name", "operator_name"})


def function_declarator(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The ``function_declarator`` of a definition/declaration node, or None for a variable."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type in _WRAPPERS:
        declarator = declarator.child_by_field_name("declarator")
    if declarator is not None and declarator.type == "function_declarator":
        return declarator
    return None


def declared_name(declarator: tree_sitter.Node) -> tree_sitter.Node | None:
    """The name node of a function declarator (``ns::f`` → ``f``, ``f<T>`` → ``f``)."""
    name = declarator.child_by_field_name("declarator")
    while name is not None and name.type in ("qualified_identifier", "template_function"):
        name = name.child_by_field_name("name")
    if name is not None and name.type in _NAME_NODES:
        return name
    return None


def function_name(definition: tree_sitter.Node) -> tree_sitter.Node | None:
    declarator = function_declarator(definition)
    return declared_name(declarator) if declarator is not None else None


def enclosing_function(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The enclosing ``function_definition`` (a lambda's encloser is the outer function). C++ has
    no nested functions: a "definition" inside a function body is a statement macro the grammar
    read as one (`CUDA_1D_KERNEL_LOOP(i, n) { … }`), so the outermost definition is the one."""
    found = None
    parent = node.parent
    while parent is not None:
        if parent.type == "function_definition":
            found = parent
        elif parent.type in ("class_specifier", "struct_specifier", "union_specifier") and found is not None:
            break  # a member function of a local class: its own definition is the encloser
        parent = parent.parent
    return found


def execution_spaces(definition: tree_sitter.Node) -> frozenset[str]:
    """``__global__``/``__device__``/``__host__`` tokens: anonymous children of the definition."""
    return frozenset(child.type for child in definition.children if child.type.startswith("__") and not child.is_named)
