"""Discovery, configuration resolution, content-hash cache, parallel runner, suppressions.

Library entry points (imports stay inside the functions: importing a submodule of the engine
must stay cheap, the warm CLI path depends on it):

* :func:`check_source` — run rules on one in-memory file, suppressions included.
* :func:`run_example` — run a rule's VALID/INVALID ``Example`` exactly as the CLI would.
* :func:`run_project_example` — the same for a whole-project rule's ``ProjectExample``.
* ``foxaudit.engine.run.check`` — a whole run over discovered files (what ``foxaudit check`` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def check_source(
    path: str,
    text: str | bytes,
    *,
    select: Iterable[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    root: str | Path = ".",
) -> list[Any]:
    """Diagnostics of one file given as text, sorted; raises ConfigError for bad select/options.

    ``options`` maps a code to its ``[tool.foxaudit.rules.<CODE>]`` table (TOML-style keys).
    """
    from foxaudit.config import Settings
    from foxaudit.engine.analyze import analyze_text
    from foxaudit.engine.resolve import resolve

    settings = Settings(
        root=Path(root).resolve(),
        select=tuple(select) if select is not None else None,
        rules={code: dict(table) for code, table in (options or {}).items()},
    )
    resolved = resolve(settings)
    return sorted(analyze_text(resolved, path, text).diagnostics)


def run_example(rule: Any, example: Any, root: str | Path = ".") -> list[Any]:
    """The diagnostics of ``rule``'s code for one ``Example`` (FX001 runs too, as in a real run)."""
    codes = {rule.code, "FX001"}
    options = {rule.code: example.options} if example.options else None
    found = check_source(example.path, example.code, select=sorted(codes), options=options, root=root)
    return [diagnostic for diagnostic in found if diagnostic.code == rule.code]


def run_project_example(rule: Any, example: Any, root: str | Path) -> list[Any]:
    """The diagnostics of ``rule``'s code for one ``ProjectExample``: its files are written under
    ``root`` (an empty directory) and checked as `foxaudit check` there would (the example's own
    pyproject.toml, the whole-program analyses, suppressions), with only ``rule`` selected (a
    preview rule too) and no cache. The examples are foxaudit's own files, so their
    ``generated-headers`` commands run (as with ``--run-generators``)."""
    import os

    from foxaudit.config import RUN_GENERATORS_VARIABLE, load_settings
    from foxaudit.engine.resolve import resolve
    from foxaudit.engine.run import check

    directory = Path(root)
    if directory.exists() and any(directory.iterdir()):
        raise ValueError(f"example project directory is not empty ({directory} vs an empty directory)"
                         " — hint: pass a fresh temporary directory")
    for relative, text in example.files.items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    settings = load_settings(None, directory, overrides={"select": [rule.code]})
    previous = os.environ.get(RUN_GENERATORS_VARIABLE)
    os.environ[RUN_GENERATORS_VARIABLE] = "1"
    try:
        result = check(resolve(settings), use_cache=False, jobs=1)
    finally:
        if previous is None:
            del os.environ[RUN_GENERATORS_VARIABLE]
        else:
            os.environ[RUN_GENERATORS_VARIABLE] = previous
    return sorted(diagnostic for diagnostic in result.diagnostics if diagnostic.code == rule.code)
