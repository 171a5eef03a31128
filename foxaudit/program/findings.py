"""Diagnostics of the whole-program rules, computed from one Analysis.

The rules in ``foxaudit/rules/{gpu_drives,wiring,hot_path,layout_sync,audit_docs}`` are thin:
each asks :func:`findings` for its code. Keeping the logic here lets ``invariants.md`` count the
same findings the rules report without the program layer importing the rules.
"""

from __future__ import annotations

from collections.abc import Callable

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.program.wiring import GHOST, ORPHAN, PARTIAL, Site


def _diagnostic(code: str, site: Site, message: str, hint: str = "") -> Diagnostic:
    span = site.span
    return Diagnostic(
        path=site.path,
        line=span.line,
        column=span.column,
        code=code,
        message=message,
        end_line=span.end_line,
        end_column=span.end_column,
        hint=hint,
    )


def _file_site(path: str) -> Site:
    from foxaudit.program.pyscan import Span

    return Site(path, Span(1, 1, 1, 1))


def fx101(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX101",
            write.site,
            f"host code writes GPU-computed ISV slot ({write.expression} in `{write.function}`: {write.reason} vs"
            " written by kernels only)",
            "compute the value in a kernel that writes the slot, and read it on the host; host writes are for "
            "CPU inputs, static config, the fingerprint, and bootstrap values in reset dispatch",
        )
        for write in analysis.isv.writes
        if write.status == "violation"
    ]


def fx102(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX102",
            write.site,
            f"ISV write whose slot cannot be named ({write.expression} in `{write.function}` vs an index built from"
            " a slot constant)",
            "index the ISV with the slot's named constant (ISV_<NAME>), or list the bus implementation under "
            "`isv-bus-functions`",
        )
        for write in analysis.isv.writes
        if write.status == "unresolved"
    ]


def fx103(analysis: Analysis) -> list[Diagnostic]:
    isv = analysis.isv
    if isv.layout is None:
        return []
    gpu = set(analysis.program.settings.isv_gpu_writers)
    return [
        _diagnostic(
            "FX103",
            slot.site,
            f"GPU-computed ISV slot {slot.constant} has no kernel that writes it (no `[{slot.constant}…] =` in any"
            " __global__ body vs at least one writer)",
            "write it from the kernel that computes it, or change its writer class in the layout",
        )
        for slot in isv.layout.slots
        if slot.writer in gpu and not isv.kernel_writers.get(slot.constant)
    ]


def fx201(analysis: Analysis) -> list[Diagnostic]:
    graph = analysis.imports
    orphans = [row for row in graph.rows if row.status == ORPHAN]
    if not graph.entries and orphans:
        # Without a single entry point every module would be an orphan: one true finding instead.
        program = analysis.program
        where = "pyproject.toml" if (program.root / "pyproject.toml").is_file() else orphans[0].path
        return [
            _diagnostic(
                "FX201",
                _file_site(where),
                f"orphan-module analysis skipped: no entry point found for {len(orphans)} modules (0 vs at least"
                " one: a console script, a `__main__` module, an `if __name__ == \"__main__\"` script, a test,"
                " the distribution's package)",
                "name them under [tool.foxaudit.program]: `entry-points`, `public-packages` or `test-roots`",
            )
        ]
    return [
        _diagnostic(
            "FX201",
            _file_site(row.path),
            f"orphan module `{row.name}` ({row.via} vs reachable from an entry point)",
            "import it from the code that needs it, delete it, or classify it under `out-of-scope` with a reason"
            " (a library's API: list the package under `public-packages`)",
        )
        for row in analysis.imports.rows
        if row.status == ORPHAN
    ]


def fx202(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX202",
            row.site,
            f"orphan kernel `{row.name}` (defined, loaded by no Python code vs loaded and launched)",
            "load it by name (RawModule.get_function / the kernel loader) and launch it, or delete it",
        )
        for row in analysis.kernels.rows
        if row.status == ORPHAN and row.site is not None
    ]


def fx203(analysis: Analysis) -> list[Diagnostic]:
    out = []
    for row in analysis.kernels.rows:
        if row.status != GHOST:
            continue
        for load in row.loads:
            out.append(
                _diagnostic(
                    "FX203",
                    load.site,
                    f"ghost kernel `{row.name}` (loaded by {load.how} vs defined in no .cu/.cuh)",
                    "fix the name, or add the `__global__` kernel to the CUDA sources",
                )
            )
    return out


def fx204(analysis: Analysis) -> list[Diagnostic]:
    out = []
    for row in analysis.kernels.rows:
        if row.status != PARTIAL or any(load.launched_at for load in row.loads):
            continue  # a kernel only tests launch is Partial in the audit, not a finding
        load = row.loads[0]
        out.append(
            _diagnostic(
                "FX204",
                load.site,
                f"kernel `{row.name}` is loaded but never launched (loaded by {load.how} vs called with a grid)",
                "launch the loaded function (or pass it to the launcher), or stop loading it",
            )
        )
    return out


def fx205(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX205",
            load.site,
            f"kernel name cannot be resolved statically ({load.expression!r} is {load.why_unresolved} vs a string "
            "literal or module constant)",
            "name the kernel with a literal or a module-level constant so linkage can be checked",
        )
        for load in analysis.kernels.unresolved
    ]


