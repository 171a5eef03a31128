"""Test-only rule for engine tests: FX099 flags the integer 42 and offers a fix."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, ClassVar

import tree_sitter

from foxaudit.diagnostics import Diagnostic, Edit
from foxaudit.rules.base import Example, FileContext, ProjectRule, Rule, RuleOptions
from foxaudit.sources.base import node_span


@dataclasses.dataclass(frozen=True)
class MagicOptions(RuleOptions):
    replacement: str = dataclasses.field(default="MAGIC", metadata={"help": "name to use instead of 42"})


class MagicNumber(Rule):
    """Test-only rule: flags the integer 42 and offers to replace it with a name.

    ## What it does
    Flags ``42``.

    ## Why is this bad
    Magic numbers.

    ## Example
    ``x = 42``

    ## Use instead
    ``x = MAGIC``

    ## Options
    ``replacement``: the name.
    """

    code: ClassVar[str] = "FX099"
    name: ClassVar[str] = "magic-number"
    summary: ClassVar[str] = "The integer 42 (test-only rule)"
    invariant: ClassVar[int] = 0
    python_nodes: ClassVar[tuple[str, ...]] = ("integer",)
    cuda_nodes: ClassVar[tuple[str, ...]] = ("number_literal",)
    languages: ClassVar = frozenset({"python", "cuda"})
    options_class: ClassVar[type[RuleOptions]] = MagicOptions
    fixable: ClassVar[bool] = True
    VALID: ClassVar[list[Example]] = [Example("x = 41\n")]
    INVALID: ClassVar[list[Example]] = [Example("x = 42\n", expect=1)]

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        if ctx.source.node_text(node) != "42":
            return
        replacement = ctx.options(self.code).replacement
        span = node_span(ctx.source, node)
        ctx.report(self.code, node, "magic number 42", hint=f"use {replacement}", edits=[Edit(*span, replacement)])


class CountingProjectRule(ProjectRule):
    """Test-only whole-project rule: one finding on line 1 of every Python file holding ``answer``.

    ## What it does
    Flags files.

    ## Why is this bad
    Test only.

    ## Example
    ``answer = 1``

    ## Use instead
    ``value = 1``

    ## Options
    None.
    """

    code: ClassVar[str] = "FX098"
    name: ClassVar[str] = "answer-file"
    summary: ClassVar[str] = "A file that mentions answer (test-only project rule)"
    invariant: ClassVar[int] = 0
    calls: ClassVar[list[int]] = []

    def check_project(self, project: Any, options: RuleOptions) -> Iterator[Diagnostic]:
        CountingProjectRule.calls.append(len(project.files))
        for source in project.python_files():
            if "answer" in source.text:
                yield Diagnostic(source.path, 1, 1, self.code, f"{len(project.files)} files; this one mentions answer", 1, 2)
