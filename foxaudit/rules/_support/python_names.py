"""What a name in a Python file refers to, as far as that file's imports say."""

from __future__ import annotations

from collections.abc import Iterable

import tree_sitter


def aliases_of(statements: Iterable[tree_sitter.Node]) -> dict[str, str]:
    """Local name → qualified name for these import statements (a file's, at any depth, in source
    order: a later import of a name wins; a rule is handed them by the file's walk):
    ``from abc import abstractmethod as abstract`` → ``{"abstract": "abc.abstractmethod"}``,
    ``import typing as t`` → ``{"t": "typing"}``, ``import os.path`` → ``{"os": "os"}``."""
    aliases: dict[str, str] = {}
    for statement in statements:
        module = ""
        if statement.type == "import_from_statement":
            module_node = statement.child_by_field_name("module_name")
            module = module_node.text.decode() if module_node is not None else ""
        for name in statement.children_by_field_name("name"):
            if name.type == "aliased_import":
                original = name.child_by_field_name("name")
                alias = name.child_by_field_name("alias")
                if original is None or alias is None:
                    continue
                target = original.text.decode()
                aliases[alias.text.decode()] = f"{module}.{target}".lstrip(".") if module and not module.endswith(".") else (
                    module + target if module else target)
            else:
                target = name.text.decode()
                if module:
                    aliases[target] = f"{module}.{target}" if not module.endswith(".") else module + target
                else:
                    head = target.split(".", 1)[0]
                    aliases[head] = head
    return aliases


def resolve(expression: str, aliases: dict[str, str]) -> str:
    """The qualified name of a dotted expression (``t.Protocol[T]`` → ``typing.Protocol``); the
    expression itself (without call or subscript) when its head is not imported."""
    dotted = expression.strip().lstrip("@").split("(", 1)[0].split("[", 1)[0].replace(" ", "")
    head, _, rest = dotted.partition(".")
    if head in aliases:
        return aliases[head] + ("." + rest if rest else "")
    return dotted
