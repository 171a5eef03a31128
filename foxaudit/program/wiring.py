"""Invariant 2 — wire it up: the import graph, kernel linkage and state coverage.

Import graph. Entry points are the console scripts of ``[project.scripts]`` (and
``[project.entry-points]``), ``__main__`` modules and modules with an ``if __name__ ==
"__main__"`` guard (both run as ``python -m``), every module under a test root, and the
configured ``entry-points``; a repository that configures no entry-point key gets derived ones
(pytest-named tests, the distribution's package, top-level scripts), and one with no entry point at
all gets one FX201 saying so instead of an orphan per module. Edges follow ``import a.b`` (a and a.b run), ``from a import b``
(a, and a.b when it is a module), relative imports, and literal ``importlib.import_module`` /
``__import__``; a ``_target_`` a project YAML file names is an entry point, and a file run by a
path chosen at run time (``exec(open(path).read())``) may be any config-shaped module (noted
once at the call, like a module name built at run time). Imports under ``if TYPE_CHECKING:`` are NOT edges: that block never runs, so it
makes nothing reachable at run time. A module is Wired when a non-test entry reaches it, Partial
when only tests reach it, Orphan when nothing does, Out-of-scope when a configured glob says so.

Kernel linkage. Definitions: every ``__global__`` in ``.cu``/``.cuh`` files and in CUDA source
held in Python string literals given to ``RawKernel``/``RawModule``. Loads: ``.get_function(N)``,
``RawKernel(code, N)``, ``RawModule(name_expressions=[...])`` and loader functions — configured
ones, and *derived* ones: a function that passes one of its own parameters as the kernel name to
a loader is itself a loader (so ``load_kernel(op, function)`` → ``get_function(function)`` and a
launcher's ``_launch(name, ...)`` need no configuration). A name is a string literal or a module
constant holding one; an f-string or any other expression is reported *unresolved*, not guessed.
A load is launched when its result is called, or bound to a name (local or ``self.x``) that is
called or passed to a launcher (a function that calls that parameter, found the same way).

State coverage. In the configured state classes, ``self.<name> = <factory>(..., device=...)``
is a device buffer; the registry is every configured entry call in the registry files; a buffer
whose name has no entry is reported.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import os
import posixpath
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from foxaudit.config import distribution_name, pytest_testpaths
from foxaudit.globs import first_path_match, name_matches
from foxaudit.program.configrefs import (
    CYTHON_IMPORT,
    CYTHON_SUFFIX,
    DOCUMENTATION_SUFFIXES,
    NESTED_PROJECT_FILE,
    NOTEBOOK_SUFFIX,
    PATH_TARGET_PREFIX,
    cython_import_text,
    shipped_names,
)
from foxaudit.program.cudascan import PASTED, CudaSummary, kernels_in_source_text, scan_cuda
from foxaudit.program.model import CACHE_FORMAT, Module, Program, function_key, importable
from foxaudit.program.pyscan import Arg, Call, Function, ModuleSummary, Span
from foxaudit.sources.base import SourceFile

WIRED, PARTIAL, ORPHAN, GHOST, OUT_OF_SCOPE = "Wired", "Partial", "Orphan", "Ghost", "Out-of-scope"
# Why an entry point is one, for the two kinds that only tests run: a test module, and a file a
# test names as data (``_files_tests_name``); what they reach is reached by tests alone.
TEST_ROOT, TEST_DATA = "test root", "test data (a test names the file)"
TEST_ENTRIES = frozenset({TEST_ROOT, TEST_DATA})
# Why a file whose path is no module name is an entry point: no import can name it.
PATH_SCRIPT = "script (its path is no module name, so it is run by path)"
# Statically undecidable (a kernel source or a module name built at run time): no finding, the
# audit says why.
UNRESOLVED = "Unresolved"
# Why a file the project holds is out of scope without an `out-of-scope` glob (``Project.unreported``).
_NOT_OWNED = ("not the project's to report on: vendored third-party code, a template to copy, or kept from its hooks"
              " or linters")


@dataclass(frozen=True)
class Site:
    path: str
    span: Span
    scope: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.span.line}"


# -- import graph -----------------------------------------------------------------------------
@dataclass
class ModuleRow:
    name: str
    path: str
    status: str
    via: str  # entry kind, importer, or reason
    is_test: bool


@dataclass(frozen=True)
class DynamicImport:
    """``importlib.import_module(f"pkg.{name}")``: a module name built at run time."""

    site: Site
    expression: str
    prefix: str  # the literal head: 'pkg.', or 'pkg._' (the modules of pkg whose names start with '_')
    modules: tuple[str, ...] = ()  # modules only this call may reach (filled by import_graph)
    # "import": a module name built at run time; "exec": a file's text run by a path chosen at run
    # time (``exec(open(path).read())``, ``runpy.run_path(path)``), which may be any module shaped
    # like a config file (prefix ''); "directory": a module imported by a name and from a folder
    # both chosen at run time (fairseq's ``--user-dir``: ``sys.path.insert(0, parent)`` then
    # ``import_module(name)``), which may be any package of the tree that plugs into the project.
    kind: str = "import"
    # A bare name built from parts (`f"{kind}_{name}"`): the glob the last part of the name fits.
    pattern: str = ""

    def may_load(self, name: str) -> bool:
        """Whether the call may import the module ``name``."""
        if not name.startswith(self.prefix):
            return False
        return not self.pattern or ("." not in name[len(self.prefix):]
                                    and fnmatch.fnmatchcase(name[len(self.prefix):], self.pattern))

    @property
    def package(self) -> str:
        """The package the built name is under (``pkg`` for ``pkg.`` and ``pkg._``)."""
        return self.prefix.rpartition(".")[0]

    @property
    def what(self) -> str:
        if self.kind == "exec":
            return f"`{self.expression}` at {self.site.where} (a file run by a path chosen at run time)"
        if self.kind == "directory":
            return f"`{self.expression}` at {self.site.where} (a package imported from a folder chosen at run time)"
        return f"`{self.expression}` at {self.site.where} (a name built at run time)"


@dataclass
class ImportGraph:
    edges: dict[str, set[str]]
    entries: dict[str, str]  # module → why it is an entry
    rows: list[ModuleRow]
    type_checking_only: dict[str, list[str]]  # module → importers that import it only for typing
    dynamic: list[DynamicImport] = field(default_factory=list)  # call sites with modules they alone may reach


def import_graph(program: Program) -> ImportGraph:
    settings = program.settings
    modules = program.modules
    edges: dict[str, set[str]] = {name: set() for name in modules}
    typing_only: dict[str, set[str]] = {}
    derived = _derives_entries(program)
    # Cython modules (.pyx) import Python modules at run time too; they are graph nodes without
    # a row (their own reachability is the build's business).
    cython = _cython_imports(program) if derived else {}
    known = set(modules) | set(cython)
    for name, imported in cython.items():
        edges[name] = set()
        for target_module, names in imported:
            edges[name].update(_import_targets(program, target_module, names, known) - {name})
    for name, (imported, typing) in _module_imports(program, known, derived).items():
        edges[name].update(imported)
        for target in typing:
            typing_only.setdefault(target, set()).add(name)
    entries: dict[str, str] = {}
    if settings.console_scripts:
        project_table = program.project.pyproject.get("project", {}) if isinstance(program.project.pyproject, dict) else {}
        groups = [("console script", project_table.get("scripts", {})), ("gui script", project_table.get("gui-scripts", {}))]
        for group, table in (project_table.get("entry-points", {}) or {}).items():
            groups.append((f"entry point {group}", table))
        for kind, table in groups:
            if not isinstance(table, dict):
                continue
            for script, target in sorted(table.items()):
                module_name = str(target).split(":")[0].strip()
                if module_name in modules:
                    entries.setdefault(module_name, f"{kind} `{script}`")
    for name, module in modules.items():
        if module.is_test:
            entries.setdefault(name, "test root")
        elif name == "__main__" or name.endswith(".__main__"):
            entries.setdefault(name, "__main__ module")
        elif module.summary.has_main_guard:
            entries.setdefault(name, "`if __name__ == \"__main__\"` script")
        elif not importable(name):
            entries.setdefault(name, PATH_SCRIPT)
        elif derived and _run_by_path(name, module, modules):
            entries.setdefault(name, "script (PEP 723 `# /// script` metadata, a command line in its text naming its file,"
                                     " or a `#!` line naming Python on a module that runs code at import: run by path)")
        elif settings.entry_points and name_matches(name, settings.entry_points):
            entries.setdefault(name, "configured entry point")
        elif any(name == package or name.startswith(package + ".") for package in settings.public_packages) and not any(
            _private_part(part) for part in name.split(".")
        ):
            entries.setdefault(name, "public module of a library package")
    if derived:
        imported_somewhere = set().union(*edges.values())
        for name, why in _derived_entries(program, imported_somewhere).items():
            entries.setdefault(name, why)
    # Hydra's `_target_: pkg.module.Class` in a YAML file: the framework imports the module.
    for name, why in _config_entries(program, derived).items():
        entries.setdefault(name, why)
    # A project nested in the tree that a `setup.py` declares: what it ships is its API.
    for name, why in _nested_setup_entries(program).items():
        entries.setdefault(name, why)
    # A tool's settings naming a project module (mypy's `plugins = ["tools.mypy_plugin"]`): the tool imports it.
    for name, why in _pyproject_tool_entries(program).items():
        entries.setdefault(name, why)
    # A Django settings module and what it names: Django imports them by their dotted strings.
    for name, why in _django_entries(program).items():
        entries.setdefault(name, why)
    # Out-of-scope code (benchmarks, scripts run by hand) does not make anything it imports wired.
    for name in [n for n in entries if program.out_of_scope(modules[n].path)]:
        del entries[name]
    production = _reach(edges, [name for name, why in entries.items() if why not in TEST_ENTRIES])
    tests = _reach(edges, [name for name, why in entries.items() if why in TEST_ENTRIES])
    # Files a test names by their file name (`check_example("eval.py")` over `examples/`), which
    # nothing else reaches: test data (what they import is reached by tests).
    named_by_tests = _files_tests_name(program, entries, set(production) | set(tests))
    if named_by_tests:
        entries.update(named_by_tests)
        production = _reach(edges, [name for name, why in entries.items() if why not in TEST_ENTRIES])
        tests = _reach(edges, [name for name, why in entries.items() if why in TEST_ENTRIES])
    # import_module("pkg." + name): which module runs is decided at run time. The modules it may
    # load that nothing else reaches get one note per call site, not an orphan finding each.
    dynamic_imports = _dynamic_imports(program, production, tests)
    # Whatever the run-time part, `import_module(f"docs_src.body.{x}")` imports `docs_src` and
    # `docs_src.body` first: the literal head's packages are imported by the calling module.
    # And a module that holds the rest of the name as a string literal imports that module: a
    # fixture's `params=[pytest.param("tutorial001_py310"), …]` beside `import_module(
    # f"docs_src.body.{request.param}")` (FastAPI's tests), a table of plugin names beside the call.
    heads = False
    for found in dynamic_imports:
        caller = _module_name_at(program, found.site.path)
        if caller is None:
            continue
        parts = found.prefix.rstrip(".").split(".") if found.prefix.strip(".") else []
        for cut in range(1, len(parts) + 1):
            ancestor = ".".join(parts[:cut])
            if ancestor in modules and ancestor != caller and ancestor not in edges[caller]:
                edges[caller].add(ancestor)
                heads = True
        if found.kind == "import" and found.prefix.endswith("."):
            for text in _strings_held(modules[caller]):
                completed = found.prefix + text
                if completed in modules and completed != caller and found.may_load(completed) \
                        and completed not in edges[caller]:
                    edges[caller].add(completed)
                    heads = True
    for walker, walked in _walks_under_a_parameter(program, set(production) | set(tests)).items():
        added = walked - edges[walker] - {walker}
        if added:
            edges[walker].update(added)
            heads = True
    if heads:
        production = _reach(edges, [name for name, why in entries.items() if why not in TEST_ENTRIES])
        tests = _reach(edges, [name for name, why in entries.items() if why in TEST_ENTRIES])
    dynamic_candidates: dict[str, DynamicImport] = {}
    for found in dynamic_imports:
        for name in modules:
            if found.may_load(name) and name not in production and name not in tests \
                    and not program.out_of_scope(modules[name].path):
                dynamic_candidates.setdefault(name, found)
    # exec(open(path).read()) with the path from the command line: any module shaped like a config
    # file (assignments, no def or class) may be the one it runs. One note at the call, as above.
    executions = _file_executions(program, production, tests)
    if executions:
        dynamic_imports.extend(executions)
        for name, module in modules.items():
            if (
                name not in production and name not in tests and name not in dynamic_candidates and _config_shaped(module)
                and not program.out_of_scope(module.path)
            ):
                dynamic_candidates[name] = executions[0]
    # import_module(name) after sys.path.insert(0, folder), both from the command line: any package
    # of the tree nothing reaches that imports the project's reached code may be the one it loads
    # (fairseq's `--user-dir examples/linformer/linformer_src`, `examples/data2vec`). One note at the call.
    loaders = _directory_loaders(program, production, tests)
    if loaders:
        dynamic_imports.extend(loaders)
        for name, module in modules.items():
            if module.is_package and name not in production and name not in tests and name not in dynamic_candidates \
                    and not program.out_of_scope(module.path) and _plugs_into(name, edges, production):
                dynamic_candidates[name] = loaders[0]
    # What only those modules import runs when one of them does: unresolved under the same call
    # (Megatron-LM's checkpoint plugins share a `utils` nothing else imports).
    # (A file run by path runs no package `__init__` of its own: from such a candidate only what
    # it imports is followed, not the parent-package edge its module name implies.)
    roots = {name for name, found in dynamic_candidates.items() if found.kind != "exec"}
    owner: dict[str, str] = {name: name for name in roots}
    for name, found in dynamic_candidates.items():
        if found.kind == "exec":
            parents = {name.rsplit(".", cut)[0] for cut in range(1, name.count(".") + 1)}
            for target in edges.get(name, ()):
                if target not in parents and target not in owner:
                    owner[target] = name
    reached_from_candidates = _reach(edges, sorted(owner))
    for name in list(reached_from_candidates):
        if name in owner and owner[name] != name:
            reached_from_candidates[name] = owner[name]  # its root is the candidate that imports it
    for name in sorted(reached_from_candidates):
        if name not in production and name not in tests and name not in dynamic_candidates:
            root = name
            while root not in dynamic_candidates:
                root = reached_from_candidates[root]
            dynamic_candidates[name] = dynamic_candidates[root]
    rows: list[ModuleRow] = []
    for name in sorted(modules, key=lambda n: modules[n].path):
        module = modules[name]
        reason = first_path_match(module.path, settings.out_of_scope)
        if reason is not None:
            rows.append(ModuleRow(name, module.path, OUT_OF_SCOPE, settings.out_of_scope[reason], module.is_test))
        elif module.path in program.project.unreported:
            rows.append(ModuleRow(name, module.path, OUT_OF_SCOPE, _NOT_OWNED, module.is_test))
        elif name in entries:
            rows.append(ModuleRow(name, module.path, WIRED, f"entry: {entries[name]}", module.is_test))
        elif name in production:
            rows.append(ModuleRow(name, module.path, WIRED, f"imported by `{production[name]}`", module.is_test))
        elif name in tests:
            rows.append(ModuleRow(name, module.path, PARTIAL, f"only tests reach it (via `{tests[name]}`)", module.is_test))
        elif name in dynamic_candidates:
            found = dynamic_candidates[name]
            verb = "run" if found.kind == "exec" else "imported"
            rows.append(ModuleRow(name, module.path, UNRESOLVED, f"may be {verb} by {found.what}", module.is_test))
        elif _marks_a_data_folder(program, name, module):
            rows.append(ModuleRow(name, module.path, OUT_OF_SCOPE, "holds no code: the package marker of a folder of data files",
                                  module.is_test))
        elif _holds_only_a_note(program, name, module):
            rows.append(ModuleRow(name, module.path, OUT_OF_SCOPE, "holds no code (comments or a docstring only)", module.is_test))
        else:
            importers = sorted(typing_only.get(name, ()))
            via = "no entry point reaches it"
            if importers:
                via += f"; imported only under TYPE_CHECKING by `{importers[0]}`"
            rows.append(ModuleRow(name, module.path, ORPHAN, via, module.is_test))
    dynamic = [
        replace(found, modules=tuple(sorted(n for n, d in dynamic_candidates.items() if d is found)))
        for found in dynamic_imports
    ]
    return ImportGraph(
        edges, entries, rows, {k: sorted(v) for k, v in typing_only.items()}, [d for d in dynamic if d.modules]
    )


def _imports_of(program: Program, name: str, module: Module, known: set[str], derived: bool) -> tuple[set[str], set[str]]:
    """(the modules importing ``name`` runs, those it imports only under TYPE_CHECKING): a
    function of its own summary, its name and kind, and the set of ``known`` module names."""
    imported: set[str] = set()
    typing: set[str] = set()
    # Loading a module runs its parent packages first (a file run by its path has none).
    parts = name.split(".") if importable(name) else []
    for cut in range(1, len(parts)):
        parent = ".".join(parts[:cut])
        if parent in program.modules:
            imported.add(parent)
    extra_roots = _sys_path_additions(name, module) if derived else ()
    imported.update(target for target in _loaded_by_path(name, module, known) if target != name)
    imported.update(target for target in _walked_packages(name, module, known) if target != name)
    imported.update(target for target in _globbed_all(name, module, known) if target != name)
    if derived and _imports_a_name_it_holds(module):
        imported.update(target for target in _module_names_held(module, known) if target != name)
    if derived and _documentation_configuration(program, name, module):
        # Sphinx imports each name of the configuration's `extensions` list, from the directories
        # `sys.path.append(...)` added (django's `docs/_ext/djangodocs.py`).
        for extension in _extension_names(module):
            targets = _import_targets(program, extension, (), known) or _path_relative_targets(
                program, name, module, extension, (), known, extra_roots)
            imported.update(target for target in targets if target != name)
        # Other settings may name a project module as a dotted string (sphinx-autodoc2's
        # `autodoc2_docstring_parser_regexes = [(r".*", "docs.parser")]`): Sphinx imports it.
        # (requests' `pygments_style = "flask_theme_support.FlaskyStyle"` from `_themes`, a folder
        # the configuration put on `sys.path`.)
        for setting, value in module.summary.constants.items():
            for text in _string_literals_in(value) if setting != "extensions" else ():
                if "." in text and _DOTTED_NAME.fullmatch(text):
                    head, _, last = text.rpartition(".")
                    targets = _import_targets(program, text, (), known) or _path_relative_targets(
                        program, name, module, head, ((last, ""),), known, extra_roots)
                    imported.update(target for target in targets if target != name)
    for ref in module.summary.imports:
        if not ref.module:
            continue
        targets = _import_targets(program, ref.module, ref.names, known)
        if not targets and derived:
            # (A dynamic reference too: flash-fft-conv's registry `"src.models.h3.H3"`, resolved
            # beside the scripts that import `src.…` statically.)
            targets = _path_relative_targets(program, name, module, ref.module, ref.names, known, extra_roots)
        if not targets and derived:
            targets = _installed_name_targets(program, ref.module, ref.names, known)
        if ref.type_checking:
            typing.update(targets)
            continue
        imported.update(target for target in targets if target != name)
    return imported, typing


def _imports_a_name_it_holds(module: Module) -> bool:
    """The module imports a module whose name it does not write in the call (`import_module(
    module_path)` after `module_path, cls, _ = commands_dict[name]`, pip's command table)."""
    summary = module.summary
    if "import_module" not in summary.call_methods and "__import__" not in summary.call_heads:
        return False
    return any((call.method == "import_module" or call.func == "__import__") and call.args
               and call.args[0].kind not in ("str", "fstring", "concat") for call in summary.calls)


# A quoted dotted name in a value's text: `CommandInfo("pip._internal.commands.install", …)`.
_QUOTED_DOTTED_NAME = re.compile(r"""["']([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)["']""")


def _module_names_held(module: Module, known: set[str]) -> set[str]:
    """The project modules a module names exactly in its string literals (call arguments, a
    dict's values, constants): in a module that imports a name it holds, the table it picks from."""
    summary = module.summary
    held: set[str] = set()
    for call in summary.calls:
        held.update(str(arg.value) for arg in call.args if arg.kind == "str")
    for entry in summary.dict_entries:
        held.update(_QUOTED_DOTTED_NAME.findall(entry.value))
    for value in summary.constants.values():
        held.update(_string_literals_in(value))
    return {text for text in held if "." in text and text in known}


def _wiring_fingerprint() -> str:
    """Cached import contributions change when this module's code does."""
    try:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    except OSError:
        return __name__


_WIRING_FINGERPRINT = _wiring_fingerprint()


def _module_imports(program: Program, known: set[str], derived: bool) -> dict[str, tuple[set[str], set[str]]]:
    """``_imports_of`` every module, incrementally: each module's contribution is cached (one
    entry per set of module names) under its summary's entry name, which hashes its bytes, name
    and kind; after an edit only the changed modules are computed again, the others are read."""
    store = program.cache.store
    found: dict[str, tuple[set[str], set[str]]] = {}
    if store is None:
        for name, module in program.modules.items():
            found[name] = _imports_of(program, name, module, known, derived)
        return found
    state = hashlib.sha256(json.dumps([CACHE_FORMAT, _WIRING_FINGERPRINT, derived, sorted(known), sorted(program.modules)]).encode())
    entry_name = "imports-" + state.hexdigest()
    entry = store.get(entry_name)
    recorded = entry.get("modules") if entry is not None else None
    if type(recorded) is not dict:
        recorded = {}
    rows: dict[str, list] = {}
    changed = False
    for name, module in program.modules.items():
        summary_name = program.summary_names.get(module.path, "")
        row = recorded.get(module.path)
        if _valid_row(row) and row[:3] == [summary_name, name, module.is_package]:  # type: ignore[index]
            found[name] = (set(row[3]), set(row[4]))  # type: ignore[index]
            rows[module.path] = row  # type: ignore[assignment]
            continue
        imported, typing = _imports_of(program, name, module, known, derived)
        found[name] = (imported, typing)
        rows[module.path] = [summary_name, name, module.is_package, sorted(imported), sorted(typing)]
        changed = True
    if changed or rows.keys() != recorded.keys():
        store.put(entry_name, {"modules": rows})
    return found


def _valid_row(row: object) -> bool:
    """A recorded contribution as written: [summary name, module, is package, imports, typing
    imports] (the cache is data anyone may have written: checked, not trusted)."""
    return (
        type(row) is list
        and len(row) == 5
        and type(row[0]) is str
        and type(row[1]) is str
        and type(row[2]) is bool
        and type(row[3]) is list
        and type(row[4]) is list
        and all(type(target) is str for target in row[3])
        and all(type(target) is str for target in row[4])
    )


ENTRY_KEYS = frozenset({"entry-points", "public-packages", "test-roots"})


def _runs_code_at_import(module_calls: Iterable[tuple[str, str, bool]]) -> bool:
    """A call at module level whose result is neither bound to a name nor tested (`main()`,
    `push(model)`, `addons = [Search()]`): importing or running the module does work, beyond
    defining things — not a compatibility check (`if version.parse(np.__version__) >= …:`)."""
    return any(func and not bound_or_tested for func, _, bound_or_tested in module_calls)


def _uses_its_definitions(module: Module) -> bool:
    """The module runs its own code when it is run — a script's shape: a module-level call in an
    expression statement (``ModuleSummary.statement_calls``) after its last top-level function or
    class (`session.commit()`, `asyncio.run(main())`: work that uses what was defined), and a
    module-level call of a function or class it defines (`Edge(n1, n2)`, `c = Company(...)`).
    Not a helper's (whose import-time calls set up what it defines, above it), nor an example's
    that builds an app in an assignment (`app = App(middleware=[Timeout(5)])`), nor a plugin's
    registration by a decorator it defines (fairseq's `@fixed_pooling_monotonic_attention(…)`)."""
    summary = module.summary
    top = [cls for cls in summary.classes if "." not in cls.qualname]
    functions = [function for function in summary.functions if not function.class_name and "." not in function.qualname]
    last = max([cls.span.line for cls in top] + [function.span.line for function in functions], default=0)
    if not any(line > last for _, line in summary.statement_calls):
        return False
    own = summary.function_names | {cls.qualname for cls in top}
    decorating = {text.split("(", 1)[0].strip() for text in summary.decorators}
    decorating.update(text.split("(", 1)[0].strip() for cls in summary.classes for text in cls.decorators)
    return any(func in own and func not in decorating for func, _, _ in summary.module_calls)


def _run_by_path(name: str, module: Module, modules: dict[str, Module]) -> bool:
    """PEP 723 inline metadata says a file is a script, and so does a command line in its text that
    runs it by its own name (`mitmproxy -s anatomy.py`); a `#!` line says so of a module outside
    any package, or of one that runs a call at import (sphinx's `utils/bump_version.py`) — a
    library module inside a package that only defines things may carry an old `#!` line."""
    how = module.summary.run_by_path
    if how in ("pep723", "command"):
        return True
    return how == "shebang" and (name.rpartition(".")[0] not in modules
                                 or _runs_code_at_import(module.summary.module_calls))


def _private_part(part: str) -> bool:
    """A `_`-prefixed part of a dotted name is private; a dunder one (`__init__`, `__future__`,
    `__about__`) is a public convention (`from arch.__future__ import reindexing`)."""
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__") and len(part) > 4)


def _derives_entries(program: Program) -> bool:
    """True when the user configured no entry-point key: entry points are then derived."""
    written = program.project.program_keys
    return written is not None and not (written & ENTRY_KEYS)


def _derived_entries(program: Program, imported_somewhere: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """Entry points of an unconfigured repository, beyond scripts, ``__main__`` and main guards.

    * a top-level script: a module outside any package that runs a call at module level
      (``main()`` unguarded — build helpers run as ``python generate_version.py`` — or ``print``);
    * pytest's conventions: ``test_*.py``, ``*_test.py``, ``conftest.py`` and every module under a
      ``tests``/``test`` directory at any depth (pandas keeps them in ``pandas/tests``) or under a
      directory ``[tool.pytest.ini_options] testpaths`` names (pytest's own ``testing/``) are tests;
    * Sphinx's configuration: a ``conf.py`` outside any package under a ``doc``/``docs``/
      ``documentation`` directory (``sphinx-build`` executes it);
    * a library: the package named like the distribution (``[project] name``, ``-`` → ``_``) is
      its API, so its public modules (no ``_``-prefixed part) are entry points; where that name is
      no top-level package (``pyqlib`` ships ``qlib``), the packages and modules its packaging
      names are (setuptools' ``packages``, flit's module, poetry's or hatch's packages); with no
      ``[project] name``, every top-level package that is not tests, docs or examples.
    """
    found: dict[str, str] = {}
    distribution = distribution_name(program.project.pyproject) if isinstance(program.project.pyproject, dict) else ""
    # A [project] name that names no top-level package (`pyqlib` ships `qlib`): the packages
    # `[tool.setuptools] packages` lists, if any (an application named unlike its package, with
    # no such list, has no library API). No [project] name (a setup.py build, a checked-out
    # wheel): every top-level regular package that is not tests, docs or examples is its API.
    libraries = (
        ({distribution} if distribution in program.modules else _listed_packages(program) or {distribution})
        if distribution
        else {
            name for name, module in program.modules.items()
            if module.is_package and "." not in name and name not in _NOT_LIBRARIES
        }
    )
    testpaths = pytest_testpaths(program.project.pyproject)
    build_hooks = hatch_build_hooks(program.project.pyproject)
    build_backend = in_tree_build_backend(program.project.pyproject)
    asv_roots = _asv_benchmark_roots(program)
    gallery_roots = _gallery_roots(program)
    for name, module in program.modules.items():
        parent = name.rpartition(".")[0]
        # (callee, method, bound or tested) of the calls importing it runs; a top-level package's
        # __init__ is never a script.
        module_calls = module.summary.module_calls if "." in name or not module.is_package else frozenset()
        parts = module.path.split("/")
        filename = parts[-1]
        if (
            filename.startswith("test_")
            or filename.endswith("_test.py")
            or filename == "conftest.py"
            or _under_test_directory(module.path, testpaths)
        ):
            found[name] = "test root"
        elif _documentation_configuration(program, name, module):
            # docs/conf.py, docs/source/conf.py: sphinx-build runs it by path, nothing imports it
            # (and Hugging Face's doc-builder runs docs/source/_config.py so).
            found[name] = f"documentation configuration (a `{filename}` under a documentation directory, run by its builder)"
        elif module.path in build_hooks:
            found[name] = "hatch build hook (`[tool.hatch...hooks.custom]` loads it by path)"
        elif module.path == build_backend:
            found[name] = "in-tree build backend (`[build-system] build-backend` under `backend-path`)"
        elif not module.is_package and (why := _tool_file(filename, module)):
            found[name] = why
        elif module.path == "exercises.py" and _names_pytest_perf(program):
            found[name] = "loaded by its name (`exercises.py` at the root: pytest-perf's benchmarks)"
        elif "load_ipython_extension" in module.summary.function_names and "load_ipython_extension" not in module.summary.method_names:
            found[name] = "IPython extension (defines `load_ipython_extension`: `%load_ext` loads it by name)"
        elif module.path.startswith(gallery_roots):
            found[name] = "sphinx-gallery example (an `examples_dirs` directory of the Sphinx configuration, run to render it)"
        elif module.path.startswith(asv_roots):
            # benchmarks/benchmarks.py (`class Suite: def time_x(self)`): asv imports every module
            # of its benchmark directory and runs the functions its prefixes name.
            found[name] = "asv benchmark (asv imports every module of its benchmark directory)"
        elif "." not in name and not module.is_package and _runs_code_at_import(module_calls):
            found[name] = "top-level script (runs a call at import)"
        elif not module.is_package and parent not in program.modules and _runs_code_at_import(module_calls):
            # dev/data/fineweb.py: no __init__.py beside it, so it is run by path, not imported.
            found[name] = "script outside any package (runs a call at import)"
        elif (not module.is_package and parent in program.modules and name.split(".")[0] not in libraries
              and name not in imported_somewhere and _runs_code_at_import(module_calls)
              and (not module.summary.function_names and not module.summary.classes or _uses_its_definitions(module))):
            # trl's scripts/generate_tiny_models/…/qwen3_for_causal_lm.py: work done at import, no
            # function or class, imported by nothing, in a regular package the distribution does not
            # ship: `python -m` runs it (a helper other modules import is no script; a file in a
            # folder with no `__init__.py` is a config file or a script run by path). With functions
            # or classes, the module-level work must call them (sqlalchemy's `examples/graphs/
            # directed_graph.py`: `class Edge`, then `Edge(n1, n2)`, `session.commit()`).
            found[name] = "script in a package the distribution does not ship (runs its work at import: `python -m`)"
        elif any(method in _COMMAND_LINE or func in _COMMAND_LINE for func, method, _ in module_calls):
            found[name] = "script (parses its command line at import; run as `python -m` or by path)"
        elif any(name == library or name.startswith(library + ".") for library in libraries) \
                and _warns_of_deprecation_at_import(module):
            # tqdm's `_tqdm.py`: `from .std import *` and a module-level `warn(…, TqdmDeprecationWarning)`
            # (tensordict's `_tensordict/__init__.py`, a package): an old import path kept for its users.
            found[name] = "old import path of the library (warns of its deprecation when imported)"
        elif any(name == library or name.startswith(library + ".") for library in libraries) \
                and not any(_private_part(part) for part in name.split(".")):
            top = next(library for library in sorted(libraries) if name == library or name.startswith(library + "."))
            found[name] = f"public module of the distribution `{top}`" if distribution else f"public module of the top-level package `{top}`"
    return found


# Files a tool loads by their conventional name, wherever they are: nox, conan, fabric, doit,
# paver, and the interpreter's own start-up hooks (`site` imports `sitecustomize` from sys.path).
_TOOL_FILES = {
    "noxfile.py": "nox", "conanfile.py": "conan", "fabfile.py": "fabric", "dodo.py": "doit", "pavement.py": "paver",
    "sitecustomize.py": "Python's `site` at start-up", "usercustomize.py": "Python's `site` at start-up",
}  # fmt: skip


def _module_name_at(program: Program, path: str) -> str | None:
    """The name of the project module at ``path`` (None for none, or for a file whose name another
    file claims: a test directory beside a package of the same name)."""
    module = program.by_path.get(path)
    return module.name if module is not None and program.modules.get(module.name) is module else None


def _files_tests_name(program: Program, entries: dict[str, str], reached: set[str]) -> dict[str, str]:
    """The project files a test module names by a quoted relative path (bandit's
    ``self.check_example("eval.py", …)`` scanning ``examples/eval.py``, mitmproxy's
    ``tdata.path("../examples/addons/anatomy2.py")``): files a test reads or runs as data. A path
    resolves beside the test, from the root, or — a bare file name — to the one project file of
    that name, or the one of them nothing else reaches (else to none). Only files nothing else reaches (and files
    no import can name, which are data once a test names them) become test data: what they import
    is reached by tests alone."""
    tests = [module for name, module in program.modules.items()
             if entries.get(name) == "test root" and module.summary.file_literals]
    if not tests:
        return {}
    by_file_name: dict[str, list[str]] = {}
    for name, module in program.modules.items():
        by_file_name.setdefault(module.path.rpartition("/")[2], []).append(name)
    found: dict[str, str] = {}
    for test in tests:
        directory = test.path.rpartition("/")[0]
        for literal in sorted(test.summary.file_literals):
            candidates = [posixpath.normpath(posixpath.join(directory, literal)), posixpath.normpath(literal)]
            named = next((hit for path in candidates if (hit := _module_name_at(program, path))), None)
            if named is None and "/" not in literal and not literal.startswith("__"):
                # A bare file name: the one project file of that name, or the one of them nothing
                # else reaches (bandit's `examples/yaml_load.py` beside its plugin `yaml_load.py`).
                # (`__init__.py`, `__main__.py` name no file by themselves.)
                same = by_file_name.get(literal, [])
                loose = [name for name in same if name not in reached and entries.get(name, PATH_SCRIPT) == PATH_SCRIPT]
                named = same[0] if len(same) == 1 else loose[0] if len(loose) == 1 else None
            if named is not None and not program.modules[named].is_test and (
                    entries.get(named) == PATH_SCRIPT or (named not in reached and named not in entries)) \
                    and not first_path_match(program.modules[named].path, program.settings.out_of_scope):
                found.setdefault(named, TEST_DATA)  # (a file no import can name is data once a test names it)
    return found


def _tool_file(filename: str, module: Module) -> str:
    """Why a tool loads this file by its name ('' when none does); ``tasks.py`` only where it
    imports invoke (the name is common)."""
    if filename in _TOOL_FILES:
        return f"loaded by its name (`{filename}`: {_TOOL_FILES[filename]})"
    if filename == "tasks.py" and any(ref.module.split(".")[0] == "invoke" for ref in module.summary.imports):
        return "loaded by its name (`tasks.py` importing invoke: invoke's task file)"
    return ""


def _names_pytest_perf(program: Program) -> bool:
    """The project depends on pytest-perf (a dependency list or an optional one in its
    pyproject, or its tox.ini), which runs the root's ``exercises.py``."""
    pyproject = program.project.pyproject if isinstance(program.project.pyproject, dict) else {}
    if "pytest-perf" in json.dumps(pyproject.get("project", {})):
        return True
    try:
        return "pytest-perf" in (program.root / "tox.ini").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _warns_of_deprecation_at_import(module: Module) -> bool:
    """A module-level ``warn(…)`` / ``warnings.warn(…)`` whose message or category says the module
    is deprecated (read only for modules that call ``warn`` at module level)."""
    if not any(method == "warn" for _, method, _ in module.summary.module_calls):
        return False
    return any(call.method == "warn" and not call.scope and "eprecat" in " ".join(
        [arg.text for arg in call.args] + [arg.text for _, arg in call.kwargs]) for call in module.summary.calls)


def in_tree_build_backend(pyproject: Any) -> str:
    """The file of a PEP 517 build backend the project keeps in its tree (``[build-system]
    build-backend = "_build_meta"`` with ``backend-path = ["."]``: ``_build_meta.py``); '' when none."""
    system = pyproject.get("build-system") if isinstance(pyproject, dict) else None
    if not isinstance(system, dict) or not isinstance(system.get("build-backend"), str):
        return ""
    paths = system.get("backend-path")
    if not isinstance(paths, list) or not paths:
        return ""
    module = system["build-backend"].split(":")[0].strip().replace(".", "/")
    folder = str(paths[0]).strip().strip("/").removeprefix("./")
    return f"{folder}/{module}.py" if folder not in ("", ".") else f"{module}.py"


# A module named in a tool's setting: dotted, a leading `.` for the configuration's own directory
# (Fixit's `enable = [".examples.noop"]`), `:attribute` or one `.Attribute` after it.
_SETTING_MODULE = re.compile(r"\.?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?")


# The settings that name modules a tool imports (mypy's and coverage's `plugins`, pylint's
# `load-plugins`), and the tools whose every module-shaped setting is one (Fixit's rules). Others
# name modules without importing them (import-linter's layers, isort's `known-first-party`).
_IMPORTING_SETTINGS = frozenset({"plugins", "load-plugins", "load_plugins", "extensions", "hooks"})
_IMPORTING_TOOLS = frozenset({"fixit"})


def _pyproject_tool_entries(program: Program) -> dict[str, str]:
    """The project modules a ``[tool.<name>]`` table of the root ``pyproject.toml`` names by a
    dotted string in a setting that makes the tool import it (``_IMPORTING_SETTINGS``: mypy's
    ``plugins``; any setting of Fixit's, whose ``enable`` lists rule modules). A string names the
    module it spells, or the module before its last part (a class or function in it)."""
    tool = program.project.pyproject.get("tool") if isinstance(program.project.pyproject, dict) else None
    if not isinstance(tool, dict):
        return {}
    found: dict[str, str] = {}
    pending: list[tuple[str, Any]] = [(key, value) for key, value in tool.items() if key != "foxaudit"]
    while pending:
        where, value = pending.pop()
        if isinstance(value, dict):
            pending.extend((f"{where}.{key}", item) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend((where, item) for item in value)
        elif isinstance(value, str) and _SETTING_MODULE.fullmatch(value.strip()) and (
                where.rpartition(".")[2] in _IMPORTING_SETTINGS or where.split(".")[0] in _IMPORTING_TOOLS):
            dotted = value.strip().lstrip(".").partition(":")[0]
            for candidate in (dotted, dotted.rpartition(".")[0]):
                if candidate in program.modules:
                    found.setdefault(candidate, f"named in `pyproject.toml` [tool.{where}] (the tool imports it)")
                    break
    return found


def hatch_build_hooks(pyproject: Any) -> frozenset[str]:
    """The files hatchling loads as custom build or metadata hooks: each ``hooks.custom`` table
    under ``[tool.hatch]`` (``[tool.hatch.build.hooks.custom]``, per target, ``[tool.hatch.metadata.
    hooks.custom]``), at its ``path`` or hatchling's default ``hatch_build.py``."""
    tool = pyproject.get("tool") if isinstance(pyproject, dict) else None
    hatch = tool.get("hatch") if isinstance(tool, dict) else None
    found: set[str] = set()
    pending: list[Any] = [hatch]
    while pending:
        table = pending.pop()
        if not isinstance(table, dict):
            continue
        hooks = table.get("hooks")
        custom = hooks.get("custom") if isinstance(hooks, dict) else None
        if isinstance(custom, dict):
            path = custom.get("path", "hatch_build.py")
            if isinstance(path, str) and path.strip():
                found.add(path.strip().removeprefix("./"))
        pending.extend(value for key, value in table.items() if key != "hooks")
    return frozenset(found)


# The prefixes of the functions and methods asv runs (airspeed velocity's benchmark kinds), and the
# directories its benchmarks live in (`benchmark_dir`: asv's default, pandas' `asv_bench`).
_ASV_PREFIXES = ("time_", "timeraw_", "mem_", "peakmem_", "track_")
_ASV_DIRECTORIES = frozenset({"benchmarks", "benchmark", "asv_bench"})


# sphinx-gallery's `examples_dirs` in a Sphinx configuration's `sphinx_gallery_conf` dict (a string
# or a list of strings): the directories whose scripts it runs to render the gallery.
_GALLERY_DIRS = re.compile(r"""["']examples_dirs["']\s*:\s*(\[[^\]]*\]|["'][^"']*["'])""")


def _gallery_roots(program: Program) -> tuple[str, ...]:
    """The example directories (``path/``) that a documentation configuration's
    ``sphinx_gallery_conf["examples_dirs"]`` names, relative to the configuration's directory."""
    roots: set[str] = set()
    for name, module in program.modules.items():
        if not _documentation_configuration(program, name, module):
            continue
        directory = module.path.rpartition("/")[0]
        conf = module.summary.constants.get("sphinx_gallery_conf")
        found = _GALLERY_DIRS.search(conf.text) if conf is not None else None
        for listed in re.findall(r"""["']([^"']+)["']""", found.group(1)) if found else ():
            normalised = posixpath.normpath(posixpath.join(directory, listed))
            if not normalised.startswith(".."):
                roots.add(("" if normalised == "." else normalised + "/"))
    return tuple(sorted(root for root in roots if root))


def _asv_benchmark_roots(program: Program) -> tuple[str, ...]:
    """The benchmark directories of asv (``benchmarks/``, ``asv_bench/benchmarks/``: the deepest
    `benchmarks`/`benchmark`/`asv_bench` part of a path, with its slash) where a module defines a
    function or method asv runs: asv imports every module there (one that only inherits its
    `time_*` methods from a common base, and the helpers, too)."""
    roots: set[str] = set()
    for module in program.modules.values():
        parts = module.path.split("/")
        cut = max((index for index, part in enumerate(parts[:-1]) if part in _ASV_DIRECTORIES), default=-1)
        if cut < 0:
            continue
        summary = module.summary
        if any(name.startswith(_ASV_PREFIXES) for name in (*summary.function_names, *summary.method_names)):
            roots.add("/".join(parts[: cut + 1]) + "/")
    return tuple(sorted(roots))


def _under_test_directory(path: str, testpaths: tuple[str, ...]) -> bool:
    """Whether ``path`` lies under a ``tests``/``test`` directory at any depth or under one of
    pytest's ``testpaths`` (``pytest_testpaths``): where an unconfigured repository keeps tests."""
    return any(part in ("tests", "test") for part in path.split("/")[:-1]) or path.startswith(testpaths)


# Where Sphinx's sources live: a `conf.py` outside any package under one of them is its
# configuration. (Read from the module's path alone, which the whole-program cache key covers: the
# files beside it, `index.rst`, are not discovered.)
_DOC_DIRECTORIES = re.compile(r"docs?(?:[_-]\w+)?|docsrc|documentation")
# The configuration files documentation builders run by path: Sphinx's, Hugging Face doc-builder's.
_DOC_CONFIGS = frozenset({"conf.py", "_config.py"})


def _documentation_configuration(program: Program, name: str, module: Module) -> bool:
    """A documentation builder's configuration: a `conf.py` / `_config.py` outside any package under
    a `doc`/`docs`/`documentation` directory, or one named like them (`docs_nnx`, `doc-src`):
    what sphinx-build and doc-builder run by path."""
    parts = module.path.split("/")
    return (parts[-1] in _DOC_CONFIGS and name.rpartition(".")[0] not in program.modules
            and any(_DOC_DIRECTORIES.fullmatch(part) for part in parts[:-1]))


def _listed_packages(program: Program) -> set[str]:
    """The top-level project packages and modules ``pyproject.toml`` says the distribution ships
    (``configrefs.shipped_names``: setuptools' literal ``packages`` — ``["qlib", "qlib.data"]``
    gives ``qlib`` —, flit's module, poetry's and hatch's package lists; not the modules of its
    scripts, which are entry points of their own and reach what they import); none where it
    names none."""
    pyproject = program.project.pyproject if isinstance(program.project.pyproject, dict) else {}
    listed = {top for top in (name.split(".")[0] for name in shipped_names(pyproject, scripts=False)) if top in program.modules}
    return (listed or _namespace_included_packages(program, pyproject) or _found_packages(program, pyproject)
            or _setup_py_packages(program))


# setuptools' (or distutils') `setup(...)`, as a setup.py calls it at module level.
_SETUP_CALLS = frozenset({"setup", "setuptools.setup"})


def _calls_setup(module: Module) -> bool:
    return any(func in _SETUP_CALLS for func, _, _ in module.summary.module_calls)


def _setup_py_packages(program: Program) -> set[str]:
    """A root ``setup.py`` that calls ``setup(...)`` (django-oscar: ``package_dir={"": "src"},
    packages=find_packages("src")`` under the distribution name ``django-oscar``): the top-level
    regular packages of the source roots that are not tests, docs or examples ship — those under
    ``src/`` only, where there are some."""
    setup = program.modules.get("setup")
    if setup is None or setup.path != "setup.py" or not _calls_setup(setup):
        return set()
    packages = {name: module.path for name, module in program.modules.items()
                if module.is_package and "." not in name and name not in _NOT_LIBRARIES}
    # With a src layout only what is under src/ ships (oscar's `sandbox/` is a demo site beside it).
    under_src = {name for name, path in packages.items() if path.startswith("src/")}
    return under_src or set(packages)


def _setuptools_find(pyproject: dict[str, Any]) -> dict[str, Any] | None:
    """``[tool.setuptools.packages.find]``, when the pyproject has that table."""
    tool = pyproject.get("tool")
    setuptools = tool.get("setuptools") if isinstance(tool, dict) else None
    packages = setuptools.get("packages") if isinstance(setuptools, dict) else None
    find = packages.get("find") if isinstance(packages, dict) else None
    return find if isinstance(find, dict) else None


def _namespace_included_packages(program: Program, pyproject: dict[str, Any]) -> set[str]:
    """``packages.find`` ``include = ["megatron.core", "megatron.core.*"]`` where ``megatron/`` is a
    namespace directory (no ``__init__.py``, so no module): the dotted packages the patterns
    start with ship (Megatron-LM's ``megatron.core``)."""
    find = _setuptools_find(pyproject)
    include = find.get("include") if find is not None else None
    if not isinstance(include, list):
        return set()
    prefixes = {str(item).split("*", 1)[0].rstrip(".") for item in include if isinstance(item, str)}
    return {prefix for prefix in prefixes if "." in prefix and prefix in program.modules
            and prefix.split(".")[0] not in program.modules}


def _found_packages(program: Program, pyproject: dict[str, Any]) -> set[str]:
    """``[tool.setuptools.packages.find]`` with no ``include`` (zipline-reloaded: ``where =
    ["src"]``, ``exclude = ["tests*"]``): every top-level package under its ``where`` folders
    (default the project's root) that ``exclude`` does not match ships."""
    find = _setuptools_find(pyproject)
    if find is None or "include" in find:
        return set()
    where = find.get("where", ["."])
    folders = [str(item).strip("/").removeprefix("./") for item in (where if isinstance(where, list) else [where])]
    exclude = [str(item) for item in find.get("exclude", []) if isinstance(item, str)] if isinstance(find.get("exclude"), list) else []
    found: set[str] = set()
    for name, module in program.modules.items():
        if not module.is_package or "." in name or any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude):
            continue
        folder = module.path.rpartition("/")[0].rpartition("/")[0]  # the folder holding the package
        if any(folder == ("" if item in ("", ".") else item) for item in folders):
            found.add(name)
    return found


def _config_entries(program: Program, derived: bool) -> dict[str, str]:
    """The modules the project's YAML files name in ``_target_`` (``foxaudit.program.configrefs``):
    ``hydra.utils.instantiate`` imports them, so they run as an entry point's imports do. A name
    resolves as the script that loads the file would resolve it: against the file's own directory
    and its enclosing ones, nearest first, then as an absolute name (``training/configs/x.yaml``'s
    ``src.models.gpt.GPT`` is ``training/src/models/gpt.py``); the longest prefix that is a
    project module is the one imported (``src.models.gpt``; ``GPT`` is its attribute). A file
    under an ``out-of-scope`` glob names nothing; one under a test root (or, derived, a
    ``tests``/``test`` directory) reaches what it names as a test does."""
    found: dict[str, str] = {}
    settings = program.settings
    test_roots = tuple(root.strip("/") + "/" for root in settings.test_roots)
    testpaths = pytest_testpaths(program.project.pyproject)
    by_last_part: dict[str, list[str]] | None = None  # module name's last part → modules (made on first need)
    for path, targets in sorted((program.project.config_targets or {}).items()):
        if first_path_match(path, settings.out_of_scope) is not None:
            continue
        directories = path.split("/")[:-1]
        is_test = path.startswith(test_roots) or (derived and _under_test_directory(path, testpaths))
        if path.endswith("/" + NESTED_PROJECT_FILE):
            for name, why in _nested_project_entries(program, path, directories, targets).items():
                found.setdefault(name, "test root" if is_test else why)
            continue
        bases = _directory_bases(path)
        notebook = path.endswith(NOTEBOOK_SUFFIX)
        for line, dotted in targets:
            if dotted.startswith(PATH_TARGET_PREFIX):
                # A file the configuration names by its path: beside the file, else from a folder
                # above it, nearest first (mkdocs resolves an include from its docs folder:
                # FastAPI's `docs/en/docs/tutorial/body.md` writes `../../docs_src/body/x.py`), else
                # from the root.
                written = dotted.removeprefix(PATH_TARGET_PREFIX)
                why = f"included by the documentation `{path}:{line}`" if path.endswith(DOCUMENTATION_SUFFIXES) \
                    else f"named by its path in `{path}:{line}` (a tool runs or loads it)"
                for depth in range(len(directories), -1, -1):
                    candidate = posixpath.normpath(posixpath.join(*directories[:depth], written))
                    named = _module_name_at(program, candidate) if not candidate.startswith("..") else None
                    if named is not None:
                        found.setdefault(named, "test root" if is_test else why)
                        break
                continue
            name = _named_module(program, dotted, bases)
            if name is None and notebook and bases[0]:
                # A tutorial that fetches its helper beside itself (`!wget …/utils/plot_image_grid.py`
                # then `from plot_image_grid import image_grid`): the one module of that name below
                # the notebook's folder.
                if by_last_part is None:
                    by_last_part = {}
                    for module in program.modules:
                        by_last_part.setdefault(module.rpartition(".")[2], []).append(module)
                below = [module for module in by_last_part.get(dotted.rpartition(".")[2], ())
                         if module.startswith(bases[0] + ".") and module.endswith("." + dotted)]
                name = below[0] if len(below) == 1 else None
            if name is not None:
                named = f"imported by the notebook `{path}:{line}`" if notebook \
                    else f"named by `_target_` in `{path}:{line}`"
                found.setdefault(name, "test root" if is_test else named)
    return found


# What Django imports of an installed app by convention: its AppConfig and models when it starts,
# `admin` (autodiscovery), `urls` (an `include`), every migration (`migrate`), management command
# (`manage.py <name>`) and template tag library (`{% load %}`); `signals`/`tasks` by the app's
# `ready()` and Celery's autodiscovery; `tests` by the test runner.
_DJANGO_APP_MODULES = ("apps", "models", "admin", "urls", "signals", "tasks", "tests")
_DJANGO_APP_PACKAGES = ("migrations", "management", "templatetags", "tests")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _django_entries(program: Program) -> dict[str, str]:
    """A module that assigns ``INSTALLED_APPS`` is a Django settings module: Django imports it by
    the name ``DJANGO_SETTINGS_MODULE`` holds, then every project module its upper-case settings
    name as strings (``ROOT_URLCONF = "proj.urls"``, ``WSGI_APPLICATION``, ``MIDDLEWARE``, the
    apps), and the conventional modules of each installed app. A name resolves as an
    ``_target_``'s does (``_config_entries``): against the settings' directory and the ones above
    it, nearest first (``manage.py`` beside the settings package puts that folder on ``sys.path``)."""
    found: dict[str, str] = {}
    settings_modules = {name for name, module in program.modules.items()
                        if (apps := module.summary.constants.get("INSTALLED_APPS")) is not None and apps.kind in ("list", "concat")}
    for name, module in sorted(program.modules.items()):
        application = module.summary.constants.get("application")
        if application is not None and application.kind == "call" and application.dotted.rpartition(".")[2] in (
                "get_wsgi_application", "get_asgi_application"):
            found.setdefault(name, "a Django WSGI/ASGI application module (named by the server's configuration)")
        if any(ref.names == (("*", "*"),) and _named_module(program, ref.module, _directory_bases(module.path)) in settings_modules
               for ref in module.summary.imports if ref.module):
            found.setdefault(name, "a Django settings variant (it star-imports a settings module; chosen by `--settings`)")
    for name, module in sorted(program.modules.items()):
        if name not in settings_modules:
            continue
        found.setdefault(name, "a Django settings module (it assigns `INSTALLED_APPS`)")
        why = f"named in the Django settings `{module.path}`"
        bases = _directory_bases(module.path)
        for setting, value in sorted(module.summary.constants.items()):
            if not setting.isupper():
                continue
            for text in _string_literals_in(value):
                target = _named_module(program, text, bases) if _DOTTED_NAME.fullmatch(text) else None
                if target is None:
                    continue
                found.setdefault(target, why)
                if setting != "INSTALLED_APPS":
                    continue
                app = target if program.modules[target].is_package else target.rpartition(".")[0]
                for member in (f"{app}.{part}" for part in _DJANGO_APP_MODULES):
                    if member in program.modules:
                        found.setdefault(member, f"a conventional module of the Django app `{app}`")
                packages = [f"{app}.{package}" for package in _DJANGO_APP_PACKAGES]
                for member in program.modules:
                    if any(member == package or member.startswith(package + ".") for package in packages):
                        found.setdefault(member, f"a conventional module of the Django app `{app}`")
    return found


def _strings_held(module: Module) -> set[str]:
    """The identifier-shaped string literals a module passes to calls (positional or keyword, in
    a list literal too: `params=[pytest.param("tutorial001_py310")]`) or binds as constants."""
    summary = module.summary
    held: set[str] = set()
    for call in summary.calls:
        for arg in (*call.args, *(value for _, value in call.kwargs)):
            held.update(_string_literals_in(arg))
    for value in summary.constants.values():
        held.update(_string_literals_in(value))
    return {text for text in held if text.isidentifier()}


def _string_literals_in(value: Arg) -> list[str]:
    """Every string literal of a constant, whatever else it holds: itself, a list's items, a `+`
    chain's operands (``INSTALLED_APPS = DJANGO_APPS + ["shop"]``)."""
    if value.kind == "str":
        return [str(value.value)]
    if value.kind in ("list", "concat") and isinstance(value.value, tuple):
        return [text for item in value.value for text in _string_literals_in(item)]
    return []


def _nested_setup_entries(program: Program) -> dict[str, str]:
    """A ``setup.py`` below the root that calls ``setup(...)`` at module level declares a project
    of its own (torchsparse's ``examples/openpcdet/setup.py``, installed with ``pip install -e``
    and imported by the framework it plugs into): the packages beside it (and in its ``src/``),
    what ``find_packages()`` finds there, ship as that project's API, as a nested
    ``pyproject.toml``'s do, and the modules its ``py_modules`` lists."""
    found: dict[str, str] = {}
    for name, module in sorted(program.modules.items()):
        if not module.path.endswith("/setup.py") or "." not in name:
            continue
        if not _calls_setup(module):
            continue
        found.setdefault(name, "the setup.py of a project nested in the tree (run by pip or by path)")
        directories = module.path.split("/")[:-1]
        base = ".".join(directories)
        packages: set[str] = set()
        for member, found_module in program.modules.items():
            for prefix in (base + ".", base + ".src."):
                if found_module.is_package and member.startswith(prefix) and "." not in member[len(prefix):]:
                    packages.add(member[len(prefix):])
        packages.discard("src")
        # `py_modules=["foo"]`: single modules it ships (pre-commit's test hook repositories).
        for call in module.summary.calls:
            listed = call.kwarg("py_modules") if call.func in _SETUP_CALLS and not call.scope else None
            if listed is not None and listed.kind == "list":
                packages.update(str(item.value) for item in listed.value if item.kind == "str")  # type: ignore[union-attr]
        targets = tuple((1, package) for package in sorted(packages))
        found.update({key: value for key, value in _nested_project_entries(program, module.path, directories, targets).items()
                      if key not in found})
    return found


def _nested_project_entries(
    program: Program, path: str, directories: list[str], targets: tuple[tuple[int, str], ...]
) -> dict[str, str]:
    """The public modules of the packages a nested ``pyproject.toml`` ships, found beside it or
    in its ``src/`` (``examples/celery/src/task_app``): its API, run by whoever installs it."""
    if not all(part.isidentifier() for part in directories):
        return {}
    found: dict[str, str] = {}
    base = ".".join(directories)
    for _line, dotted in targets:
        for root in (base, f"{base}.src"):
            package = f"{root}.{dotted}"
            if package not in program.modules:
                continue
            for name in program.modules:
                if name == package or (name.startswith(package + ".") and not any(
                        part.startswith("_") and part != "__init__" for part in name[len(package) + 1:].split("."))):
                    found.setdefault(name, f"public module of the project in `{path}`")
            break
    return found


def _directory_bases(path: str) -> list[str]:
    """The dotted folders a name written in the file at ``path`` resolves against: its own folder
    and the ones above it, nearest first, then '' (the root, an absolute name)."""
    directories = path.split("/")[:-1]
    return [".".join(directories[:cut]) for cut in range(len(directories), 0, -1)
            if all(part.isidentifier() for part in directories[:cut])] + [""]


def _named_module(program: Program, dotted: str, bases: list[str]) -> str | None:
    """The project module ``dotted`` names under the first of ``bases`` (dotted directories, ''
    last) where its first part is one: the longest prefix that is a module."""
    for base in bases:
        parts = [*base.split("."), *dotted.split(".")] if base else dotted.split(".")
        floor = len(base.split(".")) if base else 0
        for cut in range(len(parts), floor, -1):
            candidate = ".".join(parts[:cut])
            if candidate in program.modules:
                return candidate
    return None


# Module-level calls that read the command line: the module is a script.
_COMMAND_LINE = frozenset({"ArgumentParser", "parse_args", "parse_known_args", "tyro.cli", "fire.Fire", "typer.run", "HfArgumentParser"})


_NOT_LIBRARIES = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "scripts", "tools"})


