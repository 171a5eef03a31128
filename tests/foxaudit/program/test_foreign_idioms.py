"""Whole-program rules on repositories that never heard of foxaudit (no configuration).

Each snippet reproduces one idiom measured on llm.c, cuda-samples, ThunderKittens, CuPy, cleanrl
(docs/foxaudit-foreign.md): kernels launched from C++, CuPy's ways of holding and naming
kernels, and modules reached the way ML repositories run them. Originals written for these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from program_support import findings, load_project

from foxaudit.program.analysis import Analysis, analysis_for
from foxaudit.program.wiring import ORPHAN, PARTIAL, TEST_DATA, UNRESOLVED, WIRED


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _analyze(tmp_path: Path, files: dict[str, str]) -> Analysis:
    return analysis_for(load_project(_write(tmp_path / "repo", files)), use_cache=False)


def _kernels(analysis: Analysis) -> dict[str, str]:
    return {row.name: row.status for row in analysis.kernels.rows}


def _modules(analysis: Analysis) -> dict[str, str]:
    return {row.name: row.status for row in analysis.imports.rows}


def _fx201(tmp_path: Path, files: dict[str, str]) -> list[str]:
    """The paths FX201 reports in a project of ``files`` (a library named `lib` unless they say)."""
    return sorted(d.path for d in findings(_analyze(tmp_path, {"pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n",
                                                               **files}), "FX201"))


# -- kernels launched from C++ ------------------------------------------------------------------
HOST_LAUNCHES = """\
#include "helper.impl"
template <typename T, int BLOCK>
__global__ void scale_tmpl(T* x) { x[threadIdx.x] *= 2; }
__global__ void direct(float* x) { x[0] = 1.0f; }
__global__ void by_pointer(float* x) { x[0] = 2.0f; }
__global__ void cooperative(float* x) { x[0] = 3.0f; }
__global__ void graph_node(float* x) { x[0] = 4.0f; }
__global__ void as_template_argument(float* x) { x[0] = 5.0f; }
__global__ void only_under_option(float* x) { x[0] = 6.0f; }
__global__ void only_under_if0(float* x) { x[0] = 7.0f; }
__global__ void from_included(float* x) { x[0] = 8.0f; }
__global__ void recursive_only(float* x) { recursive_only<<<1, 1>>>(x); }
__global__ void never_used(float* x) { x[0] = 9.0f; }
namespace ns { __global__ void qualified(float* x) { x[0] = 10.0f; } }
template <bool A, bool B> __global__ void chosen(float* x) { x[0] = A + B; }

template <auto K> void run(float* x) { K<<<1, 1>>>(x); }

void host(float* x, cudaStream_t stream, void** args) {
    scale_tmpl<float,
               128>
        <<<dim3(4), 128, 0, stream>>>(x);
    direct<<<1, 1>>>(x);
    ns::qualified<<<1, 1>>>(x);
    void (*kernel)(float*) = by_pointer;
    kernel<<<1, 1>>>(x);
    cudaLaunchCooperativeKernel((void*)cooperative, 1, 1, args, 0, stream);
    cudaKernelNodeParams params = {};
    params.func = (void*)graph_node;
    run<as_template_argument>(x);
    auto picked = x ? (stream ? &chosen<true, true> : &chosen<true, false>) : (&chosen<false, true>);
    picked<<<1, 1>>>(x);
#ifdef WITH_OPTION
    only_under_option<<<1, 1>>>(x);
#endif
#if 0
    only_under_if0<<<1, 1>>>(x);
#endif
}
"""


def test_kernels_launched_from_cpp_host_code_are_wired(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "kernels/ops.cu": HOST_LAUNCHES,
        "kernels/helper.impl": "void helper(float* x) { from_included<<<1, 1>>>(x); }\n",
    })  # fmt: skip
    status = _kernels(analysis)
    for name in ("scale_tmpl", "direct", "qualified", "by_pointer", "cooperative", "graph_node",
                 "as_template_argument", "only_under_option", "from_included", "chosen"):  # fmt: skip
        assert status[name] == WIRED, name
    # Dead: launched only by itself, only under #if 0, or not at all.
    assert {d.message.split("`")[1] for d in findings(analysis, "FX202")} == {"recursive_only", "only_under_if0", "never_used"}
    reasons = {row.name: row.reason for row in analysis.kernels.rows}
    assert reasons["direct"] == "launched from C++ (`<<<…>>>`)"
    assert reasons["cooperative"] == "launched from C++ (`cudaLaunchCooperativeKernel`)"
    assert "another build configuration" in reasons["only_under_option"]


def test_driver_api_lookups_in_a_cpp_file_beside_the_kernel_are_launches(tmp_path: Path) -> None:
    """cuda-samples' driver-API samples: the .cu is compiled to PTX, a .cpp beside it looks the
    kernel up by name (directly or from a table of names)."""
    analysis = _analyze(tmp_path, {
        "sample/kernel.cu": 'extern "C" __global__ void vec_add(float* x) {}\n'
                            'extern "C" __global__ void mm_bs16(float* x) {}\n'
                            'extern "C" __global__ void unused_here(float* x) {}\n',
        "sample/main.cpp": 'void run(CUmodule m) {\n  CUfunction f;\n  cuModuleGetFunction(&f, m, "vec_add");\n'
                           '  const char* names[] = {"mm_bs16"};\n}\n',
    })  # fmt: skip
    status = _kernels(analysis)
    assert status["vec_add"] == WIRED and status["mm_bs16"] == WIRED
    assert status["unused_here"] == ORPHAN


# -- CuPy idioms --------------------------------------------------------------------------------
def test_concatenated_sources_launch_bounds_and_module_level_kernels(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "lib/__init__.py": "",
        "lib/ops.py": (
            "import cupy\n\n"
            "PREAMBLE = '#define N 4\\n'\n"
            "SOURCE = PREAMBLE + r'''\n"
            "extern \"C\" __global__ void __launch_bounds__(256) bounded(float* x) { x[0] = N; }\n"
            "'''\n"
            "_bounded = cupy.RawKernel(SOURCE, 'bounded')\n\n\n"
            "def run(x):\n"
            "    _bounded((1,), (1,), (x,))\n"
        ),
    })  # fmt: skip
    assert _kernels(analysis) == {"bounded": WIRED}  # not `__launch_bounds__`, not FX204
    assert findings(analysis, "FX203") == [] and findings(analysis, "FX204") == []


def test_name_expressions_from_fstrings_and_comprehensions(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "lib/__init__.py": "",
        "lib/ops.py": (
            "import cupy\n\n"
            "CODE = r'''\n"
            "template <typename T> __global__ void reduce_k(T* x) {}\n"
            "extern \"C\" __global__ void fill_f32(float* x) {}\n"
            "extern \"C\" __global__ void fill_f64(double* x) {}\n"
            "'''\n"
            "TYPES = ('float', 'double')\n"
            "MODULE = cupy.RawModule(code=CODE, name_expressions=[f'reduce_k<{t}>' for t in TYPES]\n"
            "                        + [f'fill_{s}' for s in ['f32', 'f64']])\n\n\n"
            "def run(x, t):\n"
            "    MODULE.get_function(f'reduce_k<{t}>')((1,), (1,), (x,))\n"
            "    MODULE.get_function('fill_f32')((1,), (1,), (x,))\n"
            "    MODULE.get_function('fill_f64')((1,), (1,), (x,))\n"
        ),
    })  # fmt: skip
    assert _kernels(analysis) == {"reduce_k": WIRED, "fill_f32": WIRED, "fill_f64": WIRED}
    assert findings(analysis, "FX205") == []


def test_sources_read_from_headers_at_run_time_and_loader_with_template_name(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "lib/__init__.py": "",
        "lib/cuda/flood.h": "extern \"C\" __global__ void flood(int* x) {}\n",
        "lib/pba.py": (
            "import os\nimport cupy\n\n\n"
            "def source():\n"
            "    with open(os.path.join(os.path.dirname(__file__), 'cuda', 'flood.h')) as f:\n"
            "        return f.read()\n\n\n"
            "def get_func(module, func_name, *types):\n"
            "    kernel_name = f'{func_name}<{types}>' if types else func_name\n"
            "    return module.get_function(kernel_name)\n\n\n"
            "def run(x):\n"
            "    module = cupy.RawModule(code=source())\n"
            "    get_func(module, 'flood')((1,), (1,), (x,))\n"
            "    module.get_function('built_elsewhere')((1,), (1,), (x,))\n"
        ),
    })  # fmt: skip
    rows = {row.name: row for row in analysis.kernels.rows}
    assert rows["flood"].status == WIRED and rows["flood"].site.path == "lib/cuda/flood.h"
    assert analysis.kernels.loaders["lib.pba:get_func"] == "func_name"
    # Its module's source is a function's result: "defined nowhere" would be a guess.
    assert rows["built_elsewhere"].status == UNRESOLVED
    assert findings(analysis, "FX203") == [] and findings(analysis, "FX205") == []


def test_names_built_at_run_time_make_kernels_partial_not_findings(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "lib/__init__.py": "",
        "lib/up.py": (
            "import cupy\n\n"
            "CODE = r'''\n"
            "extern \"C\" __global__ void up_float32(float* x) {}\n"
            "extern \"C\" __global__ void up_float64(double* x) {}\n"
            "'''\n"
            "MODULE = cupy.RawModule(code=CODE, name_expressions=['up_float32', 'up_float64'])\n\n\n"
            "def run(x):\n"
            "    MODULE.get_function(f'up_{x.dtype.name}')((1,), (1,), (x,))\n"
        ),
    })  # fmt: skip
    assert _kernels(analysis) == {"up_float32": PARTIAL, "up_float64": PARTIAL}
    assert findings(analysis, "FX204") == []
    (note,) = findings(analysis, "FX205")  # said once, where the name is built
    assert note.line == 11


def test_get_function_without_a_name_or_on_a_project_class_is_no_kernel_load(tmp_path: Path) -> None:
    """torch's dynamo and numba: `get_function()` methods that have nothing to do with CuPy."""
    analysis = _analyze(tmp_path, {
        "lib/__init__.py": "",
        "lib/vars.py": (
            "class Variable:\n"
            "    def get_function(self, name=None):\n"
            "        return name\n\n\n"
            "def f(tx, variable: Variable, key):\n"
            "    tx.get_function()\n"
            "    variable.get_function(key)\n"
        ),
        # numba's lowering: `self.context.get_function(fnty, sig)` on a context foxaudit cannot
        # type (55 ghost and unresolved kernels); a kernel load takes the name alone.
        "lib/lowering.py": (
            "class Lower:\n    def lower(self, fnty, sig):\n        self.context.get_function('getiter', sig)\n"
            "        return self.context.get_function(fnty, sig)\n"
        ),
    })  # fmt: skip
    assert analysis.kernels.loads == []
    assert findings(analysis, "FX203") == findings(analysis, "FX205") == []


# -- modules reached the way ML repositories reach them ------------------------------------------
def test_scripts_siblings_sys_path_and_cython_imports_are_reached(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'tool'\nversion = '1'\n",
        "tool/__init__.py": "from tool import _core\n",
        # Run as `python -m tool.train`: a module-level command line.
        "tool/train.py": "import argparse\nparser = argparse.ArgumentParser()\nargs = parser.parse_args()\n",
        # Run by path: no __init__.py beside it; its sibling is importable because of that.
        "dev/data/fineweb.py": "from data_common import write\nwrite()\n",
        "dev/data/data_common.py": "def write():\n    return 1\n",
        "dev/data/unused_helper.py": "def g():\n    return 2\n",
        # setup.py adds install/ to sys.path before importing from it.
        "setup.py": "import os\nimport sys\nsys.path.append(os.path.join(os.path.dirname(__file__), 'install'))\n"
                    "import builder\nbuilder.run()\n",
        "install/builder/__init__.py": "from builder._steps import run\n",
        "install/builder/_steps.py": "def run():\n    return 3\n",
        # A Cython module is the only importer of a private Python module.
        "tool/_core/__init__.py": "from tool._core import fast\n",  # a compiled extension
        "tool/_core/fast.pyx": "from tool._core import _helpers\ncimport cython\n",
        "tool/_core/_helpers.py": "def h():\n    return 4\n",
    })  # fmt: skip
    status = _modules(analysis)
    for name in ("tool.train", "dev.data.fineweb", "dev.data.data_common", "setup", "install.builder",
                 "install.builder._steps", "tool._core._helpers"):  # fmt: skip
        assert status[name] == WIRED, name
    assert [d.path for d in findings(analysis, "FX201")] == ["dev/data/unused_helper.py"]