def fx206(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX206",
            buffer.site,
            f"device buffer `{buffer.name}` of `{buffer.owner}` has no StateResetRegistry entry (unregistered vs one "
            "entry per piece of state)",
            f"register '{buffer.name}' with a lifecycle and its reset arm in the registry",
        )
        for buffer in analysis.state.missing
    ]


def fx207(analysis: Analysis) -> list[Diagnostic]:
    program = analysis.program
    settings = program.settings
    out: list[Diagnostic] = []
    pyproject = _file_site("pyproject.toml")
    if settings.layout_module and settings.layout_module not in program.sources:
        out.append(_diagnostic("FX207", pyproject, f"`layout-module` names a missing file ({settings.layout_module!r} vs an existing .py)", "fix [tool.foxaudit.program] layout-module"))
    if settings.registry_files and not any(
        m for m in program.modules.values() if any(_match(m.path, pattern) for pattern in settings.registry_files)
    ):
        out.append(_diagnostic("FX207", pyproject, f"`registry-files` match no module ({list(settings.registry_files)} vs at least one)", "fix [tool.foxaudit.program] registry-files"))
    for path in settings.generated_headers:
        if path not in program.sources and not (program.root / path).is_file():
            out.append(_diagnostic("FX207", pyproject, f"`generated-headers` names a missing file ({path!r} vs an existing header)", "generate it, or fix the key"))
    for target in settings.kernel_loaders:
        module, _, qual = target.partition(":")
        if f"{module}:{qual}" not in program.functions:
            out.append(_diagnostic("FX207", pyproject, f"`kernel-loaders` names no function ({target!r} vs 'module:function' of the project)", "fix the qualified name"))
    # A glob that matches nothing silently disables what it configures (a renamed class, a typo).
    from foxaudit.globs import name_matches

    function_keys = list(program.functions)
    class_keys = list(program.classes)
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
                    _diagnostic(
                        "FX207",
                        pyproject,
                        f"`{key}` pattern matches nothing ({pattern!r} vs a 'module:Qual.name' of the project)",
                        f"fix or remove the pattern in [tool.foxaudit.program] {key}",
                    )
                )
    return out


def _match(path: str, pattern: str) -> bool:
    from foxaudit.globs import path_matches

    return path_matches(path, pattern)


def fx301(analysis: Analysis) -> list[Diagnostic]:
    out = []
    for site in analysis.hot.violations:
        chain = " → ".join(site.chain)
        out.append(
            _diagnostic(
                "FX301",
                site.site,
                f"host transfer/sync {site.kind} on the hot path (reachable: {chain} vs no transfer in the step)",
                site.hint,
            )
        )
    return out


def fx302(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX302",
            call.site,
            f"call on the hot path cannot be resolved (`{call.text}`: {call.note} vs a known project function)",
            "call the function through a name the analysis can follow (module function, self method, typed attribute)",
        )
        for call in analysis.hot.unresolved
    ]


def fx303(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX303",
            _file_site("pyproject.toml"),
            f"hot-path root pattern matches no function ({pattern!r} vs a 'module:Qual.name' of the project)",
            "fix [tool.foxaudit.program] hot-path-roots",
        )
        for pattern in analysis.hot.unmatched_roots
    ]


def fx502(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX502",
            mismatch.cuda,
            f"constant {mismatch.name} differs between CUDA and Python ({mismatch.cuda_value} vs {mismatch.python_value}"
            f" at {mismatch.python.where})",
            "regenerate the header from the Python layout, or include the generated header instead of redefining it",
        )
        for mismatch in analysis.sync.mismatches
    ]


def fx503(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX503",
            _file_site(check.path),
            f"generated header {check.path} is stale ({check.verdict} vs current)",
            f"regenerate it with the layout's write command and commit it (checked by `{check.command}`)",
        )
        for check in analysis.sync.headers
        if not check.fresh
    ]


def fx504(analysis: Analysis) -> list[Diagnostic]:
    return [
        _diagnostic(
            "FX504",
            item.site,
            f"hand-written CUDA redefines generated constant {item.name} (second definition vs only {item.generated.where})",
            "delete this definition and #include the generated header",
        )
        for item in analysis.sync.redefinitions
    ]


def fx505(analysis: Analysis) -> list[Diagnostic]:
    layout = analysis.layout
    if layout is None:
        return []
    return [
        _diagnostic("FX505", site, f"layout not statically readable: {message}", "declare slots with literal names and widths")
        for site, message in layout.problems
    ]


FINDERS: dict[str, Callable[[Analysis], list[Diagnostic]]] = {
    "FX101": fx101,
    "FX102": fx102,
    "FX103": fx103,
    "FX201": fx201,
    "FX202": fx202,
    "FX203": fx203,
    "FX204": fx204,
    "FX205": fx205,
    "FX206": fx206,
    "FX207": fx207,
    "FX301": fx301,
    "FX302": fx302,
    "FX303": fx303,
    "FX502": fx502,
    "FX503": fx503,
    "FX504": fx504,
    "FX505": fx505,
}


def findings(analysis: Analysis, code: str) -> list[Diagnostic]:
    return sorted(FINDERS[code](analysis))
