"""The rule contract, checked for every rule: docs, examples, registry rows, options, docs page."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re

import pytest

import foxaudit.rules
from foxaudit.rules import docs
from foxaudit.rules.base import DOC_SECTIONS, ProjectExample, ProjectRule, Rule, RuleOptions
from foxaudit.rules.registry import REGISTRY
from foxaudit.sources.base import ts_language


def _rule_classes() -> list[type]:
    """Every Rule/ProjectRule subclass defined in a module under foxaudit/rules/."""
    found = []
    for module_info in pkgutil.walk_packages(foxaudit.rules.__path__, "foxaudit.rules."):
        if module_info.name in ("foxaudit.rules.docs",):
            continue
        module = importlib.import_module(module_info.name)
        for _name, value in inspect.getmembers(module, inspect.isclass):
            defined_here = value.__module__ == module.__name__
            if defined_here and issubclass(value, (Rule, ProjectRule)) and value not in (Rule, ProjectRule) and not inspect.isabstract(value):
                found.append(value)
    return sorted(set(found), key=lambda cls: cls.__module__)


RULES = _rule_classes()
FILE_RULES = [rule for rule in RULES if issubclass(rule, Rule)]
PROJECT_RULES = [rule for rule in RULES if issubclass(rule, ProjectRule)]


def test_rules_are_found() -> None:
    assert {"FX401", "FX501", "FX801", "FX901", "FX902"} <= {rule.code for rule in RULES}


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: getattr(rule, "code", rule.__name__))
def test_rule_has_documentation_sections(rule: type) -> None:
    missing = docs.missing_sections(rule)
    assert not missing, f"{rule.__name__} docstring lacks sections {missing} (needs `## {'`, `## '.join(DOC_SECTIONS)}`)"
    for section, text in docs.doc_sections(rule).items():
        assert text.strip(), f"{rule.__name__}: section {section!r} is empty"


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: getattr(rule, "code", rule.__name__))
def test_rule_has_identity(rule: type) -> None:
    assert re.fullmatch(r"FX\d{3}", rule.code), f"{rule.__name__}.code {rule.code!r} is not FXnnn"
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", rule.name), f"{rule.code}: name {rule.name!r} is not kebab-case"
    assert rule.summary and "\n" not in rule.summary and not rule.summary.endswith("."), f"{rule.code}: summary"
    assert rule.invariant in range(10), f"{rule.code}: invariant {rule.invariant!r} is not 0..9"
    module = rule.__module__.rsplit(".", 1)[-1]
    assert module == rule.name.replace("-", "_") or rule.code < "FX100", (
        f"{rule.code}: module {module!r} should be named for the pattern {rule.name!r}")


@pytest.mark.parametrize("rule", FILE_RULES, ids=lambda rule: rule.code)
def test_file_rule_has_examples_and_node_types(rule: type[Rule]) -> None:
    assert rule.VALID, f"{rule.code} has no VALID examples"
    assert rule.INVALID, f"{rule.code} has no INVALID examples"
    for language in rule.languages:
        grammar = ts_language(language)
        for node_type in rule.nodes_for(language):
            assert grammar.id_for_node_kind(node_type, True) or grammar.id_for_node_kind(node_type, False), (
                f"{rule.code} asks for {node_type!r}, which tree-sitter-{language} does not have")
    for example in [*rule.VALID, *rule.INVALID]:
        assert example.path.endswith((".py", ".pyi", ".cu", ".cuh")), f"{rule.code}: example path {example.path!r}"


@pytest.mark.parametrize("rule", PROJECT_RULES, ids=lambda rule: rule.code)
def test_project_rule_has_example_projects(rule: type[ProjectRule]) -> None:
    """Whole-project rules show multi-file VALID and INVALID repositories (test_rules_examples.py
    runs them through the real pipeline)."""
    assert rule.VALID, f"{rule.code} has no VALID example projects"
    assert rule.INVALID, f"{rule.code} has no INVALID example projects"
    for example in [*rule.VALID, *rule.INVALID]:
        assert isinstance(example, ProjectExample), f"{rule.code}: {example!r} is not a ProjectExample"
        assert len(example.files) >= 2, f"{rule.code}: an example project needs several files ({sorted(example.files)})"
        assert example.note and "\n" not in example.note, f"{rule.code}: say in one line what the example shows (`note`)"
        for path in example.files:
            parts = path.split("/")
            assert path and not path.startswith("/") and ".." not in parts and "\\" not in path, (
                f"{rule.code}: example path {path!r} is not a relative POSIX path")


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_rule_options_are_documented_frozen_dataclasses(rule: type) -> None:
    options_class = rule.options_class
    assert issubclass(options_class, RuleOptions)
    assert dataclasses.is_dataclass(options_class), f"{rule.code}: options must be a dataclass"
    assert options_class.__dataclass_params__.frozen, f"{rule.code}: options must be frozen"
    options_class()  # every field has a default
    for option_field in dataclasses.fields(options_class):
        assert option_field.metadata.get("help"), f"{rule.code}: option {option_field.name!r} has no help"
        key = option_field.name.replace("_", "-")
        assert key in inspect.getdoc(rule), f"{rule.code}: the Options section does not mention `{key}`"


def test_every_rule_is_registered_once_in_code_order() -> None:
    codes = [entry.code for entry in REGISTRY]
    assert codes == sorted(codes), "registry rows must be sorted by code"
    assert len(codes) == len(set(codes)), "a code is registered twice"
    registered = {entry.rule for entry in REGISTRY}
    for rule in RULES:
        assert rule in registered, f"{rule.__module__}.{rule.__name__} ({rule.code}) has no registry row"
    for entry in REGISTRY:
        assert entry.code == entry.rule.code, f"row {entry.code} holds {entry.rule.code}"
        assert entry.status in ("stable", "preview", "removed")


def test_docs_page_is_current() -> None:
    current = docs.DOCS_PATH.read_text(encoding="utf-8") if docs.DOCS_PATH.is_file() else ""
    assert current == docs.render(), f"docs/rules.md is stale — hint: run `{docs.REGENERATE_COMMAND}`"


def test_docs_page_is_deterministic_and_complete() -> None:
    first, second = docs.render(), docs.render()
    assert first == second
    for entry in REGISTRY:
        assert f"## {entry.code} `{entry.rule.name}`" in first
        for option_field in entry.rule.option_fields() if hasattr(entry.rule, "option_fields") else []:
            assert f"`{option_field.name.replace('_', '-')}`" in first


def test_docs_check_mode_reports_a_stale_page(tmp_path, capsys) -> None:
    page = tmp_path / "rules.md"
    page.write_text("stale\n", encoding="utf-8")
    assert docs.main(["--check", "--path", str(page)]) == 1
    assert docs.REGENERATE_COMMAND in capsys.readouterr().err
    assert docs.main(["--write", "--path", str(page)]) == 0
    assert docs.main(["--check", "--path", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == docs.render()