def test_public_modules_of_a_library_without_pyproject(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "mylib/__init__.py": "",
        "mylib/linalg.py": "def solve():\n    return 1\n",
        "mylib/_private.py": "def p():\n    return 2\n",
        "tests/test_linalg.py": "from mylib.linalg import solve\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert status["mylib.linalg"] == WIRED
    assert [d.path for d in findings(analysis, "FX201")] == ["mylib/_private.py"]


@pytest.mark.parametrize(("load", "line"), [
    ("def load(name):\n    return importlib.import_module('app._plugins.' + name)\n", 5),
    # The name built first, then imported: as when it is built in the call.
    ("def load(kind):\n    module_name = f'app._plugins.{kind}'\n    return importlib.import_module(module_name)\n", 6),
], ids=["in the call", "bound to a name first"])  # fmt: skip
def test_import_module_with_a_built_name_is_one_unresolved_note(tmp_path: Path, load: str, line: int) -> None:
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'app'\nversion = '1'\n",
        "app/__init__.py": "",
        "app/_plugins/__init__.py": "import importlib\n\n\n" + load,
        "app/_plugins/_a.py": "A = 1\n",
        "app/_plugins/_b.py": "B = 2\n",
        "app/_plugins/_c.py": "C = 3\n",
        "app/cli.py": "from app._plugins import load\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert {status[name] for name in ("app._plugins._a", "app._plugins._b", "app._plugins._c")} == {UNRESOLVED}
    (note,) = findings(analysis, "FX201")
    assert note.path == "app/_plugins/__init__.py" and note.line == line
    assert note.message.startswith("orphan-module analysis unresolved for 3 modules under `app._plugins`")



def test_relative_and_helper_built_imports_are_unresolved_notes(tmp_path: Path) -> None:
    # Three run-time ways to load every module of a package: a relative name anchored at an
    # imported package, `__import__(name, ..., 1)` fed by a glob of the directory, and a helper
    # that imports under its parameter's `__name__`, called with the package.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'app'\nversion = '1'\n",
        "app/__init__.py": "from app._poly import loader\nfrom app._cases import collect\nfrom app._back import registry\n",
        "app/_poly/__init__.py": "",
        "app/_poly/loader.py": "import importlib\nfrom app import _poly\n\nNAMES = ('builtins', 'functools')\n"
                               "MODULES = [importlib.import_module(f'.{n}', package=_poly.__name__) for n in NAMES]\n",
        "app/_poly/builtins.py": "A = 1\n",
        "app/_poly/functools.py": "B = 2\n",
        "app/_cases/__init__.py": "import glob\n\n\ndef collect():\n    for name in glob.glob('*.py'):\n"
                                  "        __import__(name[:-3], globals(), locals(), [], 1)\n",
        "app/_cases/one.py": "C = 3\n",
        "app/_util.py": "import importlib\nimport os\n\n\ndef import_submodule(mod):\n"
                        "    for filename in os.listdir(os.path.dirname(mod.__file__)):\n"
                        "        importlib.import_module(f'{mod.__name__}.{filename[:-3]}')\n",
        "app/_back/__init__.py": "",
        "app/_back/registry.py": "def lazy_import():\n    from app import _back\n    from app._util import import_submodule\n\n"
                                 "    import_submodule(_back)\n",
        "app/_back/inductor.py": "D = 4\n",
        "app/_orphan.py": "E = 5\n",
    })  # fmt: skip
    status = _modules(analysis)
    for name in ("app._cases.one", "app._back.inductor"):
        assert status[name] == UNRESOLVED, name
    # (The loader holds the names it completes, `NAMES = ('builtins', 'functools')`: those it imports.)
    assert status["app._poly.builtins"] == status["app._poly.functools"] == WIRED
    assert status["app._orphan"] == ORPHAN
    notes = sorted((d.path, d.line) for d in findings(analysis, "FX201") if "unresolved" in d.message)
    assert notes == [("app/_back/registry.py", 5), ("app/_cases/__init__.py", 6)]


CONFIG = "# python run.py configs/a.py\nbatch_size = 8\nname = 'a'\n"

# Each runs a file's text by a path that is not a literal (True), or does not (False).
EXECUTIONS = [
    ("import sys\nexec(open(sys.argv[1]).read())\n", True),
    ("import sys\np = sys.argv[1]\nexec(compile(open(p).read(), p, 'exec'))\n", True),
    ("import sys\nfrom pathlib import Path\nexec(Path(sys.argv[1]).read_text())\n", True),
    ("import sys\nwith open(sys.argv[1]) as f:\n    exec(f.read(), globals())\n", True),
    ("import sys\nsource = open(sys.argv[1]).read()\nexec(source)\n", True),
    ("import runpy\nimport sys\nrunpy.run_path(sys.argv[1])\n", True),
    ("exec(open('defaults.py').read())\n", False),  # one known file
    ("import os\nwith open(os.path.join('models', 'mapper.py')) as f:\n    exec(compile(f.read(), 'm', 'exec'))\n", False),
    ("import os\nMAPPER = os.path.join(os.path.dirname(__file__), 'mapper.py')\n"
     "with open(MAPPER) as f:\n    source = f.read()\nexec(compile(source, MAPPER, 'exec'))\n", False),
    ("from pathlib import Path\nexec(compile(Path(__file__).read_text(), __file__, 'exec'), {})\n", False),  # itself
    ("from pathlib import Path\nRAW = Path(__file__).parent / 'raw_text.py'\nexec(compile(RAW.read_text(), str(RAW), 'exec'))\n", False),
    ("import runpy\nrunpy.run_path('defaults.py')\n", False),
    ("CODE = 'x = 1'\nexec(CODE)\n", False),  # a string, no file
    ("import sys\nprint(sys.argv)\n", False),
]


def test_a_file_run_by_a_run_time_path_reaches_modules_shaped_like_configs(tmp_path: Path) -> None:
    for number, (runner, runs) in enumerate(EXECUTIONS):
        analysis = _analyze(tmp_path / str(number), {
            "run.py": runner,
            "defaults.py": "batch_size = 1\n",
            "configs/a.py": CONFIG,
            "configs/b.py": "import time\n\nstamp = 'b-' + str(time.time())\nlayers = [64, 64]\n",
            "configs/tool.py": "def helper():\n    return 1\n",
            "configs/klass.py": "class Settings:\n    size = 1\n",
        })  # fmt: skip
        status = _modules(analysis)
        assert status["configs.a"] == (UNRESOLVED if runs else ORPHAN), (runner, status)
        # A function or a class is no config file; what runs a call at import is a script.
        assert (status["configs.tool"], status["configs.klass"], status["configs.b"]) == (ORPHAN, ORPHAN, WIRED), runner
        notes = [d for d in findings(analysis, "FX201") if "unresolved" in d.message]
        if runs:
            (note,) = notes
            assert note.path == "run.py" and "modules shaped like config files" in note.message, note.message
        else:
            assert not notes, runner


def test_yaml_targets_resolve_beside_the_file_and_as_absolute_names(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[tool.foxaudit.program]\nentry-points = ['exp.run']\nout-of-scope = { 'old/**' = 'kept' }\n",
        "exp/__init__.py": "", "exp/run.py": "print('run')\n",
        "exp/src/__init__.py": "", "exp/src/nets.py": "from exp.src import blocks\n", "exp/src/blocks.py": "",
        "exp/src/unnamed.py": "",
        "exp/configs/net/base.yaml": "net:\n  _target_: src.nets.Net\n  blocks:\n    - _target_: \"lib.layers.Dense\"\n",
        "lib/__init__.py": "", "lib/layers.py": "", "lib/unused.py": "",
        "old/conf.yaml": "_target_: lib.unused.X\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert status["exp.src.nets"] == status["exp.src.blocks"] == status["lib.layers"] == WIRED
    assert status["exp.src.unnamed"] == status["lib.unused"] == ORPHAN  # an out-of-scope YAML names nothing
    assert analysis.imports.entries["exp.src.nets"] == "named by `_target_` in `exp/configs/net/base.yaml:2`"


def test_a_kernel_handed_to_code_the_analysis_cannot_follow_is_no_fx204(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "lib/__init__.py": "",
        "lib/filters.py": (
            "import cupy\n\n"
            "rms_raw = cupy.RawKernel('extern \"C\" __global__ void rms(double* y) {}', 'rms')\n"
            "idle_raw = cupy.RawKernel('extern \"C\" __global__ void idle(double* y) {}', 'idle')\n"
            "KERNELS = {'rms': rms_raw}\n"
        ),
    })  # fmt: skip
    rows = {row.name: row for row in analysis.kernels.rows}
    assert rows["rms"].status == PARTIAL and "whatever receives it at lib/filters.py:5" in rows["rms"].reason
    assert [d.message.split("`")[1] for d in findings(analysis, "FX204")] == ["idle"]


def test_kernels_of_a_header_nothing_includes_are_one_unresolved_note(tmp_path: Path) -> None:
    # An installed library's headers: `SortUtils.cuh` is launched by the library's own `.cu`
    # files, which are not in this tree. `helpers.cuh` is included (through the include path) by
    # a file that does not launch its kernel: that kernel is still an orphan, as is one in a `.cu`.
    analysis = _analyze(tmp_path, {
        "include/ATen/native/cuda/SortUtils.cuh": (
            "template <typename T>\n__global__ void bitonicSortKVInPlace(T* keys, int n) { keys[0] = n; }\n"
            "template <typename T>\n__global__ void radixSortKVInPlace(T* keys, int n) { keys[0] = n; }\n"
        ),
        "include/ATen/native/cuda/helpers.cuh": "__global__ void helper_kernel(float* x) { x[0] = 1.0f; }\n",
        "src/user.cu": "#include <ATen/native/cuda/helpers.cuh>\n__global__ void dead_kernel(float* x) { x[0] = 0.0f; }\n",
    })  # fmt: skip
    found = findings(analysis, "FX202")
    notes = [d for d in found if "unresolved" in d.message]
    assert len(notes) == 1 and notes[0].path == "include/ATen/native/cuda/SortUtils.cuh"
    assert "unresolved for 2 kernels" in notes[0].message and "`bitonicSortKVInPlace`" in notes[0].message
    assert sorted(d.message.split("`")[1] for d in found if d not in notes) == ["dead_kernel", "helper_kernel"]


# -- a src layout (PyPA's recommended one) ------------------------------------------------------
SRC_LIBRARY = {
    "src/lib/__init__.py": "from lib.core import run\n",
    "src/lib/core.py": "from lib import _util\n\n\ndef run():\n    return _util.one()\n",
    "src/lib/_util.py": "def one():\n    return 1\n",
    "src/lib/_dead.py": "def two():\n    return 2\n",
    "tests/test_core.py": "from lib.core import run\n\n\ndef test_run():\n    assert run() == 1\n",
}


def test_a_src_layout_library_is_named_from_src(tmp_path: Path) -> None:
    # Before: `src.lib.core`, which nothing imports — every module of the library an orphan.
    analysis = _analyze(tmp_path, {"pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n", **SRC_LIBRARY})
    status = _modules(analysis)
    assert {status[name] for name in ("lib", "lib.core", "lib._util")} == {WIRED}
    assert not any(name.startswith("src.") for name in status)
    assert [d.path for d in findings(analysis, "FX201")] == ["src/lib/_dead.py"]


def test_a_poetry_1_name_and_a_namespace_package_in_src_name_the_src_layout(tmp_path: Path) -> None:
    # textual: the name only in `[tool.poetry]` (no `[project]` table); poetry: `src/poetry/` has
    # no `__init__.py` (a namespace package shared with poetry-core). Before: `src.lib.*`, orphans.
    poetry_1 = _analyze(tmp_path / "poetry1", {"pyproject.toml": "[tool.poetry]\nname = 'lib'\nversion = '1'\n", **SRC_LIBRARY})
    assert [d.path for d in findings(poetry_1, "FX201")] == ["src/lib/_dead.py"]
    namespace = {path: text for path, text in SRC_LIBRARY.items() if path != "src/lib/__init__.py"}
    analysis = _analyze(tmp_path / "namespace", {"pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n", **namespace})
    assert not any(name.startswith("src.") for name in _modules(analysis))
    assert [d.path for d in findings(analysis, "FX201")] == ["src/lib/_dead.py"]


def test_setuptools_find_without_include_ships_every_package_under_where(tmp_path: Path) -> None:
    # zipline-reloaded: the distribution is named unlike its package, and `packages.find` says
    # only where to look: every top-level package there ships, less what `exclude` matches.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'shop-reloaded'\nversion = '1'\n"
                          "[tool.setuptools.packages.find]\nwhere = ['src']\nexclude = ['internal*']\n",
        "src/shop/__init__.py": "",
        "src/shop/report.py": "def table():\n    return []\n",
        "src/internal/__init__.py": "",
        "src/internal/tool.py": "def gone():\n    return 0\n",
    })  # fmt: skip
    assert sorted(d.path for d in findings(analysis, "FX201")) == ["src/internal/__init__.py", "src/internal/tool.py"]


def test_a_built_name_whose_head_ends_inside_a_module_name_is_one_note(tmp_path: Path) -> None:
    # textual's lazy widgets: `import_module(f"._{snake(name)}", package="app.widgets")` — the
    # head `app.widgets._` ends inside the module's name; the modules of `app.widgets` it may pick
    # (`_footer`, `_log`) get one note; a module it cannot pick (`button`) is judged as before.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'app'\nversion = '1'\n",
        "app/__init__.py": "",
        "app/widgets/__init__.py": "from importlib import import_module\n\n\n"
                                   "def __getattr__(name):\n    return import_module(f'._{name.lower()}', package='app.widgets')\n",
        "app/widgets/_footer.py": "X = 1\n",
        "app/widgets/_log.py": "Y = 1\n",
        "app/widgets/button.py": "Z = 1\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert status["app.widgets._footer"] == status["app.widgets._log"] == UNRESOLVED
    (note,) = findings(analysis, "FX201")
    assert note.message.startswith("orphan-module analysis unresolved for 2 modules under `app.widgets`")
    assert status["app.widgets.button"] == WIRED  # a public module of the library: its API


@pytest.mark.parametrize("packaging", [
    "[project]\nname = 'distribution-named-otherwise'\n[tool.setuptools.packages.find]\nwhere = ['src']\n",
    "[project]\nname = 'other'\n[tool.setuptools]\npackage-dir = {'' = 'src'}\n",
    "[project]\nname = 'other'\n[tool.hatch.build.targets.wheel]\npackages = ['src/lib']\n",
    "[tool.poetry]\nname = 'other'\npackages = [{include = 'lib', from = 'src'}]\n",
])  # fmt: skip
def test_packaging_that_points_at_src_names_modules_from_it(tmp_path: Path, packaging: str) -> None:
    status = _modules(_analyze(tmp_path, {"pyproject.toml": packaging, **SRC_LIBRARY}))
    assert "lib.core" in status and not any(name.startswith("src.") for name in status)


@pytest.mark.parametrize("setup", [
    "from setuptools import setup, find_packages\n\nsetup(name='other', package_dir={'': 'src'}, packages=find_packages('src'))\n",
    'from setuptools import setup, find_namespace_packages\n\nsetup(packages=find_namespace_packages(where="src/"))\n',
])  # fmt: skip
def test_a_setup_py_that_points_at_src_names_modules_from_it(tmp_path: Path, setup: str) -> None:
    # accelerate: the layout is said only in setup.py; pyproject.toml holds tool settings.
    status = _modules(_analyze(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 100\n", "setup.py": setup,
                                          **SRC_LIBRARY}))
    assert "lib.core" in status and not any(name.startswith("src.") for name in status)


