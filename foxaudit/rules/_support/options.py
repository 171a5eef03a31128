"""Coercion and validation helpers for rule option dataclasses.

Options arrive from TOML (lists, tables) or from Python (tuples, dicts). The option
dataclasses are frozen and hashable, so ``__post_init__`` turns lists into tuples and tables
into sorted tuples of pairs, and raises ``ValueError`` with the house error format
(``<what failed> (<got> vs <expected>) — hint: <what to do>``) on a bad value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def option_error(code: str, key: str, problem: str, got: object, expected: str, hint: str) -> ValueError:
    return ValueError(f"[tool.foxaudit.rules.{code}] {key}: {problem} (got {got!r} vs {expected}) — hint: {hint}")


def string_tuple(code: str, key: str, value: Any, *, allow_empty: bool = True) -> tuple[str, ...]:
    """A list/tuple of strings as a tuple; a lone string is an error (it is almost always a typo)."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise option_error(code, key, "expected a list of strings", value, "a list like [\"a\", \"b\"]",
                           f'write {key} = ["..."]')
    for item in value:
        if not isinstance(item, str) or not item:
            raise option_error(code, key, "every entry must be a non-empty string", item, "a string",
                               f"remove or quote the entry in {key}")
    if not allow_empty and not value:
        raise option_error(code, key, "the list is empty", list(value), "at least one entry",
                           f"list at least one value, or disable {code} with `ignore`")
    return tuple(value)


def string_map(code: str, key: str, value: Any) -> tuple[tuple[str, str], ...]:
    """A table of string → string as a sorted tuple of pairs (hashable, deterministic)."""
    items = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = tuple(sorted((str(k), v) for k, v in items))
    except (TypeError, ValueError):
        raise option_error(code, key, "expected a table of strings", value, 'a table like {ps = "PS_"}',
                           f'write {key} = {{ name = "value" }}') from None
    for name, text in pairs:
        if not isinstance(text, str) or not text:
            raise option_error(code, key, f"entry {name!r} must map to a non-empty string", text, "a string",
                               f'write {name} = "..." in {key}')
    return pairs


def int_map(code: str, key: str, value: Any) -> tuple[tuple[str, int], ...]:
    """A table of string → int as a sorted tuple of pairs."""
    items = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = tuple(sorted((str(k), v) for k, v in items))
    except (TypeError, ValueError):
        raise option_error(code, key, "expected a table of integers", value, "a table like {PS_CASH = 3}",
                           f"write {key} = {{ NAME = 3 }}") from None
    for name, number in pairs:
        if isinstance(number, bool) or not isinstance(number, int):
            raise option_error(code, key, f"constant {name!r} must be an integer", number, "an integer",
                               f"write {name} = <integer> in {key}")
    return pairs


def regex_tuple(code: str, key: str, value: Any) -> tuple[str, ...]:
    patterns = string_tuple(code, key, value, allow_empty=False)
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise option_error(code, key, f"invalid regular expression ({error})", pattern,
                               "a Python `re` pattern", "fix the pattern; test it with python -c 'import re; re.compile(...)'") from None
    return patterns


def freeze(instance: object, name: str, value: object) -> None:
    """Assign a normalised value on a frozen dataclass inside ``__post_init__``."""
    object.__setattr__(instance, name, value)
