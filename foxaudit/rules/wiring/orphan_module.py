"""Whole-program rule: a Python module no entry point reaches."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.program.wiring import ORPHAN
from foxaudit.rules._support.sites import diagnostic_at, file_site
from foxaudit.rules.base import AnalysisRule, ProjectExample


class OrphanModule(AnalysisRule):
    """A Python module no entry point reaches.

    ## What it does
    Builds the import graph from the entry points (console scripts, `__main__` modules and `if
    __name__ == "__main__"` scripts, modules under `test-roots`, `entry-points`) following absolute,
    relative and literal `importlib.import_module` imports, and reports every module nothing
    reaches. Imports under `if TYPE_CHECKING:` make nothing reachable. Modules matched by an
    `out-of-scope` glob are classified Out-of-scope instead.

    With no entry-point key configured, the entry points are derived the way ML repositories run
    code: scripts run by path (a file outside any package that runs a call at import) or with a
    module-level command line (`argparse`, `tyro.cli`, `fire.Fire`), pytest's test files, Sphinx's
    `conf.py` outside any package under `doc`/`docs`/`documentation` (`sphinx-build` runs it, and
    imports the modules its `extensions` list names, and sphinx-gallery runs the scripts of the
    `examples_dirs` it names; Hugging Face's doc-builder runs `_config.py`), asv
    benchmarks (a module under `benchmarks`/`benchmark`/`asv_bench` that defines a `time_*`,
    `timeraw_*`, `mem_*`, `peakmem_*` or `track_*` function or method), hatchling's custom hooks
    (`[tool.hatch...hooks.custom]`, at its `path` or `hatch_build.py`), and
    the public modules of the distribution (the package `[project] name` names; where it names no
    top-level package, as `pyqlib` ships `qlib`, the packages `[tool.setuptools] packages` lists;
    with no name, every top-level package but tests, docs and examples). An import the source
    roots cannot resolve is resolved against the importer's own and enclosing directories (the
    script's directory is on `sys.path`) and their `src/` (an example project with a src layout),
    and against literal `sys.path.append(...)` directories (`..` climbs; `pjoin = os.path.join`
    counts as a join); `.pyx` files' imports count, and so
    does a file loaded by a literal path (`SourceFileLoader("ext", str(here / "ext.py"))`,
    `spec_from_file_location(...)`, `runpy.run_path("tools/gen.py")`, `exec` of a file its scope
    opens by a literal path), resolved against the
    loader's directory, then the project root, whatever the configuration. `import_module(f"pkg.{x}")` gives one note for the modules only
    it may load, not an orphan each; so do a relative name
    anchored at a package (`import_module(f".{x}", package=pkg.__name__)`, `__import__(name,
    globals(), locals(), [], 1)` over a glob of the directory) and a helper that imports under its
    parameter (`import_module(f"{mod.__name__}.{file}")`), noted at each call that names the
    package (`import_submodule(backends)`).

    Three more run-time mechanisms are read. A plugin folder the user names (fairseq's
    `--user-dir`: `sys.path.insert(0, parent)` then `import_module(name)` in one function, neither
    written there) may hold any package nothing reaches that imports the project's reached code:
    one note at that call lists them, and what they import. A file's text run by a path that is not a literal
    (`exec(open(path).read())`, `exec(compile(open(path).read(), path, "exec"))`,
    `exec(Path(path).read_text())`, `runpy.run_path(path)`, the path from the command line) may
    be any module shaped like a config file — it binds names at module level and defines no
    function or class (it may import: `import time` for a value), no `__main__` guard, no
    package: those nothing else reaches get one note at the call, not an orphan each; without
    such a call they are orphans like any module. And a `_target_: pkg.module.Class` line in a
    project YAML file (Hydra/OmegaConf's `instantiate` imports it) names the longest prefix that
    is a project module, resolved against the YAML file's directory and its enclosing ones first:
    it is an entry point, and its imports reach further as usual. A `pyproject.toml` below the root
    is a project of its own (an `examples/<app>/` with its own packaging): the public modules of the
    packages it ships (`[project] name`, flit's module, setuptools', poetry's or hatch's package
    lists, the modules of its scripts), beside it or in its `src/`, are entry points too.

    Also entry points, configured or not: a file whose path is no module name (`examples/manage-
    shop.py`, `configs/COCO-Detection/x.py`: no import can name it, so it is run by path; its
    imports resolve beside it), the files tools load by their conventional names (`noxfile.py`,
    `conanfile.py`, `fabfile.py`, `dodo.py`, `pavement.py`, an invoke `tasks.py`,
    `sitecustomize.py`; pytest-perf's root `exercises.py` where the project depends on it), an IPython extension (a module-level `load_ipython_extension`), an in-tree PEP 517 backend (`[build-system] backend-path`), and a
    library module that warns of its own deprecation at import (an old import path kept for
    users), a `.py` file a project YAML file names by its path (mkdocs' `hooks:`, a CI step's
    `python tools/gen.py`; beside the YAML file, else from the root), and a module a tool setting
    of `pyproject.toml` imports (`plugins`, `load-plugins`, `extensions`, `hooks` of any tool;
    Fixit's rule lists). A walk over a package's folder that imports what it finds (`for _, name, _ in
    pkgutil.walk_packages(plugins.__path__, prefix): __import__(name)`; `iter_modules` for one
    level) reaches every module below it. A module that imports a module name it does not write
    in the call (`import_module(module_path)` after `module_path, cls = commands[name]`: pip's
    command table) imports every project module its string literals name exactly. A module that is only a note (comments or a docstring,
    no code: a banner saying a script moved, the licence header of a package of data files with
    no Python below it) is not reported, nor is the empty `__init__.py` of a package with no
    modules beside data files (`static/__init__.py` next to `styles.css`: the marker that lets
    `importlib.resources` ship the folder); another empty module is, and so is one whose comments
    are mostly code switched off (a commented-out script is dead code). A module-level call whose
    value an `if`/`while` condition or an `assert` tests (`if version.parse(np.__version__) >= …:`)
    does no work at import: it makes no `#!` module a script. A module whose text gives the command
    line that runs it by its own file name (`Run as follows: mitmproxy -s anatomy.py`, `Usage:
    python tools/make_index.py`) is a script. A dunder subpackage of a library (`arch.__future__`)
    is public.

    ## Why is this bad
    Invariant 2, wire it up. A module nothing imports is dead code that still has to be read, kept
    green and audited, or a feature that was written and never connected.

    ## Example
    ```python
    # trainer/ops/old_scaler.py — imported by nothing, not even a test
    ```

    ## Use instead
    Import it where it is needed (or from its test), delete it, or classify it: `out-of-scope = {
    "benchmarks/**" = "run by hand" }`.

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX201"
    name = "orphan-module"
    summary = "A Python module no entry point reaches"
    invariant = 2

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[project]\nname = "shop"\nversion = "0"\n\n[project.scripts]\nshop = "shop.cli:main"\n\n'
                              '[tool.foxaudit.program]\ntest-roots = ["tests"]\n'
                              'out-of-scope = { "benchmarks/**" = "run by hand" }\n',
            "shop/__init__.py": "",
            "shop/cli.py": "from shop import prices\n\n\ndef main():\n    return prices.total([1, 2])\n",
            "shop/prices.py": "def total(values):\n    return sum(values)\n",
            "tests/test_prices.py": "from shop.prices import total\n\n\ndef test_total():\n    assert total([1]) == 1\n",
            "benchmarks/bench_total.py": "from shop.prices import total\n\nprint(total(range(10)))\n",
        }, note="The console script, the test root and an out-of-scope glob account for every module."),
        ProjectExample({
            "train.py": "import sys\n\nbatch_size = 1\nlearning_rate = 0.1\nfor path in sys.argv[1:]:\n"
                        "    exec(open(path).read())  # foxaudit: ignore[FX201] -- runs the config/*.py named on the command line\n"
                        "print(batch_size, learning_rate)\n",
            "config/small.py": "# python train.py config/small.py\nbatch_size = 8\nlearning_rate = 3e-4\n",
            "config/large.py": "batch_size = 64\nlearning_rate = 1e-4\nwarmup = batch_size * 10\n",
        }, note="`config/*.py` are run by `exec` with a path from the command line: one note at the call (suppressed"
                " here with its reason), not an orphan per config file."),
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["lab.train"]\n',
            "lab/__init__.py": "",
            "lab/train.py": "import sys\n\nfrom hydra.utils import instantiate\nfrom omegaconf import OmegaConf\n\n"
                            "model = instantiate(OmegaConf.load(sys.argv[1]).model)\n",
            "lab/configs/model/small.yaml": "model:\n  _target_: models.mlp.MLP  # lab/models/mlp.py\n  width: 64\n"
                                            "optimizer:\n  _target_: torch.optim.SGD\n",
            "lab/models/__init__.py": "",
            "lab/models/mlp.py": "from lab.models.layers import dense\n\n\nclass MLP:\n    def __init__(self, width):\n"
                                 "        self.weights = dense(width)\n",
            "lab/models/layers.py": "def dense(width):\n    return [0.0] * width\n",
        }, note="A YAML `_target_` names `lab.models.mlp` (resolved beside the file's directories); what it imports is"
                " reached too, and `torch.optim.SGD` names no project module."),
        ProjectExample({
            "pyproject.toml": '[project]\nname = "pyshop"\nversion = "0"\n\n[tool.setuptools]\npackages = ["shop"]\n',
            "shop/__init__.py": "",
            "shop/prices.py": "def total(values):\n    return sum(values)\n",
            "shop/report/__init__.py": "",
            "shop/report/table.py": "from shop.prices import total\n\n\ndef table(values):\n    return [total(values)]\n",
        }, note="The distribution `pyshop` ships the package `shop` (`[tool.setuptools] packages`): its public modules"
                " are the library's API, though nothing in the tree imports `shop.report.table`."),
        ProjectExample({
            "pyproject.toml": '[project]\nname = "shop"\nversion = "0"\n',
            "shop/__init__.py": "",
            "docs/index.rst": "Shop\n====\n",
            "docs/conf.py": "project = 'shop'\nextensions = ['sphinx.ext.autodoc']\n",
        }, note="`docs/conf.py` is Sphinx's configuration: `sphinx-build` runs it by path."),
        ProjectExample({
            "pyproject.toml": '[project]\nname = "shop"\nversion = "0"\n',
            "shop/__init__.py": "def total(values):\n    return sum(values)\n",
            "benchmarks/__init__.py": "",
            "benchmarks/bench_total.py": "from shop import total\n\n\nclass Total:\n    def time_total(self):\n"
                                         "        total(range(1000))\n",
            "docs/conf.py": "from importlib.machinery import SourceFileLoader\n\n"
                            "roles = SourceFileLoader('roles', 'docs/roles.py').load_module()\n",
            "docs/roles.py": "ROLES = {}\n",
        }, note="asv imports `benchmarks/bench_total.py` and runs its `time_*` method; `docs/conf.py` loads"
                " `docs/roles.py` by its path."),
        ProjectExample({
            "pyproject.toml": '[project]\nname = "shop"\nversion = "0"\n',
            "shop/__init__.py": "",
            "examples/dpo.py": "# Copyright 2026 The Shop Authors.\n\n# This script moved to shop/scripts/dpo.py.\n",
            "examples/empty.py": '"""Kept for old links: see shop.scripts."""\n',
        }, note="A file that holds no code (comments, a docstring) has nothing to wire or delete as dead code."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[project]\nname = "shop"\nversion = "0"\n\n[project.scripts]\nshop = "shop.cli:main"\n\n'
                              '[tool.foxaudit.program]\ntest-roots = ["tests"]\n',
            "shop/__init__.py": "",
            "shop/cli.py": "from shop import prices\n\n\ndef main():\n    return prices.total([1, 2])\n",
            "shop/prices.py": "def total(values):\n    return sum(values)\n",
            "shop/old_scaler.py": "def scale(value):\n    return 2 * value\n",
        }, expect=1, note="`shop/old_scaler.py` is imported by nothing."),
        ProjectExample({
            "prices.py": "def total(values):\n    return sum(values)\n",
            "scaler.py": "def scale(value):\n    return 2 * value\n",
        }, expect=1, note="No entry point at all: one finding that says so, not one orphan per module."),
        ProjectExample({
            "pyproject.toml": '[project]\nname = "shop"\nversion = "0"\n',
            "shop/__init__.py": "",
            "examples/scales.py": "# Moved to shop/scales.py; this copy is kept for old notebooks.\nSCALE = 2\n",
        }, expect=1, note="A module that binds a name is code: nothing reaches `examples/scales.py`."),
        ProjectExample({
            "train.py": "batch_size = 1\nprint(batch_size)\n",
            "config/small.py": "batch_size = 8\n",
        }, expect=1, note="No `exec` of a file by a run-time path in the project: `config/small.py` is an orphan."),
        ProjectExample({
            "train.py": "import sys\n\nfor path in sys.argv[1:]:\n"
                        "    exec(open(path).read())  # foxaudit: ignore[FX201] -- runs the config/*.py named on the command line\n",
            "config/small.py": "batch_size = 8\n",
            "helpers.py": "def unused(value):\n    return value\n",
        }, expect=1, note="The `exec` may run `config/small.py`, not `helpers.py` (it defines a function): still an orphan."),
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["lab.train"]\n',
            "lab/__init__.py": "",
            "lab/train.py": "import sys\n\nfrom hydra.utils import instantiate\nfrom omegaconf import OmegaConf\n\n"
                            "model = instantiate(OmegaConf.load(sys.argv[1]).model)\n",
            "lab/configs/model/small.yaml": "model:\n  _target_: models.mlp.MLP\n",
            "lab/models/__init__.py": "",
            "lab/models/mlp.py": "class MLP:\n    pass\n",
            "lab/models/rnn.py": "class RNN:\n    pass\n",
        }, expect=1, note="No YAML file names `lab.models.rnn`: an orphan."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        graph = analysis.imports
        orphans = [row for row in graph.rows if row.status == ORPHAN]
        if not graph.entries and orphans:
            # Without a single entry point every module would be an orphan: one true finding instead.
            program = analysis.program
            where = "pyproject.toml" if (program.root / "pyproject.toml").is_file() else orphans[0].path
            return [
                diagnostic_at(
                    self.code,
                    file_site(where),
                    f"orphan-module analysis skipped: no entry point found for {len(orphans)} modules (0 vs at least"
                    " one: a console script, a `__main__` module, an `if __name__ == \"__main__\"` script, a test,"
                    " the distribution's package)",
                    "name them under [tool.foxaudit.program]: `entry-points`, `public-packages` or `test-roots`",
                )
            ]
        notes = [
            diagnostic_at(
                self.code,
                found.site,
                f"orphan-module analysis unresolved for {len(found.modules)} modules under `{found.package}`"
                f" (`{found.expression}` picks one at run time vs a literal module name)",
                "nothing else imports them: import them by name, or list the ones meant to be loaded this way under"
                " `entry-points`",
            )
            if found.kind == "import"
            else diagnostic_at(
                self.code,
                found.site,
                f"orphan-module analysis unresolved for {len(found.modules)} modules of packages a folder chosen at run"
                f" time may hold (`{found.expression}` imports a name from a folder on `sys.path` vs a literal module"
                f" name): {_listed(found.modules)}",
                "nothing else imports them: if they are the plugins this call loads, classify them under `out-of-scope`"
                " (\"loaded as a user directory\"); delete the ones no command line names",
            )
            if found.kind == "directory"
            else diagnostic_at(
                self.code,
                found.site,
                f"orphan-module analysis unresolved for {len(found.modules)} modules shaped like config files"
                f" (`{found.expression}` runs a file picked at run time vs an import): {_listed(found.modules)}",
                "nothing imports them: if they are the files this call runs, classify them under `out-of-scope`"
                " (\"run by path\"); delete the ones no command line names",
            )
            for found in graph.dynamic
        ]
        return notes + [
            diagnostic_at(
                self.code,
                file_site(row.path),
                f"orphan module `{row.name}` ({row.via} vs reachable from an entry point)",
                "import it from the code that needs it, delete it, or classify it under `out-of-scope` with a reason"
                " (a library's API: list the package under `public-packages`)",
            )
            for row in analysis.imports.rows
            if row.status == ORPHAN
        ]


def _listed(modules: tuple[str, ...], most: int = 3) -> str:
    """`a`, `b`, `c` and 3 more."""
    shown = ", ".join(f"`{name}`" for name in modules[:most])
    return shown + (f" and {len(modules) - most} more" if len(modules) > most else "")
