"""benchmarks/feature_probe.py: the linear read-out of the agent's inputs, on the suite's markets and
on variants written as the suite takes them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def probe():
    sys.path.insert(0, str(BENCHMARKS))  # the probe imports the suite by name, as when run as a script
    spec = importlib.util.spec_from_file_location("feature_probe", BENCHMARKS / "feature_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_variant_is_probed_with_its_own_parameters(probe, tmp_path):
    strong = probe.probe_cell("ar1", 3, tmp_path)
    weak = probe.probe_cell("ar1:phi=0.15", 3, tmp_path)
    # The same seed's bars with a weaker autocorrelation: a smaller edge for the oracle and the read-out.
    assert 0.0 < weak["oracle"] < strong["oracle"] and weak["linear"] < strong["linear"]


@pytest.mark.parametrize(("markets", "message"), [
    ("ar1:tilt=2", "tilt"),
    ("sine", "unknown market 'sine'"),
])  # fmt: skip
def test_a_wrong_market_is_explained_before_any_work(probe, capsys, markets, message):
    with pytest.raises(SystemExit) as stopped:
        probe.main(["--markets", markets, "--seeds", "1"])
    assert stopped.value.code == 2 and message in capsys.readouterr().err