@pytest.mark.parametrize("folder, packaging", [
    # sqlalchemy: `[tool.setuptools.packages.find] where = ["lib"]` (41 orphans: `lib.sqlalchemy.*`).
    ("lib", {"pyproject.toml": "[project]\nname = 'other'\n[tool.setuptools.packages.find]\nwhere = ['lib']\n"}),
    ("python", {"pyproject.toml": "[project]\nname = 'lib'\n[tool.setuptools]\npackage-dir = {lib = 'python/lib'}\n"}),
    ("code/py", {"pyproject.toml": "[tool.poetry]\nname = 'other'\npackages = [{include = 'lib', from = 'code/py'}]\n"}),
    ("lib", {"setup.cfg": "[options]\npackage_dir =\n    =lib\n"}),
    ("lib", {"setup.py": "from setuptools import setup, find_packages\n\nsetup(packages=find_packages(where='lib'))\n"}),
])  # fmt: skip
def test_packaging_that_names_another_folder_names_modules_from_it(tmp_path: Path, folder: str,
                                                                   packaging: dict[str, str]) -> None:
    files = {path.replace("src/", f"{folder}/", 1): text for path, text in SRC_LIBRARY.items()}
    analysis = _analyze(tmp_path, {**packaging, **files})
    status = _modules(analysis)
    assert {status[name] for name in ("lib", "lib.core", "lib._util")} == {WIRED}
    assert [d.path for d in findings(analysis, "FX201")] == [f"{folder}/lib/_dead.py"]


def test_a_folder_the_packaging_names_that_is_a_package_stays_one(tmp_path: Path) -> None:
    # `where = ["lib"]` over a `lib/__init__.py`: `lib` is the package the code imports, no root.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\n[tool.setuptools.packages.find]\nwhere = ['.']\ninclude = ['lib*']\n",
        "lib/__init__.py": "from lib.core import run\n", "lib/core.py": "def run():\n    return 1\n",
    })  # fmt: skip
    assert "lib.core" in _modules(analysis) and not findings(analysis, "FX201")


def test_a_src_the_code_imports_by_that_name_keeps_it(tmp_path: Path) -> None:
    # An ML repository's `src/` run from the root (`from src.models import net`), no packaging
    # that points at it: its modules are `src.*`, as its imports name them.
    analysis = _analyze(tmp_path, {
        "train.py": "from src.models import net\n\nnet.build()\n",
        "src/models/__init__.py": "",
        "src/models/net.py": "def build():\n    return 1\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert status["src.models.net"] == WIRED and "models.net" not in status
    assert findings(analysis, "FX201") == []


@pytest.mark.parametrize("table", [None, "[tool.pytest.ini_options]", "[tool.pytest]"])
def test_the_directories_pytest_is_told_to_collect_hold_tests(tmp_path: Path, table: str | None) -> None:
    # pytest's own repository keeps its tests in `testing/` and says so in `testpaths` (pytest 9
    # reads it from [tool.pytest] too): there `python/integration.py` is a test module.
    pyproject = "[project]\nname = 'app'\nversion = '1'\n" + (f"{table}\ntestpaths = ['testing']\n" if table else "")
    analysis = _analyze(tmp_path, {
        "pyproject.toml": pyproject,
        "app/__init__.py": "",
        "testing/python/integration.py": "from app import __name__ as name\n\n\ndef check():\n    assert name\n",
    })  # fmt: skip
    orphans = [d.path for d in findings(analysis, "FX201")]
    assert orphans == ([] if table else ["testing/python/integration.py"])


def test_a_variable_bound_to_something_else_is_not_followed(tmp_path: Path) -> None:
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'app'\nversion = '1'\n",
        "app/__init__.py": "",
        "app/_plugins/__init__.py": "import importlib\n\n\ndef load(module_name):\n"
                                     "    return importlib.import_module(module_name)\n",
        "app/_plugins/_a.py": "A = 1\n",
        "app/cli.py": "from app._plugins import load\n",
    })  # fmt: skip
    assert [d.path for d in findings(analysis, "FX201")] == ["app/_plugins/_a.py"]


def test_asv_benchmarks_under_a_benchmark_directory_are_entry_points(tmp_path: Path) -> None:
    # rich's, pandas' and scikit-learn's benchmarks: asv imports every module of its benchmark
    # directory (one that only inherits its `time_*` methods too) and runs `time_*` methods; a
    # `benchmarks/` directory where no module defines one of asv's kinds is no asv directory.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n",
        "lib/__init__.py": "X = 1\n",
        "asv_bench/benchmarks/__init__.py": "",
        "asv_bench/benchmarks/common.py": "from lib import X\n\n\nclass Estimator:\n    def time_fit(self):\n"
                                          "        return X\n",
        "asv_bench/benchmarks/cluster.py": "from .common import Estimator\n\n\nclass KMeans(Estimator):\n"
                                           "    params = [1]\n",
        "asv_bench/benchmarks/scratch.py": "def helper():\n    return 1\n",
        "scripts/benchmarks/old.py": "def helper():\n    return 1\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert {status[name] for name in ("asv_bench.benchmarks.cluster", "asv_bench.benchmarks.common",
                                      "asv_bench.benchmarks.scratch", "asv_bench.benchmarks")} == {WIRED}
    assert sorted(d.path for d in findings(analysis, "FX201")) == ["scripts/benchmarks/old.py"]


def test_a_module_loaded_by_a_literal_file_path_is_reached(tmp_path: Path) -> None:
    # tox's docs/conf.py: `SourceFileLoader("tox_conf", str(here / "tox_conf.py")).load_module()`.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/conf.py": "from importlib.machinery import SourceFileLoader\nfrom pathlib import Path\n\n"
                        "here = Path(__file__).parent\n\n\ndef setup(app):\n"
                        "    ext = SourceFileLoader('ext', str(here / 'ext.py')).load_module()\n"
                        "    app.add_directive('x', ext.Directive)\n",
        "docs/ext.py": "class Directive:\n    pass\n",
        "tools/build.py": "import importlib.util\nimport runpy\n\n"
                          "spec = importlib.util.spec_from_file_location('gen', 'tools/gen.py')\n"
                          "runpy.run_path('tools/stamp.py')\n",
        "tools/gen.py": "def gen():\n    return 1\n",
        "tools/stamp.py": "STAMP = 1\n",
        "tools/other.py": "def unused():\n    return 1\n",
    }) == ["tools/other.py"]  # fmt: skip


def test_hatch_custom_build_hooks_are_loaded_by_path(tmp_path: Path) -> None:
    files = {
        "lib/__init__.py": "",
        "hatch_build.py": "from hatchling.builders.hooks.plugin.interface import BuildHookInterface\n\n\n"
                          "class CustomBuildHook(BuildHookInterface):\n    def initialize(self, version, build_data):\n"
                          "        build_data['pure_python'] = True\n",
        "build/meta_hook.py": "class Hook:\n    pass\n",
    }
    analysis = _analyze(tmp_path / "a", {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n[tool.hatch.build.hooks.custom]\n"
                          "[tool.hatch.metadata.hooks.custom]\npath = 'build/meta_hook.py'\n", **files})
    assert findings(analysis, "FX201") == []
    bare = _analyze(tmp_path / "b", {"pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n", **files})
    assert sorted(d.path for d in findings(bare, "FX201")) == ["build/meta_hook.py", "hatch_build.py"]


def test_an_example_project_with_a_src_layout_is_reached_from_its_script(tmp_path: Path) -> None:
    # flask's examples/celery: `make_celery.py` imports `task_app`, which lives in `src/` beside it.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "examples/celery/make_celery.py": "from task_app import create_app\n\nflask_app = create_app()\n"
                                          "if __name__ == '__main__':\n    flask_app.run()\n",
        "examples/celery/src/task_app/__init__.py": "from task_app import views\n\n\ndef create_app():\n"
                                                    "    return views\n",
        "examples/celery/src/task_app/views.py": "def index():\n    return 'ok'\n",
        "examples/celery/src/task_app/unused.py": "def gone():\n    return 0\n",
    }) == ["examples/celery/src/task_app/unused.py"]  # fmt: skip


@pytest.mark.parametrize("packaging", [
    "[project]\nname = 'flask-example-celery'\n[tool.flit.module]\nname = 'task_app'\n",
    "[project]\nname = 'task-app'\n",
    "[project]\nname = 'example'\n[project.scripts]\ntask = 'task_app.views:main'\n",
    "[tool.poetry]\nname = 'example'\npackages = [{include = 'task_app', from = 'src'}]\n",
])  # fmt: skip
def test_a_project_nested_in_the_tree_ships_its_packages(tmp_path: Path, packaging: str) -> None:
    # flask's examples/celery and click's examples/complex: a project of its own (its own
    # pyproject.toml), whose package nothing of the outer project imports; its private modules
    # and the modules beside it still have to be reached.
    files = {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n",
        "lib/__init__.py": "",
        "examples/celery/src/task_app/__init__.py": "def create_app():\n    return 1\n",
        "examples/celery/src/task_app/views.py": "def main():\n    return 0\n",
        "examples/celery/src/task_app/_unused.py": "def gone():\n    return 0\n",
        "examples/celery/other/stray.py": "def gone():\n    return 0\n",
    }
    analysis = _analyze(tmp_path / "nested", {**files, "examples/celery/pyproject.toml": packaging})
    assert sorted(d.path for d in findings(analysis, "FX201")) == [
        "examples/celery/other/stray.py", "examples/celery/src/task_app/_unused.py"]
    bare = _analyze(tmp_path / "bare", files)
    assert len(findings(bare, "FX201")) == 4


def test_a_nested_pyproject_that_does_not_parse_names_nothing(tmp_path: Path) -> None:
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "examples/app/pyproject.toml": "[project\nname = 'app'\n",
        "examples/app/app/__init__.py": "X = 1\n",
    }) == ["examples/app/app/__init__.py"]  # fmt: skip


MACRO_LAUNCHES = """\
template <typename T, int N>
__global__ void scale_one_line(T* x) { x[0] *= N; }
template <typename T, int N>
__global__ void scale_continued(T* x) { x[0] *= N; }
__global__ void kernel(float* x) { x[0] = 1.0f; }
__global__ void pasted_one_pass_kernel(float* x) { x[0] = 2.0f; }

#define LAUNCH_ONE(N) scale_one_line<T, N><<<grid, block, 0, stream>>>(x);
#define LAUNCH_CONTINUED(N)      \\
    scale_continued<T, N>        \\
        <<<grid, block, 0, stream>>>(x);
#define CALL(kernel, x) kernel<<<1, 1>>>(x)
#define PASTED(PASS) pasted_##PASS##_one_pass_kernel<<<1, 1>>>(x)

template <typename T>
void launch(T* x, cudaStream_t stream) {
    dim3 grid(1), block(32);
    LAUNCH_ONE(2);
    LAUNCH_CONTINUED(4)
}
"""


def test_a_launch_written_in_a_macro_body_with_a_literal_name_counts(tmp_path: Path) -> None:
    # DeepSpeed's `#define LAUNCH_FUSED_LN(...) fused_ln<T, ...><<<grid, block, 0, stream>>>(...)`:
    # the kernel is launched wherever the macro is used. A name the macro takes as a parameter
    # (`kernel`) or pastes together (`##`) names no kernel.
    status = _kernels(_analyze(tmp_path, {"ops.cu": MACRO_LAUNCHES}))
    assert status["scale_one_line"] == status["scale_continued"] == WIRED
    assert status["kernel"] == status["pasted_one_pass_kernel"] == ORPHAN


MACRO_VALUES = """\
template <int W, typename T>
__global__ void allreduce_oneshot(T* x) { x[0] = T(W); }
template <typename T>
__global__ void topk_unified(T* x) { x[0] = T(1); }
__global__ void reduce_2stage(float* x) { x[0] = 2.0f; }
template <typename A, typename B>
__global__ void gemm_cooperative(A* a, B* b) {}
__global__ void routing_grouped_f32_bf16(float* x) {}
__global__ void routing_grouped_f16_f16(float* x) {}
__global__ void routing_single_f32_f32(float* x) {}
__global__ void declared_in_a_macro_only(float* x) {}
__global__ void pasted_a(float* x) {}

#define LAUNCH_ALLREDUCE(W) \\
  cudaLaunchKernelEx(&config, &allreduce_oneshot<W, T>, params);
#define LAUNCH_TOPK(VS)                      \\
  do {                                       \\
    auto kernel = topk_unified<VS>;          \\
    launch_kernel(kernel);                   \\
  } while (0)
#define REDUCE_CASE(n) case n: { KL(n, reduce_2stage); break; }
#define Kernel gemm_cooperative<ElementA, ElementB>
#define LAUNCH_GROUPED(S, B) cudaLaunchKernelEx(&config, routing_grouped_##S##_##B, x);
#define DECLARE(K) __global__ void declared_in_a_macro_only(float* x);
#define TOO_SHORT(A, B) A##_##B
"""


def test_a_kernel_taken_or_pasted_in_a_macro_body_is_used(tmp_path: Path) -> None:
    # flashinfer's and TransformerEngine's macros: a kernel taken as a value for a launch API or a
    # local (`&allreduce<W, T>`, `auto kernel = topk<VS>;`), handed to another macro (`KL(n,
    # reduce_2stage)`), aliased (`#define Kernel gemm<A, B>`), or pasted from a family's pattern
    # (`routing_grouped_##S##_##B`: every kernel the pattern matches may be the one launched).
    status = _kernels(_analyze(tmp_path, {"ops.cu": MACRO_VALUES}))
    for name in ("allreduce_oneshot", "topk_unified", "reduce_2stage", "gemm_cooperative",
                 "routing_grouped_f32_bf16", "routing_grouped_f16_f16"):  # fmt: skip
        assert status[name] == WIRED, name
    # Not matched by the pattern; declared (a name followed by `(`); `A##_##B` has no fixed letters.
    assert status["routing_single_f32_f32"] == status["declared_in_a_macro_only"] == status["pasted_a"] == ORPHAN