def _import_targets(program: Program, module: str, names: tuple[tuple[str, str], ...], known: set[str] | None = None) -> set[str]:
    known = program.modules.keys() if known is None else known  # type: ignore[assignment]
    targets = set()
    parts = module.split(".")
    for cut in range(1, len(parts) + 1):
        prefix = ".".join(parts[:cut])
        if prefix in known:
            targets.add(prefix)
    for imported, _alias in names:
        if imported == "*":
            continue
        candidate = f"{module}.{imported}"
        if candidate in known:
            targets.add(candidate)
    return targets


def _installed_name_targets(program: Program, target: str, names: tuple[tuple[str, str], ...], known: set[str]) -> set[str]:
    """An absolute import under a namespace directory of the project that names no module there,
    resolved as the build installs the tree (faiss's CMake copies ``contrib/`` to ``faiss.contrib``
    and ``faiss/python/`` to ``faiss``): ``faiss.contrib.datasets`` is ``contrib.datasets`` when
    that is a module, else the one module ``faiss.<X>.<rest>`` (``faiss.loader`` is
    ``faiss.python.loader``) when exactly one exists."""
    head, _, rest = target.partition(".")
    memo = program.project.memo.setdefault("FX201:namespace-heads", {})
    heads = memo.get(id(known))
    if heads is None:
        heads = memo[id(known)] = _namespace_heads(known)
    if head not in heads:
        return set()
    found: set[str] = set()
    directly_below = [name for name in heads[head].get("", ()) if name in program.modules and program.modules[name].is_package]
    if not rest and len(directly_below) == 1:
        found.update(directly_below)  # `import faiss`: the one package directly below runs (faiss/python)
    for dotted in (rest, *(f"{rest}.{imported}" if rest else imported for imported, _ in names if imported != "*")):
        if not dotted:
            continue
        if dotted in known:
            found.add(dotted)
            continue
        nested = heads[head].get(dotted, ())
        if len(nested) == 1:
            found.update(nested)
    return found


