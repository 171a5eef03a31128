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
    module-level command line (`argparse`, `tyro.cli`, `fire.Fire`), pytest's test files, and the
    public modules of the distribution (`[project] name`, or every top-level package when there is
    none). An import the source roots cannot resolve is resolved against the importer's own and
    enclosing directories (the script's directory is on `sys.path`) and against literal
    `sys.path.append(...)` directories; `.pyx` files' imports count. `import_module(f"pkg.{x}")`
    gives one note for the modules only it may load, not an orphan each; so do a relative name
    anchored at a package (`import_module(f".{x}", package=pkg.__name__)`, `__import__(name,
    globals(), locals(), [], 1)` over a glob of the directory) and a helper that imports under its
    parameter (`import_module(f"{mod.__name__}.{file}")`), noted at each call that names the
    package (`import_submodule(backends)`).

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
                f"orphan-module analysis unresolved for {len(found.modules)} modules under `{found.prefix[:-1]}`"
                f" (`{found.expression}` picks one at run time vs a literal module name)",
                "nothing else imports them: import them by name, or list the ones meant to be loaded this way under"
                " `entry-points`",
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
