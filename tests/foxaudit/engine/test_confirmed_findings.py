"""Per-file findings the whole-project pass confirms (FX902 across files): a base class's hook
with its subclasses in another module, a subclass's answer to a base implemented elsewhere."""

from __future__ import annotations

import tomllib

import pytest

from foxaudit.config import Settings
from foxaudit.engine.resolve import resolve
from foxaudit.engine.run import check

BASE = """\
class Reader:
    def read(self, n):
        raise NotImplementedError

    def close(self):
        pass

    def size(self):
        return self.n

    def orphan_hook(self):
        raise NotImplementedError
"""

# The subclass imports its base under another name, from another package.
SUBCLASS = """\
from pkg.base import Reader as BaseReader


class FileReader(BaseReader):
    def read(self, n):
        return self.handle.read(n)

    def close(self):
        self.handle.close()

    def size(self):
        raise NotImplementedError("a stream has no size")
"""


def _stubs(result):
    return sorted((d.path, d.line) for d in result.diagnostics if d.code == "FX902")


def _resolved(root, select=("FX902",)):
    # Every method placeholder is judged (as in Foxhunt's own configuration): these tests are
    # about the class family, not about which unmarked method bodies the default reports.
    return resolve(Settings(root=root, select=select, rules={"FX902": {"unmarked-methods": True}}))


def test_hooks_and_overrides_across_files_are_not_stubs(project, tmp_path):
    root = project({"pkg/__init__.py": "", "pkg/base.py": BASE, "other/impl.py": SUBCLASS})
    result = check(_resolved(root), cache_dir=tmp_path / "c")
    # Only the hook no class implements is left: read/close are implemented below, size above.
    assert _stubs(result) == [("pkg/base.py", 11)]


def test_without_the_project_pass_the_file_alone_decides(project, tmp_path):
    root = project({"pkg/__init__.py": "", "pkg/base.py": BASE, "other/impl.py": SUBCLASS})
    result = check(_resolved(root), cache_dir=tmp_path / "c", project=False)
    # (FileReader.size is no finding in either mode: "a stream has no size" states a limitation.)
    assert _stubs(result) == [("pkg/base.py", 2), ("pkg/base.py", 5), ("pkg/base.py", 11)]


def test_the_default_rule_set_confirms_too(project, tmp_path):
    root = project({"pkg/__init__.py": "", "pkg/base.py": BASE, "other/impl.py": SUBCLASS})
    result = check(resolve(Settings(root=root)), cache_dir=tmp_path / "c")
    assert _stubs(result) == [("pkg/base.py", 11)]


def test_an_unchanged_file_finding_follows_an_edit_of_another_file(project, tmp_path):
    root = project({"pkg/__init__.py": "", "pkg/base.py": BASE, "other/impl.py": SUBCLASS})
    cache = tmp_path / "c"
    assert _stubs(check(_resolved(root), cache_dir=cache)) == [("pkg/base.py", 11)]
    # The subclass stops implementing read(): the base's hook is a stub again, though base.py
    # (and its cached per-file result) did not change.
    (root / "other/impl.py").write_text(SUBCLASS.replace("return self.handle.read(n)", "raise NotImplementedError"))
    assert _stubs(check(_resolved(root), cache_dir=cache)) == [("other/impl.py", 5), ("pkg/base.py", 2), ("pkg/base.py", 11)]
    (root / "other/impl.py").write_text(SUBCLASS)
    assert _stubs(check(_resolved(root), cache_dir=cache)) == [("pkg/base.py", 11)]


def test_run_inside_the_package_the_modules_keep_its_name(tmp_path, monkeypatch):
    # `cd site-packages/pkg && foxaudit check`: the root holds `__init__.py`, so its modules are
    # `pkg.base` and `pkg.impl` (not `base`, `impl`), and `from pkg.base import ...` reaches them.
    root = tmp_path / "site" / "pkg"
    root.mkdir(parents=True)
    for name, text in {"__init__.py": "", "base.py": BASE, "impl.py": SUBCLASS}.items():
        (root / name).write_text(text)
    monkeypatch.chdir(root)
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("base.py", 11)]


