"""One glob dialect (gitignore semantics) for settings, rule options and program keys.

The three dialects this replaced disagreed on `layout.py`, `*.py` and `benchmarks`: the engine
matched names at any depth, the program settings anchored them at the root, the rule options
let `*` cross `/` and never matched below a directory.
"""

from __future__ import annotations

import pytest

from foxaudit.globs import GlobSet, path_matches
from foxaudit.rules._support.paths import matches_any


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("layout.py", "layout.py", True),
        ("layout.py", "trainer/layout.py", True),  # a name matches at any depth
        ("*.py", "trainer/ops/loader.py", True),
        ("*.py", "trainer/ops/loader.pyi", False),
        ("benchmarks", "benchmarks/foxaudit_speed.py", True),  # below a matched directory
        ("benchmarks", "tools/benchmarks/run.py", True),
        ("/layout.py", "trainer/layout.py", False),  # a leading / anchors
        ("trainer/layout.py", "vendored/trainer/layout.py", False),  # a middle / anchors
        ("cuda/generated/*", "cuda/generated/layout.cuh", True),
        ("cuda/generated/*", "cuda/generated/sub/x.cuh", True),  # `sub` matches, and all below it
        ("trainer/*.py", "trainer/ops/loader.py", False),  # `*` stays in one component
        ("trainer/**/loader.py", "trainer/ops/loader.py", True),
        ("**/loader.py", "loader.py", True),
        ("build/", "build", False),  # trailing /: directories only
        ("build/", "build/out.py", True),
        ("test_[ab].py", "tests/test_a.py", True),
    ],
)
def test_gitignore_semantics(pattern, path, expected):
    assert path_matches(path, pattern) is expected
    assert GlobSet([pattern]).matches(path) is expected
    assert matches_any(path, (pattern,)) is expected  # the rules' import path, same dialect


def test_a_glob_set_of_plain_names_answers_as_its_regexes_do():
    """GlobSet looks plain names (``.git``, ``build/``) up per path part instead of searching a
    regex; every mix of plain and wildcard patterns must still match exactly what they match alone."""
    import itertools

    patterns = [".git", "build/", "node_modules", "*.py", "a/b", "x?z", "dir/", "/setup.py", "a.b"]
    paths = ["a.py", ".git", "x/.git/y", "build", "build/x", "a/build/x.c", "a/b", "a/b/c", "q/a/b", "xyz",
             "q/xyz/r", "dir", "dir/f", "setup.py", "q/setup.py", "node_modules/z", "zz/node_modules", "gitx",
             "builds/x", "a.b", "aXb", "q/a.b/c"]  # fmt: skip
    for size in (1, 2, 3):
        for chosen in itertools.combinations(patterns, size):
            for path in paths:
                assert GlobSet(chosen).matches(path) is any(path_matches(path, p) for p in chosen), (chosen, path)
