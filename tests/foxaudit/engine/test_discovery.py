"""Discovery: git-aware, .gitignore honoured without git, include/exclude globs, explicit files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from foxaudit.config import Settings, load_settings
from foxaudit.engine.discovery import DiscoveryError, discover
from foxaudit.engine.globs import GitIgnore, GlobSet, ignored

TREE = {
    ".gitignore": "build/\n*.gen.py\n!keep.gen.py\n/rootonly.py\n",
    "pkg/__init__.py": "",
    "pkg/mod.py": "x = 1\n",
    "pkg/rootonly.py": "x = 1\n",  # only the root-level rootonly.py is ignored
    "rootonly.py": "x = 1\n",
    "pkg/skip.gen.py": "x = 1\n",
    "pkg/keep.gen.py": "x = 1\n",
    "build/out.py": "x = 1\n",
    "kernels/k.cu": "__global__ void k() {}\n",
    "kernels/k.cuh": "#pragma once\n",
    "stubs/s.pyi": "x: int\n",
    "notes.txt": "plain text, not a source file\n",
    "sub/.gitignore": "local.py\n",
    "sub/local.py": "x = 1\n",
    "sub/other.py": "x = 1\n",
    ".venv/lib/site.py": "x = 1\n",
    "vendor/third.py": "x = 1\n",
}
EXPECTED = [
    "kernels/k.cu",
    "kernels/k.cuh",
    "pkg/__init__.py",
    "pkg/keep.gen.py",
    "pkg/mod.py",
    "pkg/rootonly.py",
    "stubs/s.pyi",
    "sub/other.py",
]


def _names(root: Path, **settings) -> list[str]:
    return [item.relative for item in discover(Settings(root=root, **settings))]


def test_walk_honours_gitignore_without_git(project):
    root = project(TREE)
    assert _names(root, exclude=("vendor",)) == EXPECTED


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_listing_matches_the_walk(project):
    root = project(TREE)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "pkg/mod.py"], cwd=root, check=True)  # tracked and untracked both count
    assert _names(root, exclude=("vendor",)) == EXPECTED


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_listing_files_runs_no_program_the_checkout_configures(project, tmp_path):
    """`git ls-files` runs core.fsmonitor; a copied checkout's .git/config is not ours to run."""
    root = project(TREE)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    witness = tmp_path / "monitor-ran"
    monitor = tmp_path / "monitor"
    monitor.write_text(f"#!/bin/sh\ntouch {witness}\n")
    monitor.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(monitor)], cwd=root, check=True)
    assert _names(root, exclude=("vendor",)) == EXPECTED
    assert not witness.exists()


def test_exclude_and_include_globs(project):
    root = project(TREE)
    names = _names(root, exclude=("kernels/*.cuh", "**/*.pyi", "vendor"))
    assert "kernels/k.cuh" not in names and "stubs/s.pyi" not in names and "kernels/k.cu" in names
    assert _names(root, include=("*.cu",)) == ["kernels/k.cu"]
    assert _names(root, include=("pkg/*.py",), exclude=("vendor",)) == [
        "pkg/__init__.py",
        "pkg/keep.gen.py",
        "pkg/mod.py",
        "pkg/rootonly.py",
    ]


def test_explicit_files_checked_but_excluded_ones_dropped(project):
    root = project(TREE)
    settings = Settings(root=root, exclude=("vendor",))
    found = discover(settings, ["vendor/third.py", "build/out.py", "notes.txt", "kernels"])
    # build/out.py is gitignored but named explicitly: checked; vendor is excluded: dropped.
    assert [item.relative for item in found] == ["build/out.py", "kernels/k.cu", "kernels/k.cuh"]


def test_missing_path_is_a_usage_error(project, run_cli):
    root = project(TREE)
    with pytest.raises(DiscoveryError, match="path not found"):
        discover(Settings(root=root), ["nope.py"])
    result = run_cli("check", "nope.py")
    assert result.code == 2
    assert "path not found (got 'nope.py'" in result.err