def _namespace_heads(known: set[str]) -> dict[str, dict[str, list[str]]]:
    """Each top-level name that holds project modules but is no module itself (a directory with
    no ``__init__.py``) → each module below it by its name less the head and one more part
    (``faiss.python.loader`` → ``loader``; the modules directly below it under ``""``)."""
    heads: dict[str, dict[str, list[str]]] = {}
    for name in known:
        head, _, rest = name.partition(".")
        if rest and head not in known:
            below = heads.setdefault(head, {})
            inner = rest.partition(".")[2]
            below.setdefault(inner, []).append(name)
    return heads


def _path_relative_targets(
    program: Program, importer: str, module: Module, target: str, names: tuple[tuple[str, str], ...], known: set[str],
    extra_roots: tuple[str, ...],
) -> set[str]:
    """An absolute import the source roots cannot resolve, resolved the way a script runs it:
    ``python dev/data/fineweb.py`` puts ``dev/data`` on ``sys.path``, so its ``from data_common
    import x`` is ``dev/data/data_common.py``; modules it imports resolve their own absolute
    imports against that directory too, hence the nearest enclosing directory that has the
    module wins, and a directory's ``src/`` after it (an example project with a src layout).
    ``sys.path.append(os.path.join(here, "install"))`` adds ``install``."""
    package = importer if module.is_package else importer.rpartition(".")[0]
    parts = package.split(".") if package else []
    # Each enclosing directory, then its `src/` (a project nested in the tree with a src layout,
    # `examples/celery/src/task_app`, installed for the script beside it).
    bases = [
        candidate for cut in range(len(parts), 0, -1)
        for candidate in (".".join(parts[:cut]), ".".join([*parts[:cut], "src"]))
    ]
    bases = [*extra_roots, *bases]
    for base in bases:
        found = _import_targets(program, f"{base}.{target}", names, known)
        if any(name == f"{base}.{target}" or name.startswith(f"{base}.{target}.") for name in found):
            return {name for name in found if name != base and not base.startswith(name + ".")}
    return set()


