"""FX501: definitions whose name says they migrate a layout."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import ClassVar

import tree_sitter

from foxaudit.rules._support.cuda import declared_name, function_declarator
from foxaudit.rules._support.options import freeze, regex_tuple
from foxaudit.rules.base import Example, FileContext, Rule, RuleOptions

CODE = "FX501"


@dataclass(frozen=True)
class BannedDefinitionNameOptions(RuleOptions):
    patterns: tuple[str, ...] = field(
        default=("^_*(migrate|upgrade)_isv",),
        metadata={"help": "Python regular expressions (re.search) matched against each defined name."},
    )

    def __post_init__(self) -> None:
        freeze(self, "patterns", regex_tuple(CODE, "patterns", self.patterns))


@functools.lru_cache(maxsize=32)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


class BannedDefinitionName(Rule):
    """Flags definitions named like layout migrations (`migrate_isv`, `upgrade_isv_v2`, ...).

    ## What it does
    Reports a Python `def`/`async def`/`class` (at any depth, decorated or not) and a CUDA
    function definition or prototype (including templates, `extern "C"` blocks and member
    functions declared in a struct) whose name matches one of `patterns` (Python `re.search`;
    default `^_*(migrate|upgrade)_isv`, so private helpers such as `_migrate_isv_v1` count).
    A function bound by assignment counts as a definition too: a banned name given a lambda,
    a function or a `staticmethod(...)`/`classmethod(...)`/`partial(...)` (`migrate_isv =
    lambda s: s`), and, in a class body, any attribute bound to a function with a banned name
    (`load = staticmethod(_migrate_isv_v1)`). A banned name given a plain value
    (`migrate_isv_count = 0`) is data and is not reported.

    ## Why is this bad
    Invariant 5, one layout, fail fast. Every multi-field buffer has one source of truth and a
    structural fingerprint; a checkpoint or buffer with another fingerprint is rejected with
    "retrain required". A migration function quietly reinterprets old slots under a new layout,
    which is exactly the silent corruption the fingerprint exists to prevent, and it keeps two
    layouts alive forever.

    ## Example
    ```python
    def migrate_isv_v3_to_v4(isv):
        return torch.cat([isv[:40], torch.zeros(2), isv[40:]])
    ```

    ## Use instead
    Change the layout in `trainer/layout.py`, regenerate the header, and retrain: loading an old
    checkpoint fails fast with the fingerprint mismatch.

    ## Options
    - `patterns`: regular expressions for banned names (default `["^_*(migrate|upgrade)_isv"]`).
    """

    code = CODE
    name = "banned-definition-name"
    summary = "Definition named like a layout migration (layouts fail fast, they are never migrated)"
    invariant = 5
    languages = frozenset({"python", "cuda"})
    python_nodes = ("function_definition", "class_definition", "assignment")
    cuda_nodes = ("function_definition", "declaration", "field_declaration")
    options_class = BannedDefinitionNameOptions

    VALID: ClassVar[list[Example]] = [
        Example("def check_isv_fingerprint(isv):\n    return isv[-2:]\n"),
        Example("def remigrate_isv():\n    return 1\n"),
        Example("migrate_isv_count = 0\n"),
        Example("def run():\n    return migrate_isv(state)\n"),
        Example("__global__ void write_isv(float* isv) { isv[0] = 1.0f; }\n", path="isv.cu"),
        Example("float migrate_isv_scale = 1.0f;\n", path="isv.cuh"),
        Example("def migrate_config(cfg):\n    return cfg\n", options={"patterns": ["^migrate_isv"]}),
        Example("class Loader:\n    migrate_isv_count = 0\n    load = staticmethod(read_checkpoint)\n"),
        Example("handler = migrate_isv_table[0]\n"),
    ]
    INVALID: ClassVar[list[Example]] = [
        Example("def migrate_isv(isv):\n    return isv\n", expect=1),
        Example("def upgrade_isv_v2(isv):\n    return isv\n", expect=1),
        Example("class migrate_isv_helper:\n    size = 3\n", expect=1),
        Example("class Loader:\n    @staticmethod\n    async def upgrade_isv(isv):\n        return isv\n", expect=1),
        Example("def load(path):\n    def migrate_isv_inner(isv):\n        return isv\n    return migrate_isv_inner\n",
                expect=1),
        Example("if TYPE_CHECKING:\n    def migrate_isv(isv): ...\n", expect=1),
        Example("def migrate_ps(ps):\n    return ps\n", options={"patterns": ["^migrate_(isv|ps)"]}, expect=1),
        Example("__global__ void migrate_isv_kernel(float* isv) { isv[0] = 0.0f; }\n", path="m.cu", expect=1),
        Example('extern "C" {\n__global__ void upgrade_isv(float* isv);\n}\n', path="m.cuh", expect=1),
        Example("template <int N>\n__device__ float* migrate_isv_slots(float* isv) { return isv + N; }\n",
                path="m.cuh", expect=1),
        Example("struct Bus {\n  void migrate_isv(float* isv);\n};\n", path="bus.cuh", expect=1),
        Example("namespace fx {\nvoid upgrade_isv(float* isv) { }\n}\n", path="host.cu", expect=1),
        Example("def _migrate_isv_v1(isv):\n    return isv\n", expect=1),
        Example("def __upgrade_isv(isv):\n    return isv\n", expect=1),
        Example("migrate_isv = lambda isv: isv\n", expect=1),
        Example("from legacy import convert\n\nclass Checkpoint:\n    upgrade_isv = staticmethod(convert)\n", expect=1),
        Example("from legacy import _migrate_isv_v1\n\nclass Checkpoint:\n    load = staticmethod(_migrate_isv_v1)\n"
                "    fix = legacy.upgrade_isv_v2\n    again = functools.partial(_migrate_isv_v1, strict=True)\n", expect=3),
    ]

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        if node.type == "assignment":
            self._visit_assignment(node, ctx)
            return
        if ctx.language == "python":
            name = node.child_by_field_name("name")
        else:
            declarator = function_declarator(node)
            name = declared_name(declarator) if declarator is not None else None
        if name is None:
            return
        self._check(name, name.text.decode(), "", ctx)

    def _visit_assignment(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        target = node.child_by_field_name("left")
        value = node.child_by_field_name("right")
        if target is None or value is None or target.type != "identifier":
            return
        bound = _bound_function(value)
        if bound is None:
            return  # a plain value (`migrate_isv_count = 0`) is data, not a definition
        if self._check(target, target.text.decode(), "", ctx):
            return
        statement = node.parent
        block = statement.parent if statement is not None and statement.type == "expression_statement" else None
        if block is None or block.parent is None or block.parent.type != "class_definition":
            return
        if bound.type in ("identifier", "attribute"):
            name = bound.child_by_field_name("attribute") if bound.type == "attribute" else bound
            if name is not None:
                self._check(name, name.text.decode(), f" (bound as class attribute `{target.text.decode()}`)", ctx)

    @staticmethod
    def _check(where: tree_sitter.Node, text: str, note: str, ctx: FileContext) -> bool:
        options: BannedDefinitionNameOptions = ctx.options(CODE)
        for pattern in _compiled(options.patterns):
            if pattern.search(text):
                ctx.report(
                    CODE,
                    where,
                    f"`{text}`{note} matches banned name pattern `{pattern.pattern}` — invariant 5: layouts fail "
                    "fast on a fingerprint mismatch (retrain required), they are never migrated",
                    hint="delete the migration; change trainer/layout.py, regenerate the header and retrain",
                )
                return True
        return False


# Calls that turn a function into another callable without running it.
_WRAPPERS = frozenset({"staticmethod", "classmethod", "partial", "functools.partial", "property"})


def _bound_function(value: tree_sitter.Node) -> tree_sitter.Node | None:
    """The function an assignment binds: the lambda, the name or attribute, or the first argument
    of staticmethod/classmethod/partial; None for any other value (a number, a call's result)."""
    if value.type in ("lambda", "identifier", "attribute"):
        return value
    if value.type == "call":
        function = value.child_by_field_name("function")
        arguments = value.child_by_field_name("arguments")
        if function is not None and function.text.decode() in _WRAPPERS and arguments is not None:
            first = next((child for child in arguments.named_children if child.type != "comment"), None)
            if first is not None and first.type in ("identifier", "attribute", "lambda"):
                return first
    return None