def test_a_kernel_taken_in_a_hidden_macro_use_or_named_in_a_string_is_used(tmp_path: Path) -> None:
    # TransformerEngine: `TYPE_SWITCH(dtype, T, auto kernel = cast_kernel<T>; kernel<<<…>>>(…););`
    # (statements as a macro argument, hidden from the parse); an NVRTC wrapper given the kernel's
    # name (`rtc.compile(label, "transpose_kernel", code)`) and DeepSpeed's JIT (`swap ? "gemm_swap_ab"
    # : "gemm"`): a string that is exactly a kernel's name names it for a lookup by name.
    status = _kernels(_analyze(tmp_path, {"ops.cu": """\
template <typename T>
__global__ void cast_kernel(T* x) { x[0] = T(0); }
__global__ void transpose_kernel(float* x) {}
__global__ void gemm(float* x) {}
__global__ void gemm_swap_ab(float* x) {}
__global__ void mentioned_in_a_message(float* x) {}

void cast(void* x, int dtype) {
  TYPE_SWITCH(dtype, T,
    auto kernel = cast_kernel<T>;
    kernel<<<1, 32>>>(reinterpret_cast<T*>(x));
  );
}
void jit(Rtc& rtc, bool swap) {
  rtc.compile("label", "transpose_kernel", code);
  std::string name = swap ? "gemm_swap_ab" : "gemm";
  printf("mentioned_in_a_message failed\\n");
}
"""}))  # fmt: skip
    assert status["cast_kernel"] == status["transpose_kernel"] == status["gemm"] == status["gemm_swap_ab"] == WIRED
    assert status["mentioned_in_a_message"] == ORPHAN


def test_a_host_file_in_a_sibling_folder_that_names_the_kernel_is_read(tmp_path: Path) -> None:
    # flashinfer: `op/cuda/k.cu` is compiled to a cubin, `op/host/k.cc` looks the kernel up by its
    # name (`GET_KERNEL(module, "kernel_ssu")`); a host file there that names no unused kernel is not read.
    status = _kernels(_analyze(tmp_path, {
        "op/cuda/k.cu": "__global__ void kernel_ssu(float* x) {}\n__global__ void kernel_alone(float* x) {}\n",
        "op/host/k.cc": 'void run() { static auto k = GET_KERNEL(module_k, "kernel_ssu"); }\n',
        "op/host/other.cc": "void other() {}\n",
    }))  # fmt: skip
    assert status["kernel_ssu"] == WIRED
    assert status["kernel_alone"] == ORPHAN


JIT_HOST = """\
#include <string>
#include <fmt/format.h>

std::string generate_scale(int block) {
    return fmt::format(R"(
#include <pkg/impls/scale.cuh>
static void __instantiate_kernel() {{
    auto ptr = reinterpret_cast<void*>(&scale_impl<{}>);
}}
)", block);
}

std::string generate_other(int block) {
    auto name = fmt::format("picked_impl<{}>", block);
    return fmt::format(R"(#include <pkg/impls/{}.cuh>
static void __instantiate_kernel() {{ auto ptr = reinterpret_cast<void*>(&{}); }})", "picked", name);
}

std::string generate_launch() {
    return R"jit(#include <pkg/impls/launched.cuh>
void run(float* x) { launched_impl<4><<<1, 32>>>(x); })jit";
}

const char* help = R"(see scale_impl & prose_impl for the R&D notes; call_impl(x) is a call)";
std::string called() { return R"(#include <pkg/impls/called.cuh>
void f() { auto y = &call_impl(1); })"; }
"""


def test_kernels_a_jit_raw_string_instantiates_far_from_their_header_are_launched(tmp_path: Path) -> None:
    # DeepEP and DeepGEMM: the kernels live in `deep_ep/include/deep_ep/impls/*.cuh`; host files in
    # `csrc/kernels/elastic/` write source that includes the header and takes the kernel's address
    # (`reinterpret_cast<void*>(&barrier_impl<{}, {}>)`) in a raw string, or format its name
    # (`fmt::format("dispatch_impl<{}>", ...)`), compile it at run time and launch it by handle.
    impls = "pkg/include/pkg/impls"
    status = _kernels(_analyze(tmp_path, {
        f"{impls}/scale.cuh": "template <int B>\n__global__ void scale_impl(float* x) {}\n",
        f"{impls}/picked.cuh": "template <int B>\n__global__ void picked_impl(float* x) {}\n",
        f"{impls}/launched.cuh": "template <int B>\n__global__ void launched_impl(float* x) {}\n",
        f"{impls}/prose.cuh": "__global__ void prose_impl(float* x) {}\n",
        f"{impls}/called.cuh": "__global__ void call_impl(float* x) {}\n",
        # Named by a host file that includes no kernel header: not read.
        f"{impls}/unread.cuh": "__global__ void unread_impl(float* x) {}\n",
        "csrc/jit_kernels/scale.hpp": JIT_HOST,
        "tools/elsewhere/mention.cpp": 'const char* k = "unread_impl";\n',
    }))  # fmt: skip
    assert status["scale_impl"] == status["picked_impl"] == status["launched_impl"] == WIRED
    # Mentioned in prose, or called, in a raw string (`&call_impl(1)`: a call's result): no use.
    assert status["prose_impl"] == status["call_impl"] == status["unread_impl"] == ORPHAN


def test_a_raw_string_is_read_as_code_for_launches_and_addresses_only(tmp_path: Path) -> None:
    # Source held in a raw string (any delimiter) launches or takes a kernel like code does; its
    # prose, a call, or a `&` between two words does not.
    status = _kernels(_analyze(tmp_path, {"ops.cu": """\
namespace ns { template <int N> __global__ void taken(float* x) {} }
__global__ void launched(float* x) {}
__global__ void in_prose(float* x) {}
__global__ void called(float* x) {}
__global__ void in_a_comment(float* x) {}

const char* source = R"src(
auto f = &ns::taken<{}>;
void run(float* x) { launched<<<1, 1>>>(x); }
// auto g = &in_a_comment;
)src";
const char* text = R"(in_prose runs after a & in_prose; auto y = &called(x); for R&D)";
"""}))  # fmt: skip
    assert status["taken"] == status["launched"] == WIRED
    assert status["in_prose"] == status["called"] == status["in_a_comment"] == ORPHAN


def test_documentation_builders_configuration_files_are_run_by_path(tmp_path: Path) -> None:
    # Sphinx's docs/conf.py and Hugging Face doc-builder's docs/source/_config.py.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/conf.py": "project = 'lib'\n",
        "docs/source/_config.py": "notebook_first_cells = []\n",
        "docs/source/_helpers.py": "def unused():\n    return 1\n",
    }) == ["docs/source/_helpers.py"]  # fmt: skip


@pytest.mark.parametrize("packaging", [
    "[tool.flit.module]\nname = 'shop'\n",
    "[tool.hatch.build.targets.wheel]\npackages = ['shop']\n",
    "[tool.setuptools]\npackages = ['shop', 'shop.report']\n",
])  # fmt: skip
def test_the_packages_a_distribution_ships_under_another_name_are_its_api(tmp_path: Path, packaging: str) -> None:
    # `pyshop` ships `shop`: said by flit, hatch or setuptools; a script's module is no library.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": f"[project]\nname = 'pyshop'\nversion = '1'\n[project.scripts]\ntool = 'tools.cli:main'\n{packaging}",
        "shop/__init__.py": "",
        "shop/report.py": "def table():\n    return []\n",
        "tools/__init__.py": "",
        "tools/cli.py": "def main():\n    return 0\n",
        "tools/unused.py": "def gone():\n    return 0\n",
    })  # fmt: skip
    assert [d.path for d in findings(analysis, "FX201")] == ["tools/unused.py"]


def test_the_packages_a_built_name_starts_with_are_imported(tmp_path: Path) -> None:
    # fastapi's tests: `import_module(f"docs_src.body.{request.param}")` imports `docs_src` and
    # `docs_src.body` whatever the parameter; the modules under them no string names stay one note.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'app'\nversion = '1'\n",
        "app/__init__.py": "",
        "docs_src/__init__.py": "",
        "docs_src/body/__init__.py": "",
        "docs_src/body/tutorial001.py": "X = 1\n",
        "tests/test_body.py": "import importlib\n\nimport pytest\n\n\n@pytest.fixture(params=[PARAM])\n"
                              "def mod(request):\n    return importlib.import_module(f'docs_src.body.{request.param}')\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert status["docs_src"] == status["docs_src.body"] == PARTIAL
    assert status["docs_src.body.tutorial001"] == UNRESOLVED
    assert [d.path for d in findings(analysis, "FX201")] == ["tests/test_body.py"]


def test_a_launch_inside_a_hidden_macro_use_counts(tmp_path: Path) -> None:
    # apex: `DISPATCH_FLOAT_AND_HALF(type, 0, "name", kernel<scalar_t_0><<<…>>>(…);)` — statements
    # passed as a macro argument break the parse; the use is hidden and the launch in it still counts.
    source = (
        "template <typename T>\n__global__ void multiply(T* x) { x[0] *= 2; }\n"
        "__global__ void unused(float* x) { x[0] = 0; }\n\n"
        "void launch(float* x, int type) {\n"
        "  DISPATCH_FLOAT_AND_HALF(type, 0, \"multiply\",\n"
        "      using accscalar_t = float;\n"
        "      multiply<scalar_t_0><<<1, 32>>>(x);)\n"
        "}\n"
    )
    status = _kernels(_analyze(tmp_path, {"ops.cu": source}))
    assert status["multiply"] == WIRED and status["unused"] == ORPHAN


def test_sphinx_extensions_named_in_the_configuration_are_imported(tmp_path: Path) -> None:
    # django's docs/conf.py: `sys.path.append(...)` of `_ext`, then `extensions = ["djangodocs", ...]`.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/conf.py": "import sys\nfrom os.path import abspath, dirname, join\n\n"
                        "sys.path.append(abspath(join(dirname(__file__), '_ext')))\n\nproject = 'lib'\n"
                        "extensions = ['djangodocs', 'sphinx.ext.intersphinx']\n",
        "docs/_ext/djangodocs.py": "def setup(app):\n    return {}\n",
        "docs/_ext/unused.py": "def setup(app):\n    return {}\n",
    }) == ["docs/_ext/unused.py"]  # fmt: skip


@pytest.mark.parametrize("listed", ['"./tutorials"', '["tutorials", "../examples"]'])
def test_sphinx_gallery_examples_are_run_to_render_the_gallery(tmp_path: Path, listed: str) -> None:
    # Gymnasium's docs/tutorials (scikit-learn's ../examples): sphinx-gallery runs every script of
    # its `examples_dirs`, also one that only defines a class.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/conf.py": "extensions = ['sphinx_gallery.gen_gallery']\n"
                        f"sphinx_gallery_conf = {{\n    'examples_dirs': {listed},\n    'gallery_dirs': 'auto',\n}}\n",
        "docs/tutorials/env_creation.py": '"""Make an environment."""\n\n\nclass MyEnv:\n    pass\n',
        "docs/helpers/unused.py": "def gone():\n    return 0\n",
    }) == ["docs/helpers/unused.py"]  # fmt: skip


def test_pyyaml_python_tags_name_the_modules_they_import(tmp_path: Path) -> None:
    # textual's mkdocs.yml: `format: !!python/name:docs._doc.format_svg`; PyYAML imports the module.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "", "lib/_doc.py": "def format_svg(source):\n    return source\n",
        "lib/_state.py": "class State:\n    pass\n", "lib/_unused.py": "",
        "mkdocs.yml": "markdown_extensions:\n  - pymdownx.superfences:\n      custom_fences:\n"
                      "        - format: !!python/name:lib._doc.format_svg\n"
                      "state: !!python/object/apply:lib._state.State []\n",
    }) == ["lib/_unused.py"]  # fmt: skip


def test_a_pathlib_sys_path_entry_reaches_the_folder(tmp_path: Path) -> None:
    # scrapy's docs/conf.py: `sys.path.append(str(Path(__file__).parent / "_ext"))`, then the
    # extension by its bare name; `joinpath` the same.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/conf.py": "import sys\nfrom pathlib import Path\n\n"
                        "sys.path.append(str(Path(__file__).parent / \"_ext\"))\n"
                        "sys.path.insert(0, str(Path(__file__).parent.joinpath('tools')))\n"
                        "import myext\nimport helper\n",
        "docs/_ext/myext.py": "def setup(app):\n    return app\n",
        "docs/tools/helper.py": "X = 1\n",
        "docs/other/helper2.py": "X = 1\n",
    }) == ["docs/other/helper2.py"]  # fmt: skip


def test_a_lazy_module_object_imports_the_name_it_is_given(tmp_path: Path) -> None:
    # optuna's `_LazyImport("optuna.study._dataframe")`: the module is imported on first use.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "from lib._lazy import LazyImport\n\n_frame = LazyImport(\"lib._frame\")\n",
        "lib/_lazy.py": "import importlib\n\n\nclass LazyImport:\n    def __init__(self, name):\n"
                        "        self._name = name\n\n    def __getattr__(self, item):\n"
                        "        return getattr(importlib.import_module(self._name), item)\n",
        "lib/_frame.py": "def to_frame(rows):\n    return list(rows)\n",
        "lib/_orphan.py": "",
        "lib/_named.py": "",
        "lib/cache.py": "def remember(name):\n    return name\n\n\nKEY = remember(\"lib._named\")\n",
    }) == ["lib/_named.py", "lib/_orphan.py"]  # fmt: skip