def test_a_suppressed_hook_stays_suppressed(project, tmp_path):
    suppressed = BASE.replace("    def orphan_hook(self):", "    def orphan_hook(self):  # foxaudit: ignore[FX902] -- plugins implement it")
    root = project({"pkg/__init__.py": "", "pkg/base.py": suppressed, "other/impl.py": SUBCLASS})
    result = check(_resolved(root, ("FX902", "FX003")), cache_dir=tmp_path / "c")
    assert [(d.path, d.code) for d in result.diagnostics] == []


DEVICE = """\
class DeviceInterface:
    class Worker:
        @staticmethod
        def set_device(device):
            raise NotImplementedError
"""

CUDA_DEVICE = """\
from pkg.device import DeviceInterface


class CudaInterface(DeviceInterface):
    class Worker:
        @staticmethod
        def set_device(device):
            torch.cuda.set_device(device)
"""


def test_a_nested_class_is_related_to_its_twin_in_a_subclass(project, tmp_path):
    root = project({"pkg/__init__.py": "", "pkg/device.py": DEVICE, "pkg/cuda.py": CUDA_DEVICE})
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == []
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c", project=False)) == [("pkg/device.py", 4)]


def test_a_member_bound_by_assignment_in_another_file_implements_it(project, tmp_path):
    device = DEVICE.replace("class Worker:\n        @staticmethod\n        def set_device(device):\n            raise NotImplementedError\n",
                            "@staticmethod\n    def set_device(device):\n        raise NotImplementedError\n")
    # (Named Device, not DeviceInterface: a class named an interface declares its members in either pass.)
    device = device.replace("DeviceInterface", "Device")
    cuda = "from pkg.device import Device\n\n\nclass CudaDevice(Device):\n    set_device = staticmethod(torch.cuda.set_device)\n"
    root = project({"pkg/__init__.py": "", "pkg/device.py": device, "pkg/cuda.py": cuda})
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == []
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c", project=False)) == [("pkg/device.py", 3)]


PRINTER = """\
class Printer:
    def doprint(self, expr):
        return str(expr)

    def print_infinity(self, expr):
        raise NotImplementedError

    def print_nan(self, expr):
        return ""
"""

PRINTERS = """\
from pkg.printer import Printer


class PythonPrinter(Printer):
    def print_infinity(self, expr):
        return "math.inf"

    def print_nan(self, expr):
        return ""
"""

CPP_PRINTER = """\
from pkg.printer import Printer


class CppPrinter(Printer):
    def print_infinity(self, expr):
        return "INFINITY"
"""


def test_different_constants_across_files_are_answers_the_same_constant_is_not(project, tmp_path):
    root = project({"pkg/__init__.py": "", "pkg/printer.py": PRINTER, "pkg/printers.py": PRINTERS,
                    "pkg/cpp.py": CPP_PRINTER})
    result = check(_resolved(root), cache_dir=tmp_path / "c")
    # print_infinity: the base's interface and two answers ("math.inf", "INFINITY"). print_nan:
    # the same "" in the base and in PythonPrinter is one placeholder copied, reported twice.
    assert _stubs(result) == [("pkg/printer.py", 8), ("pkg/printers.py", 8)]


FOLDER = """\
class Folder:
    def run(self, out):
        return out if self.insertable(out) else None

    def insertable(self, tensor):
        return True

    def size(self, tensor):
        return 0
"""

UNIFORM = """\
from pkg.folder import Folder


class UniformFolder(Folder):
    def insertable(self, tensor):
        return True
"""