def import_graph_reads_body(summary: ModuleSummary) -> bool:
    """Whether the import graph reads this module's summary body, as its index tells: a module
    that may extend ``sys.path`` (``_sys_path_additions``), import by a computed name
    (``_dynamic_imports``) or load a file by its path (``_loaded_by_path``). The per-file pass
    makes these bodies with the index."""
    return _may_extend_sys_path(summary) or not (
        DYNAMIC_IMPORT_METHODS | FILE_EXEC_METHODS | PATH_LOAD_METHODS).isdisjoint(summary.call_methods)


# Calls that load one Python file by its path: importlib's loaders and runpy.
PATH_LOAD_METHODS = frozenset({"SourceFileLoader", "spec_from_file_location", "run_path", "DEFINE_config_file"})
# A Python file name written as a string literal: `"tox_conf.py"`, `'ext/build.py'`.
_PY_FILE_LITERAL = re.compile(r"""["']([\w./-]*\w\.py)["']""")


def _extension_names(module: Module) -> list[str]:
    """The dotted names a documentation configuration's module-level ``extensions = [...]`` lists."""
    listed = module.summary.constants.get("extensions")
    if listed is None or listed.kind != "list" or not isinstance(listed.value, tuple):
        return []
    return [str(item.value) for item in listed.value
            if item.kind == "str" and all(part.isidentifier() for part in str(item.value).split("."))]


def _loaded_by_path(name: str, module: Module, known: set[str]) -> set[str]:
    """Project modules ``module`` loads by a literal file path: ``SourceFileLoader("ext", str(here /
    "ext.py")).load_module()``, ``spec_from_file_location("ext", os.path.join(d, "ext.py"))``,
    ``runpy.run_path("tools/gen.py")``, ml_collections' ``config_flags.DEFINE_config_file("config",
    "configs/default.py")`` (the flag's default file, loaded when the flag is not given), ``exec``
    of what its scope opens (``with open("pkg/__version__.py") as f: exec(f.read(), v)``). The path is read from the call's arguments (and the calls
    nested in them) as a string literal naming a ``.py`` file; it is resolved against the loading
    module's package (its directory), then the project root. A path built from variables alone
    names nothing."""
    methods = module.summary.call_methods
    if PATH_LOAD_METHODS.isdisjoint(methods) and "exec" not in methods:
        return set()
    package = name if module.is_package else name.rpartition(".")[0]
    directory = package.split(".") if package else []
    found: set[str] = set()
    calls = module.summary.calls
    for call in calls:
        if call.method == "exec" and call.func in ("exec", "builtins.exec"):
            # `with open("pkg/__version__.py") as f: exec(f.read(), VERSION)` (a setup.py): the file
            # its scope opens by a literal path is what it runs.
            texts = [arg.text for opener in calls if opener.scope == call.scope and opener.func in _OPENS
                     for arg in opener.args[:1]]
        elif call.method not in PATH_LOAD_METHODS:
            continue
        else:
            texts = [arg.text for arg in call.args] + [arg.text for _, arg in call.kwargs]
        for inner in calls:
            if inner is not call and call.span.line <= inner.span.line <= call.span.end_line:
                texts.extend(arg.text for arg in inner.args)
        for text in texts:
            for literal in _PY_FILE_LITERAL.findall(text):
                parts = [part for part in literal.removesuffix(".py").replace("\\", "/").split("/") if part not in ("", ".")]
                if not parts or not all(part.isidentifier() for part in parts):
                    continue
                for base in (directory, []):
                    candidate = ".".join([*base, *parts])
                    if candidate in known:
                        found.add(candidate)
                        break
    return found


# pkgutil's walks over a package's folder: `walk_packages` goes down every level, `iter_modules` one.
_PACKAGE_WALKS = frozenset({"walk_packages", "iter_modules"})
# What imports each name such a walk yields.
_IMPORTS_BY_NAME = frozenset({"import_module", "__import__", "load_module", "exec_module"})
# The folder of the walking module itself: `[os.path.dirname(__file__)]`, `[Path(__file__).parent]`.
_OWN_FOLDER = re.compile(r"^\[\s*(?:str\()?\s*(?:os\.path\.dirname\(\s*(?:os\.path\.\w+\()?__file__\)?\s*\)"
                         r"|(?:pathlib\.)?Path\(\s*__file__\s*\)(?:\.resolve\(\))?\.parent)\s*\)?\s*\]$")


def _walked_packages(name: str, module: Module, known: set[str]) -> set[str]:
    """The submodules of a project package that ``module`` imports by walking its folder — the
    plugin idiom ``for _, mod, _ in pkgutil.walk_packages(plugins.__path__, prefix):
    import_module(mod)`` (pyupgrade's ``_plugins``; ``iter_modules`` for one level): every module
    below the package runs. The package is read from the walk's first argument: ``X.__path__``
    (X a module this one imports, or a dotted project name; else the packages the module imports
    by a literal ``import_module("pkg")`` name), ``__path__`` (its own package), the folder of
    ``__file__``, or a name bound in the same scope to one of those. Only where the
    module also imports by name, so a walk that lists plugins without importing them is none."""
    methods = module.summary.call_methods
    if _PACKAGE_WALKS.isdisjoint(methods) or _IMPORTS_BY_NAME.isdisjoint(methods):
        return set()
    own_package = name if module.is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for call in module.summary.calls:
        if call.method not in _PACKAGE_WALKS:
            continue
        text = _walked_path(module, call)
        if text is None:
            continue
        if text == "__path__" or _OWN_FOLDER.match(text):
            packages = [own_package]
        elif text.endswith(".__path__"):
            # A name this module imports, else — a loop variable, a parameter (hydra's `for mdl in
            # modules: walk_packages(mdl.__path__)`) — the packages it imports by a literal name.
            packages = [_imported_module_named(module, text.removesuffix(".__path__"), known)]
            if not packages[0]:
                packages = [ref.module for ref in module.summary.imports if ref.dynamic and ref.module in known]
        else:
            continue
        for package in packages:
            if not package or package not in known:
                continue
            depth = package.count(".") + 1
            found.update(candidate for candidate in known if candidate.startswith(package + ".")
                         and (call.method == "walk_packages" or candidate.count(".") == depth))
    return found


def _globbed_all(name: str, module: Module, known: set[str]) -> set[str]:
    """The modules of a package whose ``__init__`` lists its own folder's files as ``__all__``
    (torch_geometric's graphgym `contrib/act/__init__.py`: ``modules = glob.glob(join(dirname(
    __file__), "*.py"))`` then ``__all__ = [basename(f)[:-3] for f in modules …]``), or names
    some of them in a literal ``__all__``: a star import of the package — what such an
    ``__init__`` is written for — imports each module ``__all__`` names. (Read from the module's
    constants, an index field: no body is decoded.)"""
    if not module.is_package:
        return set()
    constants = module.summary.constants
    value = constants.get("__all__")
    if value is None:
        return set()
    if value.kind == "list" and isinstance(value.value, tuple):
        # `__all__ = ["core", "_helpers"]`: a star import of the package imports the submodules it names.
        return {f"{name}.{item.value}" for item in value.value
                if item.kind == "str" and f"{name}.{item.value}" in known}
    globbed = [target for target, bound in constants.items() if bound.kind == "call"
               and bound.dotted.rpartition(".")[2] in ("glob", "iglob") and "__file__" in bound.text]
    if not (("glob" in value.text and "__file__" in value.text)
            or any(re.search(rf"\b{re.escape(target)}\b", value.text) for target in globbed)):
        return set()
    depth = name.count(".") + 1
    return {candidate for candidate in known if candidate.startswith(name + ".") and candidate.count(".") == depth}


def _walked_path(module: Module, call: Call) -> str | None:
    """The text of what a package walk walks (``walk_packages(path=…)``'s first argument), a name
    bound in the call's scope read as what it was bound to, and a one-folder list of a package's
    first folder read as the package's path (sktime's ``[package.__path__[0]]``, also through
    ``package_path = package.__path__[0]``): ``mdl.__path__``, ``__path__``, ``[…(__file__)…]``."""
    path = call.args[0] if call.args else call.kwarg("path")  # `walk_packages(path=mdl.__path__)`
    if path is None:
        return None
    text = _bound_text(module, call, path.text.strip()) if path.kind == "name" else path.text.strip()
    if text.startswith("[") and text.endswith("]") and "," not in text:
        inner = text[1:-1].strip()
        inner = _bound_text(module, call, inner) if inner.isidentifier() else inner
        if inner.endswith(".__path__[0]"):
            return inner.removesuffix("[0]")
    return text


def _bound_text(module: Module, call: Call, name: str) -> str:
    """The text of what ``name`` was last bound to before ``call`` in its scope; ``name`` when not."""
    bound = [a for a in module.summary.assignments if a.target == name and a.scope == call.scope
             and (a.span.line, a.span.column) < (call.span.line, call.span.column)]
    last = max(bound, key=lambda a: (a.span.line, a.span.column), default=None)
    return last.value.text.strip() if last is not None else name