def test_a_django_project_reaches_what_its_settings_name(tmp_path: Path) -> None:
    # celery's examples/django: manage.py sets DJANGO_SETTINGS_MODULE; the settings name the apps,
    # the URL configuration and the WSGI application as strings, and Django imports each app's
    # conventional modules (models, admin, migrations, commands, template tags) itself.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "site/manage.py": "import os\n\nif __name__ == '__main__':\n"
                          "    os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'proj.settings')\n",
        "site/proj/__init__.py": "",
        "site/proj/settings.py": "INSTALLED_APPS = ['django.contrib.auth'] + ['shop.apps.ShopConfig']\n"
                                 "ROOT_URLCONF = 'proj.urls'\nWSGI_APPLICATION = 'proj.wsgi.application'\n"
                                 "MIDDLEWARE = ['proj.middleware.Timing']\nhelper_name = 'proj.unused'\n",
        "site/proj/urls.py": "from django.urls import include, path\n\nurlpatterns = [path('', include('shop.urls'))]\n",
        "site/proj/wsgi.py": "application = None\n", "site/proj/middleware.py": "class Timing:\n    pass\n",
        "site/proj/unused.py": "",
        "site/shop/__init__.py": "", "site/shop/apps.py": "", "site/shop/models.py": "", "site/shop/admin.py": "",
        "site/shop/urls.py": "from shop import views\n\nurlpatterns = [views.index]\n",
        "site/shop/views.py": "def index(request):\n    return request\n",
        "site/shop/migrations/__init__.py": "", "site/shop/migrations/0001_initial.py": "",
        "site/shop/management/__init__.py": "", "site/shop/management/commands/__init__.py": "",
        "site/shop/management/commands/seed.py": "", "site/shop/templatetags/__init__.py": "",
        "site/shop/templatetags/shop_tags.py": "", "site/shop/unused.py": "",
    }) == ["site/proj/unused.py", "site/shop/unused.py"]  # fmt: skip


def test_a_shebang_script_in_a_package_folder_is_run_by_path(tmp_path: Path) -> None:
    # sphinx's utils/bump_version.py: `#!/usr/bin/env python3` beside an `__init__.py`.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "", "utils/__init__.py": "",
        "utils/bump_version.py": "#!/usr/bin/env python3\nimport sys\n\nprint(sys.argv[1])\n",
        "utils/helpers.py": "X = 1\n", "utils/shell.py": "#!/bin/sh\nX = 1\n",
    }) == ["utils/helpers.py", "utils/shell.py"]  # fmt: skip


def test_a_shebang_module_whose_only_call_is_tested_is_no_script(tmp_path: Path) -> None:
    # quantstats' `_numpy_compat.py`: every file carries `#!/usr/bin/env python`; the module's only
    # module-level calls sit in `if`/`elif`/`while` conditions and an `assert` (version checks), so
    # importing it defines things and does no work — an orphan. `sys.exit(main())`, `asyncio.run`
    # in an `if` body and `addons = [Search()]` (a mitmproxy addon list) run code.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "", "lib/api.py": "X = 1\n",
        "lib/_compat.py": "#!/usr/bin/env python\nimport numpy as np\nfrom packaging import version\n\n"
                          "if version.parse(np.__version__) >= version.parse('1.25'):\n    product = np.prod\n"
                          "elif hasattr(np, 'product'):\n    product = np.product\n"
                          "while not callable(product):\n    product = np.prod\nassert callable(product)\n"
                          "MAJOR = int(np.__version__[0])\n",
        "lib/_addons.py": "#!/usr/bin/env python\nclass Search:\n    pass\n\n\naddons = [Search()]\n",
        "lib/_runs.py": "#!/usr/bin/env python\nimport sys\n\nsys.exit(len(sys.argv))\n",
        "lib/_loop.py": "#!/usr/bin/env python\nimport asyncio\n\nasync def main():\n    return 1\n\n"
                        "if True:\n    asyncio.run(main())\n",
    }) == ["lib/_compat.py"]  # fmt: skip


def test_a_dunder_subpackage_of_the_library_is_public(tmp_path: Path) -> None:
    # arch's `arch/__future__/reindexing.py`: users opt in with `from arch.__future__ import
    # reindexing`; a dunder name is a convention, not a private one.
    assert _fx201(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib1'\n",
        "lib1/__init__.py": "def f():\n    return 1\n",
        "lib1/__future__/__init__.py": "", "lib1/__future__/reindexing.py": "ENABLED = True\n",
        "lib1/_private/__init__.py": "", "lib1/_private/helpers.py": "X = 1\n",
    }) == ["lib1/_private/__init__.py", "lib1/_private/helpers.py"]  # fmt: skip


def test_the_empty_package_marker_of_a_folder_of_data_files_is_no_orphan(tmp_path: Path) -> None:
    # fastapi's docs_src/templates/static/__init__.py beside styles.css (copied by a test): it
    # makes the folder a package for importlib.resources; an empty package beside a README alone,
    # or one with a module below it, is still reported.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "site/static/__init__.py": "", "site/static/styles.css": "body {}\n",
        "site/templates/__init__.py": "# Copyright the authors\n", "site/templates/item.html": "<p/>\n",
        "site/empty/__init__.py": "", "site/empty/README.md": "nothing\n",
        "site/code/__init__.py": "", "site/code/data.json": "{}\n", "site/code/helpers.py": "X = 1\n",
    }) == ["site/code/__init__.py", "site/code/helpers.py", "site/empty/__init__.py"]  # fmt: skip


def test_a_module_whose_text_gives_the_command_that_runs_it_is_a_script(tmp_path: Path) -> None:
    # mitmproxy's addons: `Run as follows: mitmproxy -s anatomy.py`, `# Usage: mitmdump -s
    # link_expander.py`; a tool's usage line `python tools/make_index.py`. Another file's name, or
    # the own name in prose, runs nothing.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "", "lib/core.py": "X = 1\n",
        "examples/anatomy.py": '"""A skeleton addon.\n\nRun as follows: mitmproxy -s anatomy.py\n"""\n'
                               "from lib import core\n\n\nclass Counter:\n    pass\n",
        "examples/expand.py": "# Usage: mitmdump -s examples/expand.py\nclass Expander:\n    pass\n",
        "tools/make_index.py": '"""Usage: python3 tools/make_index.py --out index.html"""\nX = 1\n',
        "examples/certs.py": "# the certificate is made in certs.py\nclass Cert:\n    pass\n",
        "examples/other.py": "# run with: mitmproxy -s anatomy.py\nclass Other:\n    pass\n",
    }) == ["examples/certs.py", "examples/other.py"]  # fmt: skip


def test_a_table_of_module_names_a_module_imports_by_variable_reaches_them(tmp_path: Path) -> None:
    # pip's commands/__init__.py: `commands_dict = {"install": CommandInfo("pip._internal.commands.
    # install", …)}`, then `module_path, cls, _ = commands_dict[name]; import_module(module_path)`.
    # The same names in a module that imports nothing by a variable reach nothing.
    assert _fx201(tmp_path, {
        "pyproject.toml": "[project]\nname = 'app'\n[project.scripts]\napp = 'app._cli:main'\n",
        "app/__init__.py": "",
        "app/_cli.py": "from app._commands import create\n\n\ndef main():\n    return create('install')\n",
        "app/_commands/__init__.py": "import importlib\nfrom collections import namedtuple\n\n"
                                     "Info = namedtuple('Info', 'module_path, class_name')\n"
                                     "commands = {\n    'install': Info('app._commands.install', 'Install'),\n"
                                     "    'cache': Info('app._commands.cache', 'Cache'),\n}\nPLUGINS = ['app._plugins.extra']\n\n\n"
                                     "def create(name):\n    module_path, class_name = commands[name]\n"
                                     "    return getattr(importlib.import_module(module_path), class_name)\n",
        "app/_commands/install.py": "class Install:\n    pass\n", "app/_commands/cache.py": "class Cache:\n    pass\n",
        "app/_commands/unused.py": "X = 1\n",
        "app/_plugins/__init__.py": "", "app/_plugins/extra.py": "X = 1\n",
        "app/_docs.py": "NAMES = ['app._plugins.other']\n", "app/_plugins/other.py": "X = 1\n",
    }) == ["app/_commands/unused.py", "app/_docs.py", "app/_plugins/other.py"]  # fmt: skip


def test_a_sphinx_setting_names_a_module_on_a_path_the_configuration_added(tmp_path: Path) -> None:
    # requests' docs/conf.py: `sys.path.insert(0, os.path.abspath("_themes"))`, then
    # `pygments_style = "flask_theme_support.FlaskyStyle"`: Sphinx imports the module from there.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/conf.py": "import os\nimport sys\n\nsys.path.insert(0, os.path.abspath('_themes'))\n"
                        "extensions = []\npygments_style = 'flask_theme_support.FlaskyStyle'\n",
        "docs/_themes/flask_theme_support.py": "class FlaskyStyle:\n    pass\n",
        "docs/_themes/unused.py": "X = 1\n",
    }) == ["docs/_themes/unused.py"]  # fmt: skip


def test_pytest_perf_runs_the_roots_exercises_file(tmp_path: Path) -> None:
    # setuptools' exercises.py (`def measure_startup_perf(): # run by pytest_perf`); without the
    # dependency the file is nobody's.
    files = {"lib/__init__.py": "", "exercises.py": "def measure_startup_perf():\n    import lib\n"}
    assert _fx201(tmp_path / "a", {**files, "pyproject.toml": "[project]\nname = 'lib'\n"
                                   "[project.optional-dependencies]\ntest = ['pytest', 'pytest-perf']\n"}) == []
    assert _fx201(tmp_path / "b", {**files, "tox.ini": "[testenv]\ndeps = pytest-perf\n"}) == []
    assert _fx201(tmp_path / "c", {**files, "pyproject.toml": "[project]\nname = 'lib'\n"}) == ["exercises.py"]


def test_an_ipython_extension_is_loaded_by_its_name(tmp_path: Path) -> None:
    # MatX's docs_input/notebooks/scripts/run_matx.py: `load_ipython_extension(ipython)`, registered
    # with `c.InteractiveShellApp.extensions = ['run_matx']` and used as `%%run_matx` in notebooks.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "notebooks/scripts/run_matx.py": "def load_ipython_extension(ipython):\n    ipython.register_magic_function(print)\n",
        "notebooks/scripts/helper.py": "class Loader:\n    def load_ipython_extension(self, ipython):\n        return ipython\n",
    }) == ["notebooks/scripts/helper.py"]  # fmt: skip


def test_a_loader_of_a_user_directory_notes_the_packages_it_may_load(tmp_path: Path) -> None:
    # fairseq's `import_user_module`: `sys.path.insert(0, module_parent)` then
    # `importlib.import_module(module_name)`, both from `--user-dir examples/lin/lin_src`: every
    # package nothing reaches that imports the project's code may be the one loaded — one note at
    # the call, not an orphan each. A package that imports nothing of the project stays an orphan,
    # and without such a loader every one does.
    files = {
        "pyproject.toml": "[project]\nname = 'core'\n[project.scripts]\ntrain = 'core.train:main'\n",
        "core/__init__.py": "", "core/models.py": "REGISTRY = {}\n",
        "core/train.py": "from core import utils\n\n\ndef main():\n    utils.import_user_module('examples/lin/lin_src')\n",
        "examples/lin/lin_src/__init__.py": "from . import model\n",
        "examples/lin/lin_src/model.py": "from core.models import REGISTRY\n\nREGISTRY['lin'] = object\n",
        "examples/other/__init__.py": "", "examples/other/tool.py": "X = 1\n",
    }
    loader = ("import importlib\nimport os\nimport sys\n\n\ndef import_user_module(path):\n"
              "    module_parent, module_name = os.path.split(os.path.abspath(path))\n"
              "    sys.path.insert(0, module_parent)\n    importlib.import_module(module_name)\n")
    analysis = _analyze(tmp_path / "a", {**files, "core/utils.py": loader})
    (note,) = [d for d in findings(analysis, "FX201") if "unresolved" in d.message]
    assert note.path == "core/utils.py" and "folder chosen at run time" in note.message, note.message
    assert "`examples.lin.lin_src`, `examples.lin.lin_src.model`" in note.message, note.message
    assert sorted(d.path for d in findings(analysis, "FX201") if "orphan module" in d.message) == [
        "examples/other/__init__.py", "examples/other/tool.py"]
    plain = {**files, "core/utils.py": "def import_user_module(path):\n    return path\n"}
    assert _fx201(tmp_path / "b", plain) == ["examples/lin/lin_src/__init__.py", "examples/lin/lin_src/model.py",
                                            "examples/other/__init__.py", "examples/other/tool.py"]


def test_an_absolute_path_sys_path_entry_reaches_the_folder(tmp_path: Path) -> None:
    # dm-haiku's docs/conf.py puts `os.path.abspath('ext')` on sys.path for an extension it names
    # by its bare name.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/conf.py": "import os\nimport sys\n\nsys.path.append(os.path.abspath('ext'))\nextensions = ['linker']\n",
        "docs/ext/linker.py": "def setup(app):\n    return app\n",
        "docs/ext/unused.py": "X = 1\n",
    }) == ["docs/ext/unused.py"]  # fmt: skip


def test_a_project_a_nested_setup_py_declares_ships_its_packages_and_modules(tmp_path: Path) -> None:
    # torchsparse's examples/openpcdet/setup.py (`packages=find_packages()`), pre-commit's test hook
    # repository (`py_modules=["foo"]`): installed with pip, imported by the framework they plug into;
    # the setup.py itself is run, inside a package folder too (faiss's faiss/python/setup.py).
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "examples/plugin/__init__.py": "",
        "examples/plugin/setup.py": "from setuptools import find_packages, setup\n\n"
                                    "setup(name='my_plugin', packages=find_packages())\n",
        "examples/plugin/my_plugin/__init__.py": "", "examples/plugin/my_plugin/models/__init__.py": "",
        "examples/plugin/my_plugin/models/backbone.py": "", "examples/plugin/my_plugin/_private.py": "",
        "hooks/repo/setup.py": "from setuptools import setup\n\nsetup(name='foo', py_modules=['foo'])\n",
        "hooks/repo/foo.py": "def main():\n    return 0\n", "hooks/repo/bar.py": "",
        "hooks/notes/setup.py": "def setup(app):\n    return app\n", "hooks/notes/x/__init__.py": "",
    }) == ["examples/plugin/my_plugin/_private.py", "hooks/notes/setup.py", "hooks/notes/x/__init__.py",
           "hooks/repo/bar.py"]  # fmt: skip


def test_a_module_colon_name_string_imports_the_module(tmp_path: Path) -> None:
    # Megatron's agent registry (`"megatron.rl.agent.remote:RemoteAgent"`), nautilus_trader's
    # `strategy_path="examples.live.strategies:EMACross"`: the loader imports the module part.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "lib/_registry.py": "AGENTS = {'remote': 'lib._remote:RemoteAgent'}\n",
        "lib/_remote.py": "class RemoteAgent:\n    pass\n", "lib/_unused.py": "",
        "lib/api.py": "from lib._registry import AGENTS\n\nURL = 'http://host:80'\nNOTE = 'see lib._unused: gone'\n"
                      "# the old loader took 'lib._unused:Agent'\n",
        "examples/live/run.py": "from lib import api\n\napi.load('examples.live.strategies:EMACross')\n",
        "examples/live/strategies.py": "class EMACross:\n    pass\n",
    }) == ["lib/_unused.py"]  # fmt: skip