def test_a_step_the_base_calls_is_a_hook_across_files(project, tmp_path):
    root = project({"pkg/__init__.py": "", "pkg/folder.py": FOLDER, "pkg/uniform.py": UNIFORM})
    # insertable: the base calls it and has a subclass (a hook), the subclass answers it; size:
    # nothing calls or overrides it, a constant that ignores its parameter.
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/folder.py", 8)]
    # Without the subclass, the base's step is unfinished work like the other.
    (root / "pkg/uniform.py").unlink()
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/folder.py", 5), ("pkg/folder.py", 8)]


def test_a_function_compared_by_identity_in_another_module_is_a_marker(project, tmp_path):
    # A tracer recognises `graph_break` by identity and acts in its place: its docstring-only body
    # is not what a call does. Compared with `==` (or not at all) it is a stub like any other.
    decorators = "def graph_break(msg=''):\n    '''Force a graph break.'''\n\n\ndef skip(msg=''):\n    '''Skip.'''\n"
    tracer = ("import pkg\n\n\ndef step(fn):\n    if fn is pkg.graph_break:\n        return 1\n"
              "    if fn == pkg.skip:\n        return 2\n    return fn()\n")
    root = project({"pkg/__init__.py": "from pkg.decorators import graph_break, skip\n",
                    "pkg/decorators.py": decorators, "pkg/tracer.py": tracer})
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/decorators.py", 5)]
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c", project=False)) == [
        ("pkg/decorators.py", 1), ("pkg/decorators.py", 5)]


def test_a_backend_module_answers_what_its_parallel_modules_implement(project, tmp_path):
    # `pkg.cuda` and `pkg.mtia` differ in one package: backends of one interface by convention.
    # MTIA's constant is its answer; a function no parallel module has, or a module that is not
    # parallel (`pkg.utils` is no package), stays reported.
    cuda = "def is_bf16_supported(including_emulation=True):\n    return capability() >= (8, 0)\n"
    mtia = ("def is_bf16_supported(including_emulation=True):\n    return True\n\n\n"
            "def memory_stats(device):\n    return {}\n")
    utils = "def is_bf16_supported(including_emulation=True):\n    return True\n"
    root = project({"pkg/__init__.py": "", "pkg/cuda/__init__.py": cuda, "pkg/mtia/__init__.py": mtia,
                    "pkg/utils.py": utils})
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/mtia/__init__.py", 5), ("pkg/utils.py", 1)]


FEED = """\
import abc


class Feed(abc.ABC):
    def run(self):
        self.fetch_index()

    @abc.abstractmethod
    def fetch_index(self):
        raise NotImplementedError
"""

LOCAL_FEED = """\
import abc

from pkg.feed import Feed


class LocalFeed(Feed, abc.ABC):
    def fetch_index(self):
        pass

    def flush(self):
        pass

    @abc.abstractmethod
    def symbols(self):
        raise NotImplementedError
"""


def test_an_abstract_class_answering_a_base_declared_in_another_file_is_no_b027(project, tmp_path):
    """An abstract class's empty method (B027) stands unless a base above it, in any file, declares
    the method: `fetch_index` answers `Feed`'s abstract one, `flush` declares a new empty member."""
    root = project({"pkg/__init__.py": "", "pkg/feed.py": FEED, "pkg/local.py": LOCAL_FEED})
    for options in ({}, {"unmarked-methods": True}):
        settings = resolve(Settings(root=root, select=("FX902",), rules={"FX902": options}))
        result = check(settings, cache_dir=tmp_path / f"c{len(options)}")
        assert _stubs(result) == [("pkg/local.py", 10)]


def test_an_abstract_class_with_a_plain_base_from_another_file_is_no_b027(project, tmp_path):
    """freqtrade's `IStrategy(ABC, HyperStrategyMixin)`, the mixin in another file: bugbear and ruff
    leave multiple inheritance out of B027 (the empty method may answer the other base); with an
    abstract base beside `ABC` (`LocalFeed(Feed, abc.ABC)`, above) it stays one."""
    root = project({
        "pkg/__init__.py": "",
        "pkg/mixin.py": "class HyperMixin:\n    def params(self):\n        return {}\n",
        "pkg/strategy.py": "from abc import ABC\n\nfrom pkg.mixin import HyperMixin\n\n\n"
                           "class IStrategy(ABC, HyperMixin):\n    def bot_start(self):\n        pass\n",
        "pkg/feed.py": FEED,
        "pkg/local.py": LOCAL_FEED,
    })  # fmt: skip
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/local.py", 10)]


