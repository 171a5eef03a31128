"""One constant evaluator for FX801, FX502 and the layout audit: `/` per language, no hang, no eval."""

from __future__ import annotations

import time

import pytest

from foxaudit.program.cudascan import evaluate_c
from foxaudit.program.layoutmodel import _evaluate_python
from foxaudit.rules._support.constants import evaluate as evaluate_for_fx801
from foxaudit.sources.constexpr import evaluate


@pytest.mark.parametrize(
    ("text", "dialect", "value"),
    [
        ("7 / 2", "python", 3.5),
        ("7 / 2", "c", 3),
        ("-7 / 2", "c", -3),  # C truncates toward zero; Python's // floors to -4
        ("-7 % 2", "c", -1),
        ("-7 // 2", "python", -4),
        ("(2 * 128)  // threads", "c", 256),  # `//` starts a comment in C
        ("0x10u << 2", "c", 64),
        ("017", "c", 15),
        ("1.5f * 2", "c", 3.0),
        ("(unsigned int)3 + N", "c", 7),
        ("int(7 / 2)", "python", 3),
        ("N * 2", "python", 8),
    ],
)
def test_values_per_dialect(text, dialect, value):
    assert evaluate(text, {"N": 4}, dialect) == value


def test_the_three_callers_agree_on_division():
    """They used to disagree: eval with `//` for C, `int(a / b)` for Python, true division."""
    assert evaluate_c("7 / 2", {}) == 3 and evaluate_c("-7 / 2", {}) == -3
    assert _evaluate_python("7 / 2", {}) == 3.5
    assert evaluate_for_fx801("7 / 2", {}) is None  # 3.5 is no slot index
    assert evaluate_for_fx801("7 / 2", {}, "c") == 3


@pytest.mark.parametrize(
    "text",
    ["1 << 100000000", "10 ** 100", "2 ** 2 ** 2 ** 40", "__import__('os').system('true')", "f(1)", "x.y", "UNKNOWN + 1",
     "1 / 0", "'a' * 3", "1e308 * 10", "(" * 500 + "1" + ")" * 500, "True + 1"],
)
def test_no_input_runs_code_or_hangs(text):
    started = time.perf_counter()
    assert evaluate(text, {"N": 4}, "c") is None
    assert evaluate(text, {"N": 4}, "python") is None
    assert time.perf_counter() - started < 1.0
