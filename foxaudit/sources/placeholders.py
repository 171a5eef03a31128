"""What a Python function's body is when it does nothing: the one definition of a placeholder.

FX902 reports such bodies; the whole-program summary records, for every function, whether its
body is one (``Function.placeholder``), so that a method can be judged against the other
definitions of its name in the class hierarchy, across files. Configuration-free: an option
such as FX902's ``docstring-only`` decides what is *reported*, not what is a placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import tree_sitter

if TYPE_CHECKING:
    from foxaudit.sources.base import SourceFile

_CONSTANT_LEAVES = frozenset({"integer", "float", "true", "false", "none", "string", "concatenated_string"})
_CONSTANT_CONTAINERS = frozenset({"tuple", "list", "dictionary", "set", "pair", "parenthesized_expression"})
_NOT_IMPLEMENTED = frozenset({"NotImplementedError", "NotImplemented"})
_RECEIVERS = frozenset({"self", "cls"})
DOCSTRING = "a docstring"
RAISE_NOT_IMPLEMENTED = "`raise NotImplementedError`"


def placeholder_body_in(source: SourceFile, function: tree_sitter.Node) -> str | None:
    """``placeholder_body`` of ``function``, a node of ``source``'s tree, answered once per
    function: the per-file pass's FX902 and its whole-program scanner both ask it of every
    function of the same tree (a node's id is unique among the nodes of one tree)."""
    memo = source.placeholders
    key = function.id
    if key in memo:
        return memo[key]
    found = memo[key] = placeholder_body(function)
    return found


def placeholder_body(function: tree_sitter.Node) -> str | None:
    """What the body of ``function`` (a ``function_definition``) is when it is only placeholders
    (one or several: "`pass` and `raise NotImplementedError`"); None for a body that does something."""
    body = function.child_by_field_name("body")
    if body is None:
        return None
    statements = [child for child in body.named_children if child.type != "comment"]
    if statements and _is_docstring(statements[0]):
        statements = statements[1:]
        if not statements:
            return DOCSTRING
    if not statements:
        return None
    found: list[str] = []
    for statement in statements:
        placeholder = _statement_placeholder(statement, function)
        if placeholder is None:
            return None
        if placeholder and placeholder not in found:
            found.append(placeholder)
    if not found:
        return None
    return found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]


def constant_answer(function: tree_sitter.Node) -> str:
    """The constant a function returns when its body (after a docstring) is one `return` of a
    literal other than None (`return "math.inf"`, `return ()`): its text, "" for any other body.
    Two classes of one family returning different constants give two answers, not two stubs."""
    statements = _statements(function)
    if len(statements) != 1 or statements[0].type != "return_statement":
        return ""
    value = _first_named(statements[0])
    if value is None or value.type == "none" or not _is_constant(value):
        return ""
    return " ".join(value.text.decode().split())


