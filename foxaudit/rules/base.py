"""The contract between rules and the engine.

A per-file rule is one class in one module (``foxaudit/rules/<area>/<pattern_name>.py``)
registered once in ``foxaudit/rules/registry.py``. The engine walks each file's tree-sitter
tree ONCE and calls ``visit(node, ctx)`` on every rule that listed ``node.type`` in
``python_nodes`` / ``cuda_nodes``; ``begin(ctx)`` and ``finish(ctx)`` run before and after the
walk. A rule reports with ``ctx.report(...)``; it keeps no state across files (per-file state
lives in ``ctx.state[self.code]``).

The class docstring has the sections *What it does / Why is this bad / Example / Use
instead / Options* (``foxaudit rule CODE`` prints it; a meta-test enforces it). ``VALID`` and
``INVALID`` hold examples the test suite runs: every VALID example yields no diagnostic of
this rule, every INVALID example yields at least one (exactly ``expect`` when given).

Whole-project rules (import graph, kernel linkage, hot path, ...) subclass ``ProjectRule``
and implement ``check_project(project)``; the engine runs them after the per-file pass. Most of
them read only the shared program analyses (``foxaudit.program.analysis.Analysis``: facts that
several rules read) and subclass ``AnalysisRule``: its ``check(analysis)`` turns those facts into
the rule's diagnostics, with the rule's message and hint, and is the one place the rule's
decision is written (the invariants audit doc counts findings by calling it too). A whole-project
rule's ``VALID`` and ``INVALID`` are ``ProjectExample`` repositories (path → text, with a
``pyproject.toml`` where the rule needs configuration) that the test suite checks through the
real whole-program pipeline.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import tree_sitter

from foxaudit.diagnostics import Diagnostic, Edit
from foxaudit.sources.base import Language, SourceFile, node_span

if TYPE_CHECKING:  # the program layer is imported when a whole-project rule runs, not before
    from foxaudit.program.analysis import Analysis

DOC_SECTIONS = ("What it does", "Why is this bad", "Example", "Use instead", "Options")


@dataclass(frozen=True)
class Example:
    """A snippet for VALID/INVALID. ``path`` picks the language (and can match globs in options)."""

    code: str
    path: str = "example.py"
    options: dict[str, Any] = field(default_factory=dict)
    # For INVALID examples: the exact number of diagnostics expected (None: at least one).
    expect: int | None = None
    # For fixable INVALID examples: the file text after ``--fix`` (None: not checked).
    fixed: str | None = None


@dataclass(frozen=True)
class ProjectExample:
    """A small repository for a whole-project rule's VALID/INVALID: repository-relative path →
    file text. A ``pyproject.toml`` among the files configures ``[tool.foxaudit.program]``."""

    files: Mapping[str, str]
    # For INVALID examples: the exact number of findings expected (None: at least one).
    expect: int | None = None
    # What the example shows, printed above its files (`foxaudit rule CODE`, docs/rules.md).
    note: str = ""


class RuleOptions:
    """Base for a rule's typed options (a frozen dataclass subclass with defaults).

    ``[tool.foxaudit.rules.<CODE>]`` keys are the field names with ``_`` written as ``-``.
    Each field needs a default and a docstring-like ``metadata={"help": ...}``.
    """


@dataclass(frozen=True)
class NoOptions(RuleOptions):
    pass


class FileContext:
    """What a rule sees of one file while the engine walks it."""

    def __init__(self, source: SourceFile, options: dict[str, RuleOptions], project_root: str | Path = "."):
        self.source = source
        self._options = options
        # Where repository-relative paths in options (e.g. FX801's ``constants-from``) resolve.
        self.project_root = Path(project_root)
        self.diagnostics: list[Diagnostic] = []
        # id(diagnostic) → the facts its rule's ``confirm`` reads in the whole-project pass.
        self.pending: dict[int, tuple[str, ...]] = {}
        self.state: dict[str, Any] = {}
        # Codes of rules that said in ``begin`` that no node of this file can give them a finding
        # (``skip_walk``): the walk leaves their node types out and does not call their ``visit``.
        self.unwalked: set[str] = set()

    def skip_walk(self, code: str) -> None:
        """From ``begin``: this rule's ``visit`` would find nothing in this file (its ``finish``
        still runs). Visiting no nodes must then give the same findings as visiting them all."""
        self.unwalked.add(code)

    @property
    def path(self) -> str:
        return self.source.path

    @property
    def language(self) -> Language:
        return self.source.language

    def options(self, code: str) -> Any:
        return self._options[code]

    def report(
        self,
        code: str,
        where: tree_sitter.Node | tuple[int, int, int, int],
        message: str,
        *,
        hint: str = "",
        edits: Iterable[Edit] = (),
        confirm: tuple[str, ...] = (),
    ) -> None:
        """Report a finding. With ``confirm`` (facts this file cannot settle, such as "class C's
        method m"), the finding stands as reported when no whole-project pass runs; when one runs,
        the rule's ``confirm(analysis, path, facts)`` decides with the whole program in view."""
        if isinstance(where, tuple):
            line, column, end_line, end_column = where
        else:
            line, column, end_line, end_column = node_span(self.source, where)
        diagnostic = Diagnostic(
            path=self.source.path,
            line=line,
            column=column,
            code=code,
            message=message,
            end_line=end_line,
            end_column=end_column,
            hint=hint,
            edits=tuple(edits),
        )
        self.diagnostics.append(diagnostic)
        if confirm:
            self.pending[id(diagnostic)] = confirm


class Rule:
    """A per-file rule. Subclasses set the class attributes and implement ``visit``."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case pattern name, e.g. "deferred-work-marker"
    summary: ClassVar[str]  # one line, used by `foxaudit rules` and SARIF shortDescription
    invariant: ClassVar[int]  # which of the nine invariants (DESIGN.md §2) it enforces; 0: tool hygiene
    languages: ClassVar[frozenset[Language]] = frozenset({"python"})
    python_nodes: ClassVar[tuple[str, ...]] = ()
    cuda_nodes: ClassVar[tuple[str, ...]] = ()
    options_class: ClassVar[type[RuleOptions]] = NoOptions
    fixable: ClassVar[bool] = False
    # The rule reports some findings with ``confirm=`` facts and implements
    # ``confirm(analysis, path, facts) -> bool``: the run then builds the whole program for it.
    confirms_in_project: ClassVar[bool] = False
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    def begin(self, ctx: FileContext) -> None:  # foxaudit: ignore[FX902] -- default hook, a rule overrides what it needs
        """Called once per file before the walk (which it may leave: ``ctx.skip_walk``)."""

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:  # foxaudit: ignore[FX902] -- default hook, a rule overrides what it needs
        """Called for every node whose type is in this rule's node list for the language."""

    def finish(self, ctx: FileContext) -> None:  # foxaudit: ignore[FX902] -- default hook, a rule overrides what it needs
        """Called once per file after the walk."""

    @classmethod
    def dependencies(cls, options: RuleOptions) -> tuple[str, ...]:
        """Repository-relative files, other than the checked one, whose content shapes this rule's
        findings (FX801 reads layout constants). A cache keyed by file content must also key on
        these. They are the values of option fields whose metadata has ``"dependency": True``."""
        paths: list[str] = []
        for option_field in cls.option_fields():
            if option_field.metadata.get("dependency"):
                paths.extend(getattr(options, option_field.name))
        return tuple(paths)

    @classmethod
    def nodes_for(cls, language: Language) -> tuple[str, ...]:
        return cls.python_nodes if language == "python" else cls.cuda_nodes

    @classmethod
    def default_options(cls) -> RuleOptions:
        return cls.options_class()

    @classmethod
    def option_fields(cls) -> list[dataclasses.Field]:
        if not dataclasses.is_dataclass(cls.options_class):
            return []
        return list(dataclasses.fields(cls.options_class))


class ProjectRule(abc.ABC):
    """A whole-repository rule (foxaudit/program + rules/<area>/...). See module docstring."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    invariant: ClassVar[int]
    options_class: ClassVar[type[RuleOptions]] = NoOptions
    fixable: ClassVar[bool] = False
    VALID: ClassVar[list[ProjectExample]] = []
    INVALID: ClassVar[list[ProjectExample]] = []

    @abc.abstractmethod
    def check_project(self, project: Any, options: RuleOptions) -> Iterator[Diagnostic]:
        """Yield findings for the whole project (``project`` is foxaudit.program.Project)."""


class AnalysisRule(ProjectRule):
    """A whole-project rule whose findings follow from the shared program analyses alone."""

    @abc.abstractmethod
    def check(self, analysis: Analysis) -> list[Diagnostic]:
        """This rule's diagnostics over the analysis facts (in any order)."""

    def check_project(self, project: Any, options: RuleOptions) -> Iterator[Diagnostic]:
        from foxaudit.program.analysis import analysis_for

        yield from sorted(self.check(analysis_for(project)))