def test_a_base_found_through_a_packages_star_reexport_is_the_family(project, tmp_path):
    # DeepSpeed: the models reach their base with `from .. import *` from a package whose
    # `__init__` only re-exports it (`from .base import ModelBase`).
    files = {
        "pkg/__init__.py": "",
        "pkg/impls/__init__.py": "from .base import ModelBase\n",
        "pkg/impls/base.py": "class ModelBase:\n    def forward(self, x):\n        raise NotImplementedError\n\n"
                             "    def size(self):\n        return self.n\n\n"
                             "    def orphan_hook(self):\n        raise NotImplementedError\n",
        "pkg/impls/falcon/__init__.py": "",
        "pkg/impls/falcon/model.py": "from .. import *\n\n\nclass Falcon(ModelBase):\n    def forward(self, x):\n"
                                     "        return x\n",
    }  # fmt: skip
    root = project(files)
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/impls/base.py", 8)]


def test_the_folders_pytest_collects_from_hold_test_modules(project, tmp_path):
    # celery keeps its tests in `t/unit/` and says so in `testpaths`; a task module there whose
    # body is `pass` is a test's double, not a stub. Without the table the same file is reported,
    # and a `test-files` the project sets itself replaces the default, `testpaths` included.
    files = {"t/unit/tasks.py": "def slow_task():\n    pass\n",
             "t/unit/test_limits.py": "from t.unit.tasks import slow_task\n\n\ndef test_limit():\n    assert slow_task\n"}
    told = {"pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = \"t/unit/\"\n"}
    assert _stubs(check(resolve(Settings(root=project(files), select=("FX902",))), cache_dir=tmp_path / "a")) == [
        ("t/unit/tasks.py", 1)]
    root = project({**files, **told})
    settings = Settings(root=root, select=("FX902",), pyproject={"tool": {"pytest": {"ini_options": {"testpaths": "t/unit/"}}}})
    assert _stubs(check(resolve(settings), cache_dir=tmp_path / "b")) == []
    own = Settings(root=root, select=("FX902",), rules={"FX902": {"test-files": ["tests/"]}}, pyproject=settings.pyproject)
    assert _stubs(check(resolve(own), cache_dir=tmp_path / "c")) == [("t/unit/tasks.py", 1)]


def test_a_backend_module_named_after_its_package_is_parallel_to_its_siblings(project, tmp_path):
    # hummingbot's connectors: `kraken/kraken_web_utils.py` and `alpha/alpha_web_utils.py` are one
    # interface's modules; `alpha/alpha_other.py` is parallel to nothing that defines the name.
    kraken = "def is_exchange_information_valid(info):\n    return info.get('status') == 'online'\n"
    alpha = "def is_exchange_information_valid(info):\n    return True\n"
    root = project({"pkg/__init__.py": "", "pkg/kraken/__init__.py": "", "pkg/alpha/__init__.py": "",
                    "pkg/kraken/kraken_web_utils.py": kraken, "pkg/alpha/alpha_web_utils.py": alpha,
                    "pkg/alpha/alpha_other.py": alpha})
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/alpha/alpha_other.py", 1)]


