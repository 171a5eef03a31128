"""FX902: functions whose body is a placeholder."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import tree_sitter

from foxaudit.rules._support.cuda import execution_spaces, function_name
from foxaudit.rules._support.options import freeze, option_error, string_tuple
from foxaudit.rules._support.paths import matches_any
from foxaudit.rules._support.python_names import import_aliases, resolve
from foxaudit.rules.base import Example, FileContext, Rule, RuleOptions
from foxaudit.sources.placeholders import DOCSTRING, placeholder_body

if TYPE_CHECKING:
    from foxaudit.program.model import Program
    from foxaudit.program.project import Project

CODE = "FX902"
DEFAULT_EXEMPT_DECORATORS = (
    "abstractmethod",
    "abstractproperty",
    "abstractclassmethod",
    "abstractstaticmethod",
    "overload",
)
# Bases that implement no method a subclass could inherit in place of its own.
_NEUTRAL_BASES = frozenset({"object", "Generic", "Protocol", "ABC", "NamedTuple", "TypedDict"})


def _unreadable_base(qualified: str) -> bool:
    """A base outside the sources that may implement a project's method: not a neutral one and
    not the standard library's (`abc.Iterator` supplies `__iter__`, not `_process_header`)."""
    return (qualified.rsplit(".", 1)[-1] not in _NEUTRAL_BASES
            and qualified.partition(".")[0] not in sys.stdlib_module_names)
_NAMED_NO_OP = re.compile(r"^_*(?:do_)?(?:nothing|no_?op|nop|ignored?)$", re.IGNORECASE)
_TYPE_CHECKING = re.compile(r"^(?:\w+\.)*TYPE_CHECKING$")


@dataclass(frozen=True)
class StubBodyOptions(RuleOptions):
    exempt_decorators: tuple[str, ...] = field(
        default=DEFAULT_EXEMPT_DECORATORS,
        metadata={"help": "Decorators (last dotted name part) whose functions are declarations, not stubs."},
    )
    protocol_bases: tuple[str, ...] = field(
        default=("typing.Protocol", "typing_extensions.Protocol"),
        metadata={"help": "Base classes whose members are interface declarations: a qualified name is matched"
                          " after resolving the file's imports (`from typing import Protocol as P`); a name"
                          " without a dot matches the last part of any base."},
    )
    docstring_only: bool = field(
        default=True,
        metadata={"help": "Report a function whose body is only a docstring (it does nothing)."},
    )
    test_files: tuple[str, ...] = field(
        default=("tests/", "test/", "test_*.py", "*_test.py", "conftest.py"),
        metadata={"help": "Test modules (gitignore-style globs): there only a test function (a name starting with"
                          " `test`) is reported; the other functions of a test are its doubles (callbacks, fakes,"
                          " fixtures), whose trivial body is the point."},
    )
    cuda_qualifiers: tuple[str, ...] = field(
        default=("__global__", "__device__"),
        metadata={"help": "CUDA execution-space qualifiers whose functions must not have an empty body."},
    )

    def __post_init__(self) -> None:
        freeze(self, "exempt_decorators", string_tuple(CODE, "exempt-decorators", self.exempt_decorators))
        freeze(self, "protocol_bases", string_tuple(CODE, "protocol-bases", self.protocol_bases))
        freeze(self, "cuda_qualifiers", string_tuple(CODE, "cuda-qualifiers", self.cuda_qualifiers))
        freeze(self, "test_files", string_tuple(CODE, "test-files", self.test_files))
        if not isinstance(self.docstring_only, bool):
            raise option_error(CODE, "docstring-only", "expected a boolean", self.docstring_only, "true or false",
                               "write docstring-only = true or docstring-only = false")


@functools.lru_cache(maxsize=32)
def _name_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """Matches a decorator or base-class expression whose last dotted part is one of ``names``,
    or a private name for it (torch's `@_overload`)."""
    alternation = "|".join(re.escape(name) for name in names) or r"(?!)"
    return re.compile(rf"^@?\s*(?:[\w.]+\.)?_*(?:{alternation})\s*(?:[\[(].*)?$", re.DOTALL)


def _decorator_expression(decorator: tree_sitter.Node) -> str:
    """The decorator's expression without a trailing comment: tree-sitter keeps
    `@overload  # type: ignore[override]` in one decorator node."""
    for child in decorator.named_children:
        if child.type != "comment":
            return child.text.decode()
    return decorator.text.decode()


@dataclass
class _FileNames:
    """Per-file facts FX902 resolves names with: imports, and each class's bases and methods."""

    aliases: dict[str, str]
    bases: dict[str, set[str]]  # class name → last parts of its resolved base names
    implemented: dict[str, set[str]]  # class name → its methods whose body is not a placeholder
    handed_to_decorators: set[str]  # names passed to a decorator call: `@overload(f)` → f
    unreadable: set[str]  # classes with a base that is not a class of this file (nor a neutral one)