def _walks_under_a_parameter(program: Program, reached: set[str]) -> dict[str, set[str]]:
    """module → the project modules its package walks import, where the walked package is
    imported by a name the walking function receives (sktime's ``def _all_classes(module_name):
    package = importlib.import_module(module_name)`` … ``walk_packages(package.__path__, …)``):
    the package each reached caller names by a literal (``_all_classes("sktime.datatypes")``),
    every module below it (``iter_modules``: one level)."""
    known = set(program.modules)
    found: dict[str, set[str]] = {}
    for module, call in program.iter_calls_named(_PACKAGE_WALKS):
        if _IMPORTS_BY_NAME.isdisjoint(module.summary.call_methods) or not call.scope:
            continue
        text = _walked_path(module, call)
        if text is None or not text.endswith(".__path__"):
            continue
        local = text.removesuffix(".__path__")
        binding = [a for a in module.summary.assignments if a.target == local and a.scope == call.scope and a.call is not None
                   and a.call.method in ("import_module", "__import__") and a.call.args]
        function = program.function_at(module, call.scope)
        if len(binding) != 1 or function is None or binding[0].call.args[0].text not in function.params:  # type: ignore[union-attr]
            continue
        parameter = binding[0].call.args[0].text  # type: ignore[union-attr]
        for package in _strings_passed_for(program, module, function, parameter, reached):
            if package not in known:
                continue
            depth = package.count(".") + 1
            found.setdefault(module.name, set()).update(
                candidate for candidate in known if candidate.startswith(package + ".")
                and (call.method == "walk_packages" or candidate.count(".") == depth))
    return found


def _strings_passed_for(program: Program, module: Module, function: Function, parameter: str, reached: set[str],
                        depth: int = 3) -> set[str]:
    """The string literals reached callers pass for ``function``'s ``parameter``, positionally,
    also through the callers' own parameters, ``depth`` calls up (sktime's ``_all_classes(name)``
    hands its name on to ``_all_cond(name, cond)``, which walks it)."""
    if parameter not in function.params:
        return set()
    position = [name for name in function.params if name not in ("self", "cls")].index(parameter)
    key = function_key(module.name, function.qualname)
    found: set[str] = set()
    for caller, site in program.iter_calls_named({function.name}):
        if caller.name not in reached or len(site.args) <= position or key not in program.resolve_call(caller, site).targets:
            continue
        argument = site.args[position]
        if argument.kind == "str":
            found.add(str(argument.value))
        elif argument.kind == "name" and depth > 1 and site.scope:
            outer = program.function_at(caller, site.scope)
            if outer is not None and outer is not function:
                found |= _strings_passed_for(program, caller, outer, argument.text, reached, depth - 1)
    return found


def _imported_module_named(module: Module, local: str, known: set[str]) -> str:
    """The project module the local name ``local`` refers to through ``module``'s own imports
    (``from tool import _plugins`` → ``tool._plugins``; ``import tool._plugins as p`` → for ``p``),
    or ``local`` itself when it is a dotted project module name; '' when neither."""
    head, _, rest = local.partition(".")
    for ref in module.summary.imports:
        if not ref.module:
            continue
        if ref.names:
            for imported, alias in ref.names:
                if alias == head or (not alias and imported == head):
                    candidate = ".".join(part for part in (ref.module, imported, rest) if part)
                    if candidate in known:
                        return candidate
        elif (ref.alias or ref.module.split(".")[0]) == head:
            candidate = ".".join(part for part in ((ref.module if ref.alias else head), rest) if part)
            if candidate in known:
                return candidate
    return local if local in known else ""


def _may_extend_sys_path(summary: ModuleSummary) -> bool:
    return "sys" in summary.call_heads and not {"append", "insert"}.isdisjoint(summary.call_methods)


# A path segment joined with pathlib's `/`: `… / "_ext"`, `… / 'a' / "b"`.
_PATH_DIVISION = re.compile(r"""/\s*[rRuU]?(["'])([\w.-]+)\1""")


def _sys_path_additions(name: str, module: Module) -> tuple[str, ...]:
    """Dotted directories (from the project root) that the module appends to ``sys.path`` with a
    literal relative to its own directory (``sys.path.insert(0, "scripts")``,
    ``sys.path.append(os.path.join(d, "install"))``, ``sys.path.append(os.path.abspath("ext"))``,
    ``sys.path.append(str(Path(__file__).parent / "_ext"))``, ``….joinpath("_ext")``); ``..``
    climbs (IPython's ``docs/source/conf.py``: ``os.path.abspath("../sphinxext")``), and a
    module-level alias of a joining function counts as it (``pjoin = os.path.join``)."""
    if not _may_extend_sys_path(module.summary):
        return ()
    directory = name.split(".") if module.is_package else name.split(".")[:-1]
    joins = {"join", "joinpath", "abspath", "realpath"} | {
        assignment.target for assignment in module.summary.assignments
        if not assignment.scope and assignment.value.text.strip() in _PATH_FUNCTIONS
    }
    found: list[str] = []
    calls = module.summary.calls
    for call in calls:
        if call.func not in ("sys.path.append", "sys.path.insert"):
            continue
        literals = [str(a.value) for a in call.args if a.kind == "str"]
        for argument in call.args:
            if argument.kind in ("call", "other") and "/" in argument.text:
                # pathlib: `str(Path(__file__).parent / "_ext")` (scrapy's and sphinx's docs/conf.py)
                literals.append("/".join(match.group(2) for match in _PATH_DIVISION.finditer(argument.text)))
        for inner in calls:
            if inner is not call and (inner.method in joins or inner.func in joins) \
                    and call.span.line <= inner.span.line <= call.span.end_line:
                literals.extend(str(a.value) for a in inner.args if a.kind == "str")
        for literal in literals:
            parts = list(directory)
            for part in literal.replace("\\", "/").split("/"):
                if part == "..":
                    if not parts:
                        break
                    parts.pop()
                elif part not in ("", "."):
                    parts.append(part)
            else:
                dotted = ".".join(parts)
                if dotted and dotted != ".".join(directory) and all(part.isidentifier() for part in parts):
                    found.append(dotted)
    return tuple(found)


# What a module may bind a short name to before joining a path with it (`pjoin = os.path.join`).
_PATH_FUNCTIONS = frozenset({"os.path.join", "path.join", "os.path.abspath", "os.path.realpath", "osp.join"})


def _cython_imports(program: Program) -> dict[str, list[tuple[str, tuple[tuple[str, str], ...]]]]:
    """Run-time imports of the Cython modules (``.pyx``) in the project's package directories:
    dotted name → [(module, names)]. ``cimport`` is compile time and does not count."""
    found: dict[str, list[tuple[str, tuple[tuple[str, str], ...]]]] = {}
    for name, module in program.modules.items():
        if not module.is_package:
            continue
        for stem, text in _cython_sources(program, module.path.rpartition("/")[0]):
            imports: list[tuple[str, tuple[tuple[str, str], ...]]] = []
            for match in CYTHON_IMPORT.finditer(text):
                if match.group(1):
                    target = match.group(1)
                    if target.startswith("."):
                        level = len(target) - len(target.lstrip("."))
                        base = name.split(".")[: len(name.split(".")) - (level - 1)] if level > 1 else name.split(".")
                        target = ".".join([*base, target.lstrip(".")]).strip(".")
                    names = tuple(
                        (part.split()[0], part.split()[-1])
                        for part in re.sub(r"#[^\n]*", "", match.group(2)).strip("()").replace("\n", " ").split(",")
                        if part.strip()
                    )
                    imports.append((target, names))
                else:
                    for part in match.group(3).split(","):
                        if part.strip():
                            imports.append((part.split()[0], ()))
            found[f"{name}.{stem}"] = imports
    return found


def _cython_sources(program: Program, folder: str) -> list[tuple[str, str]]:
    """(module stem, import statements) of the ``.pyx`` files in one package directory: those the
    engine listed and read with the sources (``Project.cython_imports``, which the whole-project
    results are keyed on), else read here (a Program built without the engine)."""
    listed = program.project.cython_imports
    if listed is not None:
        prefix = f"{folder}/" if folder else ""
        return [(path[len(prefix):-len(CYTHON_SUFFIX)], text) for path, text in sorted(listed.items())
                if path.startswith(prefix) and "/" not in path[len(prefix):] and path[len(prefix):-len(CYTHON_SUFFIX)].isidentifier()]  # fmt: skip
    try:
        sources = sorted((program.root / folder).glob(f"*{CYTHON_SUFFIX}"))
    except OSError:
        return []
    found = []
    for source in sources:
        if not source.stem.isidentifier():
            continue
        try:
            found.append((source.stem, cython_import_text(source.read_bytes())))
        except OSError:
            continue
    return found


# The methods of the calls ``_dynamic_imports`` reads (a module that makes none is skipped unread).
DYNAMIC_IMPORT_METHODS = frozenset({"import_module", "__import__"})


def _dynamic_imports(program: Program, production: dict[str, str], tests: dict[str, str]) -> list[DynamicImport]:
    """Imports whose module name is built at run time under a known package, in reached modules:
    ``import_module(f"pkg.{name}")`` / ``import_module("pkg." + name)``, also through a name the
    function bound to such a string just before (``_built_name_bound_to``); relative ones,
    ``import_module(f".{name}", package=polyfills.__name__)`` and ``__import__(name, globals(),
    locals(), [], 1)`` (the package a `glob` of its directory feeds); and a helper that imports
    under its parameter, ``import_module(f"{mod.__name__}.{file}")``, at each call that names the
    package (``import_submodule(backends)``)."""
    found: list[DynamicImport] = []
    for module, call in program.iter_calls_named(DYNAMIC_IMPORT_METHODS):
        if module.name not in production and module.name not in tests:
            continue
        if call.func not in ("importlib.import_module", "import_module", "__import__") and not call.func.endswith(".import_module"):
            continue
        arg = call.args[0] if call.args else None
        if arg is not None and arg.kind == "name":
            arg = _built_name_bound_to(module, call, arg.text) or arg
        elif arg is not None:
            arg = _built_branch(arg) or arg
        prefix = None
        if arg is not None and arg.kind == "fstring":
            prefix = _fstring_head(arg.text)
            if prefix == "":
                under = _imports_under_a_parameter(program, module, call, arg, production, tests)
                found.extend(under or _imports_beside_the_caller(module, call, arg))
                continue
            if "." not in prefix:  # `f"saver_{name}"`: a bare name with a literal head, found beside the caller
                found.extend(_imports_beside_the_caller(module, call, arg))
                continue
        elif arg is not None and arg.kind == "concat" and arg.value and arg.value[0].kind == "str":  # type: ignore[index]
            prefix = str(arg.value[0].value)  # type: ignore[index]
        if prefix is not None and prefix.startswith("."):
            package = call.kwarg("package")
            base = _package_named(program, module, package) if package is not None else None
            prefix = f"{base}{prefix}" if base else None
        elif call.func == "__import__" and arg is not None and arg.kind != "str":
            level = call.kwarg("level") or (call.args[4] if len(call.args) > 4 else None)
            if level is not None and level.kind == "int" and isinstance(level.value, int) and level.value >= 1:
                base = module.name if module.is_package else module.name.rpartition(".")[0]
                for _ in range(level.value - 1):
                    base = base.rpartition(".")[0]
                prefix = f"{base}." if base else None
        # `f"._{snake(name)}"` under `textual.widgets`: the head may end inside the module's name
        # (`textual.widgets._`); the package is what comes before its last dot.
        package_of = prefix.rpartition(".")[0] if prefix else ""
        if prefix and "." in prefix and _holds_modules(program, package_of):  # a namespace directory too
            found.append(DynamicImport(Site(module.path, call.span, call.scope), arg.text if arg else "", prefix))
    return found


def _built_name_bound_to(module: Module, call: Call, name: str) -> Arg | None:
    """The f-string or ``+`` chain the name ``name`` was last bound to before ``call`` in the
    call's own scope (``module_name = f"app.plugins.{kind}"`` then ``import_module(module_name)``):
    the import's name is built the same way as when it is written in the call, or on one branch of
    a conditional expression (``_built_branch``). None when the last binding is anything else (a
    parameter, a call, a binding under an ``if``: not followed)."""
    position = (call.span.line, call.span.column)
    bound = [a for a in module.summary.assignments
             if a.target == name and a.scope == call.scope and (a.span.line, a.span.column) < position]
    last = max(bound, key=lambda a: (a.span.line, a.span.column), default=None)
    return _built_branch(last.value) if last is not None else None


def _built_branch(value: Arg) -> Arg | None:
    """``value`` when it is an f-string or a ``+`` chain; of a conditional expression
    (``"_pytest." + name if name in builtin_plugins else name``), its first branch that is one:
    that branch is the import of a package's module, the other a name taken as given. Else None."""
    if value.kind in ("fstring", "concat"):
        return value
    if value.kind == "other" and isinstance(value.value, tuple):
        return next((branch for branch in value.value if branch.kind in ("fstring", "concat")), None)
    return None


# pytest's fixtures for a temporary folder: a test that takes one runs files it wrote there.
_TEMPORARY_FIXTURES = frozenset({"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"})
# The methods of the calls ``_file_executions`` reads: ``exec(...)``, ``runpy.run_path(...)``.
FILE_EXEC_METHODS = frozenset({"exec", "run_path", "DEFINE_config_file"})
# What reads a file's text (``open(p).read()``, ``Path(p).read_text()``) and what opens one.
_READS = frozenset({"read", "read_text", "read_bytes"})
_OPENS = frozenset({"open", "io.open", "codecs.open", "Path", "pathlib.Path"})


def _file_executions(program: Program, production: dict[str, str], tests: dict[str, str]) -> list[DynamicImport]:
    """Calls in reached modules that run a file's text by a path that is not a literal:
    ``exec(open(path).read())``, ``exec(compile(open(path).read(), path, "exec"))``,
    ``exec(Path(path).read_text())``, ``exec(f.read())`` under ``with open(path) as f``, ``source
    = open(path).read(); exec(source)``, ``runpy.run_path(path)``. A literal path
    (``exec(open("configurator.py").read())``) runs one known file, not any: not counted."""
    found: list[DynamicImport] = []
    for module, call in program.iter_calls_named(FILE_EXEC_METHODS):
        if module.name not in production and module.name not in tests:
            continue
        if call.method == "DEFINE_config_file":
            # ml_collections: `--config=configs/tpu.py` names the file to run; any config may be it.
            found.append(DynamicImport(Site(module.path, call.span, call.scope), _call_text(call), "", kind="exec"))
            continue
        arg = call.args[0] if call.args else call.kwarg("path_name") or call.kwarg("source")
        if arg is None:
            continue
        if call.method == "run_path":
            if program.canonical(module, call.func) != "runpy.run_path":
                continue
            if arg.kind != "str" and not _PY_FILE_LITERAL.search(arg.text):
                # (`run_path(os.path.join(here, "pretrain_hybrid.py"))` runs a known file: `_loaded_by_path`)
                found.append(DynamicImport(Site(module.path, call.span, call.scope), _call_text(call), "", kind="exec"))
            continue
        if call.func not in ("exec", "builtins.exec") or arg.kind not in ("call", "name"):
            continue
        function = program.function_at(module, call.scope) if call.scope else None
        if function is not None and _TEMPORARY_FIXTURES.intersection(function.params):
            continue  # a test running a file it wrote under `tmp_path`: no project file
        if _runs_a_file_by_a_variable_path(module, call, arg):
            found.append(DynamicImport(Site(module.path, call.span, call.scope), _call_text(call), "", kind="exec"))
    return sorted(found, key=lambda d: (d.site.path, d.site.span))


def _directory_loaders(program: Program, production: dict[str, str], tests: dict[str, str]) -> list[DynamicImport]:
    """Calls in reached functions that import a module by a name not written there after putting a
    folder not written there on ``sys.path`` (``sys.path.insert(0, module_parent)``, then
    ``importlib.import_module(module_name)``: a plugin folder the user names)."""
    found: list[DynamicImport] = []
    for module in program.modules.values():
        summary = module.summary
        if module.name not in production and module.name not in tests or "sys" not in summary.call_heads \
                or ("import_module" not in summary.call_methods and "__import__" not in summary.call_heads):
            continue
        calls = summary.calls
        extended = {call.scope for call in calls
                    if call.func in ("sys.path.insert", "sys.path.append") and call.args
                    and call.args[-1].kind not in ("str", "fstring", "concat")}
        for call in calls:
            if call.scope in extended and (call.method == "import_module" or call.func == "__import__") \
                    and call.args and call.args[0].kind not in ("str", "fstring", "concat"):
                found.append(DynamicImport(Site(module.path, call.span, call.scope), _call_text(call), "", kind="directory"))
    return sorted(found, key=lambda d: (d.site.path, d.site.span))


def _plugs_into(package: str, edges: dict[str, set[str]], production: dict[str, str]) -> bool:
    """A module of ``package`` imports code the project's entry points reach (a plugin imports the
    framework it registers with)."""
    inside = package + "."
    return any(target in production and target != package and not target.startswith(inside)
               for name, targets in edges.items() if name == package or name.startswith(inside)
               for target in targets)


def _call_text(call: Call) -> str:
    """``exec(open(config_file).read())``: the call as written (its arguments' text)."""
    return f"{call.func}({', '.join(arg.text for arg in call.args)})"


