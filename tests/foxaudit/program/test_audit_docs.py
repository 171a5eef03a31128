"""`foxaudit audit --write/--check` and FX701 on a fixture project; determinism of the docs."""

from __future__ import annotations

from program_support import load_project

from foxaudit.audits.generate import write_audit_docs
from foxaudit.cli import main
from foxaudit.program.analysis import analysis_for
from foxaudit.program.audit_docs import DOC_NAMES, render_docs
from foxaudit.rules.audit_docs.stale_audit_doc import StaleAuditDoc, rule_infos
from foxaudit.rules.base import NoOptions


def test_write_then_check_round_trip(materialize, monkeypatch, capsys) -> None:
    root = materialize("wiring")
    monkeypatch.chdir(root)
    assert main(["audit", "--check"]) == 1
    assert "foxaudit audit --write" in capsys.readouterr().err
    assert main(["audit", "--write"]) == 0
    written = sorted(p.name for p in (root / "docs/audits").iterdir())
    assert written == sorted(DOC_NAMES)  # no temporary files left behind
    assert main(["audit", "--check"]) == 0
    assert main(["audit", "--write"]) == 0
    assert "audit docs are current" in capsys.readouterr().out


def test_docs_are_deterministic_and_readable(materialize) -> None:
    root = materialize("wiring")
    first = _render(root)
    second = _render(root)
    assert first == second
    wire_up = first["wire-up.md"]
    assert "| `app.orphan` | Orphan |" in wire_up
    assert "| `missing_kernel` | Ghost |" in wire_up
    assert "`app/kernels.py:" in wire_up  # file:line of loads
    assert str(root) not in "".join(first.values())  # nothing machine-specific
    invariants = first["invariants.md"]
    assert "| FX201 | `orphan-module` | stable | whole-program | 4 |" in invariants


def test_stale_doc_rule_names_the_refresh_command(materialize) -> None:
    root = materialize("wiring")
    write_audit_docs(load_project(root))
    assert list(StaleAuditDoc().check_project(load_project(root), NoOptions())) == []
    (root / "app/extra.py").write_text("from app import orphan\n")
    stale = list(StaleAuditDoc().check_project(load_project(root), NoOptions()))
    assert {d.path for d in stale} >= {"docs/audits/wire-up.md"}
    assert all("foxaudit audit --write" in d.hint for d in stale)


def test_hot_path_and_isv_docs(materialize) -> None:
    hot = _render(materialize("hotpath"))["hot-path.md"]
    assert "| `hp/util.py:" in hot and "VIOLATION" in hot and "OK-PINNED" in hot and "COLD-PATH" in hot
    assert "`hp.step:Step.run` → `hp.util:item_helper`" in hot
    docs = _render(materialize("layout"))
    assert "| `ISV_TAU` | 0 | GPU_COMPUTED | `tau_update` `cuda/hand.cu:" in docs["isv-slots.md"]
    assert "| `PS_VALUE` | 2 | 1 |" in docs["named-dims.md"]


def test_invariants_count_real_suppressions_not_mentions(materialize) -> None:
    root = materialize("wiring")
    (root / "app/noted.py").write_text(
        'from app import orphan  # foxaudit: ignore[FX201] -- kept while the plugin API settles\n'
        'TEXT = "# foxaudit: ignore[FX201] -- only a mention inside a string"\n'
    )
    invariants = _render(root)["invariants.md"]
    row = next(line for line in invariants.splitlines() if line.startswith("| FX201 |"))
    assert row.split("|")[6].strip() == "1"


def test_a_project_without_audit_docs_gets_no_fx701(materialize) -> None:
    root = materialize("hotpath")
    assert not (root / "docs/audits").exists()
    assert list(StaleAuditDoc().check_project(load_project(root), NoOptions())) == []


def _render(root) -> dict[str, str]:
    analysis = analysis_for(load_project(root), use_cache=False)
    return render_docs(analysis, rule_infos(analysis))