def test_glob_semantics():
    assert GlobSet(["build"]).matches("a/build/x.py")
    assert not GlobSet(["build"]).matches("a/builder/x.py")
    assert GlobSet(["tests/fixtures"]).matches("tests/fixtures/a/b.py")
    assert not GlobSet(["tests/fixtures"]).matches("src/tests/fixtures/b.py")
    assert GlobSet(["**/gen_*.py"]).matches("gen_a.py") and GlobSet(["**/gen_*.py"]).matches("x/y/gen_a.py")
    assert GlobSet(["*.pyi"]).matches("a/b.pyi")


def test_gitignore_semantics():
    stack = [GitIgnore("", ["*.log", "!keep.log", "/top/", "docs/*.md"]), GitIgnore("sub", ["x.py"])]
    assert ignored(stack, "a/b.log", False)
    assert not ignored(stack, "a/keep.log", False)
    assert ignored(stack, "top", True) and not ignored(stack, "top", False)
    assert not ignored(stack, "a/top", True)
    assert ignored(stack, "docs/a.md", False) and not ignored(stack, "x/docs/a.md", False)
    assert ignored(stack, "sub/x.py", False) and not ignored(stack, "x.py", False)


@pytest.mark.parametrize("git", [False, True])
def test_broken_symbolic_links_are_reported_not_skipped(project, run_cli, git):
    """A dangling link and a link loop used to be skipped in silence (ruff reports them)."""
    import os
    import subprocess

    root = project({"pkg/__init__.py": "", "pkg/real.py": "x = 1\n"}, '[tool.foxaudit]\nselect = ["FX001"]\n')
    os.symlink("gone.py", root / "pkg" / "dangling.py")
    os.symlink("loop.py", root / "pkg" / "loop.py")
    os.symlink("real.py", root / "pkg" / "alias.py")  # a working link is checked like its target
    if git:
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    result = run_cli("check", "--no-cache")
    assert result.code == 1
    lines = sorted(line for line in result.out.splitlines() if " FX001 " in line)
    assert lines[0].startswith("pkg/dangling.py:1:1: FX001 dangling symbolic link (got 'gone.py' vs an existing file)")
    assert "hint: restore the link's target or delete the link" in lines[0]
    assert lines[1].startswith("pkg/loop.py:1:1: FX001 symbolic link loop (got 'loop.py'")
    assert "report this to foxaudit" not in result.out
    assert len(lines) == 2


@pytest.mark.parametrize("destination, excluded", [
    ("src/pkg/_vendor/", True), ("./src/pkg/_vendor", True),
    ("../elsewhere", False), ("/abs/_vendor", False), ("src/*/_vendor", False), (3, False),
])
def test_the_vendoring_destination_is_excluded(project, destination, excluded):
    # poetry-core and pip copy third-party packages into `_vendor/` with the `vendoring` tool and
    # pin them in its vendor.txt: code the project does not edit (49 of poetry-core's 57 findings).
    root = project({
        "pyproject.toml": f"[project]\nname = 'pkg'\n\n[tool.vendoring]\ndestination = {destination!r}\n".replace("'", '"'),
        "src/pkg/__init__.py": "", "src/pkg/_vendor/lark/__init__.py": "# TODO: upstream's\n",
        "src/pkg/_vendor/vendor.txt": "lark==1.2.2\n", "other/_vendor/kept.py": "",
    })
    settings = load_settings(start=root)
    names = [item.relative for item in discover(settings)]
    assert ("src/pkg/_vendor/lark/__init__.py" not in names) is excluded
    assert "src/pkg/__init__.py" in names and "other/_vendor/kept.py" in names


