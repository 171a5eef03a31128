"""Every whole-program analysis of one Project, computed lazily and at most once per run.

Rules and generators call :func:`analysis_for` and read the part they need; the Project's
``memo`` keeps the result, so ten rules cost one program build and one run of each analysis.
Each analysis runs with the cyclic garbage collector paused: they allocate many small objects
and no garbage cycles, and full collections over the program's summaries cost more than the
analyses themselves on large trees.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from foxaudit.program.model import Program, no_gc, program_for
from foxaudit.program.project import Project
from foxaudit.program.settings import ProgramSettings

if TYPE_CHECKING:
    from foxaudit.program.hotpath import HotPath
    from foxaudit.program.layoutmodel import IsvModel, LayoutModel, LayoutSync
    from foxaudit.program.wiring import ImportGraph, KernelLinkage, StateCoverage


class Analysis:
    def __init__(self, program: Program):
        self.program = program

    # Each analysis module is imported when first needed: importing the rules (the per-file pass
    # does) must not import every analysis.
    @functools.cached_property
    def imports(self) -> ImportGraph:
        from foxaudit.program.wiring import import_graph

        with no_gc():
            return import_graph(self.program)

    @functools.cached_property
    def kernels(self) -> KernelLinkage:
        from foxaudit.program.wiring import kernel_linkage

        with no_gc():
            return kernel_linkage(self.program)

    @functools.cached_property
    def state(self) -> StateCoverage:
        from foxaudit.program.wiring import state_coverage

        with no_gc():
            return state_coverage(self.program)

    @functools.cached_property
    def hot(self) -> HotPath:
        from foxaudit.program.hotpath import hot_path

        with no_gc():
            return hot_path(self.program)

    @functools.cached_property
    def layout(self) -> LayoutModel | None:
        from foxaudit.program.layoutmodel import read_layout

        with no_gc():
            return read_layout(self.program)

    @functools.cached_property
    def isv(self) -> IsvModel:
        from foxaudit.program.layoutmodel import isv_model

        with no_gc():
            return isv_model(self.program, self.layout)

    @functools.cached_property
    def sync(self) -> LayoutSync:
        from foxaudit.program.layoutmodel import layout_sync

        with no_gc():
            return layout_sync(self.program, self.layout)


def bodies_read_widely(settings: ProgramSettings, sources: Iterable[bytes]) -> bool:
    """Will the analyses read the summary body of most modules of a project with these settings
    and these Python sources? A prediction, for speed alone: a summary made as an index alone
    scans its body when an analysis reads it, so a wrong guess costs time, never a finding.

    Wide readers: the ISV model (every module's subscript writes, with a layout module), state
    coverage (every module's assignments, with state classes), the call graph from hot-path
    roots (configured, or marked by a hot-path decorator), and the derived kernel launchers
    (every module's calls, once any module calls a kernel loader: configured, or CuPy's)."""
    if settings.layout_module or settings.state_classes or settings.hot_path_roots or settings.kernel_loaders:
        return True
    from foxaudit.program.wiring import LOAD_METHODS

    names = {*LOAD_METHODS, *(decorator.rpartition(".")[2] for decorator in settings.hot_path_decorators)}
    markers = [name.encode() for name in sorted(names)]
    return any(marker in data for data in sources for marker in markers)


def analysis_for(project: Project, *, use_cache: bool = True) -> Analysis:
    found = project.memo.get("analysis")
    if isinstance(found, BaseException):
        # The build failed for an earlier rule: the same failure, not a second build.
        raise found
    if found is None:
        try:
            found = Analysis(program_for(project, use_cache=use_cache))
        except Exception as error:
            project.memo["analysis"] = error
            raise
        project.memo["analysis"] = found
    return found  # type: ignore[return-value]