def _file_names(ctx: FileContext) -> _FileNames:
    state = ctx.state.get(CODE)
    if state is None:
        root = ctx.source.tree.root_node
        aliases = import_aliases(root)
        bases: dict[str, set[str]] = {}
        implemented: dict[str, set[str]] = {}
        written: dict[str, list[str]] = {}  # class name → its bases as resolved, in full
        captures = tree_sitter.QueryCursor(_class_query()).captures(root)
        for definition in captures.get("c", []):
            name = definition.child_by_field_name("name")
            if name is None:
                continue
            superclasses = definition.child_by_field_name("superclasses")
            resolved = [resolve(base.text.decode(), aliases)
                        for base in (superclasses.named_children if superclasses is not None else ())
                        if base.type != "keyword_argument"]
            written.setdefault(name.text.decode(), []).extend(resolved)
            bases.setdefault(name.text.decode(), set()).update(base.rsplit(".", 1)[-1] for base in resolved)
            body = definition.child_by_field_name("body")
            members = implemented.setdefault(name.text.decode(), set())
            for statement in body.named_children if body is not None else ():
                member = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
                if member is not None and member.type == "function_definition" and placeholder_body(member) is None:
                    member_name = member.child_by_field_name("name")
                    if member_name is not None:
                        members.add(member_name.text.decode())
                elif statement.type == "expression_statement" and statement.named_children:
                    # `set_device = staticmethod(torch.cuda.set_device)` implements the member too.
                    assignment = statement.named_children[0]
                    left = assignment.child_by_field_name("left") if assignment.type == "assignment" else None
                    if left is not None and left.type == "identifier" and assignment.child_by_field_name("right") is not None:
                        members.add(left.text.decode())
        handed: set[str] = set()
        for decorator in captures.get("d", []):
            call = next((child for child in decorator.named_children if child.type == "call"), None)
            arguments = call.child_by_field_name("arguments") if call is not None else None
            for argument in arguments.named_children if arguments is not None else ():
                if argument.type == "identifier":
                    handed.add(argument.text.decode())
        unreadable = {
            klass for klass, full in written.items()
            if any(("." in base or base not in bases) and _unreadable_base(base) for base in full)
        }
        state = ctx.state[CODE] = _FileNames(aliases, bases, implemented, handed, unreadable)
    return state


@functools.cache
def _class_query() -> tree_sitter.Query:
    from foxaudit.sources.base import ts_language

    return tree_sitter.Query(ts_language("python"), "(class_definition) @c (decorator) @d")


def _implemented_in_family(
    start: str,
    method: str,
    bases_of: Callable[[str], Iterable[str]],
    subclasses_of: Callable[[str], Iterable[str]],
    implements: Callable[[str, str], bool],
    unreadable: Callable[[str], bool],
) -> bool:
    """Another class of ``start``'s family implements ``method``: a base (directly or not), a
    subclass (directly or not), or a class below one of ``start``'s direct bases (a sibling). A
    sibling with a base foxaudit cannot read (a compiled extension's class: pandas'
    ``BlockManager(libinternals.BlockManager, ...)``) may implement it there: that counts too,
    rather than a guess reported as a stub."""
    seen = {start}
    frontier = list(bases_of(start))
    direct = list(frontier)
    while frontier:  # the ancestors
        key = frontier.pop()
        if key in seen:
            continue
        seen.add(key)
        if implements(key, method):
            return True
        frontier.extend(bases_of(key))
    below: set[str] = set()
    frontier = [start, *direct]
    while frontier:  # below start and below its direct bases
        key = frontier.pop()
        if key in below:
            continue
        below.add(key)
        if key != start and (implements(key, method) or (key not in direct and unreadable(key))):
            return True
        frontier.extend(subclasses_of(key))
    return False


def _implemented_in_file_family(class_name: str, method: str, names: _FileNames) -> bool:
    subclasses: dict[str, list[str]] = {}
    for candidate, bases in names.bases.items():
        for base in bases:
            subclasses.setdefault(base, []).append(candidate)
    return _implemented_in_family(
        class_name, method,
        lambda key: names.bases.get(key, ()),
        lambda key: subclasses.get(key, ()),
        lambda key, name: name in names.implemented.get(key, ()),
        lambda key: key in names.unreadable,
    )


