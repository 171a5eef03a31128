"""Whole-program rule: a [tool.foxaudit.program] key points at nothing."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.globs import name_matches, path_matches
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.sites import diagnostic_at, file_site
from foxaudit.rules.base import AnalysisRule, ProjectExample


class ProgramConfigTargetMissing(AnalysisRule):
    """A [tool.foxaudit.program] key points at nothing.

    ## What it does
    Reports configured targets that do not exist: a `layout-module` file, `registry-files` globs
    matching no module, a `generated-headers` path, a `kernel-loaders` function, and
    `state-classes`, `pinned-functions`, `hot-path-exclude`, `isv-bootstrap-functions`,
    `isv-reference-functions` and `isv-bus-functions` patterns that match no class or function.

    ## Why is this bad
    A whole-program check configured against a missing target silently checks nothing.

    ## Example
    ```toml
    [tool.foxaudit.program]
    layout-module = "trainer/layouts.py"  # the file is trainer/layout.py
    ```

    ## Use instead
    ```toml
    [tool.foxaudit.program]
    layout-module = "trainer/layout.py"
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX207"
    name = "program-config-target-missing"
    summary = "A [tool.foxaudit.program] key points at nothing"
    invariant = 0

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": (
                '[tool.foxaudit.program]\nentry-points = ["sim.*"]\nlayout-module = "sim/layout.py"\n'
                'state-classes = ["sim.env:Env"]\nkernel-loaders = { "sim.env:load" = "name" }\n'
            ),
            "sim/__init__.py": "",
            "sim/layout.py": 'SLOTS = ("CASH", "POSITION")\n',
            "sim/env.py": (
                "import cupy\n\n\ndef load(name):\n    return cupy.RawModule(path=\"cuda/env.cu\").get_function(name)\n\n\n"
                "class Env:\n    def __init__(self, n):\n        self.n = n\n"
            ),
        }, note="Every configured file, class and loader exists."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": (
                '[tool.foxaudit.program]\nentry-points = ["sim.*"]\nlayout-module = "sim/layouts.py"\n'
                'state-classes = ["sim.env:Environment"]\nkernel-loaders = { "sim.env:load_kernel" = "name" }\n'
            ),
            "sim/__init__.py": "",
            "sim/layout.py": 'SLOTS = ("CASH", "POSITION")\n',
            "sim/env.py": (
                "import cupy\n\n\ndef load(name):\n    return cupy.RawModule(path=\"cuda/env.cu\").get_function(name)\n\n\n"
                "class Env:\n    def __init__(self, n):\n        self.n = n\n"
            ),
        }, expect=3, note="The layout file is sim/layout.py, the class is Env, the loader is `load`: three typos."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        program = analysis.program
        settings = program.settings
        out: list[Diagnostic] = []
        pyproject = file_site("pyproject.toml")
        if settings.layout_module and settings.layout_module not in program.sources:
            out.append(diagnostic_at(self.code, pyproject, f"`layout-module` names a missing file ({settings.layout_module!r} vs an existing .py)", "fix [tool.foxaudit.program] layout-module"))
        if settings.registry_files and not any(
            m for m in program.modules.values() if any(path_matches(m.path, pattern) for pattern in settings.registry_files)
        ):
            out.append(diagnostic_at(self.code, pyproject, f"`registry-files` match no module ({list(settings.registry_files)} vs at least one)", "fix [tool.foxaudit.program] registry-files"))
        for path in settings.generated_headers:
            if path not in program.sources and not (program.root / path).is_file():
                out.append(diagnostic_at(self.code, pyproject, f"`generated-headers` names a missing file ({path!r} vs an existing header)", "generate it, or fix the key"))
        for target in settings.kernel_loaders:
            module, _, qual = target.partition(":")
            if f"{module}:{qual}" not in program.functions:
                out.append(diagnostic_at(self.code, pyproject, f"`kernel-loaders` names no function ({target!r} vs 'module:function' of the project)", "fix the qualified name"))
        # A glob that matches nothing silently disables what it configures (a renamed class, a typo).
        # Every function key: listed (every module's functions decoded) only when a glob needs it.
        function_keys = program.functions
        class_keys = program.classes
        globs = [
            ("state-classes", settings.state_classes, class_keys),
            ("pinned-functions", tuple(settings.pinned_functions), function_keys),
            ("hot-path-exclude", tuple(settings.hot_path_exclude), function_keys),
            ("isv-bootstrap-functions", settings.isv_bootstrap_functions, function_keys),
            ("isv-reference-functions", settings.isv_reference_functions, function_keys),
            ("isv-bus-functions", settings.isv_bus_functions, function_keys),
        ]
        for key, patterns, names in globs:
            for pattern in patterns:
                if "::" not in pattern and not any(name_matches(name, [pattern]) for name in names):
                    out.append(
                        diagnostic_at(
                            self.code,
                            pyproject,
                            f"`{key}` pattern matches nothing ({pattern!r} vs a 'module:Qual.name' of the project)",
                            f"fix or remove the pattern in [tool.foxaudit.program] {key}",
                        )
                    )
        return out