def _runs_a_file_by_a_variable_path(module: Module, call: Call, arg: Arg) -> bool:
    """Whether ``exec``'s argument is a file's text (read inside the call, or read into the name it
    passes in the same scope) whose path is not a string literal."""
    calls = [c for c in module.summary.calls if c.scope == call.scope]

    def inside(span: Span) -> list[Call]:
        return [c for c in calls if c is not call and (span.line, span.column) <= (c.span.line, c.span.column)
                and (c.span.end_line, c.span.end_column) <= (span.end_line, span.end_column)]

    spans = [call.span]
    if arg.kind == "name" or (arg.kind == "call" and arg.dotted == "compile"):
        # exec(source) / exec(compile(source, path, "exec")): where `source = open(path).read()`.
        name = arg.text if arg.kind == "name" else next(
            (c.args[0].text for c in inside(call.span) if c.func == "compile" and c.args and c.args[0].kind == "name"), ""
        )
        spans += [c.span for c in calls if name and c.bound_to == name and c.method in _READS]
    within = [c for span in spans for c in inside(span)]
    reads = [c for c in within if c.method in _READS]
    if not reads:
        return False
    if all(c.receiver_kind == "name" and c.receiver in module.summary.constants
           and _names_one_file(module, module.summary.constants[c.receiver]) for c in reads):
        return False  # `RAW_TEXT_PATH.read_text()` with `RAW_TEXT_PATH = Path(…) / "raw_text.py"`: one known file
    openers = [c for c in within if c.func in _OPENS]
    if not openers:
        # f.read() of a `with open(path) as f`: the openers of the scope say what it opens.
        receivers = {c.receiver for c in within if c.method in _READS and c.receiver_kind == "name"}
        openers = [c for c in calls if c.func in _OPENS and c.bound_to in receivers] or [c for c in calls if c.func in _OPENS]
    return not openers or any(not opener.args or (opener.args[0].kind != "str" and not _names_one_file(module, opener.args[0]))
                              for opener in openers)


def _names_one_file(module: Module, path: Arg) -> bool:
    """The module's own file (``__file__``), or a path that ends in a literal ``.py`` name, written
    in place (``os.path.join(models, "mapper.py")``) or in the module constant it names
    (``MAPPER_PATH = os.path.join(here, "mapper.py")``): one known file, not any."""
    text = path.text.strip()
    if text in _OWN_FILE or _PY_FILE_LITERAL.search(text):
        return True
    constant = module.summary.constants.get(text) if path.kind == "name" else None
    return constant is not None and _PY_FILE_LITERAL.search(constant.text) is not None


# A path that is the running module's own file: `exec(compile(Path(__file__).read_text(), …))` runs
# the module itself (a test that re-runs its own source), no other file. (A path that ends in a
# literal file name, `open(os.path.join(models, "mapper.py"))`, is one known file too.)
_OWN_FILE = frozenset({"__file__", "os.path.abspath(__file__)", "os.path.realpath(__file__)"})


# Files beside an `__init__.py` that are no data: documentation, licences and VCS files.
_NOT_DATA = re.compile(r"^(?:README|LICEN[CS]E|COPYING|NOTICE|AUTHORS|CHANGELOG)(?:\.\w+)?$|^\.|\.(?:py|pyi|pyc|pyd|so)$",
                       re.IGNORECASE)


def _marks_a_data_folder(program: Program, name: str, module: Module) -> bool:
    """An empty (or comment-only) ``__init__.py`` of a package with no modules below it, beside
    data files (fastapi's ``docs_src/templates/static/`` with its ``styles.css``): it makes the
    folder a package so ``importlib.resources`` and ``package_data`` can ship the files, and holds
    no code to wire or to delete as dead. A package with modules below it is what they stand for."""
    summary = module.summary
    if not module.is_package or summary.module_calls or summary.has_main_guard or summary.classes \
            or summary.function_names or summary.defined_names or summary.imports:
        return False
    if any(other.startswith(name + ".") for other in program.modules):
        return False
    folder = (program.root / module.path).parent
    try:
        text = (program.root / module.path).read_text(encoding="utf-8", errors="replace")
        if any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()):
            return False  # a docstring or code: `_holds_only_a_note` reads it
        with os.scandir(folder) as entries:
            return any(entry.is_file() and not _NOT_DATA.search(entry.name) for entry in entries)
    except OSError:
        return False


def _holds_only_a_note(program: Program, name: str, module: Module) -> bool:
    """A module whose text is a note and no code: comments or a docstring and no statement (trl's
    ``examples/scripts/dpo.py``, a banner saying the script moved; unsloth's
    ``assets/configs/__init__.py``, a licence header making a folder of YAML files a package the
    wheel ships). No orphan: there is no code to wire or to delete as dead. An empty file says
    nothing and stays one, as does one whose comments are mostly code switched off, and the
    ``__init__.py`` of a package with modules below it (they are the orphans it stands for)."""
    summary = module.summary
    if summary.module_calls or summary.has_main_guard or summary.classes or summary.function_names \
            or summary.defined_names or summary.imports:
        return False
    if module.is_package and any(other.startswith(name + ".") and importable(other) for other in program.modules):
        return False  # (a script below it in a folder no import can name is none of its modules)
    try:
        text = (program.root / module.path).read_bytes().decode("utf-8", errors="replace")
        # (Read for the few modules nothing reaches; the summary says nothing of `assert True`.)
        statements = ast.parse(text).body
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    docstrings = all(isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                     and isinstance(statement.value.value, str) for statement in statements)
    return bool(text.strip()) and docstrings and not _commented_out_code(text)


# A comment line that reads as a Python statement (`# from x import y`, `# model = build()`,
# `# def f(x):`): the file holds code switched off, not a note.
_CODE_COMMENT = re.compile(r"^\s*#\s?\s*(?:(?:from\s+[\w.]+\s+)?import\s+\w|def\s+\w+\s*\(|class\s+\w+\s*[(:]|return\b|"
                           r"(?:if|for|while|with)\s.*:\s*$|[\w.\[\]]+\s*=\s*\S|[\w.]+\(.*\)\s*$)")


def _commented_out_code(text: str) -> bool:
    """Whether a comment-only module is mostly code switched off (SageAttention's
    ``example/hunyuan_infer.py``: a banner, then the whole script commented out): at least three
    comment lines that read as statements, a third of its comment lines. Dead code still, and
    still an orphan; a banner or a licence header is a note."""
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    code = sum(1 for line in comments if _CODE_COMMENT.match(line))
    return code >= 3 and code * 3 >= len(comments)


def _config_shaped(module: Module) -> bool:
    """A module shaped like a config file that ``exec`` runs: it binds names at module level and
    defines no function or class, has no ``__main__`` guard and is no package (detectron2's
    LazyConfig files bind names by import alone: `from .base import train` then `train.max_iter
    = …`) — or, the
    ml_collections convention, defines ``get_config`` and nothing else. It may import (``import
    time`` for a value like ``"run-" + str(time.time())``): what it imports is still imported.
    Tests are not configs."""
    summary = module.summary
    return (
        not module.is_package
        and not module.is_test
        and not summary.has_main_guard
        and not summary.classes
        and (not summary.function_names and bool(summary.defined_names or summary.imports)
             or summary.function_names == {"get_config"})
    )


def _package_named(program: Program, module: Module, arg: Arg) -> str | None:
    """The package an argument names: ``__name__``/``__package__`` (the module's own package),
    ``pkg.__name__`` or ``pkg`` for an imported project package, a string literal or a module
    constant (imported or not) naming a package or a namespace directory."""
    text = arg.text.strip()
    if text == "__name__":
        return module.name  # the anchor of a relative name: `.x` under it
    if text == "__package__":
        return module.name if module.is_package else module.name.rpartition(".")[0]
    if arg.kind in ("name", "attribute") and not text.endswith(".__name__"):
        # hummingbot's `package=SCRIPT_STRATEGIES_MODULE`, a constant (maybe imported) holding the name
        constant, _owner = _constant(program, module, arg)
        if constant is not None and constant.kind == "str":
            arg = constant
    if arg.kind == "str" and isinstance(arg.value, str) and _holds_modules(program, arg.value):
        return arg.value  # a package, or a namespace directory (`scripts/` with no `__init__.py`)
    canonical = program.canonical(module, text.removesuffix(".__name__"))
    return canonical if canonical in program.modules and program.modules[canonical].is_package else None


def _holds_modules(program: Program, dotted: str) -> bool:
    """``dotted`` is a project module, or a namespace directory some project modules are under."""
    return dotted in program.modules or any(name.startswith(dotted + ".") for name in program.modules)


def _imports_beside_the_caller(module: Module, call: Call, arg: Arg) -> list[DynamicImport]:
    """``import_module(f"{plugin_type}_{name}")``: a bare name built from parts, with no package,
    is found on ``sys.path`` — beside the script that runs (Megatron-LM's ``tools/checkpoint/
    convert.py`` loads ``loader_core`` and ``saver_core``). The modules of the caller's folder whose
    names fit the literal parts (``*_*``) may be the one; one note at the call."""
    parts = _fstring_parts(arg.text) or []
    pattern = "".join("*" if kind != "text" else text for kind, text in parts)
    literal = "".join(text for kind, text in parts if kind == "text")
    if not literal or "." in pattern or not all(character.isalnum() or character in "_*" for character in pattern):
        return []
    folder = module.name if module.is_package else module.name.rpartition(".")[0]
    return [DynamicImport(Site(module.path, call.span, call.scope), arg.text, f"{folder}." if folder else "", pattern=pattern)]


def _imports_under_a_parameter(
    program: Program, module: Module, call: Call, arg: Arg, production: dict[str, str], tests: dict[str, str],
) -> list[DynamicImport]:
    """``def import_submodule(mod): ... import_module(f"{mod.__name__}.{name}")``: the package is
    the argument of each call of the helper; one note per call that names a project package."""
    parts = _fstring_parts(arg.text) or []
    if len(parts) < 2 or parts[0][0] != "expr" or parts[1][0] != "text" or not parts[1][1].startswith("."):
        return []
    written = parts[0][1].strip("{}")  # ast.unparse keeps the braces of an interpolation
    parameter = written.removesuffix(".__name__")
    function = program.function_at(module, call.scope) if call.scope else None
    if function is None or parameter not in function.params or written == parameter:
        return []
    key = function_key(module.name, function.qualname)
    position = [name for name in function.params if name not in ("self", "cls")].index(parameter)
    found = []
    for caller, site in program.iter_calls_named({function.name}):
        if caller.name not in production and caller.name not in tests:
            continue
        if key not in program.resolve_call(caller, site).targets or len(site.args) <= position:
            continue
        package = _package_named(program, caller, site.args[position])
        if package is not None:
            found.append(DynamicImport(Site(caller.path, site.span, site.scope), f"{site.func}({site.args[position].text})",
                                       f"{package}."))
    return found


def _reach(edges: dict[str, set[str]], roots: list[str]) -> dict[str, str]:
    """module → the module that first reached it (roots map to themselves)."""
    reached: dict[str, str] = {root: root for root in roots}
    queue = deque(sorted(roots))
    while queue:
        current = queue.popleft()
        for target in sorted(edges.get(current, ())):
            if target not in reached:
                reached[target] = current
                queue.append(target)
    return reached


# -- kernel linkage ---------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelDef:
    name: str
    site: Site
    inline: bool  # defined in a Python string


@dataclass
class KernelLoad:
    name: str | None  # None: unresolved
    expression: str  # the name argument as written
    site: Site
    how: str  # get_function | RawKernel | name_expressions | loader `key`
    launched_at: list[Site] = field(default_factory=list)
    why_unresolved: str = ""
    receiver: str = ""  # get_function: the module object it is called on
    opaque_source: bool = False  # loaded from a RawModule/RawKernel whose source is built at run time
    # Set when launched_at is where the kernel *may* be launched (by a name built at run time):
    # how, in words. Such a kernel is Partial in the audit and no FX204 finding.
    possibly: str = ""


@dataclass
class KernelRow:
    name: str
    status: str
    site: Site | None
    loads: list[KernelLoad]
    reason: str


@dataclass
class KernelLinkage:
    definitions: dict[str, list[KernelDef]]
    loads: list[KernelLoad]
    rows: list[KernelRow]
    loaders: dict[str, str]  # function key → name parameter
    launchers: dict[str, str]  # function key → kernel parameter

    out_of_scope: set[str] = field(default_factory=set)  # paths whose loads are not reported

    @property
    def unresolved(self) -> list[KernelLoad]:
        return [load for load in self.loads if load.name is None and load.site.path not in self.out_of_scope]


@dataclass
class _LoadCandidate:
    module: Module
    call: Call
    name_arg: Arg | None
    how: str
    loader_launches: bool


def kernel_linkage(program: Program) -> KernelLinkage:
    settings = program.settings
    definitions: dict[str, list[KernelDef]] = {}
    for path, summary in sorted(program.cuda.items()):
        for kernel in summary.kernels:
            definitions.setdefault(kernel.name, []).append(KernelDef(kernel.name, Site(path, kernel.span), False))
    loaders: dict[str, str] = {}
    for target, param in settings.kernel_loaders.items():
        module_name, _, qual = target.partition(":")
        loaders[function_key(module_name, qual)] = param
    launcher_table: dict[str, str] = {}
    computed: list[bool] = []

    def launchers() -> dict[str, str]:
        """Derived launchers, computed on first need: a tree that loads no kernel never pays."""
        if not computed:
            launcher_table.update(_launchers(program))
            computed.append(True)
        return launcher_table

    loader_launches: dict[str, bool] = {}
    # Loaders whose module comes from a call that is no RawModule/RawKernel (a compile helper's
    # result): the source of what they load cannot be read.
    opaque_loaders: set[str] = set()
    candidates: list[_LoadCandidate] = []

    def resolved_targets(module: Module, call: Call) -> tuple[str, ...]:
        return program.resolve_call(module, call).targets

    # Fixpoint: a function that forwards its parameter as a kernel name becomes a loader.
    changed = True
    rounds = 0
    while changed and rounds < 10:
        changed = False
        rounds += 1
        candidates = []
        loader_methods = {key.rsplit(".", 1)[-1].rsplit(":", 1)[-1] for key in loaders}
        for module, call in program.iter_calls_named(LOAD_METHODS | loader_methods):
            for candidate in _load_candidates(program, module, call, loaders, loader_launches, resolved_targets):
                candidates.append(candidate)
                function = program.function_at(module, call.scope)
                param = _forwarded_param(module, call, candidate.name_arg, function)
                if param is None:
                    continue
                key = function_key(module.name, call.scope)
                if key not in loaders:
                    if _module_from_other_call(program, module, call) or candidate.how in {f"loader `{k}`" for k in opaque_loaders}:
                        opaque_loaders.add(key)
                    loaders[key] = param
                    loader_launches[key] = candidate.loader_launches or bool(
                        _launched_in_scope(program, module, call, launchers(), resolved_targets)
                    )
                    changed = True
    loads: list[KernelLoad] = []
    for candidate in candidates:
        module, call, arg = candidate.module, candidate.call, candidate.name_arg
        function = program.function_at(module, call.scope)
        if _forwarded_param(module, call, arg, function) is not None:
            continue  # the loader's own forwarding call: its callers are the loads
        site = Site(module.path, call.span, call.scope)
        values = _names_of(program, module, arg)
        launched = [] if candidate.loader_launches else _launched_in_scope(program, module, call, launchers(), resolved_targets)
        if candidate.loader_launches:
            launched = [site]
        if values is None:
            why = "an f-string" if arg is not None and arg.kind == "fstring" else "not a literal or a module constant"
            loads.append(KernelLoad(None, arg.text if arg else "", site, candidate.how, launched, why))
            continue
        escape = None if launched or candidate.how == "name_expressions" else _escape(program, module, call)
        unreadable = _module_from_other_call(program, module, call) or candidate.how in {f"loader `{k}`" for k in opaque_loaders}
        for value in values:
            load = KernelLoad(value, arg.text if arg else value, site, candidate.how, launched, receiver=call.receiver)
            load.opaque_source = unreadable
            if escape is not None:
                load.launched_at = [escape]
                load.possibly = f"by whatever receives it at {escape.where}"
            loads.append(load)
    # Kernels defined in CUDA source held in Python strings (RawKernel/RawModule code=...), or in
    # a header the module reads at run time (open(os.path.join(here, "kernels.h"))).
    opaque: set[tuple[str, str]] = set()  # (path, call site line or bound name) of unreadable sources
    for module, call in program.iter_calls_named(_SOURCE_LOADS):
        code = call.kwarg("code") or (call.args[0] if call.args else None)
        text = _string_value(program, module, code, partial=True, scope=call.scope)
        if text:
            for name in kernels_in_source_text(text):
                definitions.setdefault(name, []).append(KernelDef(name, Site(module.path, call.span, call.scope), True))
        elif _names_project_source(program, module, call):
            continue  # RawModule(path="cuda/x.cu"): a file of the repository, whose kernels were read with it
        else:
            opaque.add((module.path, f"line {call.span.line}"))
            if call.bound_to:
                opaque.add((module.path, call.bound_to))
    for path, span, name in _runtime_headers(program):
        definitions.setdefault(name, []).append(KernelDef(name, Site(path, span), True))
    for load in loads:
        if (load.site.path, f"line {load.site.span.line}") in opaque or (load.receiver and (load.site.path, load.receiver) in opaque):
            load.opaque_source = True
    _mark_possible_launches(loads)
    loads.extend(_cpp_uses(program, definitions))
    rows: list[KernelRow] = []
    guesses: dict[str, KernelLoad] = {}  # path → its first load whose name is built at run time
    for load in loads:
        if load.name is None:
            guesses.setdefault(load.site.path, load)
    by_name: dict[str, list[KernelLoad]] = {}
    for load in loads:
        if load.name is not None:
            by_name.setdefault(load.name, []).append(load)
    for name in sorted(definitions):
        first = definitions[name][0]
        found = by_name.get(name, [])
        reason = first_path_match(first.site.path, settings.out_of_scope)
        if reason is not None:
            rows.append(KernelRow(name, OUT_OF_SCOPE, first.site, found, settings.out_of_scope[reason]))
        elif not found and first.inline and first.site.path in guesses:
            # Source held in this file, and a name built at run time here loads something.
            other = guesses[first.site.path]
            possible = KernelLoad(name, other.expression, other.site, other.how, [other.site], other.why_unresolved)
            possible.possibly = f"by the name built at run time at {other.site.where} (`{other.expression}`)"
            rows.append(KernelRow(name, PARTIAL, first.site, [possible], f"never loaded by name; loaded and launched, if at all, {possible.possibly}"))
        elif not found and _compile_test(program, first.site.path):
            rows.append(KernelRow(name, OUT_OF_SCOPE, first.site, found,
                                  "the subject of a compile test (FileCheck directives check what nvcc makes of it)"))
        elif not found:
            rows.append(KernelRow(name, ORPHAN, first.site, found, "defined, never loaded or launched"))
        elif all(load.how.startswith(_CPP) for load in found):
            hows = sorted({load.how[len(_CPP) :] for load in found})
            rows.append(KernelRow(name, WIRED, first.site, found, f"launched from C++ ({', '.join(hows)})"))
        elif not any(load.launched_at for load in found):
            rows.append(KernelRow(name, PARTIAL, first.site, found, "loaded, never launched"))
        elif all(load.possibly for load in found if load.launched_at):
            where = next(load.possibly for load in found if load.launched_at)
            rows.append(KernelRow(name, PARTIAL, first.site, found, f"loaded; launched, if at all, {where}"))
        elif all(program.by_path[load.site.path].is_test for load in found if load.site.path in program.by_path):
            rows.append(KernelRow(name, PARTIAL, first.site, found, "loaded and launched by tests only"))
        else:
            rows.append(KernelRow(name, WIRED, first.site, found, "loaded and launched"))
    for name in sorted(set(by_name) - set(definitions)):
        found = by_name[name]
        reason = first_path_match(found[0].site.path, settings.out_of_scope)
        if reason is not None:
            rows.append(KernelRow(name, OUT_OF_SCOPE, None, found, settings.out_of_scope[reason]))
        elif all(load.opaque_source for load in found):
            # string.Template(...).substitute(...), a function's result, RawModule(path=...): the
            # source is not in the repository as text, so "defined nowhere" would be a guess.
            rows.append(KernelRow(name, UNRESOLVED, None, found, "loaded from CUDA source built at run time: its definitions cannot be read statically"))
        else:
            # Only the loads from readable sources are ghosts; the others say nothing either way.
            rows.append(KernelRow(name, GHOST, None, [load for load in found if not load.opaque_source], "loaded, defined in no .cu/.cuh"))
    skipped = {load.site.path for load in loads if program.out_of_scope(load.site.path)}
    return KernelLinkage(definitions, loads, rows, loaders, launchers() if loaders else {}, skipped)