@pytest.mark.parametrize("git", [False, True])
def test_a_folder_holding_installed_distributions_is_skipped(project, git):
    """setuptools installs its dependencies into `setuptools/_vendor/` with `pip install --target`
    (each beside its `<name>-<version>.dist-info/`), as App Engine's and Lambda's `lib/` do:
    third-party code, not the project's (setuptools: 12 of its 40 orphan modules)."""
    root = project({
        "pkg/__init__.py": "", "pkg/core.py": "x = 1\n",
        "pkg/_vendor/tomli/__init__.py": "# TODO: upstream's\n",
        "pkg/_vendor/tomli-2.4.0.dist-info/METADATA": "Name: tomli\n",
        "pkg/_vendor/zipp.py": "x = 1\n",
        "pkg/dist_info.py": "x = 1\n",  # a module named like it is no install target
        "tools/x.dist-info.py": "x = 1\n",
    })
    if git:
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    assert _names(root) == ["pkg/__init__.py", "pkg/core.py", "pkg/dist_info.py", "tools/x.dist-info.py"]
    # Checked on purpose, the folder is checked: only folders found below the target are skipped.
    assert [item.relative for item in discover(Settings(root=root), [str(root / "pkg/_vendor")])] == [
        "pkg/_vendor/tomli/__init__.py", "pkg/_vendor/zipp.py"]


_LIBRARY = "[project]\nname = 'pkg'\nversion = '1'\n\n[project.scripts]\npkg = 'pkg.cli:main'\n"


@pytest.mark.parametrize("exclude", [
    "exclude: ^(profiling/|tests/data/)\n",
    "exclude: '^(profiling/|tests/data/)'  # black's\n",
    'exclude: "^(profiling/|tests/data/)"\n',
    "exclude: |\n    (?x)^(\n        profiling/\n        | tests/data/\n    )\n",
])
def test_what_pre_commit_keeps_from_every_hook_is_read_but_not_reported(project, run_cli, exclude):
    """black's `.pre-commit-config.yaml` holds `exclude: ^(profiling/|tests/data/)`: no hook sees
    those files, so a foxaudit hook never reports in them, and `foxaudit check` agrees (black: 30 →
    14 findings — formatter inputs that do not parse, profiling scripts). The import graph still
    reads them: a module only an excluded script imports is no orphan."""
    project({
        ".pre-commit-config.yaml": exclude + "repos: []\n",
        "pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0\n",
        "pkg/fixtures.py": "DATA = 1\n",
        "profiling/mix_big.py": "from pkg.fixtures import DATA  # TODO: bigger\nprint(DATA)\n",
        "tests/data/cases/invalid.py": "def (:\n",
        "tests/test_cli.py": "from pkg.cli import main\n\n\ndef test_main():\n    assert main() == 0  # TODO: more\n",
    }, _LIBRARY)
    result = run_cli("check", "--no-cache", "--select", "FX001,FX201,FX901")
    assert [line.split(" ")[:2] for line in result.out.splitlines() if " FX" in line] == [["tests/test_cli.py:5:27:", "FX901"]]
    assert "(4 files checked)" in result.out or "in 1 file (4 checked)" in result.out
    # Named on the command line (a hook passing staged files), they are not reported either: the
    # hook agrees with `foxaudit check`, as it does for `exclude`.
    named = run_cli("check", "--no-cache", "--select", "FX001,FX901", "profiling/mix_big.py", "tests/data/cases/invalid.py")
    assert named.code == 0 and " FX" not in named.out