def test_a_package_included_under_a_namespace_directory_ships(tmp_path: Path) -> None:
    # Megatron-LM: `megatron/` has no `__init__.py` and `packages.find` includes `megatron.core`.
    assert _fx201(tmp_path, {
        "pyproject.toml": "[project]\nname = 'megatron-core'\nversion = '1'\n\n"
                          "[tool.setuptools.packages.find]\ninclude = ['megatron.core', 'megatron.core.*']\n",
        "megatron/core/__init__.py": "", "megatron/core/legacy/__init__.py": "",
        "megatron/core/legacy/old_model.py": "", "megatron/core/_private.py": "",
        "megatron/training/__init__.py": "", "megatron/training/unused.py": "",
    }) == ["megatron/core/_private.py", "megatron/training/__init__.py", "megatron/training/unused.py"]  # fmt: skip


def test_imports_by_the_installed_name_of_a_namespace_directory_resolve(tmp_path: Path) -> None:
    # faiss: CMake installs `faiss/python/` as `faiss` and `contrib/` as `faiss.contrib`; the tests
    # and benchmarks import those names. An external name whose tail happens to be a project
    # module (`torch.utils.data` beside a project `utils/data.py`) stays external.
    assert _fx201(tmp_path, {
        "faiss/python/__init__.py": "from .loader import load\n", "faiss/python/loader.py": "def load():\n    return 1\n",
        "contrib/__init__.py": "", "contrib/datasets.py": "", "benchs/bench_fw/__init__.py": "",
        "benchs/bench_fw/benchmark.py": "", "utils/__init__.py": "", "utils/data.py": "",
        "tests/test_datasets.py": "import faiss\nfrom faiss.contrib import datasets\nimport torch.utils.data\n",
        "benchs/bench_codecs.py": "from faiss.benchs.bench_fw.benchmark import Benchmark\n\nBenchmark()\n",
    }) == ["utils/__init__.py", "utils/data.py"]  # fmt: skip


def test_ml_collections_config_files_are_run_by_their_flag(tmp_path: Path) -> None:
    # flax's examples: `config_flags.DEFINE_config_file("config", "configs/default.py")` loads the
    # default file; with no default, `--config=configs/tpu.py` picks one: the `get_config` modules
    # are one note at that call, not orphans.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n", "lib/__init__.py": "",
        "examples/ppo/ppo_main.py": "from ml_collections import config_flags\n\n"
                                    "config_flags.DEFINE_config_file('config', 'configs/default.py')\n",
        "examples/ppo/configs/default.py": "import ml_collections\n\n\ndef get_config():\n    return ml_collections.ConfigDict()\n",
        "examples/imagenet/main.py": "from ml_collections import config_flags\n\n"
                                     "config_flags.DEFINE_config_file('config', None, 'the configuration')\n",
        "examples/imagenet/configs/tpu.py": "import ml_collections\n\n\ndef get_config():\n    return ml_collections.ConfigDict()\n",
        "examples/imagenet/helpers.py": "def unused():\n    return 1\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert status["examples.ppo.configs.default"] == WIRED
    assert status["examples.imagenet.configs.tpu"] == UNRESOLVED
    assert [(d.path, d.line) for d in findings(analysis, "FX201")] == [("examples/imagenet/helpers.py", 1),
                                                                     ("examples/imagenet/main.py", 3)]


def test_a_bare_name_built_from_parts_may_load_the_modules_beside_the_caller(tmp_path: Path) -> None:
    # Megatron-LM's tools/checkpoint/convert.py: `import_module(f"{plugin_type}_{name}")` loads
    # `loader_core` or `saver_core` from its own folder; `utils`, which only they import, runs with
    # them. One note at the call; a module whose name does not fit (`report`) is an orphan.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n", "lib/__init__.py": "",
        "tools/checkpoint/convert.py": "import importlib\n\n\ndef load_plugin(plugin_type, name):\n"
                                       "    return importlib.import_module(f'{plugin_type}_{name}')\n\n\n"
                                       "load_plugin('loader', 'core')\n\n\ndef load_saver(name):\n"
                                       "    return importlib.import_module(f'saver_{name}')\n",
        "tools/checkpoint/loader_core.py": "import utils\n", "tools/checkpoint/saver_core.py": "import utils\n",
        "tools/checkpoint/utils.py": "X = 1\n", "tools/checkpoint/report.py": "X = 1\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert {status[f"tools.checkpoint.{name}"] for name in ("loader_core", "saver_core", "utils")} == {UNRESOLVED}
    assert [(d.path, d.line) for d in findings(analysis, "FX201")] == [("tools/checkpoint/convert.py", 5),
                                                                     ("tools/checkpoint/report.py", 1)]


@pytest.mark.parametrize("package", ["SCRIPTS_MODULE", "'scripts'"])
def test_a_relative_import_under_a_constant_or_a_namespace_package_is_one_note(tmp_path: Path, package: str) -> None:
    # hummingbot: `import_module(f".{name}", package=SCRIPT_STRATEGIES_MODULE)`, the constant imported
    # from its settings, and `scripts/` has no `__init__.py`.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n", "lib/__init__.py": "",
        "lib/settings.py": "SCRIPTS_MODULE = 'scripts'\n",
        "lib/core.py": "import importlib\n\nfrom lib.settings import SCRIPTS_MODULE\n\n\n"
                       f"def load(name):\n    return importlib.import_module(f'.{{name}}', package={package})\n",
        "scripts/simple_pmm.py": "class SimplePMM:\n    pass\n",
    })  # fmt: skip
    assert _modules(analysis)["scripts.simple_pmm"] == UNRESOLVED
    assert [d.path for d in findings(analysis, "FX201")] == ["lib/core.py"]


def test_sphinx_configurations_in_docs_like_folders_and_their_dotted_settings(tmp_path: Path) -> None:
    # flax's docs_nnx/conf.py (an extension in `_ext`), and a setting that names a parser module
    # by a dotted string (sphinx-autodoc2's `autodoc2_docstring_parser_regexes`).
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs_nnx/conf.py": "import os\nimport sys\n\nsys.path.append(os.path.join(os.path.dirname(__file__), '_ext'))\n"
                            "extensions = ['flax_module']\n",
        "docs_nnx/_ext/flax_module.py": "def setup(app):\n    return app\n",
        "docs/conf.py": "extensions = ['autodoc2']\nautodoc2_docstring_parser_regexes = [(r'.*', 'docs.docstring_parser')]\n",
        "docs/docstring_parser.py": "class Parser:\n    pass\n", "docs/unused.py": "X = 1\n",
    }) == ["docs/unused.py"]  # fmt: skip


def test_scripts_run_by_path_and_files_a_test_wrote_are_no_unresolved_run(tmp_path: Path) -> None:
    # Megatron's pretrain_mamba.py runs `os.path.join(here, "pretrain_hybrid.py")`: a known file, no
    # note; sphinx's test execs a conf.py it wrote under `tmp_path`; a PEP 723 script is run by path.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "pretrain_mamba.py": "import os\nimport runpy\n\nif __name__ == '__main__':\n"
                             "    here = os.path.dirname(os.path.abspath(__file__))\n"
                             "    runpy.run_path(os.path.join(here, 'pretrain_hybrid.py'), run_name='__main__')\n",
        "pretrain_hybrid.py": "def main():\n    return 0\n",
        "tests/test_quickstart.py": "def test_conf(tmp_path):\n    conf = tmp_path / 'conf.py'\n    ns = {}\n"
                                    "    exec(conf.read_text(), ns)\n",
        "utils/__init__.py": "", "utils/attest.py": "# /// script\n# requires-python = '>=3.12'\n# ///\nimport sys\n\nX = sys.argv\n",
        "tools/settings.py": "LIBS = ['faiss']\n",
    }) == ["tools/settings.py"]  # fmt: skip


def test_a_notebook_imports_what_its_code_cells_import(tmp_path: Path) -> None:
    # pytorch3d's docs/tutorials: `from utils import image_grid` beside the notebook, and a helper
    # fetched beside it (`!wget …/utils/plot_image_grid.py`, then `from plot_image_grid import …`).
    # A commented-out import, or one in a markdown cell, names nothing.
    import json

    cells = [{"cell_type": "code", "source": ["import os\n", "from utils import grid\n", "import helpers.camera"]},
             {"cell_type": "code", "source": ["!wget https://x/utils/plot_image_grid.py\n", "from plot_image_grid import image_grid"]},
             {"cell_type": "code", "source": ["# from utils import unused\n"]},
             # torchquantum: a star import, and an import after a `]` in the cell's code
             {"cell_type": "code", "source": ["from helpers.qmodels import *\n", "digits = [0, 1]\n",
                                              "x = table[\"k\"]\n", "from helpers.trainers import Trainer\n"]},
             {"cell_type": "markdown", "source": ["Then run:\n", "from utils import notes\n"]}]
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/tutorials/render.ipynb": json.dumps({"cells": cells, "nbformat": 4}, indent=1),
        "docs/tutorials/utils/__init__.py": "", "docs/tutorials/utils/grid.py": "", "docs/tutorials/utils/unused.py": "",
        "docs/tutorials/utils/notes.py": "", "docs/tutorials/utils/plot_image_grid.py": "",
        "docs/tutorials/helpers/__init__.py": "", "docs/tutorials/helpers/camera.py": "",
        "docs/tutorials/helpers/qmodels.py": "", "docs/tutorials/helpers/trainers.py": "",
    }) == ["docs/tutorials/utils/notes.py", "docs/tutorials/utils/unused.py"]  # fmt: skip


def test_django_settings_variants_and_the_wsgi_application_are_entry_points(tmp_path: Path) -> None:
    # django-oscar's sandbox: `settings_postgres.py` star-imports the settings (chosen with
    # `--settings=`), `wsgi.py` is named by the server's configuration.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "sandbox/settings.py": "INSTALLED_APPS = ['django.contrib.contenttypes']\n",
        "sandbox/settings_postgres.py": "from settings import *  # noqa\n\nDATABASES = {}\n",
        "sandbox/wsgi.py": "from django.core.wsgi import get_wsgi_application\n\napplication = get_wsgi_application()\n",
        "sandbox/unused.py": "from settings import DEBUG\n",
    }) == ["sandbox/unused.py"]  # fmt: skip


def test_a_root_setup_py_ships_the_packages_of_its_source_root(tmp_path: Path) -> None:
    # django-oscar: `[project] name = "django-oscar"` names no package; setup.py ships `oscar` from
    # `src/` (`package_dir={"": "src"}, packages=find_packages("src")`): its public modules are its API.
    assert _fx201(tmp_path, {
        "pyproject.toml": "[project]\nname = 'django-oscar'\nversion = '1'\n",
        "setup.py": "from setuptools import find_packages, setup\n\n"
                    "setup(package_dir={'': 'src'}, packages=find_packages('src'))\n",
        "src/oscar/__init__.py": "", "src/oscar/apps/__init__.py": "", "src/oscar/apps/tables.py": "",
        "src/oscar/_internal.py": "", "sandbox/__init__.py": "", "sandbox/apps/__init__.py": "",
        "sandbox/apps/user.py": "",
    }) == ["sandbox/__init__.py", "sandbox/apps/__init__.py", "sandbox/apps/user.py", "src/oscar/_internal.py"]  # fmt: skip


def test_a_class_registry_of_dotted_strings_imports_the_modules(tmp_path: Path) -> None:
    # state-spaces/s4: `registry = {"s4": "src.models.s4block.S4Block"}`, resolved by
    # `hydra.utils.get_class`; a lower-case dotted string (a logger's name) names nothing.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "lib/registry.py": "LAYERS = {'s4': 'lib._models.s4block.S4Block'}\nLOG = 'lib._models.unused'\n\n\n"
                           "def build(parser: 'lib._models.unused.Parser') -> 'lib._models.unused.Layer':\n"
                           "    return parser\n",
        "lib/_models/__init__.py": "", "lib/_models/s4block.py": "class S4Block:\n    pass\n",
        "lib/_models/unused.py": "",
    }) == ["lib/_models/unused.py"]  # fmt: skip


def test_config_files_that_bind_names_by_import_alone_are_config_shaped(tmp_path: Path) -> None:
    # detectron2's LazyConfig: `from ..common.train import train` then `train.max_iter *= 2`, run by
    # `exec(compile(f.read(), path, "exec"))` with a path from the command line: one note.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n", "lib/__init__.py": "",
        "tools/train.py": "import sys\n\n\ndef load(path):\n    with open(path) as f:\n        content = f.read()\n"
                          "    exec(compile(content, path, 'exec'), {})\n\n\nload(sys.argv[1])\n",
        "configs/common/__init__.py": "", "configs/common/train.py": "train = dict(max_iter=10)\n",
        "configs/retinanet.py": "from configs.common.train import train\n\ntrain['max_iter'] *= 2\n",
    })  # fmt: skip
    assert _modules(analysis)["configs.retinanet"] == UNRESOLVED
    assert [d.path for d in findings(analysis, "FX201")] == ["tools/train.py"]


def test_a_module_that_works_at_import_in_an_unshipped_package_is_a_python_m_script(tmp_path: Path) -> None:
    # trl's scripts/generate_tiny_models/…/qwen3_for_causal_lm.py: no function or class, its work
    # at module level, relative imports; `python -m scripts.generate_tiny_models.…` runs it. A
    # module that only defines things there stays an orphan.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "scripts/__init__.py": "", "scripts/tiny/__init__.py": "",
        "scripts/tiny/_common.py": "def push(model):\n    return model\n",
        "scripts/tiny/qwen3.py": "from ._common import push\n\npush('qwen3')\n",
        "scripts/tiny/helpers.py": "def unused():\n    return 1\n",
    }) == ["scripts/tiny/helpers.py"]  # fmt: skip


