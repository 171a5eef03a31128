"""Summaries made as an index alone (``scan_python(body=False)``): the per-file pass skips the
body (calls' arguments, assignments, subscript writes, dict entries) where the project pass will
read few, and a body is scanned when an analysis first reads it."""

from __future__ import annotations

from pathlib import Path

from foxaudit.program.analysis import bodies_read_widely
from foxaudit.program.codec import body_offset, dump_summary, load_summary
from foxaudit.program.model import BODY_SUFFIX, Prepared, Program, prepare_summary
from foxaudit.program.project import Project
from foxaudit.program.pyscan import UNSCANNED, scan_python
from foxaudit.program.settings import ProgramSettings
from foxaudit.sources.base import SourceFile
from foxaudit.store import Store

# Every kind of record an index holds whole beside the calls it only counts: transfer calls (by
# method, by builtin, through a renamed import), `with` contexts, a dynamic import, module
# constants, names bound, identities, module-level calls bound or not.
RICH = '''\
import importlib
import torch
from cupy import asnumpy as to_host
from . import sibling

LIMIT = 4
NAMES = ["a", "b"] + [f"k{t}" for t in (1, 2)]
SOURCE = PREAMBLE + "body"
handler = make_handler(LIMIT)
register(handler)
a, b = 1, 2


def f(x, y=3):
    """Docstring."""
    table = {"one": x, 2: y}
    buffer[0] = x
    buffer[LIMIT] += 1
    state["k"].fill_(0)
    value = x.item() + float(y)
    plugin = importlib.import_module(".plugins", package=__package__)
    with torch.cuda.graph(g), open(path) as handle, lock:
        host = to_host(handle.read().cpu())
    if fn is markers.graph_break:
        return value.tolist()
    return print(plugin.run(x, *y, key=table, **kw))


class Model(torch.nn.Module):
    size: int = 3
    alias = staticmethod(f)

    def forward(self, x):
        self.cache = torch.zeros(4, device="cuda")
        return self.layer(x).sum().get()
'''


def _source(text: str = RICH) -> SourceFile:
    return SourceFile.from_text("pkg/m.py", text)


def test_an_index_alone_is_the_index_of_a_full_scan() -> None:
    full = scan_python(_source(), "pkg.m", False)
    alone = scan_python(_source(), "pkg.m", False, body=False)
    whole, index = dump_summary("key", full), dump_summary("key", alone)
    assert index[: body_offset(index)] == whole[: body_offset(whole)]
    assert index[body_offset(index) :] == UNSCANNED and whole[body_offset(whole) :] != UNSCANNED
    # Not vacuous: the index holds transfer calls, `with` contexts, the dynamic import, constants.
    assert [call.method for call in alone.transfer_calls] == ["item", "float", "to_host", "cpu", "tolist", "print", "get"]
    assert [context.func for block in alone.withs for context in block.contexts] == ["torch.cuda.graph", "open"]
    assert [ref.module for ref in alone.imports if ref.dynamic] == ["pkg.plugins"]
    assert set(alone.constants) == {"LIMIT", "NAMES", "SOURCE", "handler"}
    assert alone.module_calls == {("make_handler", "make_handler", True), ("register", "register", False), ("staticmethod", "staticmethod", True)}


def test_an_unscanned_body_is_scanned_on_first_read_as_a_full_scan_makes_it() -> None:
    full = scan_python(_source(), "pkg.m", False)
    alone = load_summary("key", dump_summary("key", scan_python(_source(), "pkg.m", False, body=False)))
    alone.rescan_with(lambda: full.body_bytes(), digest=True)
    assert not alone.body_loaded
    assert alone.calls == full.calls and alone.assignments == full.assignments
    assert alone.subscript_writes == full.subscript_writes and alone.dict_entries == full.dict_entries
    assert alone == full and alone.body_digest