def _implemented_in_program_family(program: Program, class_key: str, method: str) -> bool:
    def implements(key: str, name: str) -> bool:
        found = program.functions.get(f"{key}.{name}")
        return (found is not None and not found[1].placeholder) or name in program.classes[key][1].attributes

    def unreadable(key: str) -> bool:
        module, klass = program.classes[key]
        for base in klass.bases:
            canonical = program.canonical(module, base)
            if program.lookup(canonical)[0] == "external" and _unreadable_base(canonical):
                return True
        return False

    def nested(step: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
        """``step`` for a class nested in a class: `Outer.Worker` is also related to the `Worker` of
        each class related to `Outer` (a subclass's nested class overrides the base's member)."""
        def related(key: str) -> list[str]:
            found = list(step(key))
            outer, _, inner = key.rpartition(".")
            if inner and ":" in outer and outer in program.classes:
                found.extend(f"{other}.{inner}" for other in related(outer) if f"{other}.{inner}" in program.classes)
            return found
        return related

    return _implemented_in_family(class_key, method, nested(program.base_classes), nested(program.subclasses),
                                  implements, unreadable)


_EMPTY = frozenset({"`pass`", "`...`", DOCSTRING})


def _is_empty(placeholder: str) -> bool:
    """Only `pass`, `...` and docstrings: what B027 calls an empty method."""
    return all(part in _EMPTY for part in re.split(r", | and ", placeholder))


def _is_abstract_base(owner: tree_sitter.Node, names: _FileNames) -> bool:
    """The class derives from `abc.ABC` or has `metaclass=abc.ABCMeta` (resolved through imports)."""
    superclasses = owner.child_by_field_name("superclasses")
    for base in superclasses.named_children if superclasses is not None else ():
        if base.type == "keyword_argument":
            value = base.child_by_field_name("value")
            if value is not None and resolve(value.text.decode(), names.aliases) in ("abc.ABCMeta", "ABCMeta"):
                return True
        elif resolve(base.text.decode(), names.aliases) in ("abc.ABC", "ABC"):
            return True
    return False


def _is_test(function: tree_sitter.Node, name: str, owner: tree_sitter.Node | None) -> bool:
    """A test as pytest collects it: a module-level `test*` function or a `test*` method of a
    `Test*` class (a nested `test_func` is a callback, `Delegator.test_method` a fake's method)."""
    if not name.startswith("test"):
        return False
    if owner is not None:
        owner_name = owner.child_by_field_name("name")
        return owner_name is not None and owner_name.text.decode().startswith("Test")
    holder = function.parent
    if holder is not None and holder.type == "decorated_definition":
        holder = holder.parent
    return holder is not None and holder.type == "module"


_BRANCHING = frozenset({"if_statement", "try_statement"})
_BRANCHES = frozenset({"else_clause", "elif_clause", "except_clause", "finally_clause"})


def _bound_by_another_branch(function: tree_sitter.Node, name: str) -> bool:
    """``function`` is defined in one branch of an ``if``/``try`` whose other branch binds the same
    name (``try: from fast import f`` / ``except ImportError: def f(x): pass``; ``if is_fbcode():
    from fb import log`` / ``else: def log(*args): pass``): the variant for when the feature is off."""
    holder = function.parent
    if holder is not None and holder.type == "decorated_definition":
        holder = holder.parent
    if holder is None or holder.type != "block":
        return False
    branch = holder.parent
    statement = branch.parent if branch is not None and branch.type in _BRANCHES else branch
    if statement is None or statement.type not in _BRANCHING:
        return False
    blocks = [child for child in statement.named_children if child.type == "block"]
    for clause in statement.named_children:
        if clause.type in _BRANCHES:
            blocks.extend(child for child in clause.named_children if child.type == "block")
    return any(name in _top_level_bindings(block) for block in blocks if block.id != holder.id)


def _top_level_bindings(block: tree_sitter.Node) -> set[str]:
    """Names a block binds directly: definitions, imports (their local names), assignments."""
    bound: set[str] = set()
    for statement in block.named_children:
        if statement.type == "decorated_definition":
            statement = statement.child_by_field_name("definition") or statement
        if statement.type in ("function_definition", "class_definition"):
            definition_name = statement.child_by_field_name("name")
            if definition_name is not None:
                bound.add(definition_name.text.decode())
        elif statement.type in ("import_statement", "import_from_statement"):
            for imported in statement.children_by_field_name("name"):
                alias = imported.child_by_field_name("alias") if imported.type == "aliased_import" else imported
                if alias is not None:
                    bound.add(alias.text.decode().split(".", 1)[0])
        elif statement.type == "expression_statement" and statement.named_children:
            assignment = statement.named_children[0]
            left = assignment.child_by_field_name("left") if assignment.type == "assignment" else None
            if left is not None and left.type == "identifier":
                bound.add(left.text.decode())
    return bound


def _owner_class(function: tree_sitter.Node) -> tree_sitter.Node | None:
    """The class whose body defines ``function`` directly (None for a function)."""
    holder = function.parent
    if holder is not None and holder.type == "decorated_definition":
        holder = holder.parent
    owner = holder.parent if holder is not None and holder.type == "block" else None
    return owner if owner is not None and owner.type == "class_definition" else None


def _qualified_name(definition: tree_sitter.Node) -> str:
    """``Outer.Inner`` / ``factory.Local``: the qualified name the whole-program summary gives a class."""
    parts = []
    current: tree_sitter.Node | None = definition
    while current is not None:
        if current.type in ("class_definition", "function_definition"):
            name = current.child_by_field_name("name")
            parts.append(name.text.decode() if name is not None else "?")
        current = current.parent
    return ".".join(reversed(parts))


def _is_declaration(function: tree_sitter.Node, options: StubBodyOptions, names: _FileNames) -> bool:
    """Abstract/overload members, Protocol members and `if TYPE_CHECKING:` definitions."""
    holder = function.parent
    if holder is not None and holder.type == "decorated_definition":
        decorators = _name_pattern(options.exempt_decorators)
        for decorator in holder.named_children:
            # The written name or what the imports resolve it to: `@abstract` after `from abc import
            # abstractmethod as abstract`, and torch's `from torch._jit_internal import _overload as overload`.
            written = _decorator_expression(decorator)
            if decorator.type == "decorator" and (
                    decorators.match(written) or decorators.match(resolve(written, names.aliases))):
                return True
        holder = holder.parent
    # holder is now the block the definition sits in.
    owner = holder.parent if holder is not None else None
    if owner is not None and owner.type == "class_definition":
        bases = owner.child_by_field_name("superclasses")
        for base in bases.named_children if bases is not None else ():
            if _is_protocol(resolve(base.text.decode(), names.aliases), options.protocol_bases):
                return True
    while owner is not None:
        if owner.type == "if_statement" and holder is not None and holder.type == "block":
            condition = owner.child_by_field_name("condition")
            consequence = owner.child_by_field_name("consequence")
            if (condition is not None and consequence is not None and consequence.id == holder.id
                    and _TYPE_CHECKING.match(condition.text.decode())):
                return True
        holder, owner = owner, owner.parent
    return False


def _is_protocol(qualified: str, protocol_bases: tuple[str, ...]) -> bool:
    for entry in protocol_bases:
        if "." in entry and qualified == entry:
            return True
        if "." not in entry and qualified.rsplit(".", 1)[-1] == entry:
            return True
    return False


class StubBody(Rule):
    """Flags functions whose body is a placeholder: `pass`, `...`, `raise NotImplementedError`, ...

    ## What it does
    Reports a Python function (sync or async, top-level, method or nested) whose body, after an
    optional docstring, is only one of: `pass`; `...`; nothing (a docstring alone — see the
    `docstring-only` option); `raise NotImplementedError` or `raise NotImplementedError(...)`
    (also `NotImplemented`, a common slip); a bare `return` or `return None`; or a constant
    (a literal number, string, boolean, `None`, or a tuple/list/dict/set of them) returned while
    every parameter other than `self`/`cls` is ignored — `def f(x): return 0`.

    `def version(): return 3` is a constant, not a stub: it has no input to ignore. A parameter
    whose name starts with `_` declares that it is unused on purpose (a callback signature), so
    `def on_event(_event): return True` is not a stub; `*args`/`**kwargs` count like any other
    parameter (`def f(*args, **kwargs): return 0` is a stub). Lambdas are expressions and are not
    checked.

    A body of several placeholders (`pass` then `raise NotImplementedError`, a docstring, `...`
    and `pass`) is a stub too.

    Not stubs: functions decorated with one of `exempt-decorators` (`@abstractmethod`,
    `@abc.abstractmethod`, `@abstractproperty`, `@overload`, `@typing.overload`, ...), also
    through an import alias (`from abc import abstractmethod as abstract`, `import typing as t`
    then `@t.overload`; the written name counts too, as with torch's
    `from torch._jit_internal import _overload as overload`, and a private name such as
    `@_overload`); members of a class that lists a `protocol-bases` class among its bases,
    resolved through the file's imports (`typing.Protocol`, `from typing import Protocol`,
    `Protocol[T]`, `typing_extensions.Protocol`; a class that is merely *named* `Protocol` is
    not one); a method when another class of its family — a base or a subclass, directly or
    not, or a class below one of its direct bases (a sibling), in any file of the project —
    implements the same method: the base's `raise
    NotImplementedError`, `pass` or constant is the interface or the default hook its subclasses
    fill in (GoF's "hook operation", which "often does nothing by default"), and a subclass's
    placeholder is its answer to an implemented method (nothing to do here, not supported by this
    subclass, a constant result: `LegacyVersion.release` is None where `Version` computes it;
    an empty method (`pass`, `...`, a docstring) of an abstract base class — `abc.ABC` or
    `metaclass=ABCMeta` — is still reported, as flake8-bugbear's B027 reports it; a class nested
    in a class belongs to the family of the same-named nested class of each class
    related to its outer one: `CudaInterface.Worker` overrides `DeviceInterface.Worker`).
    Bases (`Base`, `mod.Base`, `Base[T]`) and subclasses are resolved through imports across files
    when the whole-project pass runs; `foxaudit check --no-project` and `check_source` see the
    file's own classes only. Data-model methods (`__exit__`, `__lt__`, `__eq__`, ...) returning a
    constant (`__exit__` → `False`: the exception propagates; `__lt__` of an infinity type);
    a function named for doing nothing (`nothing`, `do_nothing`, `noop`, `ignore`); a class
    attribute bound by assignment implements a member like a method does
    (`set_device = staticmethod(torch.cuda.set_device)`); a function defined in one branch of
    an `if`/`try` whose other branch binds the same name
    (`try: from fast import f` / `except ImportError: def f(*a): pass`: the variant for when the
    feature is absent); a function handed to a decorator call (`@overload(f)` implements `f`);
    in `test-files`, every function that is not a test as pytest collects it (a module-level
    `test*` function, a `test*` method of a `Test*` class): the others are doubles;
    definitions inside `if TYPE_CHECKING:` (declarations for type checkers), everything in
    `.pyi` files, and a `pass` that is not the whole function body (an `except: pass` inside a
    real body).

    In CUDA it reports a function with one of `cuda-qualifiers` (`__global__`, `__device__`,
    including templates and `extern "C"` blocks) whose body is empty (`{}`, comments only) or
    only a bare `return;`. Constructors and destructors are not stubs: an empty constructor body
    makes a type default-constructible on the device, and an initializer list
    (`half(float v) : data_(v) {}`) is where a constructor does its work.

    ## Why is this bad
    Invariant 9, no deferred work. A stub compiles, imports and gets called, so the feature
    looks wired while it silently does nothing: the caller gets `None`, zero or an exception at
    run time instead of a result. If it can't be finished, it doesn't start.

    ## Example
    ```python
    def kelly_fraction(win_rate, payoff):
        return 0.0
    ```

    ## Use instead
    ```python
    def kelly_fraction(win_rate, payoff):
        return win_rate - (1.0 - win_rate) / payoff
    ```
    or declare the interface: `@abc.abstractmethod` on the method of an abstract base class, or
    a `typing.Protocol` class.

    ## Options
    - `exempt-decorators`: decorator names that make a body a declaration.
    - `protocol-bases`: base classes whose members are declarations (qualified names are
      matched after resolving imports; a bare name matches any base's last part).
    - `docstring-only`: whether a docstring-only body is a stub (default true).
    - `cuda-qualifiers`: CUDA qualifiers whose functions need a body.
    - `test-files`: test modules, where only test functions (`test*`) are reported — an empty
      test is deferred work, while a fake's `return None` or a callback's `return 1` is a double.
    """

    code = CODE
    name = "stub-body"
    summary = "Function body is a placeholder (pass, ..., raise NotImplementedError, constant return)"
    invariant = 9
    languages = frozenset({"python", "cuda"})
    python_nodes = ("function_definition",)
    cuda_nodes = ("function_definition",)
    options_class = StubBodyOptions
    confirms_in_project = True

    VALID: ClassVar[list[Example]] = [
        Example("def version():\n    return 3\n"),
        Example("def ratio(a, b):\n    return a / b\n"),
        Example("def load(path):\n    try:\n        return open(path).read()\n    except OSError:\n        pass\n"
                "    return ''\n"),
        Example("import abc\n\nclass Loader(abc.ABC):\n    @abc.abstractmethod\n    def load(self, path):\n"
                "        raise NotImplementedError\n"),
        Example("from abc import abstractmethod, ABC\n\nclass Env(ABC):\n    @property\n    @abstractmethod\n"
                "    def size(self) -> int:\n        ...\n"),
        Example("from typing import overload\n\n@overload\ndef get(key: int) -> int: ...\n@overload\n"
                "def get(key: str) -> str: ...\ndef get(key):\n    return table[key]\n"),
        Example("import typing\n\n@typing.overload\ndef get(key: int) -> int: ...\n"),
        Example("from typing import Protocol\n\nclass Reader(Protocol):\n    def read(self, n: int) -> bytes: ...\n"
                "    def close(self) -> None:\n        pass\n"),
        Example("import typing\n\nclass Sink(typing.Protocol[T]):\n    async def put(self, item: T) -> None: ...\n"),
        Example("def stub(x): ...\n", path="pkg/api.pyi"),
        Example("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    def cast(x): ...\n"),
        Example("class Flag:\n    def __bool__(self):\n        return True\n    def __len__(self):\n        return 0\n"),
        Example("class Account:\n    @property\n    def currency(self):\n        return 'USD'\n"),
        Example("def on_signal(_signum, _frame):\n    return True\n"),
        Example("def make():\n    def inner(x):\n        return x + 1\n    return inner\n"),
        Example("callback = lambda x: None\n"),
        Example("def f(x):\n    '''Scale.'''\n    return 2 * x\n"),
        Example("def f(x):\n    return f'{x}'\n"),
        Example("def hook(self):\n    '''Nothing to do.'''\n", options={"docstring-only": False}),
        Example("class Base:\n    @hookimpl\n    def setup(self):\n        pass\n", options={"exempt-decorators": ["hookimpl"]}),
        Example("__global__ void scale(float* x, float a, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "  if (i < n) x[i] *= a;\n}\n", path="scale.cu"),
        Example("void host_noop() {}\n", path="host.cu"),
        Example("__device__ float zero() { return 0.0f; }\n", path="z.cuh"),
        Example("__global__ void k();\n", path="decl.cuh"),
        Example("class half {\n  unsigned short data_;\npublic:\n  __device__ half() {}\n"
                "  __device__ half(float v) : data_(__float2half_rn(v)) {}\n  __device__ ~half() {}\n};\n",
                path="half.cuh"),
        Example("template <int dim>\nstruct Dim {\n  __device__ Dim() { }\n};\n"
                "__host__ __device__ Pair::Pair() {}\n", path="dim.cuh"),
        Example("from typing import overload\n\nclass Stamp:\n    @overload  # type: ignore[override]\n"
                "    def __add__(self, other: int) -> int: ...\n    def __add__(self, other):\n"
                "        return other\n"),
        # Decorators and Protocol through import aliases.
        Example("from abc import ABC, abstractmethod as abstract\n\nclass Loader(ABC):\n    @abstract\n"
                "    def load(self, path):\n        ...\n"),
        Example("from typing import overload as ov\n\n@ov\ndef get(key: int) -> int: ...\n"),
        Example("from torch._jit_internal import _overload as overload\n\n@overload\ndef norm(a, p: int):\n    pass\n"),
        Example("from torch._jit_internal import _overload\n\n@_overload\ndef norm(a, p: int):\n    pass\n"),
        Example("import typing as t\n\n@t.overload\ndef get(key: int) -> int: ...\n"
                "class Sink(t.Protocol):\n    def put(self, item) -> None: ...\n"),
        Example("from typing_extensions import Protocol as P\n\nclass Reader(P):\n    def read(self, n): ...\n"),
        # A base-class hook that the subclasses of the file implement.
        Example("class Op:\n    def apply(self, x):\n        raise NotImplementedError\n\nclass Double(Op):\n"
                "    def apply(self, x):\n        return 2 * x\n"),
        Example("class Base:\n    def run(self, x):\n        raise NotImplementedError(type(self).__name__)\n"
                "class Middle(Base):\n    pass\nclass Leaf(Middle):\n    def run(self, x):\n        return x\n"),
        Example("class Guard:\n    def __enter__(self):\n        return self\n"
                "    def __exit__(self, exc_type, exc, tb):\n        return False\n"),
        # A sibling's answer where the family computes it; a subscripted base is a base.
        Example("class _Base:\n    pass\n\nclass Version(_Base):\n    @property\n    def release(self):\n"
                "        return self._release\n\nclass LegacyVersion(_Base):\n    @property\n"
                "    def release(self):\n        return None\n"),
        Example("from typing import Generic, TypeVar\nT = TypeVar('T')\n\nclass Reader(Generic[T]):\n"
                "    def load(self, path):\n        raise NotImplementedError\n\nclass Csv(Reader['Frame']):\n"
                "    def load(self, path):\n        return read_csv(path)\n"),
        # `@overload(f)` (numba) implements the declaration f.
        Example("def maybe_cast(x):\n    pass\n\n@overload(maybe_cast)\ndef _maybe_cast(x):\n    return lambda x: x\n"),
        # A sibling whose base is compiled (outside the sources) may implement the method there.
        Example("import libinternals\n\nclass Base:\n    pass\n\nclass Manager(libinternals.Manager, Base):\n    pass\n\n"
                "class Single(Base):\n    def _post_setstate(self):\n        pass\n"),
        # Doing nothing is what the name promises.
        Example("def do_nothing(*args, **kwargs):\n    pass\n\ndef _noop(x):\n    return None\n"),
        # A member bound by assignment implements it (`staticmethod(torch.cuda.set_device)`).
        Example("class Device:\n    def set_device(self, d):\n        raise NotImplementedError\n\n"
                "class Cuda(Device):\n    set_device = staticmethod(cuda.set_device)\n"),
        # The feature-absent twin of a name another branch imports or implements.
        Example("try:\n    from fb.utils import log_cache_stats\nexcept ImportError:\n"
                "    def log_cache_stats(*args, **kwargs):\n        pass\n"),
        Example("if is_fbcode():\n    def record(op):\n        store(op)\nelse:\n    def record(op):\n        pass\n"),
        # A test's doubles: a callback, a fixture, a fake's method.
        Example("import pytest\n\n@pytest.fixture\ndef name():\n    return None\n\ndef test_apply(frame):\n"
                "    def one(x):\n        return 1\n    assert frame.apply(one).sum() == len(frame)\n",
                path="pkg/tests/test_apply.py"),
        Example("class InfinityType:\n    def __lt__(self, other):\n        return False\n"
                "    def __gt__(self, other):\n        return True\n"),
        # A default hook (`pass`, a docstring, a constant) that subclasses implement.
        Example("class Op:\n    def setup(self, x):\n        pass\n    def name(self, x):\n        return ''\n\n"
                "class Double(Op):\n    def setup(self, x):\n        self.x = x\n    def name(self, x):\n"
                "        return f'double {x}'\n"),
        # A subclass's answer to a method its base implements: nothing to do, or not supported here.
        Example("class Plot:\n    def legend(self, ax):\n        ax.legend()\n    def std(self, ax):\n        return ax.std()\n\n"
                "class Pie(Plot):\n    def legend(self, ax):\n        pass\n"
                "    def std(self, ax):\n        raise NotImplementedError('std of a pie')\n"),
    ]
    INVALID: ClassVar[list[Example]] = [
        Example("def f(x):\n    pass\n", expect=1),
        Example("def f(x):\n    ...\n", expect=1),
        Example("def f(x):\n    raise NotImplementedError\n", expect=1),
        Example("def f(x):\n    raise NotImplementedError('later')\n", expect=1),
        Example("def f(x):\n    return\n", expect=1),
        Example("def f(x):\n    return None\n", expect=1),
        Example("def f(x):\n    return 0\n", expect=1),
        Example("def f(*args, **kwargs):\n    return {}\n", expect=1),
        Example("def f(x):\n    '''Compute the thing.'''\n", expect=1),
        Example("def f(x):\n    '''Compute the thing.'''\n    pass\n", expect=1),
        Example("class Book:\n    def depth(self, side):\n        return -1\n", expect=1),
        Example("class Env:\n    @property\n    def size(self):\n        return None\n", expect=1),
        Example("class Env:\n    @size.setter\n    def size(self, value):\n        pass\n", expect=1),
        Example("async def fetch(url):\n    ...\n", expect=1),
        Example("def outer(x):\n    def inner(y):\n        pass\n    return inner(x)\n", expect=1),
        Example("import abc\n\nclass Base(abc.ABC):\n    def hook(self):\n        raise NotImplementedError()\n", expect=1),
        Example("@functools.cache\ndef table(n):\n    return ()\n", expect=1),
        Example("def cost(order, book):\n    return (0.0, 0.0)\n", expect=1),
        Example('def include_paths(target):\n    return (\n        "#include <a.h>",\n        "#include <b.h>",\n    )\n',
                expect=1),
        Example("if TYPE_CHECKING:\n    pass\nelse:\n    def cast(x):\n        pass\n", expect=1),
        Example("__global__ void reset_state(float* ps, int n) {}\n", path="reset.cu", expect=1),
        Example("template <typename T>\n__device__ void accumulate(T* out, T v) {\n  // later\n}\n",
                path="acc.cuh", expect=1),
        Example('extern "C" __global__ void k(float* x) { return; }\n', path="k.cu", expect=1),
        Example('extern "C" {\n__global__ void __launch_bounds__(256) k(float* x) {}\n}\n', path="k.cu", expect=1),
        Example("struct __align__(16) Pair { float a, b; };\n__host__ __device__ void noop(Pair p) { }\n",
                path="pair.cuh", expect=1),
        Example("def f(x):\n    pass\n", options={"exempt-decorators": []}, expect=1),
        Example("struct Indexer {\n  __device__ Indexer(int n) : n_(n) {}\n  __device__ void set(int i) {\n  }\n"
                "  int n_;\n};\n", path="indexer.cuh", expect=1),
        Example("@cache  # memoised\ndef table(n):\n    pass\n", expect=1),
        # A class merely named Protocol, or a Protocol that is not typing's, declares nothing.
        Example("class Protocol:\n    pass\n\nclass Reader(Protocol):\n    def read(self, n):\n        ...\n", expect=1),
        Example("from wire import Protocol\n\nclass Reader(Protocol):\n    def read(self, n):\n        pass\n", expect=1),
        # An alias of an exempt decorator under another name exempts nothing by that other name.
        Example("from abc import abstractmethod as abstract\n\n@abstract_later\ndef f(x):\n    pass\n", expect=1),
        # Several placeholders in one body.
        Example("def f(x):\n    pass\n    raise NotImplementedError\n", expect=1),
        Example("def f(x):\n    \"Doc.\"\n    ...\n    pass\n    return None\n", expect=1),
        # An empty method of an abstract base class is one whatever its subclasses do (B027).
        Example("from abc import ABC\n\nclass Plot(ABC):\n    def legend(self, ax):\n        pass\n\n"
                "class Line(Plot):\n    def legend(self, ax):\n        ax.legend()\n", expect=1),
        # A hook no subclass implements is a stub: here the subclass's override is a stub too.
        Example("class Op:\n    def apply(self, x):\n        raise NotImplementedError\n\nclass Noop(Op):\n"
                "    def other(self):\n        return 1\n", expect=1),
        Example("class Op:\n    def apply(self, x):\n        raise NotImplementedError\n\nclass Gpu(Op):\n"
                "    def apply(self, x):\n        pass\n", expect=2),
        # A branch alone, or a twin of another name, is no alternative.
        Example("if fast:\n    def record(op):\n        pass\nelse:\n    def replay(op):\n        store(op)\n", expect=1),
        # An empty test is deferred work, in a test module too.
        Example("def nothing_yet(x):\n    pass\n", expect=1),
        Example("class TestReader:\n    def test_roundtrip(self):\n        # not written yet\n        pass\n",
                path="tests/test_reader.py", expect=1),
        Example("def helper(x):\n    return None\n", path="tests/test_reader.py", options={"test-files": []}, expect=1),
        Example("def test_apply():\n    pass\n\nclass Delegator:\n    def test_method(self):\n        pass\n"
                "\ndef test_groupby():\n    def test_func(x):\n        pass\n    check(test_func)\n",
                path="tests/test_apply.py", expect=1),
        # A data-model method that does nothing is still a stub (only a constant is an answer).
        Example("class Table:\n    def __setitem__(self, key, value):\n        pass\n", expect=1),
    ]

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        options: StubBodyOptions = ctx.options(CODE)
        if ctx.language == "cuda":
            self._visit_cuda(node, ctx, options)
            return
        if ctx.source.is_stub_file:
            return
        placeholder = placeholder_body(node)
        if placeholder is None or (placeholder == DOCSTRING and not options.docstring_only):
            return
        # The file's names are read only once a placeholder body is found (most files have none).
        names = _file_names(ctx)
        if _is_declaration(node, options, names):
            return
        name = node.child_by_field_name("name")
        label = name.text.decode() if name is not None else "function"
        owner = _owner_class(node)
        if matches_any(ctx.path, options.test_files) and not _is_test(node, label, owner):
            return  # a test double: a callback, a fake's method, a fixture
        if owner is None and label in names.handed_to_decorators:
            return  # `@overload(f)`, `@implements(f)`: the declaration the decorated code implements
        if _NAMED_NO_OP.match(label):
            return  # `nothing()`, `do_nothing(*args)`, `noop`: doing nothing is what the name promises
        if _bound_by_another_branch(node, label):
            return  # the feature-absent twin of a name another branch imports or implements
        confirm: tuple[str, ...] = ()
        if owner is not None and name is not None and not (_is_abstract_base(owner, names) and _is_empty(placeholder)):
            # (An empty method of an abstract base class is reported whatever its subclasses do, as
            # flake8-bugbear's B027 does: it is an `@abstractmethod` forgotten, or a hook to mark.)
            owner_name = owner.child_by_field_name("name")
            if owner_name is not None and _implemented_in_file_family(owner_name.text.decode(), label, names):
                return  # a hook its subclasses implement, or a subclass's answer to an implemented method
            # Its base classes and subclasses may live in other files: the whole program decides.
            confirm = (_qualified_name(owner), label)
        ctx.report(
            CODE,
            name if name is not None else node,
            f"`{label}` is a stub: its body is only {placeholder} — invariant 9: finish it or don't start it",
            hint="implement it or delete it; an interface method is @abc.abstractmethod or a Protocol member",
            confirm=confirm,
        )

    def confirm(self, project: Project, path: str, facts: tuple[str, ...]) -> bool:
        """A method's finding stands unless a project class above or below its class, in any
        file, implements the method."""
        from foxaudit.program.analysis import analysis_for
        from foxaudit.program.model import function_key

        program = analysis_for(project).program
        module = program.by_path.get(path)
        class_name, method = facts
        class_key = function_key(module.name, class_name) if module is not None else ""
        return class_key not in program.classes or not _implemented_in_program_family(program, class_key, method)

    def _visit_cuda(self, node: tree_sitter.Node, ctx: FileContext, options: StubBodyOptions) -> None:
        body = node.child_by_field_name("body")
        if body is None or body.type != "compound_statement":
            return
        statements = [child for child in body.named_children if child.type != "comment"]
        if statements and not (len(statements) == 1 and statements[0].type == "return_statement"
                               and statements[0].named_child_count == 0):
            return
        spaces = execution_spaces(node)
        if not spaces.intersection(options.cuda_qualifiers):
            return
        name = function_name(node)
        if _is_special_member(node, name):
            return
        label = name.text.decode() if name is not None else "function"
        qualifier = "/".join(sorted(spaces.intersection(options.cuda_qualifiers)))
        what = "a bare `return;`" if statements else "empty"
        ctx.report(
            CODE,
            name if name is not None else node,
            f"{qualifier} function `{label}` is a stub: its body is {what} — invariant 9: finish it or don't start it",
            hint="implement the kernel or delete it (and its launch)",
        )


def _is_special_member(definition: tree_sitter.Node, name: tree_sitter.Node | None) -> bool:
    """A constructor or destructor: an empty body there is a declaration, not a placeholder
    (`__device__ half() {}` makes the type default-constructible; `half(float v) : data_(v) {}`
    does its work in the initializer list)."""
    if any(child.type == "field_initializer_list" for child in definition.children):
        return True
    if name is None:
        return False
    if name.type == "destructor_name":
        return True
    text = name.text.decode()
    declarator = name.parent
    if declarator is not None and declarator.type == "qualified_identifier":  # `Pair::Pair() {}`
        scope = declarator.child_by_field_name("scope")
        if scope is not None and scope.text.decode().rsplit("::", 1)[-1].split("<", 1)[0] == text:
            return True
    body = definition.parent
    while body is not None and body.type in ("template_declaration", "access_specifier"):
        body = body.parent
    owner = body.parent if body is not None and body.type == "field_declaration_list" else None
    if owner is not None and owner.type in ("struct_specifier", "class_specifier", "union_specifier"):
        owner_name = owner.child_by_field_name("name")
        if owner_name is not None and owner_name.text.decode().split("<", 1)[0] == text:
            return True
    return False