def test_a_module_that_calls_its_own_definitions_at_import_in_an_unshipped_package_is_a_script(tmp_path: Path) -> None:
    # sqlalchemy's examples/graphs/directed_graph.py: `class Node`, `class Edge`, then `Edge(n1, n2)`
    # and `session.commit()` at module level (23 orphans). A module whose import-time call only sets
    # up what it defines (`_register()` bound, or a library's call) and defines things stays one.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "examples/__init__.py": "", "examples/graphs/__init__.py": "",
        "examples/graphs/directed.py": "import lib\n\n\nclass Edge:\n    def __init__(self, a, b):\n        self.a = a\n"
                                       "\n\nEdge(1, 2)\nprint(lib)\n",
        "examples/graphs/registry.py": "import logging\n\nlogging.basicConfig()\n\n\ndef table():\n    return {}\n\n\n"
                                       "TABLE = table()\n",
        # fairseq's plugin modules apply a decorator they define: a registration, not a script's work.
        "examples/graphs/plugin.py": "def pooled(base):\n    return lambda cls: cls\n\n\n@pooled(object)\nclass Fixed:\n    pass\n",
        # sqlalchemy's examples/inheritance/joined.py: its classes built in a `with` block whose
        # statements do the work.
        "examples/graphs/joined.py": "import lib\n\n\nclass Company:\n    pass\n\n\nwith lib.Session() as session:\n"
                                     "    c = Company()\n    session.add(c)\n    session.commit()\n",
        # litestar's docs example builds an app from its own class, inside an expression.
        "examples/graphs/app.py": "import lib\n\n\nclass Timeout:\n    pass\n\n\napp = lib.App(middleware=[Timeout()])\n",
    }) == ["examples/graphs/app.py", "examples/graphs/plugin.py", "examples/graphs/registry.py"]  # fmt: skip


def test_a_helper_that_works_at_import_and_is_imported_is_no_script(tmp_path: Path) -> None:
    # Megatron-LM's tools/bert_embedding/external_libs.py imports libraries at import and is
    # imported by embed.py: not a `python -m` script, so the unused package stays reported.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "tools/__init__.py": "", "tools/emb/__init__.py": "from .embed import embed\n",
        "tools/emb/embed.py": "from .external_libs import h5py\n\n\ndef embed():\n    return h5py\n",
        "tools/emb/external_libs.py": "import importlib\n\nh5py = importlib.import_module('h5py')\n",
    }) == ["tools/__init__.py", "tools/emb/__init__.py", "tools/emb/embed.py", "tools/emb/external_libs.py"]  # fmt: skip


# -- session 40: plugins walked by pkgutil, notes that are no code ---------------------------------
def test_plugins_imported_by_walking_their_package_are_reached(tmp_path: Path) -> None:
    """pyupgrade's idiom: `pkgutil.walk_packages(_plugins.__path__, prefix)` and `__import__` of
    each name reach every level; `iter_modules` of the module's own folder reaches one level, not
    below it; a walk that imports nothing reaches nothing."""
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n",
        "lib/__init__.py": "", "lib/main.py": "from lib import _data, _listed, _level, _by_keyword, _scan\n",
        "lib/_data.py": "import pkgutil\n\nfrom lib import _plugins\n\n\ndef load():\n    path = _plugins.__path__\n"
                        "    for _, name, _ in pkgutil.walk_packages(path, f'{_plugins.__name__}.'):\n"
                        "        __import__(name)\n\n\nload()\n",
        "lib/_plugins/__init__.py": "", "lib/_plugins/fold.py": "X = 1\n",
        "lib/_plugins/deep/__init__.py": "", "lib/_plugins/deep/inner.py": "X = 1\n",
        "lib/_level/__init__.py": "import importlib\nimport os\nimport pkgutil\n\n"
                                  "for info in pkgutil.iter_modules([os.path.dirname(__file__)]):\n"
                                  "    importlib.import_module(__name__ + '.' + info.name)\n",
        "lib/_level/sibling.py": "X = 1\n", "lib/_level/below/__init__.py": "", "lib/_level/below/far.py": "X = 1\n",
        "lib/_listed.py": "import pkgutil\n\nfrom lib import _shown\n\n"
                          "NAMES = [m.name for m in pkgutil.iter_modules(_shown.__path__)]\n",
        "lib/_shown/__init__.py": "", "lib/_shown/only_named.py": "X = 1\n",
        "lib/_by_keyword.py": "import importlib\nimport pkgutil\n\nfrom lib import _kw\n\n"
                              "for info in pkgutil.walk_packages(path=_kw.__path__, prefix='lib._kw.'):\n"
                              "    importlib.import_module(info.name)\n",
        "lib/_kw/__init__.py": "", "lib/_kw/hook.py": "X = 1\n",
        "lib/_scan.py": "import importlib\nimport pkgutil\n\n\ndef _scan(modules):\n    for mdl in modules:\n"
                        "        for _, name, _ in pkgutil.walk_packages(mdl.__path__, mdl.__name__ + '.'):\n"
                        "            importlib.import_module(name)\n\n\n"
                        "_scan([importlib.import_module('lib._core_plugins')])\n",
        "lib/_core_plugins/__init__.py": "", "lib/_core_plugins/fish.py": "X = 1\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert status["lib._plugins.fold"] == status["lib._plugins.deep.inner"] == status["lib._level.sibling"] == WIRED
    assert status["lib._kw.hook"] == WIRED  # hydra's `walk_packages(path=mdl.__path__, …)`
    assert status["lib._core_plugins.fish"] == WIRED  # hydra's walk over the packages it imported by name
    assert sorted(d.path for d in findings(analysis, "FX201")) == ["lib/_level/below/far.py", "lib/_shown/only_named.py"]


def test_a_walk_of_the_package_a_caller_names_reaches_its_modules(tmp_path: Path) -> None:
    """sktime's `_all_classes("sktime.datatypes")`, which hands the name on to `_all_cond(name,
    cond)`: `package = importlib.import_module(module_name)` then `walk_packages(path=
    [package.__path__[0]], …)` over the package each caller names (19 orphans). A package no reached caller names stays unreached; a literal import walked through
    `[package_path]` (`package_path = package.__path__[0]`) reaches its modules too."""
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n",
        "lib/__init__.py": "from lib.examples import get_examples, get_more\n",
        "lib/_retrieval.py": "import importlib\nimport inspect\nimport pkgutil\n\n\ndef all_classes(name):\n"
                             "    return list(_all_cond(name, inspect.isclass))\n\n\ndef _all_cond(module_name, cond):\n"
                             "    package = importlib.import_module(module_name)\n"
                             "    for _, name, _ in pkgutil.walk_packages(path=[package.__path__[0]], prefix=module_name + '.'):\n"
                             "        yield from inspect.getmembers(importlib.import_module(name), cond)\n\n\n"
                             "def more():\n    package = importlib.import_module('lib._extra')\n"
                             "    package_path = package.__path__[0]\n"
                             "    for info in pkgutil.iter_modules([package_path]):\n"
                             "        importlib.import_module('lib._extra.' + info.name)\n",
        "lib/examples.py": "from lib._retrieval import all_classes, more\n\n\ndef get_examples():\n"
                           "    return list(all_classes('lib._types'))\n\n\ndef get_more():\n    return more()\n",
        "lib/_types/__init__.py": "", "lib/_types/_table.py": "class Table:\n    pass\n",
        "lib/_types/deep/__init__.py": "", "lib/_types/deep/_panel.py": "class Panel:\n    pass\n",
        "lib/_extra/__init__.py": "", "lib/_extra/_one.py": "X = 1\n",
        "lib/_unnamed/__init__.py": "", "lib/_unnamed/_gone.py": "X = 1\n",
    })  # fmt: skip
    status = _modules(analysis)
    assert status["lib._types._table"] == status["lib._types.deep._panel"] == status["lib._extra._one"] == WIRED
    assert sorted(d.path for d in findings(analysis, "FX201")) == ["lib/_unnamed/__init__.py", "lib/_unnamed/_gone.py"]


def test_an_all_listed_from_the_package_folder_imports_its_modules(tmp_path: Path) -> None:
    """torch_geometric's graphgym `contrib/act/__init__.py`: `modules = glob.glob(join(dirname(
    __file__), "*.py"))`, `__all__ = [basename(f)[:-3] for f in modules …]`, star-imported by
    `contrib/__init__.py` (12 orphans). One level only; a written-out `__all__` imports the
    submodules it names, not the others."""
    glob_all = ("import glob\nfrom os.path import basename, dirname, join\n\n"
                "modules = glob.glob(join(dirname(__file__), '*.py'))\n"
                "__all__ = [basename(f)[:-3] for f in modules if not f.endswith('__init__.py')]\n")
    assert _fx201(tmp_path, {
        "lib/__init__.py": "from lib import contrib\n",
        "lib/contrib/__init__.py": "from .act import *  # noqa\nfrom .plain import *  # noqa\n",
        "lib/contrib/act/__init__.py": glob_all, "lib/contrib/act/_swish.py": "X = 1\n",
        "lib/contrib/act/_deep/__init__.py": "", "lib/contrib/act/_deep/_far.py": "X = 1\n",
        "lib/contrib/plain/__init__.py": "__all__ = ['_kept']\n", "lib/contrib/plain/_kept.py": "X = 1\n",
        "lib/contrib/plain/_dropped.py": "X = 1\n",
    }) == ["lib/contrib/act/_deep/_far.py", "lib/contrib/plain/_dropped.py"]


def test_a_module_that_is_only_a_note_is_no_orphan_but_an_empty_one_is(tmp_path: Path) -> None:
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "examples/dpo.py": "# Copyright 2026.\n\n# This script moved to lib/scripts/dpo.py.\n",
        "examples/doc.py": '"""Moved: see lib.scripts."""\n',
        "examples/empty.py": "",
        "examples/disabled.py": "# Kept for reference; DISABLED.\n\n# import torch\n# from lib import model\n\n"
                                "# net = model.build()\n# def run(x):\n#     return net(x)\n",
        "examples/asserts.py": "# A check.\nassert True\n",
    }) == ["examples/asserts.py", "examples/disabled.py", "examples/empty.py"]


def test_a_script_whose_path_is_no_module_name_is_run_by_path_and_its_imports_count(tmp_path: Path) -> None:
    """werkzeug's `examples/manage-coolmagic.py` (`from coolmagic import make_app`, beside it) and
    detectron2's `configs/COCO-Detection/*.py` (`from ..common.optim import SGD`): no import can
    name such a file, so it is a script, and what it imports is reached (not the packages of the
    folders it sits in: run by its path, it runs no package `__init__`)."""
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "examples/manage-shop.py": "from shop.views import index\n\nindex()\n",
        "examples/shop/__init__.py": "", "examples/shop/views.py": "def index():\n    return 1\n",
        "configs/__init__.py": "", "configs/common/__init__.py": "", "configs/common/optim.py": "SGD = 1\n",
        "configs/COCO-Detection/retina.py": "from ..common.optim import SGD\n\nlr = SGD\n",
        "configs/common/unused.py": "X = 1\n",
        "tools/__init__.py": "X = 1\n", "tools/gen-data/make.py": "print('made')\n",
    }) == ["configs/common/unused.py", "tools/__init__.py"]


def test_a_stray_init_at_a_packaged_root_does_not_rename_every_module(tmp_path: Path) -> None:
    """ElegantRL: an `__init__.py` beside `setup.py` at the root. The root is where the project is
    installed from, so `from pkg.base import Base` names `pkg.base`; the family check sees the
    subclass that implements `make_spec`, and the unused module is an orphan."""
    root = tmp_path / "RootProject"
    analysis = _analyze(root, {
        "__init__.py": "", "setup.py": "from setuptools import find_packages, setup\n\nsetup(name='x', packages=find_packages())\n",
        "pkg/__init__.py": "", "pkg/base.py": "class Base:\n    def make_spec(self):\n        raise NotImplementedError\n",
        "pkg/sub.py": "from pkg.base import Base\n\n\nclass Sub(Base):\n    def make_spec(self):\n        return 1\n",
        "main.py": "from pkg.sub import Sub\n\nif __name__ == '__main__':\n    Sub().make_spec()\n",
        "docs/init.py": "X = 1\n",
    })  # fmt: skip
    assert "pkg.base" in _modules(analysis)
    assert [d.path for d in findings(analysis, "FX201")] == ["docs/init.py"]


def test_files_tools_load_by_their_conventional_names_are_entry_points(tmp_path: Path) -> None:
    """nox, conan, fabric, doit, invoke's `tasks.py`, `site`'s `sitecustomize`, an in-tree PEP 517
    backend; a `tasks.py` that does not import invoke is an ordinary module."""
    assert _fx201(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n\n"
                          "[build-system]\nbuild-backend = '_build_meta'\nbackend-path = ['.']\n",
        "lib/__init__.py": "",
        "noxfile.py": "import nox\n\n\n@nox.session\ndef tests(session):\n    session.run('pytest')\n",
        "tools/llvm/conanfile.py": "from conan import ConanFile\n\n\nclass Llvm(ConanFile):\n    name = 'llvm'\n",
        "dodo.py": "def task_build():\n    return {'actions': ['make']}\n",
        "ops/tasks.py": "from invoke import task\n\n\n@task\ndef build(c):\n    c.run('make')\n",
        "other/tasks.py": "def build():\n    return 1\n",
        "sandbox/sitecustomize.py": "import os\n\nos.environ.setdefault('X', '1')\n",
        "_build_meta.py": "from setuptools.build_meta import *  # noqa: F403\n",
    }) == ["other/tasks.py"]


def test_an_old_import_path_kept_with_a_deprecation_warning_is_no_orphan(tmp_path: Path) -> None:
    """tqdm's `_tqdm.py`: `from .std import *` and a module-level `warn(…, TqdmDeprecationWarning)`."""
    assert _fx201(tmp_path, {
        "lib/__init__.py": "from .std import tqdm\n", "lib/std.py": "def tqdm():\n    return 1\n",
        "lib/_tqdm.py": "from warnings import warn\n\nfrom .std import *  # noqa: F403\n\n"
                        "warn('This function will be removed in lib 5: use lib.std', LibDeprecationWarning, stacklevel=2)\n",
        "lib/_helpers.py": "from warnings import warn\n\nwarn('slow path')\n\nX = 1\n",
        "lib/_old/__init__.py": "import warnings\n\nfrom lib.std import tqdm\n\n"
                                "warnings.warn('lib._old will soon be removed', category=DeprecationWarning)\n",
    }) == ["lib/_helpers.py"]