def test_a_function_another_module_hands_on_is_a_callback(project, tmp_path):
    # sphinx's `OPTION_SPEC = {"no-index": bool_option}`, networkx's `filter_node=no_filter`,
    # pre-commit's `health_check = lang_base.basic_health_check`: the constant is the answer the
    # caller wants. A function another module calls keeps its finding.
    root = project({
        "pkg/__init__.py": "",
        "pkg/options.py": "def bool_option(arg):\n    return True\n\n\ndef flag_value(arg):\n    return True\n",
        "pkg/documenters.py": "from pkg.options import bool_option, flag_value\n\nSPEC = {'no-index': bool_option}\n"
                              "FLAG = flag_value('x')\n",
        "pkg/lang_base.py": "def basic_health_check(prefix, version):\n    return None\n",
        "pkg/ruby.py": "from pkg import lang_base\n\nhealth_check = lang_base.basic_health_check\n",
    })  # fmt: skip
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/options.py", 5)]


def test_a_function_another_module_passes_as_an_argument_is_a_callback(project, tmp_path):
    # kaolin's `import_mesh(path, error_handler=ignore_error_handler)` (a library module) and
    # `heterogeneous_mesh_handler=utils.heterogeneous_mesh_handler_skip` (a test): the empty body
    # is what the caller was handed. One passed nowhere, or only called, keeps its finding.
    root = project({
        "pkg/__init__.py": "",
        "pkg/handlers.py": "def ignore_error(error, **kwargs):\n    \"\"\"Ignore every error.\"\"\"\n    pass\n\n\n"
                           "def skip_mesh(*args):\n    return None\n\n\ndef unused_hook(x):\n    pass\n\n\n"
                           "def called_hook(x):\n    pass\n",
        "pkg/loader.py": "from pkg.handlers import called_hook, ignore_error\n\n\ndef load(path, error_handler=None):\n"
                         "    called_hook(path)\n    return path\n\n\ndef load_quietly(path):\n"
                         "    return load(path, error_handler=ignore_error)\n",
        "tests/test_loader.py": "from pkg import handlers\nfrom pkg.loader import load\n\n\ndef test_skip():\n"
                                "    assert load('x', handlers.skip_mesh) == 'x'\n",
    })  # fmt: skip
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("pkg/handlers.py", 10), ("pkg/handlers.py", 14)]


def test_answers_tables_and_markers_by_name_from_other_modules(project, tmp_path):
    # exllamav2's tokenizers answer the base's `raise NotImplementedError` with `return None`; warp's
    # fields build `eval_inner` from a table keyed by its name; warp's integrand rewriter recognises
    # `_get_trial_arg` by name. `orphan` and the pending `later` stand.
    root = project({
        "pkg/__init__.py": "",
        "pkg/base.py": "class Tokenizer:\n    def pad_token(self):\n        raise NotImplementedError()\n\n"
                       "    def orphan(self):\n        raise NotImplementedError()\n\n"
                       "    def encode(self, text):\n        return text.split()\n\n\n"
                       "class Field:\n    @staticmethod\n    def eval_inner(args, s):\n        raise NotImplementedError()\n\n\n"
                       "def _get_trial_arg():\n    pass\n\n\ndef later():\n    # TODO: compute\n    pass\n",
        "pkg/impl.py": "from pkg.base import Field, Tokenizer, _get_trial_arg, later\n\n\n"
                       "class SentencePiece(Tokenizer):\n    def pad_token(self):\n        return None\n\n\n"
                       "class NodalField(Field):\n    _constructors = {'eval_inner': lambda obj: obj._make_eval_inner()}\n\n\n"
                       "def rewrite(callee):\n    return callee == _get_trial_arg.__name__ or callee == later.__name__\n",
    })  # fmt: skip
    settings = resolve(Settings(root=root, select=("FX902",)))
    assert _stubs(check(settings, cache_dir=tmp_path / "c")) == [("pkg/base.py", 5), ("pkg/base.py", 22)]