def test_a_template_to_copy_is_read_but_not_reported(project, run_cli):
    """sktime's `extension_templates/*.py` say "This is to be used as a "fill-in" coding template"
    and "make a copy of the template": their `todo`s are the instructions of whoever copies them
    (457 findings). A file in such a folder that says no such thing, and a file elsewhere that
    does, are reported as before."""
    template = ('"""Extension template for forecasters.\n\nHow to use this implementation template:\n'
                '- make a copy of the template in a suitable location\n"""\n\n# todo: write the docstring\n\n\n'
                'def _fit(self, y):\n    # todo: implement the fitting logic\n    pass\n')
    project({
        "pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0\n",
        "extension_templates/forecasting.py": template,
        "extension_templates/helper.py": "# TODO: share this helper\n",
        "pkg/copied.py": template,
    }, _LIBRARY)
    result = run_cli("check", "--no-cache", "--select", "FX901,FX902")
    assert sorted({line.split(":")[0] for line in result.out.splitlines() if " FX" in line}) == [
        "extension_templates/helper.py", "pkg/copied.py"]
    named = run_cli("check", "--no-cache", "--select", "FX901,FX902", "extension_templates/forecasting.py")
    assert named.code == 0 and " FX" not in named.out


def test_a_pre_commit_exclude_that_is_no_regular_expression_excludes_nothing(project, run_cli):
    project({".pre-commit-config.yaml": "exclude: '(unclosed'\n", "pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0\n",
             "profiling/run.py": "# TODO: profile\n"}, _LIBRARY)
    result = run_cli("check", "--no-cache", "--select", "FX901")
    assert [line.split(" ")[0] for line in result.out.splitlines() if " FX" in line] == ["profiling/run.py:1:3:"]


def test_vendored_code_reaches_the_project_modules_it_imports(project, run_cli):
    """pip's vendored `pkg_resources` imports `pip._internal.utils._jaraco_text`: with the
    `[tool.vendoring] destination` left out of the graph that module read as an orphan. Vendored
    modules nothing reaches are not reported, and no note counts them."""
    project({
        "src/pkg/__init__.py": "", "src/pkg/cli.py": "from pkg._vendor import resources\n\n\ndef main():\n    return resources\n",
        "src/pkg/_text.py": "def yield_lines(text):\n    return text.splitlines()\n",
        "src/pkg/_vendor/__init__.py": "import importlib\n\n\ndef load(name):\n    return importlib.import_module(f'pkg._vendor.{name}')\n",
        "src/pkg/_vendor/resources.py": "from pkg._text import yield_lines  # TODO: upstream's\n",
        "src/pkg/_vendor/unused.py": "X = 1\n",
    }, _LIBRARY + "\n[tool.vendoring]\ndestination = 'src/pkg/_vendor/'\n")
    result = run_cli("check", "--no-cache", "--select", "FX201,FX901")
    assert "All checks passed (3 files checked)" in result.out, result.out


def test_check_dot_at_the_root_lists_the_project_once(project, run_cli, monkeypatch):
    """`foxaudit check .` listed the tree twice (the files, then the whole project's scope): 0.2 s
    on a 1,138-file tree walked without git. It is the bare check, with the same findings."""
    from foxaudit.engine import run

    project({"pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0  # TODO: more\n"}, _LIBRARY)
    calls = []
    original = run.discover
    monkeypatch.setattr(run, "discover", lambda *args, **kwargs: calls.append(args[1:]) or original(*args, **kwargs))
    dot = run_cli("check", "--no-cache", ".")
    assert len(calls) == 1
    assert dot.out == run_cli("check", "--no-cache").out and "FX901" in dot.out
    run_cli("check", "--no-cache", "pkg")
    assert len(calls) == 4  # a folder below the root: its files, then the project's scope


@pytest.mark.parametrize("config", [
    {"setup.cfg": "[flake8]\nmax-line-length = 100\nexclude =\n  .tox/*\n  # deliberately broken inputs\n  test/completion/*\n"},
    {"tox.ini": "[tox]\nenvlist = py\n\n[flake8]\nextend-exclude = test/completion,build\n"},
    {".flake8": "[flake8]\nexclude = completion\n"},
    {"ruff.toml": "[lint]\nexclude = ['test/completion/*.py']\n"},
])
def test_what_the_project_s_linters_skip_is_read_but_not_reported(project, run_cli, config):
    """jedi's setup.cfg: `[flake8] exclude = … test/completion/*`, the deliberately broken code
    its completion tests read (35 FX001 and 15 markers, jedi 127 → 77 findings)."""
    project({**config, "pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0  # TODO: more\n",
             "test/completion/arrays.py": "#? int()\n[1, 2][\n# TODO: the cursor case\n"}, _LIBRARY)
    result = run_cli("check", "--no-cache", "--select", "FX001,FX901")
    assert [line.split(" ")[:2] for line in result.out.splitlines() if " FX" in line] == [["pkg/cli.py:2:17:", "FX901"]]


