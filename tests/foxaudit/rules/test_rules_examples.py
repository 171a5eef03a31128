"""Every registered rule's VALID and INVALID examples, run as tests.

Each example runs through the real engine when it is importable (every stable rule on, the
example's options as pyproject.toml would give them, an empty project root so that nothing of
this repository leaks in) and through this directory's single-walk harness otherwise. A VALID
example yields no finding of its rule; an INVALID one at least one (exactly ``expect`` when
set); a fixable INVALID example with ``fixed`` turns into that text under the edits, and the
fixed text re-checks clean for the rule.

A whole-project rule's examples are small repositories: each is written to a temporary directory
and checked by the real pipeline (`foxaudit check` on that directory: discovery, the example's
own pyproject.toml, the program model, the rule, suppressions), with the rule selected.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rules_harness import apply_edits, check_example, engine_available, engine_check, project_check

from foxaudit.rules.base import Example, ProjectExample, ProjectRule, Rule
from foxaudit.rules.registry import REGISTRY

FILE_RULES = [entry.rule for entry in REGISTRY if issubclass(entry.rule, Rule) and entry.status != "removed"]
PROJECT_RULES = [entry.rule for entry in REGISTRY if issubclass(entry.rule, ProjectRule) and entry.status != "removed"]
# FX001 comes from the engine's parse step and FX003 from its suppression pass: without the
# engine they cannot be observed, so the harness fallback skips them.
ENGINE_ONLY = frozenset({"FX001", "FX003"})
USE_ENGINE = engine_available()


def _cases(kind: str, rules: list | None = None) -> list:
    cases = []
    for rule in FILE_RULES if rules is None else rules:
        for index, example in enumerate(getattr(rule, kind)):
            cases.append(pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}"))
    return cases


def _check(rule: type[Rule], example: Example, root: Path, code: str | None = None) -> list:
    if USE_ENGINE:
        return engine_check(code if code is not None else example.code, example.path, rule.code,
                            example.options, root)
    if rule.code in ENGINE_ONLY:
        pytest.skip("needs foxaudit.engine")
    probe = example if code is None else Example(code, example.path, example.options)
    return check_example(rule, probe, root)


@pytest.mark.parametrize(("rule", "example"), _cases("VALID"))
def test_valid_example_has_no_finding(rule: type[Rule], example: Example, tmp_path: Path) -> None:
    found = _check(rule, example, tmp_path)
    assert not found, f"{rule.code} flagged a VALID example:\n{example.code}\n" + "\n".join(
        f"  {d.line}:{d.column} {d.message}" for d in found
    )


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_is_found(rule: type[Rule], example: Example, tmp_path: Path) -> None:
    found = _check(rule, example, tmp_path)
    if example.expect is None:
        assert found, f"{rule.code} missed an INVALID example:\n{example.code}"
    else:
        assert len(found) == example.expect, (
            f"{rule.code}: {len(found)} findings vs {example.expect} expected on:\n{example.code}\n"
            + "\n".join(f"  {d.line}:{d.column} {d.message}" for d in found)
        )
    for diagnostic in found:
        assert diagnostic.message and diagnostic.line >= 1 and diagnostic.column >= 1
        assert (diagnostic.end_line, diagnostic.end_column) >= (diagnostic.line, diagnostic.column)
    if example.fixed is not None:
        assert rule.fixable, f"{rule.code} has a `fixed` example but fixable = False"
        fixed = apply_edits(example.code, found)
        assert fixed == example.fixed
        assert not _check(rule, example, tmp_path, code=fixed), f"{rule.code}: the fixed text still has findings"


def test_every_fixable_rule_shows_a_fix() -> None:
    for rule in FILE_RULES:
        if rule.fixable:
            assert any(example.fixed is not None for example in rule.INVALID), f"{rule.code} is fixable but no INVALID example shows the fix"


def _listing(found: list) -> str:
    return "\n".join(f"  {d.path}:{d.line}:{d.column} {d.message}" for d in found)


@pytest.mark.parametrize(("rule", "example"), _cases("VALID", PROJECT_RULES))
def test_valid_project_example_has_no_finding(rule: type[ProjectRule], example: ProjectExample, tmp_path: Path) -> None:
    found = project_check(rule, example, tmp_path)
    assert not found, f"{rule.code} flagged a VALID example project ({sorted(example.files)}):\n" + _listing(found)


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID", PROJECT_RULES))
def test_invalid_project_example_is_found(rule: type[ProjectRule], example: ProjectExample, tmp_path: Path) -> None:
    found = project_check(rule, example, tmp_path)
    if example.expect is None:
        assert found, f"{rule.code} missed an INVALID example project ({sorted(example.files)})"
    else:
        assert len(found) == example.expect, (
            f"{rule.code}: {len(found)} findings vs {example.expect} expected on the example project "
            f"({sorted(example.files)}):\n" + _listing(found)
        )
    for diagnostic in found:
        assert diagnostic.message and diagnostic.hint and diagnostic.line >= 1 and diagnostic.column >= 1


def test_project_check_runs_the_real_pipeline(tmp_path: Path) -> None:
    """The harness sees what `foxaudit check` sees: a reasoned suppression silences the finding."""
    from foxaudit.rules.wiring.orphan_module import OrphanModule

    files = dict(OrphanModule.INVALID[0].files)
    files["shop/old_scaler.py"] = "# foxaudit: ignore[FX201] -- kept for the migration notebook\n" + files["shop/old_scaler.py"]
    assert project_check(OrphanModule, ProjectExample(files), tmp_path / "suppressed") == []
    assert [d.path for d in project_check(OrphanModule, OrphanModule.INVALID[0], tmp_path / "plain")] == ["shop/old_scaler.py"]


def test_project_example_needs_an_empty_directory(tmp_path: Path) -> None:
    from foxaudit.rules.wiring.orphan_module import OrphanModule

    (tmp_path / "left_over.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match=r"example project directory is not empty \(.* vs an empty directory\) — hint: "):
        project_check(OrphanModule, OrphanModule.INVALID[0], tmp_path)