def _statements(function: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The body's statements without comments and without a leading docstring."""
    body = function.child_by_field_name("body")
    if body is None:
        return []
    statements = [child for child in body.named_children if child.type != "comment"]
    if statements and _is_docstring(statements[0]):
        statements = statements[1:]
    return statements


def function_name(function: tree_sitter.Node) -> str:
    name = function.child_by_field_name("name")
    return name.text.decode() if name is not None else ""


def _statement_placeholder(statement: tree_sitter.Node, function: tree_sitter.Node) -> str | None:
    """A placeholder statement's description, "" for a bare string (a second docstring), None
    for a statement that does something."""
    kind = statement.type
    if kind == "pass_statement":
        return "`pass`"
    if kind == "expression_statement":
        value = _first_named(statement)
        if statement.named_child_count == 1 and value is not None and value.type == "ellipsis":
            return "`...`"
        return "" if _is_docstring(statement) else None
    if kind == "raise_statement":
        return RAISE_NOT_IMPLEMENTED if _raises_not_implemented(statement) else None
    if kind == "return_statement":
        name = function_name(function)
        if len(name) > 4 and name.startswith("__") and name.endswith("__"):
            # A data-model method's signature is fixed by the protocol, and a constant is its
            # answer: `__exit__(...): return False` lets the exception propagate, `__lt__` of an
            # infinity type is always False, `__bool__` of a flag is True.
            return None
        value = _first_named(statement)
        if value is None or value.type == "none":
            return "`return None`" if value is not None else "a bare `return`"
        if not _is_constant(value):
            return None
        parameters = _parameter_names(function.child_by_field_name("parameters"))
        ignored = [name for name in parameters if name not in _RECEIVERS and not name.startswith("_")]
        if ignored:
            shown = ", ".join(f"`{name}`" for name in ignored)
            return f"a constant `{_one_line(value.text.decode())}` that ignores {shown}"
    return None


def _first_named(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The first named child (tree-sitter 0.26 raises IndexError for a missing one)."""
    return node.named_child(0) if node.named_child_count else None


def _is_docstring(statement: tree_sitter.Node) -> bool:
    if statement.type != "expression_statement" or statement.named_child_count != 1:
        return False
    value = _first_named(statement)
    return value is not None and value.type in ("string", "concatenated_string")


def _is_constant(node: tree_sitter.Node) -> bool:
    """A literal value: numbers, strings without interpolation, booleans, None, containers of them."""
    stack = [node]
    while stack:
        current = stack.pop()
        kind = current.type
        if kind == "unary_operator":
            stack.append(current.named_children[-1])
        elif kind in _CONSTANT_LEAVES:
            if kind in ("string", "concatenated_string") and _has_interpolation(current):
                return False
        elif kind in _CONSTANT_CONTAINERS:
            stack.extend(child for child in current.named_children if child.type != "comment")
        else:
            return False
    return True


def _has_interpolation(string: tree_sitter.Node) -> bool:
    stack = [string]
    while stack:
        current = stack.pop()
        if current.type == "interpolation":
            return True
        stack.extend(current.named_children)
    return False


def _raises_not_implemented(statement: tree_sitter.Node) -> bool:
    exception = _first_named(statement)
    if exception is not None and exception.type == "call":
        exception = exception.child_by_field_name("function")
    if exception is not None and exception.type == "attribute":
        exception = exception.child_by_field_name("attribute")
    return exception is not None and exception.type == "identifier" and exception.text.decode() in _NOT_IMPLEMENTED


def _parameter_names(parameters: tree_sitter.Node | None) -> list[str]:
    names = []
    for parameter in parameters.named_children if parameters is not None else ():
        if parameter.type == "identifier":
            names.append(parameter.text.decode())
            continue
        name = parameter.child_by_field_name("name")
        if name is None:  # *args / **kwargs: `list_splat_pattern (identifier)`
            name = next((child for child in parameter.named_children if child.type == "identifier"), None)
        if name is not None:
            names.append(name.text.decode())
    return names


def _one_line(text: str, limit: int = 40) -> str:
    """A literal as it fits in a one-line message: whitespace runs collapsed, long ones cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# Values of a table entry that supply a callable: a lambda, a function or method named, a factory's result.
_CALLABLE_VALUES = frozenset({"lambda", "identifier", "attribute", "call"})


def callable_table_keys(value: tree_sitter.Node) -> list[str]:
    """The string keys of a dict literal whose values are callables (``{"eval_inner": lambda obj:
    obj._make_eval_inner()}``), each a plain name: a class body that binds such a table builds
    those members at run time (``setattr(self, name, make(self))``), so they implement the
    methods of that name in its family. [] for any other value."""
    if value.type != "dictionary":
        return []
    keys = []
    for pair in value.named_children:
        if pair.type != "pair":
            continue
        key, entry = pair.child_by_field_name("key"), pair.child_by_field_name("value")
        if key is None or entry is None or key.type != "string" or entry.type not in _CALLABLE_VALUES:
            continue
        content = [child for child in key.named_children if child.type not in ("string_start", "string_end")]
        if len(content) == 1 and content[0].type == "string_content" and content[0].text.decode().isidentifier():
            keys.append(content[0].text.decode())
    return keys


# Comparisons that tell a function apart by its name (`f.__name__ == callee`, `name in (f.__name__, g.__name__)`).
_BY_NAME_OPERATORS = frozenset({"==", "!=", "in", "not in"})
_NAME_ATTRIBUTES = frozenset({b"__name__", b"__qualname__"})


def named_object(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """``f`` (a name or dotted name) of ``f.__name__`` / ``f.__qualname__``; None for any other node."""
    if node.type != "attribute":
        return None
    attribute, named = node.child_by_field_name("attribute"), node.child_by_field_name("object")
    if attribute is None or attribute.text not in _NAME_ATTRIBUTES or named is None:
        return None
    return named if named.type in ("identifier", "attribute") else None


def compared_by_name(comparison: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The objects whose ``__name__``/``__qualname__`` a ``==``/``!=``/``in`` comparison reads, as an
    operand or an element of a tuple, list or set operand: ``f`` of ``callee == f.__name__``. A
    marker function so recognised (a rewriter replaces its calls) does nothing by design."""
    if not any(child.type in _BY_NAME_OPERATORS for child in comparison.children):
        return []
    found = []
    for operand in comparison.named_children:
        for item in operand.named_children if operand.type in ("tuple", "list", "set") else (operand,):
            named = named_object(item)
            if named is not None:
                found.append(named)
    return found


# Blocks of a class body whose statements the class runs when its body runs (on some platform or
# version): `if hasattr(socket, "recvmsg"): recvmsg = _make_wrapper(...)`, `try:`/`else:`, `with`.
_CLASS_BODY_BLOCKS = frozenset({"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                                "finally_clause", "with_statement"})
_TYPE_CHECKING = re.compile(r"^(?:\w+\.)*TYPE_CHECKING$")


def class_body_statements(body: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The statements of a class body, also those inside its `if`/`try`/`with` blocks (a member
    bound only where the platform has it is still the class's member), not those under `if
    TYPE_CHECKING:` (declarations for the type checker: the class never runs them)."""
    stack = [iter(body.named_children)]
    while stack:
        statement = next(stack[-1], None)
        if statement is None:
            stack.pop()
            continue
        if statement.type not in _CLASS_BODY_BLOCKS:
            yield statement
            continue
        blocks = []
        for child in statement.named_children:
            if child.type == "block":
                if statement.type == "if_statement" and child == statement.child_by_field_name("consequence"):
                    condition = statement.child_by_field_name("condition")
                    if condition is not None and _TYPE_CHECKING.match(condition.text.decode(errors="replace")):
                        continue
                blocks.extend(child.named_children)
            elif child.type in _CLASS_BODY_BLOCKS:
                blocks.append(child)
        stack.append(iter(blocks))


def stores_its_argument(function: tree_sitter.Node) -> bool:
    """A decorator that records what it decorates in a table (IPython's `def _define_event(f):
    available_events[f.__name__] = f; return f`, a factory's inner `def wrapped(f): VIEWS[name] =
    (f, template)`): the function, or one defined in it, writes its first parameter — alone or in a
    tuple or list — into a subscript. What it decorates is registered there, the table's entry."""
    text = function.text
    if b"] =" not in text and b"]=" not in text:
        return False  # (no subscript written: most functions, read without a walk)
    # The names written on the right of a subscript assignment (`table[k] = f`, `= (f, t)`): a
    # function whose first parameter is none of them stores no argument, and is not walked.
    stored = {name for match in _SUBSCRIPT_WRITE.finditer(text) for name in _NAME.findall(match.group(1))}
    if not stored or not stored.intersection(_DEF_FIRST_PARAMETER.findall(text)):
        return False  # (no `def` here, nested or not, takes one of those names first: no walk)
    stack = [function]
    while stack:
        current = stack.pop()
        if current.type == "function_definition" and _first_parameter(current) in stored and _stores_first_parameter(current):
            return True
        stack.extend(current.named_children)
    return False


# A subscript assignment's right-hand side, over up to three lines (`[k] = (f, template)`).
_SUBSCRIPT_WRITE = re.compile(rb"\]\s*=(?!=)([^\n]*(?:\n[^\n]*){0,2})")
_NAME = re.compile(rb"[A-Za-z_]\w*")
# The first parameter each `def` of a text takes, past `self`/`cls`.
_DEF_FIRST_PARAMETER = re.compile(rb"\bdef\s+\w+\s*\(\s*(?:(?:self|cls)\s*(?::[^,)]*)?,\s*)?\*{0,2}([A-Za-z_]\w*)")


def _first_parameter(function: tree_sitter.Node) -> bytes:
    names = [name for name in _parameter_names(function.child_by_field_name("parameters")) if name not in _RECEIVERS]
    return names[0].encode() if names else b""


def _stores_first_parameter(function: tree_sitter.Node) -> bool:
    names = _parameter_names(function.child_by_field_name("parameters"))
    names = [name for name in names if name not in _RECEIVERS]
    body = function.child_by_field_name("body")
    if not names or body is None:
        return False
    stored = names[0]
    stack = list(body.named_children)
    while stack:
        current = stack.pop()
        if current.type in ("function_definition", "class_definition", "lambda"):
            continue  # another scope: its names are its own
        if current.type == "assignment":
            left, right = current.child_by_field_name("left"), current.child_by_field_name("right")
            if left is not None and right is not None and left.type == "subscript":
                values = right.named_children if right.type in ("tuple", "list", "expression_list") else (right,)
                if any(value.type == "identifier" and value.text.decode() == stored for value in values):
                    return True
        stack.extend(current.named_children)
    return False