def _mark_possible_launches(loads: list[KernelLoad]) -> None:
    """A kernel loaded by ``name_expressions`` and launched by no resolved load may still be
    launched by a load whose name is built at run time in the same file (``get_function(
    kernel_name)``, reported by FX205), or by whoever receives the module object when the
    ``RawModule`` is returned rather than bound: which kernel, cannot be known statically."""
    unresolved: dict[str, KernelLoad] = {}
    for load in loads:
        if load.name is None and load.how != "name_expressions":
            unresolved.setdefault(load.site.path, load)
    launched = {load.name for load in loads if load.launched_at}
    for load in loads:
        if load.how != "name_expressions" or load.name is None or load.name in launched:
            continue
        other = unresolved.get(load.site.path)
        if other is not None:
            load.launched_at = [other.site]
            load.possibly = f"by the name built at run time at {other.site.where} (`{other.expression}`)"


_CPP = "C++ "
_CPP_HOW = {
    "<<<>>>": "`<<<…>>>`",
    "pointer": "taken as a function pointer",
    "graph kernel node": "graph kernel node `func`",
    "name string": "named in a string (looked up by name)",
    "named in a macro": "taken or named in a `#define` body",
    "named in a hidden macro use": "taken or named in a macro use's arguments",
    "pasted in a macro": "a name pasted together in a `#define` body matches it",
    "conditional": "in a preprocessor branch another build configuration compiles",
    "<<<>>> in a raw string": "`<<<…>>>` in source a raw string holds, compiled at run time",
    "pointer in a raw string": "taken as a function pointer in source a raw string holds, compiled at run time",
}


def _cpp_uses(program: Program, definitions: dict[str, list[KernelDef]]) -> list[KernelLoad]:
    """Kernels that C++ code in the repository launches or takes: one load per use site.

    A use inside the kernel's own body (a recursive dynamic-parallelism launch) does not count:
    it runs only if something else launches the kernel first. A kernel taken as a function
    pointer, or looked up by name (``cuModuleGetFunction``), counts as launched: C++ data flow
    is not followed, and the kernel is demonstrably not dead code.
    """
    bodies: dict[str, list[tuple[str, int, int]]] = {}
    for path, summary in program.cuda.items():
        for kernel in summary.kernels:
            bodies.setdefault(kernel.name, []).append((path, kernel.span.line, kernel.end_line))
    found: list[KernelLoad] = []
    used = {use.kernel for summary in program.cuda.values() for use in summary.launches}
    unused = {name for name, defs in definitions.items() if name not in used and not all(d.inline for d in defs)}
    summaries = sorted(program.cuda.items()) + (_host_summaries(program, unused) if unused else [])
    for path, summary in summaries:
        for use in summary.launches:
            if use.how == PASTED:
                # `kernel_grouped_##T##_##U`: every kernel the pattern matches may be the one pasted.
                names = _pasted_matches(use.kernel, unused)
            else:
                names = [use.kernel] if use.kernel in definitions else []
            for name in names:
                if any(path == own and first <= use.span.line <= last for own, first, last in bodies.get(name, ())):
                    continue
                site = Site(path, use.span, use.enclosing)
                how = _CPP + _CPP_HOW.get(use.how, f"`{use.how}`")
                if use.how == PASTED:
                    how += f" (`{use.kernel}`)"
                found.append(KernelLoad(name, use.kernel, site, how, [site]))
    return found



def _pasted_matches(pattern: str, names: set[str]) -> list[str]:
    """The names a pasted pattern (``kernel_grouped_*_*``, ``*`` for a pasted parameter) matches."""
    if not names:
        return []
    compiled = re.compile("".join(r"\w+" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern) if part))
    return sorted(name for name in names if compiled.fullmatch(name))


_HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".cu", ".inc", ".inl")
_UNWALKED = ("node_modules", "venv", "__pycache__")  # besides hidden directories: no project source


def _files_named(base: Path, leaves: set[str]) -> list[Path]:
    """Files below ``base`` whose name is one of ``leaves`` (hidden directories and virtual
    environments are not walked), sorted."""
    found: list[Path] = []
    for folder, directories, files in os.walk(base):
        directories[:] = sorted(d for d in directories if not d.startswith(".") and d not in _UNWALKED)
        found.extend(Path(folder) / name for name in files if name in leaves)
    return sorted(found)


def _runtime_headers(program: Program) -> list[tuple[str, Span, str]]:
    """(path, span, kernel) for ``__global__`` kernels in files a module that builds CUDA source
    reads at run time: a string literal naming a header (``"pba_kernels_2d.h"``) in a module that
    calls RawKernel/RawModule, found beside the module or below its directory. Headers
    discovery already lists (.cu/.cuh) are scanned as CUDA files already and are skipped."""
    found: list[tuple[str, Span, str]] = []
    seen: set[str] = set()
    for module in program.modules.values():
        if module.summary.call_methods.isdisjoint(_SOURCE_LOADS):
            continue
        names = {
            str(arg.value)
            for call in module.summary.calls
            for arg in (*call.args, *(value for _, value in call.kwargs))
            if arg.kind == "str" and str(arg.value).endswith(_HEADER_SUFFIXES) and "\n" not in str(arg.value)
        }
        if not names:
            continue
        directory = module.path.rpartition("/")[0]
        leaves = {name.replace("\\", "/").rsplit("/", 1)[-1] for name in names}
        for candidate in _files_named(program.root / directory if directory else program.root, leaves):
            relative = candidate.relative_to(program.root).as_posix()
            if relative in seen or relative in program.cuda:
                continue
            seen.add(relative)
            try:
                text = candidate.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            lines = text.split("\n")
            for kernel in kernels_in_source_text(text):
                line = next((i for i, body in enumerate(lines, 1) if re.search(rf"\b{re.escape(kernel)}\s*\(", body)), 1)
                found.append((relative, Span(line, 1, line, 1), kernel))
    return found


# C and C++ host files: discovery lists only .cu/.cuh, but host code that launches or looks up
# kernels often lives beside them (cuda-samples' driver-API `.cpp`) or is #included (`.impl`).
def _host_files_in(program: Program, directory: str) -> list[str]:
    """The host C/C++ files directly in ``directory`` (project-relative, '' for the root)."""
    folder = program.root / directory if directory else program.root
    try:
        entries = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(_HOST_SUFFIXES))
    except OSError:
        return []
    return [f"{directory}/{name}" if directory else name for name in entries]


def _host_file_bytes(target: Path) -> bytes | None:
    """The bytes of a host file to scan; None for a missing, unreadable or oversized one."""
    try:
        if not target.is_file() or target.stat().st_size > _HOST_FILE_LIMIT:
            return None
        return target.read_bytes()
    except OSError:
        return None


def _folders_in(program: Program, directory: str) -> list[str]:
    """The folders directly in ``directory`` (hidden ones left out)."""
    folder = program.root / directory if directory else program.root
    try:
        entries = sorted(entry.name for entry in folder.iterdir() if entry.is_dir() and not entry.name.startswith("."))
    except OSError:
        return []
    return [f"{directory}/{name}" if directory else name for name in entries]


_HOST_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hxx", ".inl", ".impl", ".ipp")
def _compile_test(program: Program, path: str) -> bool:
    """The CUDA file is a compile test (``CudaSummary.compile_test``: cccl's `atomic_codegen/*.cu`,
    compiled with `nvcc -ptx` and piped to FileCheck)."""
    summary = program.cuda.get(path)
    return summary is not None and summary.compile_test


_HOST_FILE_LIMIT = 2_000_000  # bytes: a generated or vendored blob is not host code to read


def _host_summaries(program: Program, unused: set[str]) -> list[tuple[str, CudaSummary]]:
    """Summaries of the host C/C++ files that may use a kernel no discovered file uses: beside
    the CUDA file that defines it or ``#include``d by it; — when they name such a kernel — in the
    folder above it and that folder's other folders (``op/cuda/k.cu`` launched from
    ``op/host/k.cc`` or ``op/binding.cpp``); and, while some stay unused, anywhere in the tree
    where a file holds the tail of the defining file's path (DeepEP's JIT: ``csrc/kernels/
    elastic/barrier.hpp`` writes ``#include <deep_ep/impls/barrier.cuh>`` into source compiled
    at run time). Read (never compiled or run) only in that case, parsed like CUDA (the grammar
    is a superset of C++), not cached: they are few."""
    wanted: set[str] = set()
    nearby: set[str] = set()  # read only when their text names an unused kernel
    for path, summary in program.cuda.items():
        if not any(kernel.name in unused for kernel in summary.kernels):
            continue
        directory = path.rpartition("/")[0]
        for include in summary.includes:
            candidate = posixpath.normpath(posixpath.join(directory, include))
            if not candidate.startswith("../") and candidate not in program.cuda:
                wanted.add(candidate)
        wanted.update(_host_files_in(program, directory))
        if directory:
            parent = directory.rpartition("/")[0]
            nearby.update(_host_files_in(program, parent))
            for sibling in _folders_in(program, parent):
                if sibling != directory:
                    nearby.update(_host_files_in(program, sibling))
    names = [name.encode() for name in sorted(unused)]
    found: list[tuple[str, CudaSummary]] = []
    for path in sorted(wanted | nearby):
        data = _host_file_bytes(program.root / path)
        if data is None or (path not in wanted and not any(name in data for name in names)):
            continue
        _add_host_summary(found, path, data)
    remaining = unused - {use.kernel for _, summary in found for use in summary.launches}
    tails = _include_tails(program, remaining)
    if tails:
        # Every host file is listed once and only tested for the tails' bytes: the few that hold
        # one are parsed. A tree whose kernels are all used nearby never pays for the walk.
        for path in _host_files_below(program):
            if path in wanted or path in nearby:
                continue
            data = _host_file_bytes(program.root / path)
            if data is not None and any(tail in data for tail in tails):
                _add_host_summary(found, path, data)
    return found


def _add_host_summary(found: list[tuple[str, CudaSummary]], path: str, data: bytes) -> None:
    try:
        found.append((path, scan_cuda(SourceFile(path=path, data=data, language="cuda"))))
    except RecursionError:
        pass  # nested past Python's limit: its uses stay unknown, kernels stay reported


def _include_tails(program: Program, unused: set[str]) -> list[bytes]:
    """The last two parts of the path of each CUDA file defining an unused kernel
    (``impls/barrier.cuh``): what an ``#include`` of it through an include path ends with. A file
    at the root has no folder to tell its name from another's, and gives none."""
    tails: set[bytes] = set()
    for path, summary in program.cuda.items():
        if "/" in path and any(kernel.name in unused for kernel in summary.kernels):
            tails.add("/".join(path.rsplit("/", 2)[-2:]).encode())
    return sorted(tails)


def _host_files_below(program: Program) -> list[str]:
    """Every host C/C++ file of the tree (project-relative, sorted), walked like
    :func:`_files_named`."""
    found: list[str] = []
    for folder, directories, files in os.walk(program.root):
        directories[:] = sorted(d for d in directories if not d.startswith(".") and d not in _UNWALKED)
        relative = Path(folder).relative_to(program.root).as_posix()
        found.extend(name if relative == "." else f"{relative}/{name}" for name in files if name.endswith(_HOST_SUFFIXES))
    return sorted(found)


LOAD_METHODS = frozenset({"get_function", "RawKernel", "RawModule"})
_SOURCE_LOADS = frozenset({"RawKernel", "RawModule"})


def _module_from_other_call(program: Program, module: Module, call: Call) -> bool:
    """``mod.get_function(name)`` where ``mod`` is compiled, by a call that is no RawModule or
    RawKernel, from a source built from what the enclosing function receives: a parameter as it
    is (``mod = compiler._compile_module_with_cache(code)``), in an expression (``PREAMBLE +
    code``, ``code.format(t=t)``, ``f"{code}"``) or through the object (``self.code``): the source
    is the callers' and passes through a helper foxaudit does not model, so its kernels'
    definitions cannot be read here. (A project loader that reads its own file,
    ``_module().get_function(name)``, is not one.)"""
    if call.method != "get_function" or call.receiver_kind != "name":
        return False
    function = program.function_at(module, call.scope)
    params = frozenset(function.params) if function is not None else frozenset()
    bound = [a for a in module.summary.assignments if a.target == call.receiver and a.scope == call.scope]
    return bool(bound) and all(
        a.call is not None and a.call.method not in _SOURCE_LOADS
        and any(_built_from(arg, params) for arg in (*a.call.args, *(v for _, v in a.call.kwargs)))
        for a in bound
    )


_QUOTED = re.compile(r"(?s)([\'\"]).*?(?<!\\)\1")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _built_from(arg: Arg, params: frozenset[str]) -> bool:
    """The argument's value is computed from one of ``params`` (the names in its code, not in
    its string literals: `"code" + x` is not built from a parameter `code`)."""
    if arg.kind in ("str", "int", "float"):
        return False
    if arg.kind == "concat":
        return any(_built_from(part, params) for part in arg.value or ())
    if arg.kind == "fstring":
        code = " ".join(re.findall(r"\{([^{}]*)\}", arg.text))
    else:
        code = _QUOTED.sub(" ", arg.text)
    return not params.isdisjoint(_IDENTIFIER.findall(code))


def _names_project_source(program: Program, module: Module, call: Call) -> bool:
    """Whether a source load names, by a literal ``path=``, a CUDA file that is part of the project
    (relative to the repository root or to the loading module's directory)."""
    path = _string_value(program, module, call.kwarg("path"), scope=call.scope)
    if not path or not path.endswith((".cu", ".cuh")):
        return False
    return any((base / path).is_file() for base in (program.root, (program.root / module.path).parent))


def _load_candidates(program, module, call, loaders, loader_launches, resolved_targets):
    method = call.method
    if method == "get_function" and call.receiver:
        name = call.kwarg("name") or (call.args[0] if call.args else None)
        if name is None or len(call.args) > 1 or program.resolve_call(module, call).kind == "project":
            # `tx.get_function()` (torch's dynamo), numba's `context.get_function(fnty, sig)`, or a
            # project class's own get_function: not CuPy's RawModule.get_function(name) nor
            # PyCUDA's SourceModule.get_function(name), which take the kernel's name alone.
            return
        yield _LoadCandidate(module, call, name, "get_function", False)
        return
    if method == "RawKernel":
        yield _LoadCandidate(module, call, call.kwarg("name") or (call.args[1] if len(call.args) > 1 else None), "RawKernel", False)
        return
    if method == "RawModule":
        expressions = call.kwarg("name_expressions")
        if expressions is not None:
            if expressions.kind == "list":
                for item in expressions.value or ():
                    yield _LoadCandidate(module, call, item, "name_expressions", False)
            else:
                yield _LoadCandidate(module, call, expressions, "name_expressions", False)
        return
    if not loaders or method not in {key.rsplit(".", 1)[-1].rsplit(":", 1)[-1] for key in loaders}:
        return
    for target in resolved_targets(module, call):
        param = loaders.get(target)
        if param is None:
            continue
        _, function = program.functions[target]
        params = [p for p in function.params if p not in ("self", "cls")] if function.class_name else list(function.params)
        arg = call.kwarg(param)
        if arg is None and param in params:
            index = params.index(param)
            if index < len(call.args):
                arg = call.args[index]
        yield _LoadCandidate(module, call, arg, f"loader `{target}`", loader_launches.get(target, False))


