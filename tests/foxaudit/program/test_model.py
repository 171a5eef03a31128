"""The program model: module names, summaries of broken code, name resolution, the summary cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from foxaudit.program.codec import CodecError
from foxaudit.program.model import Program, SourceRoots, module_name_for
from foxaudit.program.project import Project
from foxaudit.program.pyscan import ModuleSummary, scan_python
from foxaudit.program.settings import ProgramSettings
from foxaudit.sources.base import SourceFile
from foxaudit.store import Store


def _project(root: Path, files: dict[str, str], cache: Store | None = None) -> Project:
    sources = [SourceFile.from_text(path, text) for path, text in sorted(files.items())]
    return Project(root=root, files=sources, cache=cache)


def _summary_entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("v1/*/*.summary"))


def test_module_names_follow_source_roots() -> None:
    assert module_name_for("pkg/sub/__init__.py", (".",)) == ("pkg.sub", True)
    assert module_name_for("src/pkg/mod.py", ("src", ".")) == ("pkg.mod", False)
    # A script whose path is no module name keeps a node named by its path (no import can name it)
    assert module_name_for("scripts/my-tool.py", (".",)) == ("scripts.my-tool", False)
    assert module_name_for("configs/COCO-Detection/retina.py", (".",)) == ("configs.COCO-Detection.retina", False)
    assert module_name_for("scripts/my.tool.py", (".",)) is None  # would read as `scripts.my.tool`
    assert module_name_for("my-app/__init__.py", (".",)) is None  # a package no import can name
    assert module_name_for("pkg/mod.pyi", (".",)) is None


def test_a_source_root_inside_a_package_keeps_the_package_name(tmp_path: Path) -> None:
    root = tmp_path / "site" / "torch"
    (root / "_dynamo").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    roots = SourceRoots.at(root, (".",))
    assert roots.packages == ("torch",)
    assert module_name_for("_dynamo/decorators.py", roots) == ("torch._dynamo.decorators", False)
    assert module_name_for("__init__.py", roots) == ("torch", True)
    assert SourceRoots.at(tmp_path / "site", (".",)).packages == ("",)  # no `__init__.py`: a sys.path entry


def test_broken_python_still_yields_what_parsed() -> None:
    source = SourceFile.from_text("pkg/broken.py", "import os\nfrom . import ok\ndef f(:\n    x.item()\nclass C:\n    def g(self): return 1\n")
    summary = scan_python(source, "pkg.broken", False)
    assert [ref.module for ref in summary.imports] == ["os", "pkg"]
    assert any(call.method == "item" for call in summary.calls)
    assert "C.g" in {function.qualname for function in summary.functions}


def test_relative_import_above_the_top_is_unresolved() -> None:
    summary = scan_python(SourceFile.from_text("pkg/m.py", "from ... import x\n"), "pkg.m", False)
    assert summary.imports[0].module == ""


def test_resolution_through_reexports_aliases_and_star(tmp_path: Path) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "from .impl import work as public_work\n",
        "pkg/impl.py": "def work():\n    return 1\n\nclass Engine:\n    def run(self):\n        return work()\n",
        "pkg/star.py": "from pkg.impl import *\n\ndef go():\n    return work()\n",
        "pkg/user.py": (
            "import pkg as p\nfrom pkg.impl import Engine as E\n\n"
            "def main(engine: E):\n    p.public_work()\n    engine.run()\n    local = E()\n    local.run()\n"
        ),
    })  # fmt: skip
    program = Program(project, ProgramSettings(), use_cache=False)
    user = program.modules["pkg.user"]
    targets = [program.resolve_call(user, call).targets for call in user.summary.calls]
    assert ("pkg.impl:work",) in targets  # p.public_work → re-export in pkg/__init__.py
    assert targets.count(("pkg.impl:Engine.run",)) == 2  # annotated parameter and local instance
    star = program.modules["pkg.star"]
    assert program.resolve_call(star, star.summary.calls[0]).targets == ("pkg.impl:work",)


def test_summary_cache_hits_and_survives_corruption(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/a.py": "def f(x):\n    return x.item()\n"}
    store = Store(tmp_path / "cache")
    first = Program(_project(tmp_path, files, store), ProgramSettings())
    assert len(_summary_entries(tmp_path / "cache")) == 2 and first.cache.dirty  # one summary per file
    assert (tmp_path / "cache" / ".gitignore").read_bytes().endswith(b"*\n")
    second = Program(_project(tmp_path, files, store), ProgramSettings())
    assert not second.cache.dirty  # every summary came from the cache
    assert second.modules["pkg.a"].summary.calls == first.modules["pkg.a"].summary.calls
    for entry in _summary_entries(tmp_path / "cache"):
        entry.write_bytes(b"not a summary")
    third = Program(_project(tmp_path, files, store), ProgramSettings())
    assert third.cache.dirty  # corrupt entries are misses, rescanned
    assert third.modules["pkg.a"].summary.calls == first.modules["pkg.a"].summary.calls


def test_project_without_a_cache_writes_nothing(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "", "pkg/a.py": "def f(x):\n    return x.item()\n"}
    Program(_project(tmp_path, files), ProgramSettings())
    assert list(tmp_path.iterdir()) == []


def test_a_planted_cache_entry_never_runs_code(tmp_path: Path) -> None:
    """Entry names are computable from public inputs: a commit can plant one where the next run
    reads. The old pickle format ran the planted payload; the data-only format treats it as a miss."""
    import pickle

    from foxaudit.program.model import _SummaryCache

    text = "def f(x):\n    return x.item()\n"
    witness = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (Path.write_text, (witness, "ran"))

    import hashlib

    key = ("py", "pkg/a.py", "pkg.a", False, hashlib.sha1(text.encode()).hexdigest())
    name = _SummaryCache.name(key)
    store = Store(tmp_path / "repo" / ".foxaudit_cache")
    store.put_bytes(name, pickle.dumps(Payload()), _SummaryCache.SUFFIX)
    # A well-formed entry that names a class outside the summary types is a miss as well.
    crafted = _SummaryCache.name(("py", "pkg/__init__.py", "pkg", True, hashlib.sha1(b"").hexdigest()))
    store.put_bytes(crafted, crafted.encode() + b'\npy\n["d","path",["os.system","touch pwned"]]\n[]', _SummaryCache.SUFFIX)
    program = Program(_project(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/a.py": text}, store), ProgramSettings())
    assert not witness.exists()
    assert program.cache.dirty  # both planted entries were misses and got rescanned
    assert [call.method for call in program.modules["pkg.a"].summary.calls] == ["item"]
    assert program.modules["pkg"].summary.path == "pkg/__init__.py"


def test_codec_round_trips_every_summary_value() -> None:
    from foxaudit.program.codec import (
        CodecError,
        decode,
        dump_summary,
        encode,
        load_summary,
    )

    source = SourceFile.from_text("pkg/m.py", "import torch as t\nS = {'a': 1}\n\ndef f(x, y=(1, 'a', -2.5)):\n    return t.zeros(3, dtype=x).item()\n")
    summary = scan_python(source, "pkg.m", False)
    copy = load_summary("k", dump_summary("k", summary))
    assert not copy.body_loaded and copy == summary
    assert copy.constants["S"] == summary.constants["S"]
    assert decode(encode(1 << 20_000)) == 1 << 20_000  # past JSON's (CPython's) decimal limit
    assert decode(encode({1: frozenset({"a"}), "x": [(None, True)]})) == {1: frozenset({"a"}), "x": [(None, True)]}
    for bad in (b"k\npy\n[1]\n[]", b"other\npy\n[\"d\"]\n[]", b"k\npy\n[\"Span\",1]\n[]", b"k\ncuda\n[\"d\"]"):
        try:
            load_summary("k", bad)
        except CodecError:
            continue
        raise AssertionError(f"{bad!r} decoded")


def test_cuda_kernels_survive_error_nodes_and_constants_evaluate() -> None:
    from foxaudit.program.cudascan import evaluate_c, scan_cuda

    source = SourceFile.from_text(
        "k.cu",
        "#define BLOCK (2 * 128)  // threads\n"
        "#define HALF BLOCK / 2\n"
        "struct __align__(16) Pair { float a, b; };\n"
        "constexpr int N = HALF + 1;\n"
        'extern "C" __global__ void __launch_bounds__(256) after_error(float* x) { x[0] = 0.0f; }\n'
        "template <int K> __global__ void templated(float* x) { x[K] = 1.0f; }\n"
        "__device__ float helper(float v) { return v; }\n",
    )
    summary = scan_cuda(source)
    assert sorted(k.name for k in summary.kernels) == ["after_error", "templated"]
    values = {c.name: c.value for c in summary.constants}
    assert values == {"BLOCK": 256, "HALF": 128, "N": 129}
    assert evaluate_c("0x10u << 2", {}) == 64
    assert evaluate_c("sizeof(float)", {}) is None  # not guessed


def test_imaginary_literals_summarise_and_round_trip(tmp_path: Path) -> None:
    """pandas has `x = 1j`: tree-sitter calls it an integer, the summary codec could not encode the
    complex value, and every whole-project rule failed (and rebuilt the program) on pandas."""
    from foxaudit.program.codec import decode, dump_summary, encode, load_summary

    files = {"pkg/__init__.py": "", "pkg/a.py": "I = 1j\nJ = 2.5j\n\ndef f(x):\n    return x * 3j\n"}
    summary = scan_python(SourceFile.from_text("pkg/a.py", files["pkg/a.py"]), "pkg.a", False)
    assert summary.constants["I"].kind == "other"
    assert load_summary("k", dump_summary("k", summary)) == summary
    assert decode(encode(1 + 2j)) == 1 + 2j
    store = Store(tmp_path / "cache")
    Program(_project(tmp_path, files, store), ProgramSettings())
    assert Program(_project(tmp_path, files, store), ProgramSettings()).cache.dirty is False


def test_codec_writes_records_by_their_declared_types() -> None:
    """Records are arrays of their fields (no tag per tuple or record), read back by the type each
    field declares: tuples stay tuples, sets sets, optional records None or the record; a literal
    value (declared ``object``) keeps its exact type through the tagged form."""
    import json

    from foxaudit.program.codec import dump_summary, load_summary
    from foxaudit.program.cudascan import scan_cuda

    text = "import torch\nN = 10 ** 2\nT = (1, 'a', 2.5, None, 3j)\nx = torch.zeros(N).item()\nprint(x)\n"
    summary = scan_python(SourceFile.from_text("pkg/m.py", text), "pkg.m", False)
    data = dump_summary("k", summary)
    index = json.loads(data.split(b"\n")[2])
    imports = json.loads(data.split(b"\n")[3 + ModuleSummary.LAZY.index("imports")])  # a lazy line
    assert imports[0][0] == "torch" and type(imports[0][1]) is list  # no "t" tags
    # Module-level calls: (callee, method, bound) arrays in sorted order, no "f"/"t" tags.
    assert index["module_calls"] == [["print", "print", False], ["torch.zeros", "zeros", False], ["torch.zeros().item", "item", True]]
    copy = load_summary("k", data)
    assert copy == summary
    assert type(copy.module_calls) is frozenset and copy.module_calls == summary.module_calls
    assert type(copy.constants["T"].value) is tuple and copy.constants["T"].value[4].kind == "other"
    assert {type(call.args) for call in copy.calls} == {tuple}
    assert all(a.call is None or a.call.method for a in copy.assignments)
    cuda = scan_cuda(SourceFile.from_text("k.cu", "#define BIG (1 << 40)\n#define F 0.5f\n__global__ void k(float* x) { x[0] = F; }\n"))
    again = load_summary("c", dump_summary("c", cuda))
    assert again == cuda and [c.value for c in again.constants] == [1 << 40, 0.5]


def test_lazy_index_fields_are_parsed_on_first_read_and_a_damaged_one_reads_empty() -> None:
    from foxaudit.program.codec import dump_summary, load_summary
    from foxaudit.program.pyscan import Encoded, ModuleSummary

    text = (
        "import torch\n\n\n@torch.no_grad()\ndef read(x):\n    print('start')\n"
        "    with torch.cuda.graph(g):\n        return x.item(), x.cpu()\n"
    )
    summary = scan_python(SourceFile.from_text("pkg/m.py", text), "pkg.m", False)
    assert [call.method for call in summary.transfer_calls] == ["print", "item", "cpu"]
    assert summary.decorators == {"torch.no_grad"} and summary.with_funcs == {"torch.cuda.graph"}
    assert summary.function_names == {"read"} and summary.method_names == frozenset()
    data = dump_summary("k", summary)
    loaded = load_summary("k", data)
    for name in ModuleSummary.LAZY:
        assert type(loaded.__dict__[name]) is Encoded, name  # not even parsed with the index
    assert dump_summary("k", loaded) == data  # written back as it was read
    assert loaded.transfer_calls == summary.transfer_calls
    assert type(loaded.__dict__["transfer_calls"]) is tuple  # decoded once, kept
    assert type(loaded.__dict__["withs"]) is Encoded  # the others stay as they were
    assert loaded == summary  # compares the decoded records
    lazy = 3 + ModuleSummary.LAZY.index("transfer_calls")
    damaged = replaced_line(data, lazy, lambda line: line.replace(b"[[", b'[["not a call"],[', 1))
    assert load_summary("k", damaged).transfer_calls == ()
    unparsable = replaced_line(data, 3, lambda line: b"[[")
    assert load_summary("k", unparsable).functions == [] and load_summary("k", unparsable).withs == summary.withs
    # A line whose length is not the one the entry's header gives: the entry is malformed (a miss).
    lines = data.split(b"\n")
    with pytest.raises(CodecError):
        load_summary("k", b"\n".join([*lines[:3], lines[3] + b" ", *lines[4:]]))


def replaced_line(data: bytes, number: int, change) -> bytes:
    """A Python summary entry with line ``number`` (0-based) changed and its header's lengths kept
    true: a damaged field that still parses as an entry."""
    lines = data.split(b"\n", 3 + len(ModuleSummary.LAZY))
    lines[number] = change(lines[number])
    lines[1] = b"py " + b" ".join(str(len(line)).encode() for line in lines[2:-1])
    return b"\n".join(lines)


def test_an_entry_read_from_its_file_reads_its_index_first_and_the_rest_when_asked(tmp_path: Path) -> None:
    from foxaudit.program.codec import dump_summary, read_summary

    # Large enough that the entry's first read is not the whole file.
    text = "import torch\n\n\n" + "".join(f"def f{n}(x):\n    with torch.cuda.graph(g):\n        return x.item() + {n}\n\n\n" for n in range(400))
    summary = scan_python(SourceFile.from_text("pkg/m.py", text), "pkg.m", False)
    data = dump_summary("k", summary)
    entry = tmp_path / "entry"
    entry.write_bytes(data)
    assert len(data) > 4 * 16384
    loaded = read_summary("k", str(entry))
    assert callable(loaded._blob) and all(callable(loaded.__dict__[name]._raw) for name in ModuleSummary.LAZY)
    assert loaded == summary and dump_summary("k", read_summary("k", str(entry))) == data
    assert read_summary("k", str(tmp_path / "missing")) is None
    with pytest.raises(CodecError):
        read_summary("other", str(entry))
    # The file replaced by something else after its index was read: the rest reads as damaged (empty).
    early = read_summary("k", str(entry))
    entry.write_bytes(b"\n".join(data.split(b"\n", 3)[:3]))  # its key, header and index alone
    assert early.withs == [] and early.calls == [] and early.decorators == summary.decorators


def test_the_scanners_arrays_are_what_the_record_encoder_writes() -> None:
    """The scanner builds calls, arguments and the body's records as the codec's arrays (no record
    objects, no call back per record when encoding): decoded into records and written again by
    the record encoder, a summary has the same bytes — literals of every kind, nested lists,
    concatenations, comprehensions, keys, kwargs, ``with``
    contexts and transfer calls included."""
    from foxaudit.program import pyscan
    from foxaudit.program.codec import _FIELDS, dump_summary, encode, load_summary

    text = (
        "import torch\nimport importlib\nfrom numpy import asarray as arr\n"
        "H = -0x10\nF = -2.5e3\nB = b'\\xff'\nS = 'a' 'b'\nE = '\\n'\n"
        "L = [1, 'a', [2.5, None], -3]\nC = PRE + r'''x''' + ('y' + Z)\nK = [f'k<{t}>' for t in (1, 2)]\n"
        "D = {'key': v, 7: w, x: y}\nI = 3j\nP = ('a', 'b')\nG = (q for q, r in z if r)\n"
        "importlib.import_module('.sub', package=__name__)\n"
        "def f(x, *a, **k):\n"
        "    with torch.cuda.graph(g) as c, lock:\n"
        "        y = x.to('cuda', non_blocking=True).item()\n"
        "        buf['slot'] = 1\n        buf[0] += 2\n        buf[i, j].fill_(0)\n"
        "        arr(x)(y)\n        print(*a, **k)\n"
        "    self.z = make(F, L, key=-1, other=[1, 2])\n"
    )
    summary = scan_python(SourceFile.from_text("pkg/m.py", text), "pkg.m", True)
    data = dump_summary("k", summary)
    copy = load_summary("k", data)
    for name in ModuleSummary.LAZY:
        getattr(copy, name)
    assert copy.calls and copy.assignments and copy.subscript_writes and copy.dict_entries and copy.withs
    # A literal's text is capped, so no scanned integer is long; the tagged form would still hold one.
    assert pyscan._tagged_number(-(1 << 15_000)) == encode(-(1 << 15_000))
    assert dump_summary("k", copy) == data  # every record written again by the record encoder
    # An assignment names the call it binds by position, and reads back as that very call.
    bound = [a.call for a in copy.assignments if a.call is not None]
    assert bound and all(any(call is other for other in copy.calls) for call in bound)
    fields = {cls: _FIELDS[cls] for cls in (pyscan.Arg, pyscan.Call, pyscan.WithBlock)}
    assert [fields[pyscan.Arg].index(name) for name in ("kind", "text", "value")] == [pyscan._KIND, pyscan._TEXT, pyscan._VALUE]
    assert [fields[pyscan.Call].index(name) for name in ("func", "method", "scope", "bound_to")] == [
        pyscan._FUNC, pyscan._METHOD, pyscan._SCOPE, pyscan._BOUND_TO,
    ]  # fmt: skip
    assert fields[pyscan.WithBlock].index("contexts") == pyscan._CONTEXTS


def test_node_texts_and_spans_from_the_decoded_text_match_decoding_bytes() -> None:
    """The scanner slices a file's decoded text (mapping byte offsets through its non-ASCII
    characters) instead of decoding each node's bytes: every node's text and span agree with
    ``SourceFile.node_text`` and ``SourceFile.position``, for 2-, 3- and 4-byte characters."""
    from foxaudit.program import pyscan

    text = "é = '中文' + f'{x}→🙂'  # ünïcode\nclass Ω:\n    def ƒ(self, 🙂=None):\n        return \"𝔘\" * 2\nx = 1\n"
    source = SourceFile.from_text("pkg/u.py", text)
    char_at = pyscan._char_offsets(source.text)
    node_text = pyscan._mapped_text(source.text, char_at)
    span = pyscan._mapped_span(char_at)
    stack = [source.tree.root_node]
    seen = 0
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        seen += 1
        assert node_text(node) == source.node_text(node), node
        assert span(node) == (*source.position(node.start_byte), *source.position(node.end_byte)), node
    assert seen > 50