def test_stubs_in_files_a_test_names_as_data_are_its_input(project, tmp_path):
    # bandit's functional tests: `check_example("eval_use.py")` scans `examples/eval_use.py`, whose
    # empty functions are the code under scan; a file no test names keeps its finding.
    root = project({
        "scan/__init__.py": "def scan(path):\n    return open(path).read()\n",
        "tests/test_functional.py": "import os\n\nfrom scan import scan\n\n\ndef check_example(name):\n"
                                    "    return scan(os.path.join('examples', name))\n\n\ndef test_passwords():\n"
                                    "    assert check_example('hardcoded-passwords.py')\n",
        "examples/hardcoded-passwords.py": "def do_login(password='blerg'):\n    pass\n",
        "examples/unnamed.py": "def do_login(password='blerg'):\n    pass\n",
    })  # fmt: skip
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("examples/unnamed.py", 1)]


def test_members_under_if_table_backends_registrars_and_aliases_across_modules(project, tmp_path):
    # trio binds `recvmsg` in an `if` of the subclass's body; pdm's `FORMATS` table holds its
    # format modules (flit's `export` refuses where requirements' implements it); werkzeug's
    # `export` decorator files the view in a table; IPython's tracebacks choose `nullrepr` as an
    # alternative. A module no table holds, a wrapping decorator and a function called through
    # its alias keep their findings.
    root = project({
        "pkg/__init__.py": "",
        "pkg/sock.py": "import sys\n\n\nclass SocketType:\n    if sys.platform != 'win32':\n\n"
                       "        def recvmsg(self, bufsize):\n            raise NotImplementedError\n",
        "pkg/impl.py": "import socket\nimport sys\n\nfrom pkg.sock import SocketType\n\n\nclass Socket(SocketType):\n"
                       "    if sys.platform != 'win32':\n        recvmsg = wrap(socket.socket.recvmsg)\n",
        "pkg/formats/__init__.py": "from typing import cast\n\nfrom pkg.formats import flit, requirements\n\n"
                                   "FORMATS = {'flit': cast('_Format', flit), 'requirements': requirements}\n",
        "pkg/formats/flit.py": "def export(candidates):\n    raise NotImplementedError()\n",
        "pkg/formats/requirements.py": "def export(candidates):\n    return '\\n'.join(candidates)\n",
        "pkg/formats/poetry.py": "def export(candidates):\n    raise NotImplementedError()\n",
        "pkg/utils.py": "VIEWS = {}\n\n\ndef export(string, template=None):\n    def wrapped(f):\n"
                        "        VIEWS[f.__name__] = (f, string, template)\n        return f\n\n    return wrapped\n\n\n"
                        "def logged(f):\n    def inner(*args):\n        return f(*args)\n\n    return inner\n",
        "pkg/views.py": "from pkg.utils import export, logged\n\n\n@export(None, template='not_found.html')\n"
                        "def not_found():\n    pass\n\n\n@logged\ndef compute(x):\n    pass\n",
        "pkg/tb.py": "def nullrepr(value):\n    return ''\n\n\ndef checked(value):\n    raise NotImplementedError\n",
        "pkg/ultratb.py": "from pkg.tb import checked, nullrepr\n\n\ndef format_vars(pairs, include_vars):\n"
                          "    var_repr = repr if include_vars else nullrepr\n    check = checked\n"
                          "    return [check(name) + var_repr(value) for name, value in pairs]\n",
    })  # fmt: skip
    assert _stubs(check(resolve(Settings(root=root, select=("FX902",))), cache_dir=tmp_path / "c")) == [
        ("pkg/formats/poetry.py", 1), ("pkg/tb.py", 5), ("pkg/views.py", 10)]


def test_files_whose_paths_are_no_module_names_are_parallel_to_nothing(project, tmp_path):
    # pylint's `doc/data/messages/<letter>/<message-name>/bad.py`: each example runs alone, by its
    # path; one that defines `func` does not answer another's empty `func`.
    root = project({"pkg/__init__.py": "", "msgs/b/broken-callable/bad.py": "def func():\n    ...\n",
                    "msgs/b/bare-capture/bad.py": "def func():\n    return 1\n"})
    assert _stubs(check(_resolved(root), cache_dir=tmp_path / "c")) == [("msgs/b/broken-callable/bad.py", 1)]


