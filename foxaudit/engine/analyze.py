"""One file, one parse, one traversal: every enabled rule sees the nodes it asked for.

The traversal is a single tree-sitter query per file whose pattern is the union of the node
types the file's rules listed (``python_nodes`` / ``cuda_nodes``); the query engine walks the
tree in C and hands back only those nodes, which are then dispatched in source order to the
rules that asked for each type. Python never touches the nodes no rule wants.

Suppressions are applied here (FX002 is a rule; FX003 is computed after the walk). Codes of
whole-project rules cannot be judged until the project pass, so suppressions naming them are
returned as ``deferred`` for the runner.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Any

import tree_sitter

from foxaudit.diagnostics import Diagnostic
from foxaudit.engine.findings import (
    PARSE_ERROR,
    UNSUPPRESSIBLE,
    UNUSED_SUPPRESSION,
    unused_suppression,
)
from foxaudit.engine.resolve import Resolved, registered
from foxaudit.rules.base import FileContext, Rule
from foxaudit.rules.tool import parse_error
from foxaudit.sources.base import Language, SourceFile, language_of, ts_language
from foxaudit.sources.suppressions import MARKER, Suppression, find_suppressions


@dataclass
class FileResult:
    diagnostics: list[Diagnostic]
    # [line, column, end_line, end_column, code, covered lines] of suppressions of project codes.
    deferred: list[list[Any]] = field(default_factory=list)
    # Those of ``diagnostics`` that the whole-project pass confirms, with their rule's facts
    # (``FileContext.report(confirm=...)``); without that pass they stand as reported.
    pending: list[tuple[Diagnostic, tuple[str, ...]]] = field(default_factory=list)
    # The file as parsed for the rules (None when it was not: binary, undecodable, no language),
    # so the whole-program summary can be made from the same tree.
    source: SourceFile | None = field(default=None, repr=False, compare=False)
    # The captures of the query ``analyze(also=...)`` added to the rules' walk (capture name →
    # nodes), or None when that walk did not run: the summary reads them instead of walking again.
    captures: dict[str, list[tree_sitter.Node]] | None = field(default=None, repr=False, compare=False)


class Analyzer:
    """Rule instances and compiled queries for one process; ``analyze`` is called per file."""

    def __init__(self, resolved: Resolved):
        self.resolved = resolved
        self.table = registered()
        self.root = resolved.settings.root
        self.rules: list[Rule] = []
        for entry in self.table.values():
            if entry.code in resolved.file_codes:
                self.rules.append(entry.rule())  # type: ignore[call-arg]
        self.rules.sort(key=lambda rule: rule.code)
        # A rule asking for a node type its grammar lacks is reported on every file it would
        # have checked (FX001), and left out of the walk so the other rules still run.
        self.broken: dict[tuple[str, str], ValueError] = {}
        for rule in self.rules:
            for language in rule.languages:
                for node_type in rule.nodes_for(language):
                    try:
                        _node_pattern(language, node_type)
                    except ValueError as error:
                        self.broken[(rule.code, language)] = error

    def analyze(self, relative: str, data: bytes, *, also: str = "") -> FileResult:
        """Diagnostics of one file; never raises (failures become FX001).

        ``also``: query patterns (capture names other than ``n``) run in the same walk as the
        rules' nodes; their captures come back in ``FileResult.captures`` (the whole-program
        scanner's, so a summarised file is walked once).
        """
        codes = self.resolved.codes_for(relative)
        try:
            return self._analyze(relative, data, codes, also)
        except Exception as error:  # noqa: BLE001 — the run goes on: the failure is reported on the file
            if PARSE_ERROR not in codes:
                return FileResult([])
            return FileResult([parse_error.internal_failure(relative, "foxaudit while checking this file", error)])

    def _analyze(self, relative: str, data: bytes, codes: frozenset[str], also: str = "") -> FileResult:
        language = language_of(relative)
        if language is None:
            return FileResult([])
        if b"\0" in data:
            return FileResult([parse_error.binary_file(relative)] if PARSE_ERROR in codes else [])
        # Editors, CPython and libcst do not count a byte-order mark as a column of line 1.
        data = data.removeprefix(UTF8_BOM)
        try:
            source = SourceFile(path=relative, data=data, language=language, defines=self.resolved.settings.cuda_defines)
        except UnicodeDecodeError as error:
            return FileResult([parse_error.undecodable(relative, data, error)] if PARSE_ERROR in codes else [])
        active = [rule for rule in self.rules if rule.code in codes and language in rule.languages]
        ctx = FileContext(source, self.resolved.options, self.root)
        failures: list[Diagnostic] = []
        for rule in [rule for rule in active if (rule.code, language) in self.broken]:
            active.remove(rule)
            if PARSE_ERROR in codes:
                error = self.broken[(rule.code, language)]
                failures.append(parse_error.internal_failure(relative, f"rule {rule.code} ({rule.name})", error))
        live = list(active)

        def fail(rule: Rule, error: Exception) -> None:
            live.remove(rule)
            if PARSE_ERROR in codes:
                failures.append(parse_error.internal_failure(relative, f"rule {rule.code} ({rule.name})", error))

        for rule in list(live):
            try:
                rule.begin(ctx)
            except Exception as error:  # noqa: BLE001 — one broken rule must not hide the others' findings
                fail(rule, error)
        dispatch: dict[str, list[Rule]] = {}
        for rule in live:
            if rule.code in ctx.unwalked:
                continue  # nothing to visit here: its node types may drop out of the walk
            for node_type in rule.nodes_for(language):
                dispatch.setdefault(node_type, []).append(rule)
        captures: dict[str, list[tree_sitter.Node]] | None = None
        if dispatch:
            nodes, captures = _nodes(source, language, tuple(sorted(dispatch)), also)
            for node in nodes:
                for rule in dispatch[node.type]:
                    if rule not in live:
                        continue
                    try:
                        rule.visit(node, ctx)
                    except Exception as error:  # noqa: BLE001 — isolate one failure, keep the run going
                        fail(rule, error)
        for rule in list(live):
            try:
                rule.finish(ctx)
            except Exception as error:  # noqa: BLE001 — isolate one failure, keep the run going
                fail(rule, error)

        diagnostics = [d for d in ctx.diagnostics if d.code in codes]
        if failures and any(d.code == PARSE_ERROR for d in diagnostics):
            # A rule tripping over a file that does not parse adds nothing to the FX001 already there.
            failures = []
        diagnostics.extend(failures)
        result = FileResult(diagnostics) if MARKER not in data else self._suppress(source, diagnostics, codes)
        result.source = source
        result.captures = captures if also else None
        if ctx.pending:
            result.pending = [(d, ctx.pending[id(d)]) for d in result.diagnostics if id(d) in ctx.pending]
        return result

    def _suppress(self, source: SourceFile, diagnostics: list[Diagnostic], codes: frozenset[str]) -> FileResult:
        suppressions = [s for s in find_suppressions(source) if s.codes]
        if not suppressions:
            return FileResult(diagnostics)
        by_line: dict[int, list[Suppression]] = {}
        for suppression in suppressions:
            for line in suppression.lines:
                by_line.setdefault(line, []).append(suppression)
        used: set[tuple[int, str]] = set()
        kept: list[Diagnostic] = []
        for diagnostic in diagnostics:
            covering = [
                s
                for s in by_line.get(diagnostic.line, ())
                if diagnostic.code in s.codes and diagnostic.code not in UNSUPPRESSIBLE
            ]
            if covering:
                for suppression in covering:
                    used.add((id(suppression), diagnostic.code))
                continue
            kept.append(diagnostic)
        deferred: list[list[Any]] = []
        for suppression in suppressions:
            for code in suppression.codes:
                if (id(suppression), code) in used:
                    continue
                entry = self.table.get(code)
                if entry is None or entry.status == "removed":
                    if UNUSED_SUPPRESSION in codes:
                        kept.append(_unused(source.path, suppression, code, "names an unknown rule code"))
                elif not issubclass(entry.rule, Rule):
                    # A whole-project code: judged after the project pass (if one runs).
                    if code in codes:
                        deferred.append([*suppression.span, code, list(suppression.lines)])
                elif code in codes and UNUSED_SUPPRESSION in codes:
                    kept.append(_unused(source.path, suppression, code, "suppresses nothing"))
        return FileResult(kept, deferred)


UTF8_BOM = b"\xef\xbb\xbf"


def _unused(path: str, suppression: Suppression, code: str, why: str) -> Diagnostic:
    return unused_suppression(path, suppression.span, code, why)


def _nodes(
    source: SourceFile, language: Language, node_types: tuple[str, ...], also: str = ""
) -> tuple[list[tree_sitter.Node], dict[str, list[tree_sitter.Node]]]:
    """The nodes of the requested types, in source order (outer before inner), and the captures
    of the ``also`` patterns found in the same walk (as the query engine returns them)."""
    query = _union_query(language, node_types, also)
    captures = tree_sitter.QueryCursor(query).captures(source.tree.root_node)
    nodes = captures.pop("n", [])
    # By (start, -end) in two stable sorts on C-level keys: a key tuple per node cost more than
    # the query on a generated 5 MB module.
    nodes.sort(key=_END, reverse=True)
    nodes.sort(key=_START)
    return nodes, captures


_START = operator.attrgetter("start_byte")
_END = operator.attrgetter("end_byte")


@functools.cache
def _union_query(language: Language, node_types: tuple[str, ...], also: str = "") -> tree_sitter.Query:
    alternatives = [_node_pattern(language, node_type) for node_type in node_types]
    # One query, one walk: a node matching both the rules' alternation and an ``also`` pattern is
    # captured under each name (patterns match independently).
    return tree_sitter.Query(ts_language(language), "[" + " ".join(alternatives) + "] @n\n" + also)


@functools.cache
def _node_pattern(language: Language, node_type: str) -> str:
    """The query atom for one node type: ``(named)`` or ``"anonymous"``; ValueError if unknown."""
    grammar = ts_language(language)
    if node_type in ("ERROR", "MISSING") or grammar.id_for_node_kind(node_type, True):
        return f"({node_type})"
    if grammar.id_for_node_kind(node_type, False):
        escaped = node_type.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    raise ValueError(
        f"a rule asks for a node type the {language} grammar lacks (got {node_type!r} vs a"
        f" tree-sitter-{language} node type) — hint: fix the rule's {language}_nodes"
    )


def analyze_text(resolved: Resolved, path: str, text: str | bytes) -> FileResult:
    """Check one in-memory file (tests, editor integrations); no cache, no project pass."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return Analyzer(resolved).analyze(path, data)