def _names_of(program: Program, module: Module, arg: Arg | None, depth: int = 0) -> list[str] | None:
    """The kernel names an argument names, or None when they cannot be known statically.

    Template arguments are stripped ('k<float>' loads kernel k), so ``f'k<{t}>'`` names k
    whatever ``t`` is; a list, a ``+`` of lists, and a comprehension over a literal list
    (``[f'k_{t}' for t in ('f32', 'f64')]``) name each of their items.
    """
    if arg is None or depth > 4:
        return None
    if arg.kind == "list" or (
        arg.kind == "concat" and all(part.kind in ("list", "comprehension", "name") for part in arg.value)  # type: ignore[union-attr]
    ):
        names: list[str] = []
        for item in arg.value:  # type: ignore[union-attr]
            found = _names_of(program, module, item, depth + 1)
            if found is None:
                return None
            names.extend(found)
        return names
    if arg.kind == "fstring":
        head = _fstring_head(arg.text)
        if head is not None and "<" in head:
            return [head.split("<", 1)[0].strip()]
        return None
    if arg.kind == "comprehension":
        element, variable, iterable = arg.value  # type: ignore[misc]
        if element.kind == "fstring":
            head = _fstring_head(element.text)
            if head is not None and "<" in head:
                return [head.split("<", 1)[0].strip()]
        values = _literal_strings(program, module, iterable)
        if values is None:
            return None
        names = []
        for value in values:
            text = _substitute(element, variable.text, value)
            if text is None:
                return None
            names.append(text.split("<", 1)[0].strip())
        return names
    if arg.kind in ("name", "attribute"):
        constant, owner = _constant(program, module, arg)
        if constant is not None and constant.kind in ("list", "concat", "comprehension"):
            return _names_of(program, owner, constant, depth + 1)
    value = _string_value(program, module, arg)
    if value is None:
        return None
    return [value.split("<", 1)[0].strip()]


def _forwarded_param(module: Module, call: Call, arg: Arg | None, function) -> str | None:
    """The parameter of the enclosing function that ``arg`` passes on as the kernel name: the
    parameter itself, ``f'{name}<{template}>'`` (template arguments added), or a local bound to
    one of those (``kernel_name = f'{func_name}<{t}>' if t else func_name``)."""
    if arg is None or function is None:
        return None
    params = set(function.params)

    def forwarded(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return node.id if node.id in params else None
        if isinstance(node, ast.JoinedStr) and node.values:
            first, rest = node.values[0], node.values[1:]
            if isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name) and first.value.id in params:
                after = rest[0] if rest else None
                if after is None or (isinstance(after, ast.Constant) and str(after.value).startswith("<")):
                    return first.value.id
            return None
        if isinstance(node, ast.IfExp):
            body, orelse = forwarded(node.body), forwarded(node.orelse)
            return body if body is not None and body == orelse else None
        return None

    def parsed(text: str) -> str | None:
        try:
            return forwarded(ast.parse(text.strip(), mode="eval").body)
        except SyntaxError:
            return None

    if arg.kind == "name" and arg.text in params:
        return arg.text
    if arg.kind == "fstring":
        return parsed(arg.text)
    if arg.kind == "name":
        bound = [a for a in module.summary.assignments if a.target == arg.text and a.scope == call.scope]
        if len(bound) == 1 and bound[0].value.kind in ("fstring", "other", "name"):
            return parsed(bound[0].value.text)
    return None


def _fstring_parts(text: str) -> list[tuple[str, str]] | None:
    """An f-string as ("text", literal) and ("name", variable) parts, ("expr", source) for any
    other interpolation; None when the text is not one f-string."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.JoinedStr):
        return None
    parts: list[tuple[str, str]] = []
    for value in tree.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(("text", value.value))
        elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name) and value.format_spec is None and value.conversion == -1:
            parts.append(("name", value.value.id))
        else:
            parts.append(("expr", ast.unparse(value)))
    return parts


def _fstring_head(text: str) -> str | None:
    """The literal text of an f-string before its first interpolation: ``f'k<{t}>'`` → ``k<``."""
    parts = _fstring_parts(text)
    if parts is None:
        return None
    head = []
    for kind, value in parts:
        if kind != "text":
            break
        head.append(value)
    return "".join(head)


def _substitute(element: Arg, variable: str, value: str) -> str | None:
    """``f'k_{t}'`` with t = value; None unless the f-string interpolates only ``variable``."""
    if element.kind == "name" and element.text == variable:
        return value
    parts = _fstring_parts(element.text) if element.kind == "fstring" else None
    if parts is None or any(kind == "expr" or (kind == "name" and text != variable) for kind, text in parts):
        return None
    return "".join(value if kind == "name" else text for kind, text in parts)


def _literal_strings(program: Program, module: Module, arg: Arg) -> list[str] | None:
    """The strings of a literal list/tuple (directly or through a module constant)."""
    if arg.kind in ("name", "attribute"):
        constant, owner = _constant(program, module, arg)
        if constant is None:
            return None
        return _literal_strings(program, owner, constant)
    if arg.kind != "list":
        return None
    values = [_string_value(program, module, item) for item in arg.value]  # type: ignore[union-attr]
    return None if any(value is None for value in values) else values  # type: ignore[return-value]


def _constant(program: Program, module: Module, arg: Arg, scope: str | None = None) -> tuple[Arg | None, Module]:
    """The module-level constant a name or attribute refers to, and the module that defines it;
    with ``scope``, also a name bound exactly once in that scope (a class attribute or a local
    holding CUDA source: ``code = r\"\"\"...\"\"\"`` then ``RawModule(code=code)``)."""
    constant = module.summary.constants.get(arg.text)
    if constant is not None:
        return constant, module
    if scope is not None and arg.kind == "name":
        bound = [a for a in module.summary.assignments if a.target == arg.text and a.scope == scope]
        if len(bound) == 1:
            return bound[0].value, module
    canonical = program.canonical(module, arg.dotted or arg.text)
    owner, _, name = canonical.rpartition(".")
    other = program.modules.get(owner)
    if other is not None and other is not module:
        constant = other.summary.constants.get(name)
        if constant is not None:
            return constant, other
    return None, module


def _string_value(
    program: Program, module: Module, arg: Arg | None, depth: int = 0, *, partial: bool = False, scope: str | None = None
) -> str | None:
    """The string an argument holds: a literal, a module constant, or a ``+`` of those.

    ``partial`` joins what is known of a ``+`` chain and skips the rest (CUDA source built from a
    preamble and a literal: its literal parts still show which kernels it defines)."""
    if arg is None or depth > 4:
        return None
    if arg.kind == "str":
        return str(arg.value)
    if arg.kind == "concat":
        parts = [_string_value(program, module, part, depth + 1, partial=partial, scope=scope) for part in arg.value]  # type: ignore[union-attr]
        if any(part is None for part in parts) and not partial:
            return None
        known = [part for part in parts if part is not None]
        return "".join(known) if known else None
    if arg.kind in ("name", "attribute"):
        constant, owner = _constant(program, module, arg, scope)
        if constant is not None:
            return _string_value(program, owner, constant, depth + 1, partial=partial, scope=scope)
    return None


def _launchers(program: Program) -> dict[str, str]:
    """Function key → parameter that it calls (directly or by passing it to another launcher)."""
    launchers: dict[str, str] = {}
    for module, call in program.iter_calls():
        function = program.function_at(module, call.scope)
        if function is None or "." in call.func or not call.func:
            continue
        if call.func in function.params and call.func not in ("self", "cls"):
            launchers.setdefault(function_key(module.name, call.scope), call.func)
    # Calls that pass one of their function's parameters on: the only candidates for launchers
    # of launchers (computed once, then iterated to a fixpoint).
    forwarding = []
    for module, call in program.iter_calls():
        function = program.function_at(module, call.scope)
        if function is None:
            continue
        passed = [a.text for a in call.args if a.kind == "name" and a.text in function.params]
        if passed:
            forwarding.append((module, call, passed))
    changed = True
    rounds = 0
    while changed and rounds < 6:
        changed = False
        rounds += 1
        for module, call, passed in forwarding:
            key = function_key(module.name, call.scope)
            if key in launchers:
                continue
            for target in program.resolve_call(module, call).targets:
                param = launchers.get(target)
                if param is None:
                    continue
                index = _param_index(program, target, param)
                if index is not None and index < len(call.args) and call.args[index].text in passed:
                    launchers[key] = call.args[index].text
                    changed = True
    return launchers


def _param_index(program: Program, target: str, param: str) -> int | None:
    _, function = program.functions[target]
    params = [p for p in function.params if p not in ("self", "cls")] if function.class_name else list(function.params)
    return params.index(param) if param in params else None


def _escape(program: Program, module: Module, call: Call) -> Site | None:
    """Where a loaded kernel bound to a name is handed on to code the analysis cannot follow:
    an argument of a call that reaches no project function (``generic_filter(x, rms_raw)``), or
    a value stored in a dict (``{"rms": rms_raw}``). Whether it is launched there is unknown."""
    bound = call.bound_to
    if not bound or bound.startswith("self."):
        return None
    everywhere = not call.scope and "." not in bound
    for other in module.summary.calls:
        if other is call or not (everywhere or other.scope == call.scope):
            continue
        passed = any(arg.text == bound for arg in other.args) or any(arg.text == bound for _, arg in other.kwargs)
        if passed and program.resolve_call(module, other).kind != "project":
            return Site(module.path, other.span, other.scope)
    for entry in module.summary.dict_entries:
        if entry.value == bound and (everywhere or entry.scope == call.scope):
            return Site(module.path, entry.span, entry.scope)
    return None


def _launched_in_scope(program, module, call, launchers, resolved_targets) -> list[Site]:
    """Where the value loaded by ``call`` is launched (same scope, or same class for self.x)."""
    if call.called:
        return [Site(module.path, call.span, call.scope)]
    bound = call.bound_to
    if not bound:
        # launch(load("k"), ...): the load is itself the argument a launcher calls.
        sites = []
        for other in module.summary.calls:
            if other is call or other.scope != call.scope:
                continue
            if not other.span.line <= call.span.line <= other.span.end_line:
                continue
            for index, arg in enumerate(other.args):
                if arg.kind != "call" or arg.dotted != call.func:
                    continue
                for target in resolved_targets(module, other):
                    param = launchers.get(target)
                    if param is not None and _param_index(program, target, param) == index:
                        sites.append(Site(module.path, other.span, other.scope))
        return sites
    sites: list[Site] = []
    if bound.startswith("self."):
        klass = program.enclosing_class(module, call.scope)
        prefix = klass.split(":", 1)[1] + "." if klass else None
        scopes = [c for c in module.summary.calls if prefix and c.scope.startswith(prefix)]
    elif not call.scope and "." not in bound:
        # `_k = cupy.RawKernel(...)` at module level is a global: any function of the module may
        # launch it, and so may a module that imports it (`from ._kernels import _k`).
        scopes = list(module.summary.calls)
        for other in program.modules.values():
            if other is module:
                continue
            for ref in other.summary.imports:
                if ref.module != module.name:
                    continue
                for imported, alias in ref.names:
                    if imported == bound:
                        sites.extend(Site(other.path, c.span, c.scope) for c in other.summary.calls if c.func == alias)
    else:
        scopes = [c for c in module.summary.calls if c.scope == call.scope]
    for other in scopes:
        if other.func == bound:
            sites.append(Site(module.path, other.span, other.scope))
            continue
        for index, arg in enumerate(other.args):
            if arg.text != bound:
                continue
            for target in resolved_targets(module, other):
                param = launchers.get(target)
                if param is not None and _param_index(program, target, param) == index:
                    sites.append(Site(module.path, other.span, other.scope))
    return sites


# -- state coverage ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Buffer:
    owner: str  # class key
    name: str  # attribute
    factory: str
    site: Site
    state_names: tuple[str, ...]  # names it is exposed under (state-name-methods), else (attribute,)


@dataclass(frozen=True)
class RegistryEntry:
    name: str | None  # None: not a literal
    category: str
    expression: str
    site: Site
    covers: tuple[str, ...] = ()


@dataclass
class StateCoverage:
    buffers: list[Buffer]
    entries: list[RegistryEntry]
    missing: list[Buffer]
    configured: bool


def state_coverage(program: Program) -> StateCoverage:
    settings = program.settings
    configured = bool(settings.state_classes and settings.registry_files)
    exposed = _exposed_names(program) if settings.state_classes else {}
    buffers: list[Buffer] = []
    factories = set(settings.state_factories)
    if settings.state_classes:
        for module in program.modules.values():
            if module.is_test or program.out_of_scope(module.path):
                continue
            for assignment in module.summary.assignments:
                call = assignment.call
                if call is None or not assignment.target.startswith("self.") or assignment.target.count(".") != 1:
                    continue
                klass = program.enclosing_class(module, assignment.scope)
                if klass is None or not name_matches(klass, settings.state_classes):
                    continue
                canonical = program.canonical(module, call.func)
                if canonical not in factories:
                    continue
                if settings.state_require_device and call.kwarg("device") is None:
                    continue
                attribute = assignment.target[5:]
                names = tuple(sorted(exposed.get((klass, attribute), ()))) or (attribute,)
                buffers.append(Buffer(klass, attribute, canonical, Site(module.path, assignment.span, assignment.scope), names))
    entries = _registry_entries(program)
    missing = [buffer for buffer in buffers if not any(_covers(entry, name) for entry in entries for name in buffer.state_names)]
    buffers.sort(key=lambda b: (b.site.path, b.site.span.line, b.site.span.column, b.name))
    entries.sort(key=lambda e: (e.site.path, e.site.span.line, e.site.span.column, e.expression))
    return StateCoverage(buffers, entries, missing, configured)


def _covers(entry: RegistryEntry, name: str) -> bool:
    if entry.name is not None and entry.name == name:
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in entry.covers)


def _exposed_names(program: Program) -> dict[tuple[str, str], set[str]]:
    """(class key, attribute) → the names state-name methods expose it under."""
    methods = set(program.settings.state_name_methods)
    exposed: dict[tuple[str, str], set[str]] = {}
    if not methods:
        return exposed
    for module in program.modules.values():
        pairs: list[tuple[str, str, str]] = []
        for write in module.summary.subscript_writes:
            if isinstance(write.key, str) and write.value:
                pairs.append((write.scope, write.key, write.value))
        for entry in module.summary.dict_entries:
            if isinstance(entry.key, str):
                pairs.append((entry.scope, entry.key, entry.value))
        for scope, key, value in pairs:
            if scope.rsplit(".", 1)[-1] not in methods or not value.startswith("self."):
                continue
            parts = value.split(".")
            if not all(part.isidentifier() for part in parts):
                continue
            owner = program.type_of(module, scope, parts[:-1])
            if owner is None or owner.startswith("ext:"):
                continue
            exposed.setdefault((owner, parts[-1]), set()).add(key)
    return exposed


def _registry_entries(program: Program) -> list[RegistryEntry]:
    """Entry calls in the registry files, including helpers that forward name (and covers) to one."""
    settings = program.settings
    derived: dict[str, tuple[str, str]] = {}  # function key → (name param, covers param)
    inner_category: dict[str, str] = {}  # derived helper → the category its inner call passes
    modules = [m for m in program.modules.values() if first_path_match(m.path, settings.registry_files)]
    entries: list[RegistryEntry] = []
    for _round in range(4):
        entries = []
        grew = False
        for module in modules:
            for call in module.summary.calls:
                spec = _entry_spec(program, module, call, derived)
                if spec is None:
                    continue
                name_param, covers_param = spec
                name_arg, category_arg, covers_arg = _entry_args(program, module, call, name_param, covers_param)
                if name_arg is None:
                    continue
                function = program.function_at(module, call.scope)
                if function is not None and name_arg.kind == "name" and name_arg.text in function.params:
                    key = function_key(module.name, call.scope)
                    if key not in derived:
                        covers = covers_arg.text if covers_arg is not None and covers_arg.text in function.params else ""
                        derived[key] = (name_arg.text, covers)
                        if category_arg is not None and category_arg.text not in function.params:
                            inner_category[key] = category_arg.text
                        grew = True
                    continue
                name = _string_value(program, module, name_arg)
                category = category_arg.text if category_arg is not None else ""
                if not category:
                    category = next(
                        (inner_category[t] for t in program.resolve_call(module, call).targets if t in inner_category), ""
                    )
                covers_values: tuple[str, ...] = ()
                if covers_arg is not None and covers_arg.kind == "list":
                    covers_values = tuple(str(item.value) for item in covers_arg.value or () if item.kind == "str")
                entries.append(RegistryEntry(name, category, name_arg.text, Site(module.path, call.span, call.scope), covers_values))
        if not grew:
            break
    return entries


def _entry_spec(program: Program, module: Module, call: Call, derived: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    settings = program.settings
    if _entry_call(call, set(settings.registry_entry_calls)):
        return settings.registry_name_param, settings.registry_covers_param
    if derived:
        for target in program.resolve_call(module, call).targets:
            if target in derived:
                return derived[target]
    return None


def _entry_call(call: Call, patterns: set[str]) -> bool:
    """``StateEntry`` matches ``StateEntry(...)``/``m.StateEntry(...)``; ``registry.add`` matches
    ``self.registry.add(...)`` (the last components of the callee)."""
    for pattern in patterns:
        if "." in pattern:
            if call.func == pattern or call.func.endswith("." + pattern):
                return True
        elif call.method == pattern:
            return True
    return False


def _entry_args(
    program: Program, module: Module, call: Call, name_param: str, covers_param: str
) -> tuple[Arg | None, Arg | None, Arg | None]:
    settings = program.settings
    params: list[str] = []
    for target in program.resolve_call(module, call).targets:
        _, function = program.functions[target]
        params = [p for p in function.params if p not in ("self", "cls")]
        break
    else:
        kind, key = program.lookup(program.canonical(module, call.func))
        if kind == "class":
            params = list(program.classes[key][1].fields)
    if not params:
        params = [name_param, settings.registry_category_param]

    def pick(param: str) -> Arg | None:
        if not param:
            return None
        arg = call.kwarg(param)
        if arg is None and param in params:
            index = params.index(param)
            if index < len(call.args):
                arg = call.args[index]
        return arg

    return pick(name_param), pick(settings.registry_category_param), pick(covers_param)