def test_an_example_suite_pytest_does_not_collect_holds_no_tests(project, tmp_path):
    # pytest's own repository: `norecursedirs = ["testing/example_scripts", ...]` in pyproject.toml;
    # its tests copy those suites into a nested session (17 empty `test_*` there were stubs). A
    # basename pattern (`build`) is a folder of that name anywhere; the collected folder keeps its finding.
    files = {"testing/example_scripts/collect/test_foo.py": "def test_foo():\n    pass\n",
             "testing/build/test_gen.py": "def test_gen():\n    pass\n",
             "testing/test_collect.py": "def test_empty():\n    pass\n"}
    table = {"testpaths": ["testing"], "norecursedirs": ["testing/example_scripts", "build", ".*"]}
    root = project({**files, "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = ['testing']\n"
                    "norecursedirs = ['testing/example_scripts', 'build', '.*']\n"})
    settings = Settings(root=root, select=("FX902",), pyproject={"tool": {"pytest": {"ini_options": table}}})
    assert _stubs(check(resolve(settings), cache_dir=tmp_path / "a")) == [("testing/test_collect.py", 1)]
    untold = Settings(root=root, select=("FX902",), pyproject={"tool": {"pytest": {"ini_options": {"testpaths": ["testing"]}}}})
    assert _stubs(check(resolve(untold), cache_dir=tmp_path / "b")) == [
        ("testing/build/test_gen.py", 1), ("testing/example_scripts/collect/test_foo.py", 1), ("testing/test_collect.py", 1)]


@pytest.mark.parametrize("ruff, reported", [
    ("[tool.ruff.lint.per-file-ignores]\n'./pkg/callbacks.py' = ['B027']\n", []),
    ("[tool.ruff.lint]\nignore = ['B']\n", []),
    ("[tool.ruff]\nignore = ['B02']\n", []),  # ruff's older table
    ("[tool.ruff.lint]\nignore = ['BLE']\n", [("pkg/callbacks.py", 5)]),  # another plugin's prefix
    ("[tool.ruff.lint.per-file-ignores]\n'pkg/noise.py' = ['B027']\n", [("pkg/callbacks.py", 5)]),
])
def test_an_abstract_class_s_empty_method_where_ruff_is_told_b027_is_meant(project, tmp_path, ruff, reported):
    # stable-baselines3 turns B027 off for callbacks.py in its ruff settings: BaseCallback(ABC)'s
    # empty `_on_step` hooks are its design (7 findings), as a `# noqa: B027` on each would say.
    root = project({"pkg/__init__.py": "", "pkg/callbacks.py": "from abc import ABC\n\n\nclass BaseCallback(ABC):\n"
                    "    def _on_step(self):\n        pass\n", "pyproject.toml": ruff})
    settings = Settings(root=root, select=("FX902",), pyproject=tomllib.loads(ruff))
    assert _stubs(check(resolve(settings), cache_dir=tmp_path / "a")) == reported


REGISTRY = """\
class register:
    def __init__(self):
        self.fns = {}

    @classmethod
    def init(cls, fn):
        return register().for_db("*")(fn)

    def for_db(self, *names):
        def decorate(fn):
            for name in names:
                self.fns[name] = fn
            return self

        return decorate


@register.init
def create_db(backend, ident):
    raise NotImplementedError("no creation routine for %s" % backend)


@register.init
def drop_db(backend, ident):
    raise NotImplementedError("no drop routine for %s" % backend)
"""


def test_the_fallback_of_a_dispatch_table_another_module_extends_is_no_stub(project, tmp_path):
    # sqlalchemy's testing/provision.py: `@register.init` defaults that each dialect's module
    # extends with `@create_db.for_db("sqlite")` (13 findings). `drop_db`, which no module
    # extends, is a stub still.
    root = project({"pkg/__init__.py": "", "pkg/provision.py": REGISTRY,
                    "pkg/sqlite.py": "from pkg import provision\n\n\n@provision.create_db.for_db('sqlite')\n"
                                     "def _create(backend, ident):\n    return ident\n"})
    assert _stubs(check(resolve(Settings(root=root, select=("FX902",))), cache_dir=tmp_path / "a")) == [
        ("pkg/provision.py", 24)]


