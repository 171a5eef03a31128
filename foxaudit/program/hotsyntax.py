"""Host syncs that are syntax, not calls: a Python branch on a tensor and boolean-mask reads.

``if t:``, ``while t.any():``, ``assert t.all()``, ``x if t else y`` and ``not``/``and``/``or`` of
them turn a device value into a Python bool, and ``x[mask]`` with a boolean tensor mask has a
data-dependent shape: each makes the host wait for the device. The call summaries (pyscan) do not
keep conditions or subscripts, so these are read from the module's tree — only for modules that
use a device library, and only where the analysis *knows* the value is a tensor (``is_tensor``:
the caller's receiver evidence). An unknown value is silence, never a guess.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import tree_sitter

from foxaudit.program.pyscan import Span
from foxaudit.sources.base import SourceFile, ts_language

_QUERY_TEXT = """
(if_statement condition: (_) @test)
(elif_clause condition: (_) @test)
(while_statement condition: (_) @test)
(assert_statement . (_) @test)
(conditional_expression) @ternary
(subscript) @subscript
(assignment left: (identifier) @mask_name right: (_) @mask_value)
"""
# Reductions whose result a branch reads: `if t.any():` is a sync as much as `if t:`.
_REDUCTIONS = frozenset({"any", "all", "item", "bool"})
_COMPARISONS = frozenset({"<", ">", "<=", ">=", "==", "!="})
# Tensor methods whose result is a host value, not a tensor.
_HOST_RESULTS = frozenset({"item", "tolist", "numpy", "size", "dim", "numel", "stride", "data_ptr", "element_size", "get"})


@functools.cache
def _query() -> tree_sitter.Query:
    return tree_sitter.Query(ts_language("python"), _QUERY_TEXT)


@dataclass(frozen=True)
class SyntaxSite:
    kind: str  # "if tensor" | "boolean-mask index" | ...
    scope: str  # qualified name of the enclosing function ('' at module level)
    span: Span


def syntax_sites(source: SourceFile, is_tensor: Callable[[str, str], bool]) -> list[SyntaxSite]:
    """Every branch on a tensor and every boolean-mask read of a tensor in ``source``."""
    captures = tree_sitter.QueryCursor(_query()).captures(source.tree.root_node)
    reader = _Reader(source, is_tensor)
    # Names bound to a comparison of a tensor (`mask = t > 0`), per scope: boolean masks.
    masks: set[tuple[str, str]] = set()
    names = captures.get("mask_name", [])
    values = {node.parent.id: node for node in captures.get("mask_value", []) if node.parent is not None}
    for name in names:
        value = values.get(name.parent.id) if name.parent is not None else None
        scope = reader.scope(name)
        if value is not None and reader.is_mask(value, scope, set()):
            masks.add((scope, source.node_text(name)))
    sites: list[SyntaxSite] = []
    tests = list(captures.get("test", []))
    tests += [node.child_by_field_name("condition") or _ternary_test(node) for node in captures.get("ternary", [])]
    for test in tests:
        if test is None:
            continue
        scope = reader.scope(test)
        if reader.branches_on_tensor(test, scope):
            keyword = test.parent.type.split("_")[0] if test.parent is not None else "if"
            keyword = {"conditional": "if", "elif": "elif"}.get(keyword, keyword)
            sites.append(SyntaxSite(f"`{keyword}` on a tensor", scope, reader.span(test)))
    for node in captures.get("subscript", []):
        parent = node.parent
        if parent is not None and parent.type in ("assignment", "augmented_assignment") and parent.child_by_field_name("left") == node:
            continue  # `x[mask] = v` writes (masked_fill); only a read has a data-dependent shape
        value = node.child_by_field_name("value")
        indices = node.children_by_field_name("subscript")
        if value is None or len(indices) != 1:
            continue
        scope = reader.scope(node)
        index = indices[0]
        if not reader.tensor(value, scope):
            continue
        if reader.is_mask(index, scope, masks):
            sites.append(SyntaxSite("boolean-mask index (data-dependent shape)", scope, reader.span(node)))
    sites.sort(key=lambda site: (site.span.line, site.span.column))
    return sites


def _ternary_test(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """``a if test else b``: the second named child (the grammar names no field for it)."""
    named = [child for child in node.named_children if child.type != "comment"]
    return named[1] if len(named) == 3 else None


class _Reader:
    def __init__(self, source: SourceFile, is_tensor: Callable[[str, str], bool]):
        self.source = source
        self.is_tensor = is_tensor
        self._scopes: dict[int, str] = {}

    def span(self, node: tree_sitter.Node) -> Span:
        line, column = self.source.position(node.start_byte)
        end_line, end_column = self.source.position(node.end_byte)
        return Span(line, column, end_line, end_column)

    def scope(self, node: tree_sitter.Node) -> str:
        """pyscan's scope: the qualified name of the nearest enclosing function."""
        names: list[str] = []
        inside_function = False
        for current in _ancestors(node):
            if current.type not in ("function_definition", "class_definition"):
                continue
            if current.type == "function_definition":
                inside_function = True
            if inside_function:
                name = current.child_by_field_name("name")
                names.append(self.source.node_text(name) if name is not None else "?")
        return ".".join(reversed(names))

    def tensor(self, node: tree_sitter.Node, scope: str) -> bool:
        """A known tensor: a name or attribute the evidence knows, or a tensor's method result
        (``x.isnan()``, not ``x.item()``)."""
        node = _unparenthesised(node)
        if node.type in ("identifier", "attribute"):
            return self.is_tensor(scope, self.source.node_text(node))
        if node.type == "call":
            function = node.child_by_field_name("function")
            if function is None or function.type != "attribute":
                return False
            attribute, receiver = function.child_by_field_name("attribute"), function.child_by_field_name("object")
            if attribute is None or receiver is None or self.source.node_text(attribute) in _HOST_RESULTS:
                return False
            return self.tensor(receiver, scope)
        return False

    def branches_on_tensor(self, test: tree_sitter.Node, scope: str) -> bool:
        test = _unparenthesised(test)
        if test.type == "not_operator":
            argument = test.child_by_field_name("argument")
            return argument is not None and self.branches_on_tensor(argument, scope)
        if test.type == "boolean_operator":
            return any(
                side is not None and self.branches_on_tensor(side, scope)
                for side in (test.child_by_field_name("left"), test.child_by_field_name("right"))
            )
        if test.type == "call":
            function = test.child_by_field_name("function")
            arguments = test.child_by_field_name("arguments")
            if function is None or function.type != "attribute" or (arguments is not None and arguments.named_child_count):
                return False
            attribute = function.child_by_field_name("attribute")
            receiver = function.child_by_field_name("object")
            if attribute is None or receiver is None or self.source.node_text(attribute) not in _REDUCTIONS:
                return False
            return self.tensor(receiver, scope) or self.is_mask(receiver, scope, set())
        if test.type == "comparison_operator":
            # `if loss > 0:` and `if (t == 0).all()` (the latter above): a comparison of a tensor is one.
            return self.is_mask(test, scope, set())
        return self.tensor(test, scope)

    def is_mask(self, node: tree_sitter.Node, scope: str, masks: set[tuple[str, str]]) -> bool:
        """A boolean tensor: a comparison with a tensor operand, ``~``/``&``/``|`` of masks, or
        a name bound to one in this scope."""
        node = _unparenthesised(node)
        if node.type == "identifier":
            return (scope, self.source.node_text(node)) in masks
        if node.type == "comparison_operator":
            operators = {self.source.node_text(child) for child in node.children if not child.is_named}
            if not operators <= _COMPARISONS:
                return False  # `in`, `is`: Python operators, not elementwise
            return any(self.tensor(child, scope) for child in node.named_children)
        if node.type == "unary_operator" and self.source.node_text(node).lstrip().startswith("~"):
            argument = node.child_by_field_name("argument")
            return argument is not None and self.is_mask(argument, scope, masks)
        if node.type == "binary_operator":
            operator = node.child_by_field_name("operator")
            if operator is None or operator.type not in ("&", "|", "^"):
                return False
            return any(
                side is not None and self.is_mask(side, scope, masks)
                for side in (node.child_by_field_name("left"), node.child_by_field_name("right"))
            )
        return False


def _unparenthesised(node: tree_sitter.Node) -> tree_sitter.Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def _ancestors(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    current = node.parent
    while current is not None:
        yield current
        current = current.parent