def test_a_package_of_data_files_marked_by_a_commented_init_is_no_orphan(tmp_path: Path) -> None:
    """unsloth's `assets/configs/__init__.py` (a licence header, YAML beside it); an empty package
    `__init__.py` and the commented one of a package with modules below it stay orphans."""
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "lib/_assets/__init__.py": "# SPDX-License-Identifier: MIT\n", "lib/_assets/lora.yaml": "r: 8\n",
        "lib/_assets/single-env/patch.py": "print('patched')\n",  # a script below it, in a folder no import names
        "lib/_empty/__init__.py": "",
        "lib/_old/__init__.py": "# Old helpers.\n", "lib/_old/helpers.py": "X = 1\n",
    }) == ["lib/_empty/__init__.py", "lib/_old/__init__.py", "lib/_old/helpers.py"]


def test_a_python_file_a_yaml_file_names_by_its_path_is_loaded_by_path(tmp_path: Path) -> None:
    """mkdocs' `hooks: [docs/plugins/main.py]` (from the root), a CI step's `python gen.py` beside
    its YAML file; a URL ending in `.py`, and a path under a key that selects files (a workflow's
    `paths:` filter), name nothing run."""
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "mkdocs.yml": "site_name: App\nhooks:\n  - docs/plugins/main.py\nrepo_url: https://x.org/raw/tools/fetched.py\n",
        "docs/plugins/main.py": "def on_page_content(html, page, config, files):\n    return html\n",
        "ci/build.yml": "steps:\n  - run: python gen.py --out build\n", "ci/gen.py": "def main():\n    return 1\n",
        "tools/fetched.py": "X = 1\n",
        "ci/workflow.yml": "on:\n  pull_request:\n    paths:\n      - tools/filtered.py\n",
        "tools/filtered.py": "X = 1\n",
    }) == ["tools/fetched.py", "tools/filtered.py"]


def test_scripts_a_file_of_command_lines_runs_by_path_are_entries(tmp_path: Path) -> None:
    """cccl's `.gdbinit` (`source lib/gdb/__init__.py`) and `.lldbinit` (`command script import
    lib/lldb/__init__.py`): the debugger runs each by path, and what it imports beside itself (32
    orphans); a printer no start-up file names stays an orphan."""
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        ".gdbinit": "set print pretty on\nsource share/gdb/printers.py\n",
        "share/gdb/printers.py": "import sys\nimport os\n\nsys.path.insert(0, os.path.dirname(__file__))\n"
                                 "import span  # noqa: E402\n\nspan.register()\n",
        "share/gdb/span.py": "def register():\n    return 1\n",
        "tools/.lldbinit": "command script import ../share/lldb/printers.py\n",
        "share/lldb/printers.py": "def __lldb_init_module(debugger, internal_dict):\n    return debugger\n",
        "share/gdb/unused.py": "X = 1\n",
        # Pillow's CI script (`pytest checks/check_wheel.py`), a makefile's and tox's command lines.
        ".ci/test.sh": "#!/bin/sh\nset -e\npytest checks/check_wheel.py\n", "checks/check_wheel.py": "def test_wheel():\n    assert 1\n",
        "Makefile": "docs:\n\tpython tools/gen_docs.py --out build\n", "tools/gen_docs.py": "X = 1\n",
        "tox.ini": "[testenv:bench]\ncommands = python bench/run.py {posargs}\n", "bench/run.py": "X = 1\n",
    }) == ["share/gdb/unused.py"]


def test_sys_path_entries_above_the_module_and_through_an_alias_of_join(tmp_path: Path) -> None:
    """IPython's docs: `sys.path.insert(0, os.path.abspath("../sphinxext"))` in `docs/source/conf.py`
    (Sphinx then imports the extension it lists), `pjoin = os.path.join` then
    `sys.path.append(pjoin(here, "sphinxext"))` and `from apigen import ApiDocWriter`."""
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs/source/conf.py": "import os\nimport sys\n\nsys.path.insert(0, os.path.abspath('../sphinxext'))\n\n"
                               "extensions = ['magics']\n",
        "docs/sphinxext/magics.py": "def setup(app):\n    return app\n",
        "docs/sphinxext/apigen.py": "class ApiDocWriter:\n    pass\n",
        "docs/sphinxext/unused.py": "X = 1\n",
        "docs/autogen_api.py": "import os\nimport sys\n\npjoin = os.path.join\nhere = os.path.dirname(__file__)\n"
                               "sys.path.append(pjoin(here, 'sphinxext'))\n\nfrom apigen import ApiDocWriter\n\n"
                               "if __name__ == '__main__':\n    ApiDocWriter()\n",
    }) == ["docs/sphinxext/unused.py"]


def test_modules_a_tool_setting_imports_are_entry_points_and_listed_layers_are_not(tmp_path: Path) -> None:
    """mypy's `plugins`, Fixit's `enable = [".examples.noop"]` (relative to the configuration);
    import-linter's layers name modules without importing them."""
    assert _fx201(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n\n[tool.mypy]\nplugins = ['tools.mypy_plugin']\n\n"
                          "[[tool.fixit.overrides]]\npath = 'examples'\nenable = ['.examples.noop']\n\n"
                          "[[tool.importlinter.contracts]]\nname = 'layers'\ntype = 'layers'\nlayers = ['tools.layered']\n",
        "lib/__init__.py": "",
        "tools/mypy_plugin.py": "def plugin(version):\n    return object\n",
        "examples/noop.py": "class NoopRule:\n    MESSAGE = 'noop'\n",
        "tools/layered.py": "X = 1\n",
    }) == ["tools/layered.py"]


def test_files_a_test_names_by_their_file_name_are_test_data(tmp_path: Path) -> None:
    """bandit: `check_example("eval.py")` over `examples/`; mitmproxy: a path from the test's
    folder (`"../examples/addons/anatomy2.py"`); a bare name two files share names the one nothing
    else reaches (bandit's example beside its plugin of the same name), else neither."""
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'scan'\nversion = '1'\n",
        "scan/__init__.py": "", "examples/__init__.py": "",
        "tests/test_functional.py": "def test_eval(check):\n    check('eval_use.py')\n    check('../fixtures/local.py')\n"
                                    "    check('utils.py')\n",
        "examples/eval_use.py": "def run():\n    return eval('1+1')\n", "fixtures/local.py": "X = 1\n",
        "examples/utils.py": "X = 1\n", "other/utils.py": "X = 1\n",
        "tests/test_plugins.py": "from scan.plugins import yaml_load\n\n\ndef test_yaml(check):\n"
                                 "    check('yaml_load.py')\n    check('__init__.py')\n",
        "other/__init__.py": "X = 1\n",
        "scan/plugins/__init__.py": "", "scan/plugins/yaml_load.py": "X = 1\n", "examples/yaml_load.py": "X = 1\n",
    })  # fmt: skip
    entries = analysis.imports.entries
    assert entries["examples.eval_use"] == entries["fixtures.local"] == entries["examples.yaml_load"] == TEST_DATA
    assert sorted(d.path for d in findings(analysis, "FX201")) == ["examples/utils.py", "other/__init__.py", "other/utils.py"]


def test_a_file_a_setup_script_execs_by_a_literal_path_is_loaded(tmp_path: Path) -> None:
    """torchquantum's setup.py: `with open("pkg/__version__.py") as f: exec(f.read(), VERSION)`."""
    assert _fx201(tmp_path, {
        "pyproject.toml": "[project]\nname = 'other'\nversion = '1'\n",
        "setup.py": "from setuptools import setup\n\nVERSION = {}\nwith open('pkg/__version__.py') as f:\n"
                    "    exec(f.read(), VERSION)\n\nsetup(name='pkg', version=VERSION['__version__'])\n",
        "pkg/__init__.py": "", "pkg/__version__.py": "__version__ = '1.0'\n", "pkg/_unused.py": "X = 1\n",
    }) == ["pkg/_unused.py"]


def test_a_quoted_registry_reference_resolves_beside_the_scripts_that_import_its_package(tmp_path: Path) -> None:
    """flash-fft-conv's `examples/hyena/src/utils/registry.py`: `"src.models.h3.H3"`, resolved as the
    scripts beside `src/` resolve their static `import src.…`."""
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "examples/hyena/train.py": "from src.utils import registry\n\nif __name__ == '__main__':\n    print(registry.MODELS)\n",
        "examples/hyena/src/__init__.py": "", "examples/hyena/src/utils/__init__.py": "",
        "examples/hyena/src/utils/registry.py": "MODELS = {'h3': 'src.models.h3.H3'}\n",
        "examples/hyena/src/models/__init__.py": "", "examples/hyena/src/models/h3.py": "class H3:\n    pass\n",
        "examples/hyena/src/models/unused.py": "X = 1\n",
    }) == ["examples/hyena/src/models/unused.py"]


def test_python_files_a_documentation_page_includes_are_its_examples(tmp_path: Path) -> None:
    # FastAPI's `docs/en/docs/tutorial/body.md`: `{* ../../docs_src/body/tutorial001_py310.py hl[2] *}`
    # (resolved from its docs folder, two levels up); Sphinx's `.. literalinclude::`, MyST's fenced
    # form and pymdownx's `--8<--` snippets. A file the prose only mentions stays an orphan.
    assert _fx201(tmp_path, {
        "lib/__init__.py": "",
        "docs_src/__init__.py": "", "docs_src/body/__init__.py": "",
        "docs_src/body/tutorial001.py": "from lib import x\n\napp = x\n",
        "docs/en/docs/tutorial/body.md": "# Body\n\n{* ../../docs_src/body/tutorial001.py hl[2] *}\n",
        "examples/__init__.py": "",
        "examples/rst_shown.py": "A = 1\n", "examples/myst_shown.py": "B = 1\n", "examples/snippet.py": "C = 1\n",
        "examples/mentioned.py": "D = 1\n",
        # litestar: `.. literalinclude:: /examples/caching/cache.py` is the Sphinx source folder's;
        # textual: a fence's `path=` attribute.
        "docs/examples/caching/cache.py": "E = 1\n", "docs/examples/app/console.py": "F = 1\n",
        "docs/usage/caching.rst": "Caching\n=======\n\n.. literalinclude:: /examples/caching/cache.py\n",
        "docs/guide/devtools.md": '```{.textual title="console" path="docs/examples/app/console.py"}\n```\n',
        "docs/examples/orphan.py": "G = 1\n",
        "doc/usage.rst": "Usage\n=====\n\n.. literalinclude:: ../examples/rst_shown.py\n   :lines: 1-3\n",
        "doc/guide.md": "```{literalinclude} ../examples/myst_shown.py\n```\n\n--8<-- \"examples/snippet.py:1:3\"\n\n"
                        "The old code lived in `examples/mentioned.py`.\n",
    }) == ["docs/examples/orphan.py", "examples/mentioned.py"]


def test_a_dynamic_import_completed_by_a_string_the_caller_holds(tmp_path: Path) -> None:
    # FastAPI's tests: `import_module(f"docs_src.body.{request.param}")` in a fixture whose
    # `params=[pytest.param("tutorial001_py310"), "tutorial002"]` name the modules (55 notes → 1).
    # The module no string names stays under the call's note.
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'lib'\nversion = '1'\n",
        "lib/__init__.py": "",
        "docs_src/__init__.py": "", "docs_src/body/__init__.py": "",
        "docs_src/body/tutorial001_py310.py": "app = 1\n", "docs_src/body/tutorial002.py": "app = 2\n",
        "docs_src/body/tutorial003.py": "app = 3\n",
        "tests/test_body.py": "import importlib\n\nimport pytest\n\n\n"
                              "@pytest.fixture(params=[pytest.param('tutorial001_py310', marks=[]), 'tutorial002'])\n"
                              "def client(request):\n    return importlib.import_module(f'docs_src.body.{request.param}')\n\n\n"
                              "def test_app(client):\n    assert client.app\n",
    })
    modules = _modules(analysis)
    assert modules["docs_src.body.tutorial001_py310"] == PARTIAL and modules["docs_src.body.tutorial002"] == PARTIAL
    assert modules["docs_src.body.tutorial003"] == UNRESOLVED
    assert [d.message.split(" (")[0] for d in findings(analysis, "FX201")] == [
        "orphan-module analysis unresolved for 1 modules under `docs_src.body`"]


def test_a_module_name_built_on_one_branch_of_a_conditional_is_a_dynamic_import(tmp_path: Path) -> None:
    # pytest's `importspec = "_pytest." + modname if modname in builtin_plugins else modname`, then
    # `importlib.import_module(importspec)`: the plugins its tuples and sets name are loaded (5
    # orphans on pytest); a module no string names is left under the call's note, not reached (a
    # private package: not the library's API).
    analysis = _analyze(tmp_path, {
        "pyproject.toml": "[project]\nname = 'pt'\nversion = '1'\n[project.scripts]\npt = '_pt.config:main'\n",
        "_pt/__init__.py": "", "_pt/mark.py": "X = 1\n", "_pt/terminal.py": "X = 1\n", "_pt/pytester.py": "X = 1\n",
        "_pt/unnamed.py": "X = 1\n",
        "_pt/config.py": "import importlib\n\nessential = ('mark',)\ndefault = (*essential, 'terminal')\n"
                        "builtin = {*default, 'pytester'}\n\n\ndef load(name):\n"
                        "    spec = '_pt.' + name if name in builtin else name\n    return importlib.import_module(spec)\n\n\n"
                        "def main():\n    for name in default:\n        load(name)\n",
    })
    modules = _modules(analysis)
    assert modules["_pt.mark"] == modules["_pt.terminal"] == modules["_pt.pytester"] == WIRED
    assert modules["_pt.unnamed"] == UNRESOLVED
    assert findings(analysis, "FX201") and all("orphan module" not in d.message for d in findings(analysis, "FX201"))