def test_long_chains_are_read_without_recursion() -> None:
    """A `+` chain and a dotted chain of 5,000 links: the full scan once ran out of recursion on
    them inside a function (the file was left out of every whole-project rule)."""
    text = "def f(a):\n    x = " + " + ".join(["'a'"] * 5000) + "\n    return g(a" + ".b" * 5000 + ")\n"
    summary = scan_python(SourceFile.from_text("m.py", text), "m", False)
    (assignment,) = summary.assignments
    assert assignment.value.kind == "concat" and len(assignment.value.value) == 5000
    (call,) = summary.calls
    assert call.args[0].dotted == "a" + ".b" * 5000


def test_a_body_the_import_graph_reads_is_made_with_the_index() -> None:
    """Every run's import graph reads the body of a module that may extend sys.path or import
    by a computed name: the per-file pass makes it from the tree at hand, not the parent later."""
    dynamic = prepare_summary(_source(), (".",), None, body=False)
    assert dynamic is not None and dynamic.summary is not None
    assert dynamic.summary.body_bytes() == scan_python(_source(), "pkg.m", False).body_bytes()
    plain = prepare_summary(_source(PLAIN), (".",), None, body=False)
    assert plain is not None and plain.summary is not None and plain.summary.body_bytes() == UNSCANNED


# RICH without the dynamic import: a body no run's import graph reads.
PLAIN = RICH.replace("importlib.import_module", "importlib.reload")


def test_the_program_scans_a_body_when_read_and_caches_it(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/m.py": PLAIN}
    sources = [SourceFile.from_text(path, text) for path, text in sorted(files.items())]
    roots = (".",)
    handed: dict[str, Prepared] = {source.path: prepare_summary(source, roots, None, body=False) for source in sources}  # type: ignore[misc]
    store = Store(tmp_path / "cache")
    program = Program(Project(root=tmp_path, files=sources, cache=store, summaries={p: h.without_summary() for p, h in handed.items()}), ProgramSettings())
    module = program.modules["pkg.m"]
    assert not module.summary.body_loaded
    full = scan_python(SourceFile.from_text("pkg/m.py", PLAIN), "pkg.m", False)
    assert module.summary.calls == full.calls  # scanned here, on the first read
    (entry,) = (tmp_path / "cache").rglob("*" + BODY_SUFFIX)
    assert entry.read_bytes() == full.body_bytes()
    # The next build reads the cached body instead of scanning (a planted empty one shows it).
    entry.chmod(0o644)
    entry.write_bytes(b'{"calls":[],"assignments":[],"subscript_writes":[],"dict_entries":[]}')
    handed = {path: prepared.without_summary() for path, prepared in handed.items()}
    again = Program(Project(root=tmp_path, files=sources, cache=store, summaries=handed), ProgramSettings())
    assert again.modules["pkg.m"].summary.calls == []


def test_the_prediction_of_wide_body_reads() -> None:
    plain = [b"import os\n\ndef f():\n    return os.getcwd()\n"]
    assert not bodies_read_widely(ProgramSettings(), plain)
    assert bodies_read_widely(ProgramSettings(), [*plain, b"mod = cupy.RawModule(code=SRC)\n"])
    assert bodies_read_widely(ProgramSettings(), [b"@hot_path\ndef step(x):\n    return x\n"])
    assert bodies_read_widely(ProgramSettings(layout_module="pkg/layout.py"), plain)
    assert bodies_read_widely(ProgramSettings(state_classes=("pkg.state:*",)), plain)


def test_a_program_is_freed_by_reference_counting(tmp_path: Path) -> None:
    """Each summary keeps what scans its body; that must not hold the Program (a reference cycle
    of the whole model is freed only by a full collection: seconds on a large tree)."""
    import gc
    import weakref

    sources = [SourceFile.from_text("pkg/__init__.py", ""), SourceFile.from_text("pkg/m.py", PLAIN)]
    enabled = gc.isenabled()
    gc.disable()
    try:
        program = Program(Project(root=tmp_path, files=sources), ProgramSettings())
        assert program.modules["pkg.m"].summary.calls  # a body read through the summary
        alive = weakref.ref(program)
        del program
        assert alive() is None
    finally:
        if enabled:
            gc.enable()