def test_ruff_s_exclude_in_pyproject_and_a_pattern_s_dialect(project, run_cli):
    from foxaudit.config import linter_excluded

    project({"pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0\n",
             "docs/examples/demo.py": "# TODO: finish the demo\n", "gen/out.py": "def (:\n"},
            _LIBRARY + "\n[tool.ruff]\nextend-exclude = ['docs/examples', 'gen']\n")
    assert "All checks passed" in run_cli("check", "--no-cache", "--select", "FX001,FX901").out
    patterns = ("build", "*.egg", "test/completion/*", "./docs/", "tests/")
    assert linter_excluded("src/build/x.py", patterns) and linter_excluded("a/b.egg/c.py", patterns)
    assert linter_excluded("test/completion/deep/x.py", patterns) and linter_excluded("docs/conf.py", patterns)
    assert not linter_excluded("src/builder.py", patterns) and not linter_excluded("x/test/completion/y.py", patterns)
    assert linter_excluded("tests/python/test_x.py", patterns) and not linter_excluded("pkg/tests/test_x.py", patterns)


def test_linter_excludes_can_be_reported_on_and_the_key_is_checked(project, run_cli):
    files = {".flake8": "[flake8]\nexclude = tests/\n", "pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0\n",
             "tests/test_io.py": "def test_missing_textures():\n    pass\n"}
    project(files, _LIBRARY)
    assert "All checks passed" in run_cli("check", "--no-cache", "--select", "FX902").out
    project(files, _LIBRARY + "\n[tool.foxaudit]\nlinter-excludes = false\n")
    assert "tests/test_io.py:1:5: FX902" in run_cli("check", "--no-cache", "--select", "FX902").out
    project(files, _LIBRARY + "\n[tool.foxaudit]\nlinter-excludes = 'no'\n")
    result = run_cli("check", "--no-cache")
    assert result.code == 2
    assert "[tool.foxaudit] key 'linter-excludes': wrong type (got str 'no' vs true or false)" in result.err


def test_an_excluded_documentation_page_still_shows_the_examples_it_includes(project, run_cli):
    # requests' pre-commit `exclude: 'docs/|ext/'` keeps its pages from the hooks, not from being docs.
    project({".pre-commit-config.yaml": "exclude: '^docs/'\n", "pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0\n",
             "docs/index.md": '--8<-- "examples/demo.py"\n', "examples/demo.py": "from pkg.cli import main\n\nRESULT = main\n",
             "examples/dead.py": "X = 1\n"}, _LIBRARY)
    result = run_cli("check", "--no-cache", "--select", "FX201")
    assert [line.split(" ")[0] for line in result.out.splitlines() if " FX201 " in line] == ["examples/dead.py:1:1:"]


def test_a_staged_file_the_linters_skip_fails_no_hook_that_ci_passes(project, run_cli):
    # kaolin: `.flake8` excludes `tests/`; the pre-commit hook passes the staged test by name.
    project({".flake8": "[flake8]\nexclude = tests/\n", "pkg/__init__.py": "", "pkg/cli.py": "def main():\n    return 0\n",
             "tests/test_io.py": "def test_io():\n    assert True  # TODO: a real check\n"}, _LIBRARY)
    bare, staged = run_cli("check", "--no-cache"), run_cli("check", "--no-cache", "tests/test_io.py", "pkg/cli.py")
    assert bare.code == staged.code == 0 and "FX901" not in bare.out + staged.out