def test_functions_of_a_module_fetched_by_a_computed_name_are_table_values(project, tmp_path):
    # numba's cuda/libdevice.py: 306 docstring-only typing stubs that libdevicedecl.py fetches with
    # `pyfunc = getattr(libdevice, func[5:])` and registers as keys. A module whose functions are
    # fetched and called at once (`getattr(handlers, name)(event)`) keeps its findings.
    root = project({
        "pkg/__init__.py": "from pkg import decl, dispatch\n",
        "pkg/libdevice.py": "def cos(x):\n    \"\"\"See __nv_cos.\"\"\"\n\n\ndef sin(x):\n    \"\"\"See __nv_sin.\"\"\"\n",
        "pkg/decl.py": "from pkg import libdevice\n\nREGISTRY = {}\n\nfor name in ('cos', 'sin'):\n"
                       "    pyfunc = getattr(libdevice, name)\n    REGISTRY[pyfunc] = name\n",
        "pkg/handlers.py": "def on_open(event):\n    \"\"\"Handle an open.\"\"\"\n",
        "pkg/dispatch.py": "from pkg import handlers\n\n\ndef fire(kind, event):\n"
                           "    return getattr(handlers, 'on_' + kind)(event)\n",
    })
    assert _stubs(check(resolve(Settings(root=root, select=("FX902",))), cache_dir=tmp_path / "a")) == [
        ("pkg/handlers.py", 1)]


def test_an_interface_module_that_backend_packages_implement_declares_it(project, tmp_path):
    # dgl's backend/backend.py: `def tensor(data, dtype=None): pass` and a hundred more, that
    # backend/pytorch/tensor.py, backend/mxnet/tensor.py and backend/tensorflow/tensor.py implement
    # (102 findings). A function one backend alone implements stays reported.
    declared = "def cpu():\n    \"\"\"Return the CPU context.\"\"\"\n    pass\n\n\ndef tensor(data):\n    pass\n"
    root = project({
        "lib/__init__.py": "from lib import backend\n",
        "lib/backend/__init__.py": "from . import backend\nfrom .pytorch import tensor as _t\nfrom .numpy import tensor as _n\n",
        "lib/backend/backend.py": declared,
        "lib/backend/pytorch/__init__.py": "", "lib/backend/numpy/__init__.py": "",
        "lib/backend/pytorch/tensor.py": "def cpu():\n    return 'cpu'\n\n\ndef tensor(data):\n    return list(data)\n",
        "lib/backend/numpy/tensor.py": "def cpu():\n    return 'cpu'\n",
    })
    assert _stubs(check(resolve(Settings(root=root, select=("FX902",))), cache_dir=tmp_path / "a")) == [
        ("lib/backend/backend.py", 6)]


def test_a_module_fetched_by_an_fstring_name_is_fetched_by_a_computed_name(project, tmp_path):
    # `op = getattr(ops, f"op_{kind}")` computes the name as `getattr(ops, name)` does; a literal
    # name (`getattr(other, "op_add")`) fetches one known function, which keeps its finding.
    root = project({
        "pkg/__init__.py": "from pkg import table\n",
        "pkg/ops.py": "def op_add(a, b):\n    \"\"\"Add.\"\"\"\n",
        "pkg/other.py": "def op_sub(a, b):\n    \"\"\"Subtract.\"\"\"\n",
        "pkg/table.py": "from pkg import ops, other\n\n\ndef lookup(kind):\n    op = getattr(ops, f'op_{kind}')\n"
                        "    fixed = getattr(other, 'op_sub')\n    return op, fixed\n",
    })
    assert _stubs(check(resolve(Settings(root=root, select=("FX902",))), cache_dir=tmp_path / "a")) == [("pkg/other.py", 1)]
