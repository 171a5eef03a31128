"""FX902: functions whose body is a placeholder."""

from __future__ import annotations

import collections.abc
import functools
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import tree_sitter

from foxaudit.config import pytest_norecursedirs, pytest_testpaths, ruff_ignored_in
from foxaudit.rules._support.cuda import execution_spaces, function_name
from foxaudit.rules._support.options import freeze, option_error, string_tuple
from foxaudit.rules._support.paths import matches_any
from foxaudit.rules._support.python_names import aliases_of, resolve
from foxaudit.rules.base import Example, FileContext, Rule, RuleOptions
from foxaudit.sources.placeholders import (
    DOCSTRING,
    RAISE_NOT_IMPLEMENTED,
    callable_table_keys,
    class_body_statements,
    compared_by_name,
    constant_answer,
    named_object,
    placeholder_body,
    placeholder_body_in,
    stores_its_argument,
)
from foxaudit.sources.placeholders import function_name as python_function_name

if TYPE_CHECKING:
    from foxaudit.program.model import Module, Program
    from foxaudit.program.project import Project
    from foxaudit.program.pyscan import ModuleSummary

CODE = "FX902"
# Test modules and the data they read (mypy's `test-data/`: builtins stubs written as `.py`, plugins
# meant to misbehave).
DEFAULT_TEST_FILES = ("tests/", "test/", "test_*.py", "*_test.py", "conftest.py", "test-data/", "test_data/",
                      "testdata/")
DEFAULT_EXEMPT_DECORATORS = (
    "abstractmethod",
    "abstractproperty",
    "abstractclassmethod",
    "abstractstaticmethod",
    "overload",
    # pluggy's hook specifications (`hookspec = pluggy.HookspecMarker("project")`, then `@hookspec`
    # over a function whose docstring is the hook's contract): pytest's, tox's, datasette's, ...
    "hookspec",
    "HookspecMarker",
    # A command-line group (click's, cloup's, typer's `@click.group()`, `@cli.group()`): its callback
    # runs before a subcommand, and `pass` there means there is nothing to prepare — the commands
    # registered under it do the work.
    "group",
    # Typer's group callback (`@app.callback()`, `@users_app.callback()`): the same, and its
    # docstring is the group's help text.
    "callback",
)
# The decorators that make a module a pluggy hook-specification module: there every module-level
# function is a specification, marked or not (`add_hookspecs(module)` also takes the unmarked ones
# a project's prefix names: 27 of pytest's 75 are unmarked).
_HOOKSPEC_MARKERS = ("hookspec", "HookspecMarker")
# Bases that implement no method a subclass could inherit in place of its own.
_NEUTRAL_BASES = frozenset({"object", "Generic", "Protocol", "ABC", "NamedTuple", "TypedDict"})


@functools.cache
def _query(pattern: str) -> tree_sitter.Query:
    """A tree-sitter query over Python, compiled once per pattern."""
    from foxaudit.sources.base import ts_language

    return tree_sitter.Query(ts_language("python"), pattern)



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
        default=("typing.Protocol", "typing_extensions.Protocol", "zope.interface.Interface"),
        metadata={"help": "Base classes whose members are interface declarations: a qualified name is matched"
                          " after resolving the file's imports (`from typing import Protocol as P`); a name"
                          " without a dot matches the last part of any base. A class of the same file that"
                          " derives from one (`class IReactorTCP(IReactorCore)`) is one too."},
    )
    docstring_only: bool = field(
        default=True,
        metadata={"help": "Report a function whose body is only a docstring (it does nothing)."},
    )
    test_files: tuple[str, ...] = field(
        default=DEFAULT_TEST_FILES,
        metadata={"help": "Test modules (gitignore-style globs): there only a test function (a name starting with"
                          " `test`) is reported; the other functions of a test are its doubles (callbacks, fakes,"
                          " fixtures), whose trivial body is the point. Unset, the folders pytest's `testpaths`"
                          " names in pyproject.toml join the default (celery's `t/unit/`)."},
    )
    uncollected_test_files: tuple[str, ...] = field(
        default=(),
        metadata={"help": "Folders among the test modules that the test runner does not collect (gitignore-style"
                          " globs): example suites the project's tests copy and run in a nested session (pytest's"
                          " `testing/example_scripts/`), whose empty `test*` functions are data, not tests. Unset, the"
                          " folders pytest's `norecursedirs` names in pyproject.toml."},
    )
    empty_abstract_methods_meant: tuple[str, ...] = field(
        default=(),
        metadata={"help": "Files (gitignore-style globs) whose abstract base classes' empty methods are hooks by"
                          " design, not forgotten `@abstractmethod`s: reported there only as other methods are."
                          " Unset, the files where pyproject.toml's `[tool.ruff.lint]` turns flake8-bugbear's"
                          " B027 off (`ignore`, `per-file-ignores`)."},
    )
    cuda_qualifiers: tuple[str, ...] = field(
        default=("__global__", "__device__"),
        metadata={"help": "CUDA execution-space qualifiers whose functions must not have an empty body."},
    )
    unmarked_methods: bool = field(
        default=False,
        metadata={"help": "Also report a method whose body is `pass`, `...`, a docstring, `return None` or a constant"
                          " when nothing marks it as pending (a `TODO`, `yet`, `NYI`, `as a placeholder`): in a class such a"
                          " body is usually the class's answer to its protocol (a hook, a null object, a default)."
                          " `raise NotImplementedError`, empty methods of abstract base classes and empty tests"
                          " are reported either way. A project that adopts invariant 9 turns it on."},
    )

    @classmethod
    def project_defaults(cls, pyproject: Any) -> dict[str, Any]:
        """The folders pytest collects tests from (`testpaths`) hold test modules too; those it is
        told not to recurse into (`norecursedirs`) hold no tests."""
        defaults: dict[str, Any] = {}
        testpaths = pytest_testpaths(pyproject)
        if testpaths:
            defaults["test_files"] = (*DEFAULT_TEST_FILES, *testpaths)
        uncollected = pytest_norecursedirs(pyproject)
        if uncollected:
            defaults["uncollected_test_files"] = uncollected
        meant = ruff_ignored_in(pyproject, "B027")
        if meant:
            defaults["empty_abstract_methods_meant"] = meant
        return defaults

    def __post_init__(self) -> None:
        freeze(self, "exempt_decorators", string_tuple(CODE, "exempt-decorators", self.exempt_decorators))
        freeze(self, "protocol_bases", string_tuple(CODE, "protocol-bases", self.protocol_bases))
        freeze(self, "cuda_qualifiers", string_tuple(CODE, "cuda-qualifiers", self.cuda_qualifiers))
        freeze(self, "test_files", string_tuple(CODE, "test-files", self.test_files))
        freeze(self, "uncollected_test_files", string_tuple(CODE, "uncollected-test-files", self.uncollected_test_files))
        freeze(self, "empty_abstract_methods_meant",
               string_tuple(CODE, "empty-abstract-methods-meant", self.empty_abstract_methods_meant))
        if not isinstance(self.docstring_only, bool):
            raise option_error(CODE, "docstring-only", "expected a boolean", self.docstring_only, "true or false",
                               "write docstring-only = true or docstring-only = false")
        if not isinstance(self.unmarked_methods, bool):
            raise option_error(CODE, "unmarked-methods", "expected a boolean", self.unmarked_methods, "true or false",
                               "write unmarked-methods = true or unmarked-methods = false")


@functools.lru_cache(maxsize=32)
def _name_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """Matches a decorator or base-class expression whose last dotted part is one of ``names``,
    or a private name for it (torch's `@_overload`)."""
    alternation = "|".join(re.escape(name) for name in names) or r"(?!)"
    return re.compile(rf"^@?\s*(?:[\w.]+\.)?_*(?:{alternation})\s*(?:[\[(].*)?$", re.DOTALL)


def _declared_by_decorator(decorators: Iterable[str]) -> bool:
    """One of the decorators (as written) makes the method a declaration (`@abstractmethod`,
    `@overload`): its placeholder is no class's answer."""
    pattern = _name_pattern(DEFAULT_EXEMPT_DECORATORS)
    return any(pattern.match(decorator) for decorator in decorators)


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
    answers: dict[str, dict[str, str]] = field(default_factory=dict)  # class → method → constant it returns
    # Classes whose (two or more) methods are all placeholders that return no constant (`pass`, `...`,
    # `raise NotImplementedError`, `return None`): interface declarations and null objects.
    inert: set[str] = field(default_factory=set)
    # class → the names its implemented methods use through `self.`/`cls.` (the class calls them).
    used_by_self: dict[str, set[str]] = field(default_factory=dict)
    # Names an `is` / `is not` of the file compares against (`fn is graph_break`).
    identities: set[str] = field(default_factory=set)
    # class name → every member it defines, placeholder or not (an `@abstractmethod` declaration too).
    declared: dict[str, set[str]] = field(default_factory=dict)
    # class name → its methods whose body is a placeholder that does not raise `NotImplementedError`
    # (`return None`, `pass`, a constant): the class's answer where another class refuses by raising.
    answered_without_raising: dict[str, set[str]] = field(default_factory=dict)
    # Indexes made once per file for the checks run per placeholder (a generated bindings module has
    # thousands: a query per placeholder made them quadratic): scope node id → identifier name →
    # its identifier nodes; the module-level names a function rebinds through `global`.
    identifier_uses: dict[int, dict[str, list[tree_sitter.Node]]] = field(default_factory=dict)
    global_rebinds: set[str] | None = None
    # class node id → the names its methods assign through `self.` (`self.encode = ...`).
    self_assigned: dict[int, set[str]] = field(default_factory=dict)
    # class node id → (the names its body binds to other members: `get = _is_disabled` → `_is_disabled`;
    # its methods whose body is `return False`: `writable`).
    class_level: dict[int, tuple[set[str], set[str]]] = field(default_factory=dict)
    # block node id → (start byte, names bound) of each `if`/`try` statement directly in it.
    branch_bindings: dict[int, list[tuple[int, set[str]]]] = field(default_factory=dict)
    # The module-level functions of the file that store their argument in a table (a registering
    # decorator: ``stores_its_argument``), found once per file when a decorator is first looked up.
    registrars: frozenset[str] | None = None


# Nodes the file's walk hands FX902 besides functions: what its names are read from, so no
# second walk of the file looks for them.
_NAME_NODES = ("import_statement", "import_from_statement", "class_definition", "decorator", "comparison_operator",
               "pair")


@dataclass
class _Walked:
    """What the walk of one Python file handed FX902 (in source order): the nodes of its names,
    and the functions whose bodies are placeholders, judged in ``finish`` once the whole file is
    walked (an import or a class below a function counts for it)."""

    imports: list[tree_sitter.Node] = field(default_factory=list)
    classes: list[tree_sitter.Node] = field(default_factory=list)
    decorators: list[tree_sitter.Node] = field(default_factory=list)
    comparisons: list[tree_sitter.Node] = field(default_factory=list)
    keyed_by_name: list[tree_sitter.Node] = field(default_factory=list)  # `f` of a dict key `f.__name__`
    placeholders: list[tuple[tree_sitter.Node, str]] = field(default_factory=list)
    aliases: dict[str, str] | None = None
    names: _FileNames | None = None
    declares_hookspecs: bool | None = None  # a decorator of the file is a pluggy hook-spec marker
    # `# mypy: disable-error-code="empty-body"`: the file tells the type checker its empty bodies are meant.
    empty_bodies_meant: bool | None = None


def _declares_hookspecs(walked: _Walked) -> bool:
    """Whether the file marks a function with pluggy's hook-spec marker (as written or through an
    import alias): it is a hook-specification module, whose functions are declarations."""
    if walked.declares_hookspecs is None:
        markers, aliases = _name_pattern(_HOOKSPEC_MARKERS), _file_aliases(walked)
        walked.declares_hookspecs = any(
            markers.match(written) or markers.match(resolve(written, aliases))
            for written in map(_decorator_expression, walked.decorators)
        )
    return walked.declares_hookspecs


def _file_aliases(walked: _Walked) -> dict[str, str]:
    """The file's import aliases: all that ``_is_declaration`` reads, so a file whose placeholders
    are all declarations (`@overload`, `@abstractmethod`: most of pandas') is not read further.
    A module-level name bound to a marker an exempt decorator names counts as that marker: tox's
    `_spec = pluggy.HookspecMarker(NAME)`, then `@_spec`."""
    if walked.aliases is None:
        walked.aliases = aliases_of(walked.imports)
        if walked.placeholders:
            walked.aliases.update(_marker_bindings(walked.placeholders[0][0], walked.aliases))
    return walked.aliases


def _marker_bindings(node: tree_sitter.Node, aliases: dict[str, str]) -> dict[str, str]:
    """``{name: qualified marker}`` for each module-level ``name = <...>HookspecMarker(...)`` of the
    file that holds ``node`` (its top-level statements only: a marker is made once, at import)."""
    root = node
    while root.parent is not None:
        root = root.parent
    markers = _name_pattern(_HOOKSPEC_MARKERS)
    bound: dict[str, str] = {}
    for statement in root.named_children:
        if statement.type != "expression_statement" or statement.named_child_count != 1:
            continue
        assignment = statement.named_children[0]
        if assignment.type != "assignment":
            continue
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier" or right.type != "call":
            continue
        function = right.child_by_field_name("function")
        if function is None:
            continue
        qualified = resolve(function.text.decode(), aliases)
        if markers.match(qualified):
            bound[left.text.decode()] = qualified
    return bound


def _file_names(walked: _Walked) -> _FileNames:
    state = walked.names
    if state is None:
        aliases = _file_aliases(walked)
        bases: dict[str, set[str]] = {}
        implemented: dict[str, set[str]] = {}
        answers: dict[str, dict[str, str]] = {}
        # class → its implemented methods, whose `self.` names are collected when first read
        implemented_methods: dict[str, list[tree_sitter.Node]] = {}
        methods_of: dict[str, list[tree_sitter.Node]] = {}
        declared: dict[str, set[str]] = {}
        answered: dict[str, set[str]] = {}
        written: dict[str, list[str]] = {}  # class name → its bases as resolved, in full
        for definition in walked.classes:
            name = definition.child_by_field_name("name")
            if name is None:
                continue
            superclasses = definition.child_by_field_name("superclasses")
            resolved = [resolve(base.text.decode(), aliases)
                        for base in (superclasses.named_children if superclasses is not None else ())
                        if base.type != "keyword_argument"]
            class_name = name.text.decode()
            written.setdefault(class_name, []).extend(resolved)
            bases.setdefault(class_name, set()).update(base.rsplit(".", 1)[-1] for base in resolved)
            body = definition.child_by_field_name("body")
            members = implemented.setdefault(class_name, set())
            constants = answers.setdefault(class_name, {})
            implementing = implemented_methods.setdefault(class_name, [])
            methods = methods_of.setdefault(class_name, [])
            defined = declared.setdefault(class_name, set())
            answering = answered.setdefault(class_name, set())
            # (Also a member bound in the body's `if`/`try`/`with` blocks: `if hasattr(socket, "recvmsg"):
            # recvmsg = _make_wrapper(...)` implements the base's `recvmsg` where the platform has it.)
            for statement in class_body_statements(body) if body is not None else ():
                member = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
                if member is not None and member.type == "function_definition":
                    methods.append(member)
                    member_name = member.child_by_field_name("name")
                    if member_name is None:
                        continue
                    defined.add(member_name.text.decode())
                    placeholder = placeholder_body(member)
                    if placeholder is None:
                        members.add(member_name.text.decode())
                        implementing.append(member)
                    elif RAISE_NOT_IMPLEMENTED not in placeholder and not _declared_by_decorator(
                            _decorator_expression(decorator) for decorator in statement.children if decorator.type == "decorator"):
                        answering.add(member_name.text.decode())
                    answer = constant_answer(member)
                    if answer:
                        constants[member_name.text.decode()] = answer
                elif statement.type == "expression_statement" and statement.named_children:
                    # `set_device = staticmethod(torch.cuda.set_device)` implements the member too.
                    assignment = statement.named_children[0]
                    left = assignment.child_by_field_name("left") if assignment.type == "assignment" else None
                    right = assignment.child_by_field_name("right") if left is not None else None
                    if left is not None and left.type == "identifier" and right is not None:
                        members.add(left.text.decode())
                        # `_constructors = {"eval_inner": lambda obj: ...}`: members built from a table
                        members.update(callable_table_keys(right))
        handed: set[str] = set()
        for decorator in walked.decorators:
            call = next((child for child in decorator.named_children if child.type == "call"), None)
            arguments = call.child_by_field_name("arguments") if call is not None else None
            for argument in arguments.named_children if arguments is not None else ():
                if argument.type == "keyword_argument":  # `dataclass_transform(field_specifiers=(f,))`
                    argument = argument.child_by_field_name("value") or argument
                for item in argument.named_children if argument.type in ("tuple", "list") else (argument,):
                    if item.type == "identifier":
                        handed.add(item.text.decode())
        unreadable = {
            klass for klass, full in written.items()
            if any(("." in base or base not in bases) and _unreadable_base(base) for base in full)
        }
        # (A constant other than None is an answer, not an absence: a class of constants is not inert.)
        inert = {klass for klass, methods in methods_of.items()
                 if len(methods) >= 2 and all(placeholder_body(method) is not None and not constant_answer(method)
                                              for method in methods)}
        identities = {operand.text.decode() for comparison in walked.comparisons
                      if any(child.type in ("is", "is not") for child in comparison.children)
                      for operand in comparison.named_children if operand.type == "identifier"}
        # ... or by name: `callee == _get_trial_arg.__name__`, `{_get_trial_arg.__name__: ...}`
        identities.update(named.text.decode() for comparison in walked.comparisons
                          for named in compared_by_name(comparison) if named.type == "identifier")
        identities.update(named.text.decode() for named in walked.keyed_by_name if named.type == "identifier")
        state = walked.names = _FileNames(aliases, bases, implemented, handed, unreadable, answers, inert,
                                             _UsedBySelf(implemented_methods), identities, declared, answered)
    return state


class _UsedBySelf(dict[str, set[str]]):
    """class → the names its implemented methods use through `self.`/`cls.`, collected for a class
    when first read (``get``): a query per method, and few classes' are ever read (a placeholder
    method of theirs that nothing else explains). Read with ``get`` only."""

    def __init__(self, methods: dict[str, list[tree_sitter.Node]]):
        super().__init__()
        self._methods = methods

    def get(self, klass: str, default: set[str] | None = None) -> set[str] | None:  # type: ignore[override]
        if klass not in self:
            methods = self._methods.get(klass)
            if methods is None:
                return default
            used: set[str] = set()
            for method in methods:
                used.update(_names_used_through_self(method))
            self[klass] = used
        return self[klass]


# Built-in container and value types whose methods a subclass may refuse by overriding them.
_BUILTIN_BASES = {kind.__name__: kind for kind in (dict, list, set, frozenset, tuple, str, bytes, bytearray, int, float)}
# The container ABCs (``collections.abc``, re-exported by ``typing``) whose mixin methods a subclass
# inherits implemented; a read-only one's subclass refusing its mutable counterpart's methods
# (``Mapping.pop``) declares itself read-only.
_CONTAINER_ABCS = {kind.__name__: kind for kind in (collections.abc.Mapping, collections.abc.MutableMapping,
                                                     collections.abc.Sequence, collections.abc.MutableSequence,
                                                     collections.abc.Set, collections.abc.MutableSet)}
_MUTABLE_COUNTERPART = {"Mapping": "MutableMapping", "Sequence": "MutableSequence", "Set": "MutableSet"}
_ABC_MODULES = frozenset({"collections.abc", "typing", "typing_extensions"})


def _refuses_builtin_method(owner: tree_sitter.Node, label: str, names: _FileNames) -> bool:
    """The class derives from a built-in type (``dict``, ``list``, ...) that implements ``label``: its
    ``raise NotImplementedError`` turns off an inherited operation (a ``dict`` whose ``update``
    would bypass its own bookkeeping), an answer as a subclass's is to an implemented method."""
    superclasses = owner.child_by_field_name("superclasses")
    if superclasses is None:
        return False
    for base in superclasses.named_children:
        written = base.text.decode()
        if base.type == "identifier" and written in _BUILTIN_BASES and written not in names.aliases:
            if label in vars(_BUILTIN_BASES[written]):
                return True
        container = _container_abc(base, names.aliases)
        if container is not None and _container_implements(container, label):
            return True
    return False


def _container_abc(base: tree_sitter.Node, aliases: dict[str, str]) -> str | None:
    """The container ABC a base names through the file's imports (``Mapping``, ``abc.Mapping``,
    ``typing.Mapping[str, int]``), or None."""
    if base.type == "subscript":
        value = base.child_by_field_name("value")
        if value is None:
            return None
        base = value
    if base.type not in ("identifier", "attribute"):
        return None
    head, dot, rest = base.text.decode().partition(".")
    module, _, name = (aliases.get(head, head) + dot + rest).rpartition(".")
    return name if module in _ABC_MODULES and name in _CONTAINER_ABCS else None


def _container_implements(container: str, label: str) -> bool:
    """The ABC implements ``label`` as a mixin (not an abstract method, nor ``object``'s), or a
    read-only ABC's subclass refuses a mutating method of its mutable counterpart."""
    kind = _CONTAINER_ABCS[container]
    if hasattr(kind, label) and label not in kind.__abstractmethods__ and not hasattr(object, label):
        return True
    counterpart = _MUTABLE_COUNTERPART.get(container)
    return counterpart is not None and hasattr(_CONTAINER_ABCS[counterpart], label) and not hasattr(kind, label)


# A semgrep rule's test file marks the lines its rule must match (`# ruleid: …`): code written to
# be matched, not run.
_SEMGREP_TEST = "# ruleid:"
# io's capability queries: a class whose `writable()` returns False refuses `write` by design.
_CAPABILITY_OF = {"write": "writable", "writelines": "writable", "read": "readable", "read1": "readable",
                  "readline": "readable", "readlines": "readable", "readinto": "readable", "readinto1": "readable",
                  "seek": "seekable", "tell": "seekable", "truncate": "seekable"}


def _class_level(owner: tree_sitter.Node, names: _FileNames) -> tuple[set[str], set[str]]:
    found = names.class_level.get(owner.id)
    if found is not None:
        return found
    aliased: set[str] = set()
    refusing: set[str] = set()
    body = owner.child_by_field_name("body")
    for statement in body.named_children if body is not None else ():
        if statement.type == "decorated_definition":
            statement = statement.child_by_field_name("definition") or statement
        if statement.type == "expression_statement" and statement.named_child_count == 1:
            assignment = statement.named_children[0]
            value = assignment.child_by_field_name("right") if assignment.type == "assignment" else None
            while value is not None and value.type == "assignment":  # `get = wait = _is_disabled`
                value = value.child_by_field_name("right")
            if value is not None and value.type == "identifier":
                aliased.add(value.text.decode())
        elif statement.type == "function_definition":
            name = statement.child_by_field_name("name")
            if name is not None and constant_answer(statement) == "False":
                refusing.add(name.text.decode())
    found = names.class_level[owner.id] = (aliased, refusing)
    return found


def _refusal_by_design(owner: tree_sitter.Node, label: str, names: _FileNames) -> bool:
    """The method refuses an operation its class says it does not offer: io's capability query
    answers no (`def writable(self): return False` beside `def write(...): raise
    NotImplementedError`), or one refusal is bound to several members (`get = _is_disabled`)."""
    aliased, refusing = _class_level(owner, names)
    return label in aliased or _CAPABILITY_OF.get(label) in refusing


def _rebound_on_instances(owner: tree_sitter.Node, label: str, names: _FileNames) -> bool:
    """The class assigns ``self.<label> = ...`` in one of its methods: each instance gets its own
    callable under the method's name (``self.encode = self._encode_eager`` in ``__init__``), so the
    method's body is the slot's declaration, not what a call runs. (The class's assigned names
    are collected once, not per method: a class of thousands of methods was quadratic.)"""
    assigned = names.self_assigned.get(owner.id)
    if assigned is None:
        assigned = names.self_assigned[owner.id] = set()
        query = _query("(assignment left: (attribute object: (identifier) @o attribute: (identifier) @a))")
        for _, captures in tree_sitter.QueryCursor(query).matches(owner):
            receiver, member = captures.get("o", []), captures.get("a", [])
            if receiver and member and receiver[0].text == b"self":
                assigned.add(member[0].text.decode())
    return label in assigned


def _names_used_through_self(method: tree_sitter.Node) -> set[str]:
    """`self.hook(...)`, `cls.hook`, `self.hook` handed on: the members a method reaches on its own object."""
    used: set[str] = set()
    for attribute in tree_sitter.QueryCursor(_query("(attribute object: (identifier)) @a")).captures(method).get("a", []):
        receiver = attribute.child_by_field_name("object")
        member = attribute.child_by_field_name("attribute")
        if receiver is not None and member is not None and receiver.text in (b"self", b"cls"):
            used.add(member.text.decode())
    return used




def _implemented_in_family(
    start: str,
    method: str,
    bases_of: Callable[[str], Iterable[str]],
    subclasses_of: Callable[[str], Iterable[str]],
    implements: Callable[[str, str], bool],
    unreadable: Callable[[str], bool],
    answers_below: Callable[[str, str], bool] = lambda key, name: False,
) -> bool:
    """Another class of ``start``'s family implements ``method``: a base (directly or not), a
    subclass (directly or not), or a class below one of ``start``'s direct bases (a sibling). A
    sibling with a base foxaudit cannot read (a compiled extension's class: pandas'
    ``BlockManager(libinternals.BlockManager, ...)``) may implement it there: that counts too,
    rather than a guess reported as a stub. ``answers_below``: what counts in a subclass or a
    sibling only (an override's answer), not in a base (whose placeholder may be a declaration)."""
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
        if key != start and (implements(key, method) or answers_below(key, method)
                             or (key not in direct and unreadable(key))):
            return True
        if key != start and key not in direct and _inherits_elsewhere(key, method, seen, bases_of, implements):
            return True
        frontier.extend(subclasses_of(key))
    return False


def _inherits_elsewhere(
    key: str,
    method: str,
    excluded: set[str],
    bases_of: Callable[[str], Iterable[str]],
    implements: Callable[[str, str], bool],
) -> bool:
    """A class below the judged one takes ``method`` from another of its bases (a mixin:
    `TemporalSplit(ClearCacheOnAllocateMixin, AllocationTreeNode)` gets `allocate` from the
    mixin), so the judged class's placeholder is overridden there; ``excluded`` are the judged
    class and its own ancestors."""
    visited = set(excluded)
    frontier = [base for base in bases_of(key) if base not in excluded]
    while frontier:
        base = frontier.pop()
        if base in visited:
            continue
        visited.add(base)
        if implements(base, method):
            return True
        frontier.extend(bases_of(base))
    return False


def _another_answer(found: str, answer: str) -> bool:
    """A constant another class returns (``found``) that differs from the judged one's (``answer``):
    `PythonPrinter._print_Infinity` returns "math.inf" where `CppPrinter`'s returns a C++ limit,
    each its class's answer, and a base's `raise NotImplementedError` is then their interface."""
    return bool(found) and found != answer


def _implemented_in_file_family(class_name: str, method: str, names: _FileNames, answer: str = "",
                                answered_refusal: bool = False) -> bool:
    """``answered_refusal``: the judged body raises `NotImplementedError` and a method placeholder
    is its class's answer (``unmarked-methods`` off): an override's `return None` or `pass` (in a
    subclass or a sibling) answers it, as a different constant does."""
    subclasses: dict[str, list[str]] = {}
    for candidate, bases in names.bases.items():
        for base in bases:
            subclasses.setdefault(base, []).append(candidate)
    return _implemented_in_family(
        class_name, method,
        lambda key: names.bases.get(key, ()),
        lambda key: subclasses.get(key, ()),
        lambda key, name: (name in names.implemented.get(key, ())
                           or _another_answer(names.answers.get(key, {}).get(name, ""), answer)),
        lambda key: key in names.unreadable,
        lambda key, name: answered_refusal and name in names.answered_without_raising.get(key, ()),
    )


def _implemented_in_program_family(program: Program, class_key: str, method: str, answer: str = "",
                                   answered_refusal: bool = False) -> bool:
    def implements(key: str, name: str) -> bool:
        found = program.functions.get(f"{key}.{name}")
        if found is not None and (not found[1].placeholder or _another_answer(found[1].answer, answer)):
            return True
        klass = program.classes[key][1]
        return name in klass.attributes or name in klass.table_members

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

    def answers(key: str, name: str) -> bool:
        found = program.functions.get(f"{key}.{name}")
        return answered_refusal and found is not None and not found[1].raises_not_implemented \
            and not _declared_by_decorator(found[1].decorators)

    return _implemented_in_family(class_key, method, nested(program.base_classes), nested(program.subclasses),
                                  implements, unreadable, answers)


FUNCTION = "function"  # the last fact of a module-level or nested function's finding
# The fifth fact of a method's finding whose `raise NotImplementedError` another class's
# non-raising placeholder answers (``_implemented_in_file_family``'s ``answered_refusal``).
_ANSWERED_REFUSAL = "answered-refusal"


def _compared_by_identity(program: Program) -> frozenset[str]:
    """Keys of the project's functions that some module compares by identity (`fn is
    markers.graph_break`): marker functions, whose body is not what a call does — an interpreter
    or tracer recognises the function and acts in its place."""
    return _functions_named_by(program, "identities", lambda module: module.summary.identities)


def _extended_dispatchers(program: Program) -> frozenset[str]:
    """Keys of the project's functions that a decorator extends by an attribute of the function
    (`@create_db.for_db("sqlite")`, `@deserialize_space.register("Discrete")`): the function is
    wrapped in a dispatch table of the project's own making (sqlalchemy's `@register.init`,
    Minari's `@type_value_dispatch`), and its body is the fallback for the keys no one registered
    — as `functools.singledispatch`'s is."""
    return _functions_named_by(program, "dispatchers", lambda module: (
        decorator.split("(", 1)[0].strip().rpartition(".")[0] for decorator in module.summary.decorators))


def _functions_named_by(program: Program, kind: str, names: Callable[[Module], Iterable[str]]) -> frozenset[str]:
    """Keys of the project's functions that the dotted names ``names(module)`` give, in any
    module, name through that module's imports (not through `self`/`cls`); once per program."""
    memo = program.project.memo
    found = memo.get(f"{CODE}:{kind}")
    if found is None:
        keys = set()
        for module in program.modules.values():
            for dotted in names(module):
                if not dotted or dotted.partition(".")[0] in ("self", "cls"):
                    continue
                resolved, key = program.lookup(program.canonical(module, dotted))
                if resolved == "function":
                    keys.add(key)
        found = memo[f"{CODE}:{kind}"] = frozenset(keys)
    return found


def _fetched_by_name(program: Program) -> frozenset[str]:
    """Project modules whose attributes some module fetches by a computed name into a variable
    (numba's `key = getattr(libdevice, func[5:])` over a table of names, then `lower(key, …)`):
    the module's functions are looked up as values — the keys of a registry, typing stubs the
    compiler replaces — not called for what their bodies do. (Read from each summary's index,
    ``ModuleSummary.fetched``: no body is decoded.)"""
    memo = program.project.memo
    found = memo.get(f"{CODE}:fetched")
    if found is None:
        names = set()
        for module in program.modules.values():
            for dotted in module.summary.fetched:
                canonical = program.canonical(module, dotted)
                if canonical in program.modules and canonical != module.name:
                    names.add(canonical)
        found = memo[f"{CODE}:fetched"] = frozenset(names)
    return found


def _referenced_as_a_value(program: Program, module: Module, name: str) -> bool:
    """Another module puts the function, imported by name, in a module-level table (sphinx's
    `OPTION_SPEC = {"no-index": bool_option}`), or binds a module-level name to it (pre-commit's
    `health_check = lang_base.basic_health_check` in each language module): a callback, whose
    constant is the answer its caller wants. (A parameter's default in another module is not
    seen: the summary keeps no defaults.)"""
    target = f"{module.name}.{name}"
    for other in program.modules.values():
        if other is module or other.is_test:
            continue  # (a test names what it checks: `assert task`, a double's target)
        summary = other.summary
        for ref in summary.imports:
            if ref.module != module.name or ref.dynamic:
                continue
            local = next((alias or imported for imported, alias in ref.names if imported == name), None)
            if local is not None and any(
                    re.search(rf"(?<![\w'\"]){re.escape(local)}(?![\w'\"(])", constant.text)
                    for constant in summary.constants.values() if constant.kind not in ("str", "name", "attribute")):
                return True  # a module-level table or tuple holds it: `SPEC = {"no-index": bool_option}`
            if local is not None and _assigned_as_a_value(summary, local):
                return True  # `var_repr = eqrepr if self.include_vars else nullrepr`: one of the alternatives
        for constant in summary.constants.values():
            if constant.kind in ("name", "attribute") and constant.dotted.rpartition(".")[2] == name \
                    and program.canonical(other, constant.dotted) == target:
                return True
    return False


def _passed_as_an_argument(program: Program, module: Module, name: str) -> bool:
    """Another module, a test too, passes the function uncalled as an argument (kaolin's
    `import_mesh(path, error_handler=ignore_error_handler)`, `handler=utils.skip`): a callback
    the caller invokes, and its empty body is the behaviour that caller was handed."""
    return name in _functions_passed_as_arguments(program, module)


def _functions_passed_as_arguments(program: Program, module: Module) -> frozenset[str]:
    """Names of ``module``'s functions that other modules pass as call arguments; only modules
    that import ``module`` (or a name from it) are read, once per module asked about."""
    memo = program.project.memo
    found = memo.get(f"{CODE}:passed:{module.name}")
    if found is not None:
        return found
    prefix = module.name + "."
    parent, _, leaf = module.name.rpartition(".")
    names: set[str] = set()
    for other in program.modules.values():
        if other is module or not any(
                ref.module == module.name or (ref.module == parent and any(imported == leaf for imported, _ in ref.names))
                for ref in other.summary.imports):
            continue
        for call in other.summary.calls:
            for arg in (*call.args, *(value for _, value in call.kwargs)):
                if arg.kind in ("name", "attribute"):
                    canonical = program.canonical(other, arg.dotted)
                    if canonical.startswith(prefix) and "." not in canonical[len(prefix):]:
                        names.add(canonical[len(prefix):])
    found = memo[f"{CODE}:passed:{module.name}"] = frozenset(names)
    return found


def _assigned_as_a_value(summary: ModuleSummary, local: str) -> bool:
    """A function of ``summary``'s module assigns the function (imported as ``local``) to a name
    without calling it: as a conditional's or a boolean operator's alternative (`var_repr = eqrepr
    if include_vars else nullrepr`), or plainly (`fun = no_prefix`) where that scope never calls
    the name it is bound to (``_handed_on_as_callback`` in one file)."""
    operand = re.compile(rf"(?:^|\b(?:else|or|and)\s+){re.escape(local)}(?:\s+(?:if|or|and)\b|$)")
    called: set[tuple[str, str]] | None = None
    for assignment in summary.assignments:
        value = assignment.value
        if value.kind == "name" and value.dotted == local:
            if called is None:
                called = {(call.scope, call.func) for call in summary.calls}
            if (assignment.scope, assignment.target) not in called:
                return True
        elif value.kind == "other" and local in value.text and re.search(r"\b(?:if|or|and)\b", value.text) \
                and operand.search(" ".join(value.text.split())):
            return True
    return False


def _registered_by_another_module(program: Program, module: Module, key: str) -> bool:
    """A decorator of the function is a project function that stores its argument in a table
    (werkzeug's `coolmagic.utils.export`, whose `wrapped(f)` files `f` in `exported_views`):
    the function is that table's entry (``_registered`` looks up the file's own decorators)."""
    found = program.functions.get(key)
    if found is None:
        return False
    for decorator in found[1].decorators:
        kind, target = program.lookup(program.canonical(module, decorator))
        entry = program.functions.get(target) if kind == "function" else None
        if entry is not None and entry[1].stores_argument:
            return True
    return False


def _answered_in_parallel_module(program: Program, module: Module, name: str, answer: str) -> bool:
    """A parallel module implements the module-level function ``name`` (or answers it with
    another constant): modules whose dotted names differ in one package only (`torch.mtia` and
    `torch.cuda`, `db.backends.sqlite.features` and `db.backends.mysql.features`) are backends of
    one interface by convention, and this module's placeholder is its answer (MTIA's
    `is_bf16_supported` returns True where CUDA's asks the device), as a subclass's is."""
    if "." in name:
        return False
    # The module-level functions of that name, per name: ``program.functions.get`` answers "none"
    # from a module's index of function names, so only modules that define the name have their
    # functions decoded (decoding every module's made this a tenth of the serial pass on pandas).
    index = program.project.memo.setdefault(f"{CODE}:module-functions", {})
    found = index.get(name)
    if found is None:
        from foxaudit.program.model import function_key

        found = index[name] = [
            entry
            for other in program.modules.values()
            if (entry := program.functions.get(function_key(other.name, name))) is not None and not entry[1].class_name
        ]
    together = _tabled_with(program, module)
    if any((_parallel(module, other) or other.name in together)
           and (not function.placeholder or _another_answer(function.answer, answer))
           for other, function in found if other is not module):
        return True
    return len(_backends_implementing(module, [other for other, function in found if not function.placeholder])) >= 2


def _backends_implementing(module: Module, implementing: list[Module]) -> set[str]:
    """The sub-packages of ``module``'s package whose modules implement the function: dgl's
    `backend/backend.py` declares the interface (`def tensor(data, dtype=None): pass`) that
    `backend/pytorch/tensor.py`, `backend/mxnet/tensor.py`, … implement, one backend each."""
    if module.is_package:
        return set()
    package = module.name.rpartition(".")[0]
    depth = package.count(".") + 1 if package else 0
    backends = set()
    for other in implementing:
        parts = other.name.split(".")
        if other is not module and package and other.name.startswith(package + ".") and (
                len(parts) > depth + 1 or (other.is_package and len(parts) == depth + 1)):
            backends.add(parts[depth])
    return backends


# An identifier in a table entry's text (its strings blanked first: `cast("_Format", flit)` names `flit`).
_TABLE_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?![\w(])")
_STRING_LITERAL = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")


def _tabled_with(program: Program, module: Module) -> frozenset[str]:
    """The modules that a module importing ``module`` puts beside it as the values of its
    module-level literal tables (pdm's `FORMATS = {"flit": cast("_Format", flit), "pipfile":
    pipfile, ...}` in `pdm.formats`; a module-level list or tuple of modules too): sibling modules
    used as one table's values are backends of one protocol, as modules that differ in one
    package are (``_parallel``). Read once per judged module, in the modules that import it."""
    memo = program.project.memo.setdefault(f"{CODE}:tabled-with", {})
    found = memo.get(module.name)
    if found is not None:
        return found
    last = module.name.rsplit(".", 1)[-1]
    together: set[str] = set()
    for holder in program.modules.values():
        if holder is module or last not in holder.summary.imported_names:
            continue
        bindings = program.bindings(holder)
        if module.name not in bindings.values():
            continue
        tables = [_modules_in(entry.value, bindings, program) for entry in holder.summary.dict_entries if not entry.scope]
        held = set().union(*tables) if tables else set()
        for constant in holder.summary.constants.values():
            if constant.kind == "list":
                listed = _modules_in(constant.text, bindings, program)
                if module.name in listed and len(listed) >= 2:
                    together |= listed
        # (A dict entry records no table: the module-level tables of one module are taken as one.)
        if module.name in held and len(held) >= 2:
            together |= held
    found = memo[module.name] = frozenset(together - {module.name})
    return found


def _parallel(one: Module, other: Module) -> bool:
    """The two modules' names differ in exactly one part below the top, a package on both sides
    (a file named after its package counts without that prefix: hummingbot's
    `kraken/kraken_web_utils` and `hyperliquid/hyperliquid_web_utils` are one interface's). A file
    whose path is no module name (pylint's `doc/data/messages/b/broken-callable/bad.py`) is run by
    path, never imported through an interface: parallel to nothing."""
    from foxaudit.program.model import importable

    if not (importable(one.name) and importable(other.name)):
        return False
    first, second = _unprefixed(one.name), _unprefixed(other.name)
    if len(first) != len(second):
        return False
    differing = [index for index, (a, b) in enumerate(zip(first, second)) if a != b]
    if len(differing) != 1 or differing[0] == 0:
        return False
    return differing[0] < len(first) - 1 or (one.is_package and other.is_package)


def _unprefixed(name: str) -> list[str]:
    parts = name.split(".")
    if len(parts) >= 2 and parts[-1].startswith(parts[-2] + "_") and len(parts[-1]) > len(parts[-2]) + 1:
        parts[-1] = parts[-1][len(parts[-2]) + 1 :]
    return parts


def _file_ancestors(klass: str, names: _FileNames) -> set[str]:
    """The classes of the file above ``klass`` (bases, their bases, ...)."""
    found: set[str] = set()
    frontier = [base for base in names.bases.get(klass, ()) if base in names.bases]
    while frontier:
        key = frontier.pop()
        if key in found or key == klass:
            continue
        found.add(key)
        frontier.extend(base for base in names.bases.get(key, ()) if base in names.bases)
    return found


def _program_ancestors(program: Program, class_key: str) -> set[str]:
    found: set[str] = set()
    frontier = list(program.base_classes(class_key))
    while frontier:
        key = frontier.pop()
        if key in found or key == class_key:
            continue
        found.add(key)
        frontier.extend(program.base_classes(key))
    return found


def _bases_all_abstract(program: Program, class_key: str) -> bool:
    """Every base of the class besides `ABC` is a project class that derives from `ABC` (directly
    or through its own bases): `IStrategy(ABC, HyperStrategyMixin)` is no abstract base (B027 as
    bugbear reads multiple inheritance), `LocalFeed(Feed, abc.ABC)` with an abstract `Feed` is."""
    _, klass = program.classes[class_key]
    others = [base for base in klass.bases if base.rsplit(".", 1)[-1] != "ABC" and "=" not in base]
    bases = program.base_classes(class_key)
    if len(others) > len(bases):
        return False  # a base from outside the project (or one the analysis cannot resolve)

    def abstract(key: str) -> bool:
        return key in program.classes and any(base.rsplit(".", 1)[-1] == "ABC" for base in program.classes[key][1].bases)

    return all(abstract(key) or any(abstract(ancestor) for ancestor in _program_ancestors(program, key)) for key in bases)


def _calls_through_self(program: Program, class_key: str, method: str) -> bool:
    """A method of ``class_key`` calls ``self.<method>(...)`` (or ``cls.``): the class runs that step itself."""
    module, klass = program.classes[class_key]
    if method not in module.summary.call_methods:
        return False  # no call of the module names it (the index says so: the body stays unread)
    scope = klass.qualname + "."
    return any(call.method == method and call.receiver in ("self", "cls") and call.scope.startswith(scope)
               for call in module.summary.calls)


_EMPTY = frozenset({"`pass`", "`...`", DOCSTRING})
# The confirm fact of an abstract class's empty method (B027): the whole program looks for a base
# that declares it.
_ABSTRACT_EMPTY = "abstract-empty"


def _is_empty(placeholder: str) -> bool:
    """Only `pass`, `...` and docstrings: what B027 calls an empty method."""
    return all(part in _EMPTY for part in re.split(r", | and ", placeholder))


def _is_abstract_base(owner: tree_sitter.Node, names: _FileNames) -> bool:
    """The class derives from `abc.ABC` or has `metaclass=abc.ABCMeta` (resolved through imports),
    and any other base is itself abstract (`LocalFeed(Feed, abc.ABC)`; a base in another file is
    checked by the whole program, ``_bases_all_abstract``). A class with a base beside that is not
    (`IStrategy(ABC, HyperStrategyMixin)`) is no abstract base, as flake8-bugbear and ruff read
    B027: its empty methods may be the answers to what that base declares."""
    superclasses = owner.child_by_field_name("superclasses")
    abstract, others = False, []
    for base in superclasses.named_children if superclasses is not None else ():
        if base.type == "keyword_argument":
            value = base.child_by_field_name("value")
            if value is not None and resolve(value.text.decode(), names.aliases) in ("abc.ABCMeta", "ABCMeta"):
                abstract = True
        elif resolve(base.text.decode(), names.aliases) in ("abc.ABC", "ABC"):
            abstract = True
        else:
            others.append(base.text.decode().rsplit(".", 1)[-1])
    # A base of this file must be abstract itself; one from another file the whole program checks.
    return abstract and all(_abstract_in_file(other, names, set()) or other not in names.bases for other in others)


def _abstract_in_file(klass: str, names: _FileNames, seen: set[str]) -> bool:
    """Whether ``klass`` is a class of this file that derives from `ABC`, directly or through
    classes of this file."""
    bases = names.bases.get(klass)
    if bases is None or klass in seen:
        return False
    seen.add(klass)
    return "ABC" in bases or any(_abstract_in_file(base, names, seen) for base in bases)


def _is_test(function: tree_sitter.Node, name: str, owner: tree_sitter.Node | None, path: str) -> bool:
    """A test as pytest collects it: a module-level `test*` function or a `test*` method of a
    `Test*` class (a nested `test_func` is a callback, `Delegator.test_method` a fake's method), in
    a file a test runner collects (`test*.py`, `*_test.py`: pytest's and unittest's defaults).
    pylint's checker inputs (`tests/functional/u/unexpected_keyword_arg.py`'s `def test_no_return():
    pass`) are data a test reads, not tests."""
    if not name.startswith("test"):
        return False
    stem = path.rsplit("/", 1)[-1].removesuffix(".py")
    if not (stem.startswith("test") or stem.endswith("_test")):
        return False
    body = function.child_by_field_name("body")
    if body is not None and any(
            statement.type == "return_statement" and statement.named_child_count for statement in body.named_children):
        return False  # it returns a value: a callback named `test_*` (pytest warns on a test that returns)
    if owner is not None:
        # A `Test*` class pytest collects is a module's (a class defined in a test's body is its data).
        owner_name = owner.child_by_field_name("name")
        holder = owner.parent.parent if owner.parent is not None and owner.parent.type == "decorated_definition" \
            else owner.parent
        return owner_name is not None and owner_name.text.decode().startswith("Test") \
            and holder is not None and holder.type == "module"
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
    return any({name, "*"} & _top_level_bindings(block) for block in blocks if block.id != holder.id)


def _rebound_later(function: tree_sitter.Node, name: str, names: _FileNames) -> bool:
    """A later `if`/`try` in the same block binds the same name (`def set_allocator(): pass`, then
    `if has_triton(): set_allocator = triton.set_allocator`) or may bind it (`try: from
    internal.static_init import *`), or a function of the module rebinds it (`global synchronize`
    then `synchronize = torch.accelerator.synchronize`): a default for when the feature is absent."""
    statement = function.parent if function.parent is not None and function.parent.type == "decorated_definition" \
        else function
    block = statement.parent
    if block is None:
        return False
    branches = names.branch_bindings.get(block.id)
    if branches is None:
        branches = names.branch_bindings[block.id] = [
            (child.start_byte, _bindings_within(child)) for child in block.named_children if child.type in _BRANCHING
        ]
    if any(start > statement.start_byte and {name, "*"} & bound for start, bound in branches):
        return True
    if block.type != "module":
        return False
    if names.global_rebinds is None:
        names.global_rebinds = _rebound_through_global(block)
    return name in names.global_rebinds


def _rebound_through_global(module: tree_sitter.Node) -> set[str]:
    """The names a function of ``module`` declares ``global`` and assigns."""
    rebound: set[str] = set()
    for declaration in tree_sitter.QueryCursor(_query("(global_statement) @g")).captures(module).get("g", []):
        declared = {child.text.decode() for child in declaration.named_children if child.type == "identifier"}
        scope = declaration.parent
        while scope is not None and scope.type != "function_definition":
            scope = scope.parent
        if scope is not None:
            rebound |= declared & _assigned_within(scope)
    return rebound


def _assigned_within(scope: tree_sitter.Node) -> set[str]:
    return {left.text.decode() for assignment in tree_sitter.QueryCursor(_query("(assignment) @a")).captures(scope).get("a", [])
            if (left := assignment.child_by_field_name("left")) is not None and left.type == "identifier"}




def _bindings_within(statement: tree_sitter.Node) -> set[str]:
    """Names the blocks of an `if`/`try` bind, nested `if`/`try` blocks included."""
    bound: set[str] = set()
    stack = [statement]
    while stack:
        current = stack.pop()
        for child in current.named_children:
            if child.type == "block":
                bound |= _top_level_bindings(child)
                stack.extend(inner for inner in child.named_children if inner.type in _BRANCHING)
            elif child.type in _BRANCHES:
                stack.append(child)
    return bound


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
            if any(child.type == "wildcard_import" for child in statement.children):
                bound.add("*")  # `from internal import *`: may bind any name
        elif statement.type == "expression_statement" and statement.named_children:
            assignment = statement.named_children[0]
            # `a = b = f()`, `a, b = f()`, `x: T = …`: every name the targets bind.
            while assignment is not None and assignment.type == "assignment":
                bound.update(_target_names(assignment.child_by_field_name("left")))
                assignment = assignment.child_by_field_name("right")
    return bound


def _target_names(target: tree_sitter.Node | None) -> list[str]:
    """The names an assignment target binds: `a`, and those of `a, b` / `(a, b)` / `[a, *b]`."""
    if target is None:
        return []
    if target.type == "identifier":
        return [target.text.decode()]
    if target.type in ("pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern", "parenthesized_expression"):
        return [name for child in target.named_children for name in _target_names(child)]
    return []


# Words of a name (`NopInputReader` → nop, input, reader; `_fake_rcb` → fake, rcb).
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# A class or function so named stands in for the real thing on purpose: a null object, a double.
_STAND_IN_WORDS = frozenset({"noop", "nop", "null", "dummy", "fake", "mock", "stub", "unsupported"})
# The constant a name promises: `always_true` returns True, `_unpickle_as_none` returns None.
_PROMISED = {"true": frozenset({"True"}), "false": frozenset({"False"}), "none": frozenset({"None"}),
             "zero": frozenset({"0", "0.0"}), "empty": frozenset({"()", "[]", "{}", '""', "''"})}
# A name that says its answer does not depend on the input: `always_wrap_policy`, `default_kwargs`.
_CONSTANT_WORDS = frozenset({"always", "default", "constant"})
# A docstring or comment that says the body does nothing on purpose, and words that say it is deferred.
_SAYS_NO_OP = re.compile(r"\bno[- ]?op\b|\b(?:does|do) nothing\b|\b(?:don't|do not) do anything\b|\bnothing to do\b"
                         r"|\bnothing to (?:do|save|clean|release|free|close|flush)\b|\bintentionally (?:empty|blank)\b"
                         r"|\bdummy function\b|\bonly exists? (?:to|for)\b|\bfor (?:backwards? )?compatibility\b"
                         r"|\bfor typing purposes\b|\bfor (?:the )?type checkers?\b|\bfor (?:pytype|mypy|pyright|pyre)\b",
                         re.IGNORECASE)
# Words of a marker that asks for documentation, not code ("Better explain how ...", "provide an example").
_ABOUT_DOCS = re.compile(r"\b(?:explain|describe|description|document(?:ation)?|docstring|docs?|an example|wording)\b",
                         re.IGNORECASE)
# Words of a marker about the function's type annotations, not its body ("not returning a T makes
# common idioms not type correctly", "mypy cannot check this"; not "type checking", which code may do).
_ABOUT_TYPES = re.compile(r"\btype[ -]?correct\w*|\btyping\b|\bannotat\w*|\bmypy\b|\bpyright\b"
                          r"|\btype hints?\b|\breturn type\b|`Optional`|\btype below\b", re.IGNORECASE)
# A name that says its work is pending (`nothing_yet`, `fake_for_now`, `not_implemented_yet`).
_NAME_DEFERRED = re.compile(r"\b(?:todo|fixme|xxx|tbd|hack|nyi|wip|later|yet|for now)\b")
# A docstring that says the body is a default for subclasses to replace ("Subclasses can override this").
_SAYS_HOOK = re.compile(r"\boverrid(?:e|es|den|ing)\b|\b(?:for|by) subclasses\b|\bsubclasses (?:can|may|should|must)\b"
                        r"|\bhook for\b",
                        re.IGNORECASE)
# A docstring that calls the returned constant the default.
_SAYS_DEFAULT = re.compile(r"\bdefault\b", re.IGNORECASE)
# A `raise NotImplementedError(...)` message that states a limitation, not pending work.
_SAYS_REFUSAL = re.compile(r"\bnot supported\b|\bunsupported\b|\b(?:does|do)(?: not|n't) support\b|\bcannot\b|\bcan't\b"
                           r"|\bnot allowed\b|\bplease use\b|\binstead\b|\bshould be handled\b|\bsee `|\b(?:does|do) not have\b"
                           r"|\bhas no\b|\bmocked\b|\bonly (?:implemented|supported|available)\b|\bplease\b"
                           r"|\b(?:should|must|will) never be called\b|\b(?:should|must) not be called\b"
                           r"|\bno longer (?:supported|available|used)\b|\bcan only be (?:set|called|used|read)\b"
                           r"|\b(?:does|do)(?: not|n't) provide\b|\bunable to\b", re.IGNORECASE)
# A docstring over a bare `raise NotImplementedError` that says the operation is refused: only the
# plain words (a docstring's "cannot" or "instead" describe what the finished function would do).
_DOCSTRING_REFUSAL = re.compile(r"\bnot supported\b|\bunsupported\b|\b(?:does|do|is|are)(?: not|n't) (?:support|supported)\b"
                                r"|\bnot allowed\b|\bno longer (?:supported|available)\b", re.IGNORECASE)
# A comment that gives the reason for doing nothing (`pass  # we always guard on this via GlobalStateGuard()`).
_GIVES_REASON = re.compile(r"\b(?:because|since|handled|already|always|no need|not needed|elsewhere|instead|don't bother"
                           r"|on purpose|by design|intentional(?:ly)?|deliberate(?:ly)?|(?:is )?not used|unused|historical"
                           r"|legacy|backwards? compat\w*|(?:does|do) ?n[o']?t need|needs no|is enough"
                           r"|(?:does|do) ?n[o']?t make sense|makes no sense|(?:the )?(?:API|interface|base class|protocol) requires)\b",
                           re.IGNORECASE)
# ("placeholder" only as a role, "as a placeholder": FX graphs have placeholder nodes.)
# "later" and "yet" only where they defer work: "implement later", "will be added later", "not yet
# implemented", "does not yet support", "isn't supported by X yet", "haven't bothered to raise
# errors yet", "yet to implement" — not "Blackwell and later architectures", "9.0 or later",
# "later used in …", "does nothing, yet it helps" (a "yet" with no negation before it in its
# clause), nor the adjective "not-yet-configured". A docstring describes what the code does, and
# there a negated "yet" defers work only beside a word of work ("not yet implemented", "no support
# yet"): "attributes are not yet initialized", "loading has not occurred yet" describe a state
# (``_DOCSTRING_DEFERRED``); a comment is the author's note, and any negated "yet" there is pending.
_DEFERRED_WORDS = (r"\b(?:TODO|FIXME|XXX|TBD|HACK|NYI|atm|for now|(?:as|is|a|just) placeholder)\b"
                   r"|\b(?:implement\w*|add\w*|do|done|handle\w*|support\w*|fix\w*|fill\w*|finish\w*|revisit\w*"
                   r"|address\w*|writ\w*|come|coming)(?:\W+\w+){0,3}?\W+later\b|\byet\s+to\b")
_NEGATION = r"(?:\bnot\b|n't\b|\bnever\b|\bno\b)(?!-yet-)"
_WORK = (r"(?:implement\w*|support\w*|handl\w*|do|done|finish\w*|writ\w*|written|port\w*|wired|work\w*"
         r"|complete\w*|add\w*|cover\w*|used)")
_SAYS_DEFERRED = re.compile(rf"{_DEFERRED_WORDS}|{_NEGATION}[^.;:!?\n]{{0,60}}?\byet\b(?!-)", re.IGNORECASE)
_DOCSTRING_DEFERRED = re.compile(
    rf"{_DEFERRED_WORDS}|{_NEGATION}[^.;:!?\n]{{0,40}}?\b{_WORK}\b[^.;:!?\n]{{0,30}}?\byet\b"
    rf"|{_NEGATION}\W+(?:\w+\W+){{0,2}}?yet\W+(?:\w+\W+){{0,2}}?{_WORK}\b", re.IGNORECASE)
# A docstring's doctest lines (`>>> …`, `... …`) are an example's code, not what the docstring says.
_DOCTEST_LINE = re.compile(r"^[ \t]*(?:>>>|\.\.\.)[^\n]*$", re.MULTILINE)
def _modules_in(text: str, bindings: dict[str, str], program: Program) -> set[str]:
    """The project modules that the names of a table entry's text are bound to by imports."""
    return {bound for name in _TABLE_NAME.findall(_STRING_LITERAL.sub('""', text))
            if (bound := bindings.get(name)) is not None and bound in program.modules}


# A doctest example's lines: `>>> x` and its `... ` continuations, IPython's `In [1]: x` and its
# `...: ` continuations.
_EXAMPLE_LINE = re.compile(r"^[ \t]*(?:>>>(?:[ \t]|$)|\.\.\.(?:[ \t]|$)|In \[\d+\]:|\.\.\.:)", re.MULTILINE)
_PROMPT = re.compile(r"^[ \t]*(?:>>>(?:[ \t]|$)|In \[\d+\]:)", re.MULTILINE)
# mypy's error code for a function whose body is empty while its annotation promises a value.
# (and flake8-bugbear's code for an empty method in an abstract base class, `# noqa: B027`, or in
# ruff's own suppression by code or rule name, `# ruff: ignore[empty-method-without-abstract-decorator]`).
# mypy's inline configuration turning the check off for the whole file (ctypes bindings generated
# with `...` bodies: `# mypy: disable-error-code="empty-body"`).
_EMPTY_BODY_FILE = re.compile(r"^#\s*mypy:.*\bdisable-error-code\s*=\s*[\"']?[^\n]*\bempty-body\b", re.MULTILINE)
_EMPTY_BODY_IGNORE = re.compile(
    r"#\s*type:\s*ignore\[[^\]]*\bempty-body\b|#\s*noqa:[^#]*\bB027\b"
    r"|#\s*ruff:\s*ignore\[[^\]]*(?:\bB027\b|\bempty-method-without-abstract-decorator\b)", re.IGNORECASE)
# Names of event hooks: a class that calls `self.on_step(...)` announces an event subclasses may handle.
_HOOK_NAME = re.compile(r"^_*(?:on|before|after|pre|post)_\w+$|^\w+_hook$")
# A class so named is there to be subclassed (`GemmBase`, `BaseReader`, `LoggingMixin`).
_BASE_WORDS = frozenset({"base", "mixin", "abstract", "interface"})
_CONTEXT_PAIR = {"__enter__": "__exit__", "__exit__": "__enter__", "__aenter__": "__aexit__", "__aexit__": "__aenter__"}


def _words(name: str) -> list[str]:
    words = [word.lower() for word in _WORDS.findall(name)]
    joined = "_".join(words).replace("no_op", "noop")
    return joined.split("_")


def _name_promises(label: str, function: tree_sitter.Node, placeholder: str) -> bool:
    """The function's name says it stands in for something (`_fake_rcb`, `dummy_loader`,
    `_init_mesh_stub`), says it is not implemented while it raises `NotImplementedError`
    (`_not_impl`, `unimplemented`), names the constant it returns (`always_true` → True,
    `_unpickle_as_none` → None) or says its answer is fixed (`always_wrap_policy`, `default_kwargs`)."""
    words = _words(label)
    if _NAME_DEFERRED.search(" ".join(words)):
        return False  # `nothing_yet`, `fake_for_now`: the name itself says the work is pending
    if _STAND_IN_WORDS.intersection(words):
        return True
    if placeholder == RAISE_NOT_IMPLEMENTED and ("unimplemented" in words or "not_implemented" in "_".join(words)
                                                 or "not_impl" in "_".join(words)):
        return True  # `_not_implemented(self, *args)`: raising is what the name promises
    returned = constant_answer(function) or ("None" if "None" in placeholder or "bare `return`" in placeholder else "")
    named = [word for word in words if word in _PROMISED]
    if named:  # `always_true` must return True
        return any(returned in _PROMISED[word] for word in named)
    # `always_wrap_policy` → True, `default_kwargs` → {}: the name says the answer is fixed
    return bool(returned) and bool(_CONSTANT_WORDS.intersection(words))


def _states_it_does_nothing(function: tree_sitter.Node) -> bool:
    """The function says that its placeholder is the behaviour: its docstring or comments (inside it,
    or right above it) say that
    doing nothing is intended ("no-op", "nothing to do", "in CPU we do nothing"), a comment gives the
    reason ("handled by the caller", "we always guard on this via ..."), its docstring calls it a
    default for subclasses ("Override this method to ..."), or its `NotImplementedError` states a
    limitation ("deletion not supported", "use add() instead") — and nothing in it or in the
    comment right above it says that the work is deferred (`TODO`, "for now", "yet", "NYI")."""
    body = function.child_by_field_name("body")
    if body is None:
        return False
    comments = _comments(function)
    docstrings = [child.text.decode(errors="replace") for child in body.named_children
                  if child.type == "expression_statement" and child.named_child_count == 1
                  and child.named_children[0].type in ("string", "concatenated_string")]
    above = _comments_above(function)
    message = _not_implemented_message(body)
    said = " ".join(comments + docstrings + above)
    if _SAYS_DEFERRED.search(" ".join(comments + above)) or _SAYS_DEFERRED.search(message) \
            or any(_DOCSTRING_DEFERRED.search(docstring) for docstring in docstrings):
        return False
    if _SAYS_NO_OP.search(said) or any(_GIVES_REASON.search(comment) for comment in comments + above):
        return True
    if any(_SAYS_HOOK.search(docstring) for docstring in docstrings):
        return True  # "Hook for subclasses", "Override this method to ...": a default meant to be replaced
    if any(_SAYS_DEFAULT.search(docstring) for docstring in docstrings) and _returns_a_value(body):
        return True  # "Default: True", "or None to use the default path": the constant is the documented default
    if any(_DOCSTRING_REFUSAL.search(docstring) for docstring in docstrings) and _raises_not_implemented(body):
        return True  # `"""Not supported, use sorted(mylist)"""` over a bare `raise NotImplementedError()`
    # The message may say so instead (arch's `raise NotImplementedError("Subclasses may optionally
    # implement")`): a refusal, or a hook's default.
    return bool(message) and bool(_SAYS_REFUSAL.search(message) or _SAYS_HOOK.search(message))


def _raises_not_implemented(body: tree_sitter.Node) -> bool:
    """The block's last statement raises ``NotImplementedError`` (bare or called)."""
    statements = [child for child in body.named_children if child.type != "comment"]
    if not statements or statements[-1].type != "raise_statement" or not statements[-1].named_child_count:
        return False
    raised = statements[-1].named_children[0]
    name = raised.child_by_field_name("function") if raised.type == "call" else raised
    return name is not None and name.text in (b"NotImplementedError", b"builtins.NotImplementedError")


def _carries_doctests(function: tree_sitter.Node, label: str) -> bool:
    """The docstring holds doctest examples (`>>> 1 + 1`, IPython's `In [1]: x = 1` prompts) that
    do not call the function itself: the docstring is the test a doctest runner collects
    (IPython's `test_ipdb_magics`, run by its ipdoctest plugin) and the empty body only carries
    it. Examples that call the function show how it is used: then its body must do the work."""
    body = function.child_by_field_name("body")
    first = body.named_children[0] if body is not None and body.named_children else None
    if first is None or first.type != "expression_statement" or first.named_child_count != 1 \
            or first.named_children[0].type not in ("string", "concatenated_string"):
        return False
    docstring = first.text.decode(errors="replace")
    if not _PROMPT.search(docstring):
        return False
    called = re.compile(rf"(?<![\w.]){re.escape(label)}\s*\(")
    return not any(called.search(line) for line in docstring.splitlines() if _EXAMPLE_LINE.match(line))


def _returns_a_value(body: tree_sitter.Node) -> bool:
    return any(statement.type == "return_statement" and statement.named_child_count for statement in body.named_children)


def _section_says_no_op(function: tree_sitter.Node, owner: tree_sitter.Node | None) -> bool:
    """The section comment over a group of definitions (the nearest comment block above the
    function in the class body or the module, past the definitions between) or the class's
    docstring says the bodies do nothing, and the section does not say the work is pending
    (gsplat's `# -- Topology hooks (no-op defaults) --` over methods; IPython's `# No-op functions
    which describe the names of available events` over its module-level event prototypes)."""
    node = function.parent if function.parent is not None and function.parent.type == "decorated_definition" else function
    sibling = node.prev_sibling
    while sibling is not None and sibling.type in ("function_definition", "decorated_definition"):
        sibling = sibling.prev_sibling
    # (The section's comment lines are one text: a banner's rule lines frame what it says.)
    block: list[str] = []
    line = 0
    while sibling is not None and sibling.type == "comment" and not _trails_code(sibling) and (
            not block or sibling.end_point[0] >= line - 1):
        block.append(sibling.text.decode(errors="replace"))
        line = sibling.start_point[0]
        sibling = sibling.prev_sibling
    said = " ".join(reversed(block))
    if _SAYS_NO_OP.search(said) and not _SAYS_DEFERRED.search(said):
        return True
    if owner is None:
        return False
    body = owner.child_by_field_name("body")
    first = body.named_children[0] if body is not None and body.named_children else None
    return first is not None and first.type == "expression_statement" and first.named_child_count == 1 \
        and first.named_children[0].type == "string" and bool(_SAYS_NO_OP.search(first.text.decode(errors="replace")))


def _marked_pending(function: tree_sitter.Node) -> bool:
    """Something in or right above the function says its work is pending: a `TODO`, "yet", "NYI",
    "for now", "as a placeholder" in a comment, the docstring, the `NotImplementedError` message or the name."""
    body = function.child_by_field_name("body")
    docstrings = [child.text.decode(errors="replace") for child in body.named_children
                  if child.type == "expression_statement" and child.named_child_count == 1
                  and child.named_children[0].type in ("string", "concatenated_string")] if body is not None else []
    texts = [(_SAYS_DEFERRED, text) for text in (*_comments(function), *_comments_above(function),
                                                 _not_implemented_message(body) if body is not None else "")]
    texts.extend((_DOCSTRING_DEFERRED, _DOCTEST_LINE.sub("", text)) for text in docstrings)
    # (A `TODO` about the documentation — "explain", "provide an example" — or about the type
    # annotations — "not type correctly", "mypy" — is no pending work in the body.)
    if any(pattern.search(text) and not _ABOUT_DOCS.search(text) and not _ABOUT_TYPES.search(text)
           for pattern, text in texts):
        return True
    return bool(_NAME_DEFERRED.search(" ".join(_words(python_function_name(function)))))


def _comments(function: tree_sitter.Node) -> list[str]:
    """The function's comments: tree-sitter puts those before the first statement beside the body."""
    body = function.child_by_field_name("body")
    found = [child.text.decode(errors="replace") for child in function.children if child.type == "comment"]
    if body is not None:
        found.extend(child.text.decode(errors="replace") for child in body.named_children if child.type == "comment")
    return found


def _comments_above(function: tree_sitter.Node) -> list[str]:
    """The comment right above the definition (or its decorators), its lines joined in one text
    (a marker and what it is about may sit on different lines): `# TODO: ...` then `def f`; then
    the module's header when the function is the module's only definition."""
    node = function.parent if function.parent is not None and function.parent.type == "decorated_definition" else function
    found = []
    sibling = node.prev_sibling
    if sibling is None and node.parent is not None and node.parent.type == "block":
        sibling = node.parent.prev_sibling  # the first statement of a body: tree-sitter keeps the comment outside
    line = node.start_point[0]
    # (One blank line may separate them: a marker comment, a blank line, then `def f`. A comment
    # that ends a line of code (`return False` then a marker comment) belongs to that code.)
    while (sibling is not None and sibling.type == "comment" and line - 2 <= sibling.end_point[0] <= line - 1
           and not _trails_code(sibling)):
        found.append(sibling.text.decode(errors="replace"))
        line = sibling.start_point[0]
        sibling = sibling.prev_sibling
    block = [" ".join(reversed(found))] if found else []
    return block + _module_header(node)


def _module_header(definition: tree_sitter.Node) -> list[str]:
    """The module's opening comments and docstring when ``definition`` is the module's only
    definition: a one-function module's header speaks for that function ("this is for historical
    pickle deserialization, it is not used otherwise")."""
    module = definition.parent
    if module is None or module.type != "module":
        return []
    # Another definition beside it? (Walked outward from it, the nearest one ends the search: a
    # module of thousands of definitions is not counted once per definition.)
    for step in ("prev_named_sibling", "next_named_sibling"):
        sibling = getattr(definition, step)
        while sibling is not None:
            if sibling.type in _DEFINITIONS:
                return []
            sibling = getattr(sibling, step)
    found = []
    docstring_possible = True
    for child in module.named_children:
        if child.type == "comment":
            found.append(child.text.decode(errors="replace"))
        elif (docstring_possible and child.type == "expression_statement" and child.named_child_count == 1
              and child.named_children[0].type in ("string", "concatenated_string")):
            found.append(child.text.decode(errors="replace"))  # the module docstring
            docstring_possible = False
        else:
            break
    return found


_DEFINITIONS = frozenset({"function_definition", "class_definition", "decorated_definition"})


def _trails_code(comment: tree_sitter.Node) -> bool:
    """The comment follows code on its line (the node before it ends on that line)."""
    previous = comment.prev_sibling
    return previous is not None and previous.end_point[0] == comment.start_point[0]


def _not_implemented_message(body: tree_sitter.Node) -> str:
    """The text of a `raise NotImplementedError("...")` statement's arguments in ``body``, "" without one."""
    for statement in body.named_children:
        if statement.type == "raise_statement" and statement.named_child_count:
            raised = statement.named_children[0]
            arguments = raised.child_by_field_name("arguments") if raised.type == "call" else None
            if arguments is not None:
                return arguments.text.decode(errors="replace")
    return ""


_DISPATCH_BASES = frozenset({"singledispatch", "singledispatchmethod"})


def _registered(function: tree_sitter.Node, label: str, names: _FileNames) -> bool:
    """The function is an entry of a dispatch table: decorated and named `_` (`@op.register_fake`
    on `def _(...)`: the name is thrown away, the function exists to be registered), or decorated
    with a call that names a key (`@register_lowering(aten.sink)`, `@dispatch(Var)`,
    `@_onnx_symbolic("prim::Uninitialized")`), or the fallback of a `functools.singledispatch` table,
    or decorated with a call whose keyword supplies the body (`@operator(resolver=lambda d: ...)`,
    `@func_native(snippet="...")`: ``_supplies_the_body``), or decorated by a function of the file
    that stores its argument in a table (`@_define_event` over `def pre_run_cell(info): pass`,
    `@export(None, template="not_found.html")`: ``stores_its_argument``; one of another file is
    looked up by the whole-program pass). A call with only numbers or keywords that configure it
    wraps the body instead (`@lru_cache(128)`, `@retry(times=3)`): that is no registration."""
    holder = function.parent
    if holder is None or holder.type != "decorated_definition":
        return False
    if label == "_":
        return True
    for decorator in holder.named_children:
        if decorator.type == "decorator" and _decorator_expression(decorator).rsplit(".", 1)[-1] in _DISPATCH_BASES:
            return True  # `@singledispatch`: the fallback for the types no one registered
        if decorator.type == "decorator" and _decorator_expression(decorator).split("(", 1)[0].strip() in _registrars(
                holder, names):
            return True  # `@_define_event`: the decorator files the function in its table of events
        call = next((child for child in decorator.named_children if child.type == "call"), None) \
            if decorator.type == "decorator" else None
        arguments = call.child_by_field_name("arguments") if call is not None else None
        for argument in arguments.named_children if arguments is not None else ():
            if argument.type not in ("keyword_argument", "comment", "integer", "float", "true", "false", "none",
                                     "list_splat", "dictionary_splat"):
                return True
            if argument.type == "keyword_argument" and _supplies_the_body(argument, holder):
                return True
    return False


def _registrars(node: tree_sitter.Node, names: _FileNames) -> frozenset[str]:
    """The names of the file's module-level functions that store their argument in a table."""
    if names.registrars is None:
        module = node
        while module.parent is not None:
            module = module.parent
        found = set()
        for statement in module.named_children:
            definition = statement.child_by_field_name("definition") if statement.type == "decorated_definition" \
                else statement
            if definition is not None and definition.type == "function_definition" and stores_its_argument(definition):
                found.add(python_function_name(definition))
        names.registrars = frozenset(found)
    return names.registrars


# Keywords whose string value is the function's body in another language (warp's
# `@wp.func_native(snippet="printf(...);")`, a kernel's `source=`): the Python body is never run.
_CODE_KEYWORDS = frozenset({"snippet", "source", "code"})
# What a code string holds and a label (`code="E501"`, `source="user"`) does not.
_READS_AS_CODE = re.compile(r"[;(){}\n]")


def _supplies_the_body(argument: tree_sitter.Node, decorated: tree_sitter.Node) -> bool:
    """A decorator's keyword argument that supplies what the decorated function does: a lambda
    (warp's `@operator(resolver=lambda dmn: dmn.element_position)`: the decorator resolves the
    call to what the lambda returns, the body is a signature), a function of the file named
    (`resolver=resolve_position`), or code in a string (`snippet='printf("%s", x);'`). A number,
    a flag, a class (`@retry(on=ValueError)`), a label (`code="E501"`) or another call
    (`stop=stop_after_attempt(3)`) configures a wrapper around the body instead."""
    keyword, value = argument.child_by_field_name("name"), argument.child_by_field_name("value")
    if keyword is None or value is None:
        return False
    if value.type == "lambda":
        return True
    if value.type == "identifier":
        module = decorated
        while module.parent is not None:
            module = module.parent
        return re.search(rb"(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+" + re.escape(value.text) + rb"[ \t]*\(", module.text) is not None
    return keyword.text.decode() in _CODE_KEYWORDS and value.type in ("string", "concatenated_string") \
        and _READS_AS_CODE.search(value.text.decode(errors="replace")) is not None


def _identifier_uses(scope: tree_sitter.Node, names: _FileNames) -> dict[str, list[tree_sitter.Node]]:
    """Each identifier in ``scope`` by name, indexed once per scope and file (a generated module's
    thousands of placeholders made a query per placeholder quadratic)."""
    uses = names.identifier_uses.get(scope.id)
    if uses is None:
        uses = names.identifier_uses[scope.id] = {}
        for identifier in tree_sitter.QueryCursor(_query("(identifier) @i")).captures(scope).get("i", []):
            uses.setdefault(identifier.text.decode(), []).append(identifier)
    return uses


def _looped_over_here(literal: tree_sitter.Node) -> bool:
    """The literal (alone or in a `+`) is what a `for` statement of this scope iterates, or a
    comprehension whose element calls the loop variable: its elements are called here (`for step
    in [load] + [clean]: step()`)."""
    node = literal
    while node.parent is not None and node.parent.type in ("binary_operator", "parenthesized_expression"):
        node = node.parent
    holder = node.parent
    if holder is None or holder.child_by_field_name("right") != node:
        return False
    if holder.type == "for_statement":
        return True
    if holder.type == "for_in_clause" and holder.parent is not None:
        # `[check(rows) for check in [normalize, validate]]` calls them here; `{f.__name__: f for f
        # in [getrandbits]}` builds a table of them for someone else.
        variable = holder.child_by_field_name("left")
        body = holder.parent.child_by_field_name("body")
        return variable is not None and body is not None and variable.type == "identifier" and re.search(
            rb"(?<![\w.])" + re.escape(variable.text) + rb"\s*\(", body.text) is not None
    return False


def _installed_elsewhere(target: tree_sitter.Node) -> bool:
    """An assignment's target in another object (`torch.nn.init.x`, `plt.show`, `table[key]`), not
    the object's own attribute (`self.loss_fn = compute_loss`: the class calls it)."""
    base = target.child_by_field_name("object") if target.type == "attribute" else target.child_by_field_name("value")
    while base is not None and base.type in ("attribute", "subscript"):
        base = base.child_by_field_name("object") if base.type == "attribute" else base.child_by_field_name("value")
    return base is None or base.text not in (b"self", b"cls")


def _handed_on_as_callback(function: tree_sitter.Node, label: str, names: _FileNames) -> bool:
    """``function`` is passed to a call (`loop(stop_hook=stop_hook)`, `register_autograd(op,
    setup_context=setup)`, `_make_prim(meta=_sink_tokens_aten)`), returned (a factory's no-op
    logger, also in a tuple: `return wrapper, f`), stored as the value of a dict literal (a
    dispatch table written by hand: `{LOCAL: _local_post_load_hook, FULL: ...}`) or is a
    parameter's default value (`def simulate(post_func=no_post_func)`) or, nested in a function,
    is decorated (`@option def opt(): pass`: the decorator takes it), and never
    called where it is defined (its enclosing function, or its module for a module-level
    function): a callback, whose signature is what its caller expects and whose trivial body is
    the answer it wants (as a test's doubles are)."""
    enclosing = function.parent
    while enclosing is not None and enclosing.type not in ("function_definition", "class_definition", "module"):
        enclosing = enclosing.parent  # through `if`/`with`/`try` blocks: `if name == "flatten": def _sig(...)`
    if enclosing is None or enclosing.type == "class_definition":
        return False
    uses = _identifier_uses(enclosing, names)
    # A nested function under a decorator is handed to it (click's `@option def opt(): pass`,
    # whose `opt.__click_params__` the function then reads): the decorator is its caller.
    handed = enclosing.type == "function_definition" and function.parent is not None \
        and function.parent.type == "decorated_definition"
    for identifier in uses.get(label, ()):
        parent = identifier.parent
        if parent is None:
            continue
        if parent.type == "call" and parent.child_by_field_name("function") == identifier:
            return False  # called here: its result is used, so its body is its work
        value = identifier
        if parent.type == "attribute" and parent.child_by_field_name("object") == identifier \
                and _binds_as_a_method(parent):
            # `_no_tie.__get__(model, type(model))`: the function bound as a method of an object
            value = parent.parent
            parent = value.parent
        value, parent = _as_the_value(value)
        if parent is None:
            continue
        if parent.type in ("tuple", "list", "set") and parent.parent is not None \
                and parent.parent.type not in ("assignment", "augmented_assignment") and not _looped_over_here(parent):
            # An element of a literal that is not unpacked into names nor looped over here:
            # `{f.__name__: f for f in [getrandbits, randbytes]}` a table, `(barrier,) + deps` a
            # task tuple — someone else calls it.
            handed = True
        if parent.type in ("expression_list", "tuple", "list") and parent.parent is not None:
            # `return wrapper, f`, `register(op, (fwd, bwd))`, `add_node(n, html=(visit, depart))`
            value, parent = parent, parent.parent
        if parent.type == "assignment" and parent.child_by_field_name("right") == value and (
                left := parent.child_by_field_name("left")) is not None and left.type in ("attribute", "subscript") \
                and _installed_elsewhere(left):
            handed = True  # `torch.nn.init.kaiming_uniform_ = skip`, `plt.show = no_show`: installed in another object
        if parent.type == "assignment" and parent.child_by_field_name("right") == value and _in_a_class_body(parent):
            handed = True  # `__getitem__ = raise_logits_error` in a class body: a method under another name
        elif parent.type == "assignment" and parent.child_by_field_name("right") == value and (
                alias := parent.child_by_field_name("left")) is not None and alias.type == "identifier" and (
                value.type in _CHOOSING or (value.type == "identifier"
                                            and not _called_through(alias.text.decode(), _scope_of(parent, enclosing), names))) \
                and not _shadowed_at(identifier, label, function):
            # `var_repr = eqrepr if include_vars else nullrepr`: one of the alternatives the code
            # chooses between, the constant its answer; `fun = no_prefix` then `return fun`: handed
            # on under another name. (`step = validate` then `step(rows)` calls it here.)
            handed = True
        if parent.type in ("argument_list", "return_statement") or (
                parent.type in ("keyword_argument", "pair", "default_parameter", "typed_default_parameter")
                and parent.child_by_field_name("value") == value):
            # passed to a call, returned by a factory, a dispatch table's value, a parameter's
            # default (`def simulate(post_func=no_post_func)`: the callback a caller may replace):
            # someone else calls it
            handed = True
    return handed



def _shadowed_at(use: tree_sitter.Node, label: str, function: tree_sitter.Node) -> bool:
    """A function between ``use`` and the definition's scope binds ``label`` itself (a parameter,
    an assignment: `margeff = self.margeff` in a method): there the name is that local, not the
    function."""
    scope = use.parent
    while scope is not None and scope != function.parent:
        if scope.type == "function_definition" and scope != function:
            parameters = scope.child_by_field_name("parameters")
            if label in _assigned_within(scope) or (
                    parameters is not None and any(name.text.decode() == label for name in _parameter_identifiers(parameters))):
                return True
        scope = scope.parent
    return False


def _parameter_identifiers(parameters: tree_sitter.Node) -> list[tree_sitter.Node]:
    found = []
    for parameter in parameters.named_children:
        name = parameter if parameter.type == "identifier" else parameter.child_by_field_name("name")
        if name is None and parameter.named_children:
            name = parameter.named_children[0]
        if name is not None and name.type == "identifier":
            found.append(name)
    return found


def _scope_of(node: tree_sitter.Node, outermost: tree_sitter.Node) -> tree_sitter.Node:
    """The function ``node`` is in, up to ``outermost``: where a local it binds can be called (pip's
    `onexc = _onerror_ignore` in one function; another function's parameter `onexc` is not it)."""
    scope = node.parent
    while scope is not None and scope != outermost and scope.type != "function_definition":
        scope = scope.parent
    return scope if scope is not None else outermost


def _called_through(name: str, scope: tree_sitter.Node, names: _FileNames) -> bool:
    """``name`` is called somewhere in ``scope`` (`step(rows)`)."""
    return any(use.parent is not None and use.parent.type == "call" and use.parent.child_by_field_name("function") == use
               for use in _identifier_uses(scope, names).get(name, ()))


def _binds_as_a_method(attribute: tree_sitter.Node) -> bool:
    """``attribute`` is ``f.__get__`` called: the descriptor protocol binding ``f`` to an object."""
    member = attribute.child_by_field_name("attribute")
    call = attribute.parent
    return member is not None and member.text == b"__get__" and call is not None and call.type == "call" \
        and call.child_by_field_name("function") == attribute


# Expressions whose value may be one of their operands: `a if c else b`, `a or b`, `(a)`.
_CHOOSING = frozenset({"conditional_expression", "boolean_operator", "parenthesized_expression"})


def _as_the_value(node: tree_sitter.Node) -> tuple[tree_sitter.Node, tree_sitter.Node | None]:
    """(the outermost expression ``node`` may be the value of, its parent): ``return return_none if
    attr == "to" else raise_logits_error`` returns the function — not through a conditional's
    condition, whose value is only tested."""
    while node.parent is not None and node.parent.type in _CHOOSING:
        holder = node.parent
        if holder.type == "conditional_expression" and len(holder.named_children) == 3 \
                and holder.named_children[1] == node:
            break
        node = holder
    return node, node.parent


def _in_a_class_body(assignment: tree_sitter.Node) -> bool:
    """An assignment written directly in a class body (also in the body's `if`/`try` blocks)."""
    holder = assignment.parent
    if holder is not None and holder.type == "expression_statement":
        holder = holder.parent
    while holder is not None and (holder.type == "block" or holder.type in _CLASS_BODY_BRANCHES):
        holder = holder.parent
    return holder is not None and holder.type == "class_definition"


# Decorators that skip a test and say why: pytest's `mark.skip`/`mark.skipif`, unittest's
# `skip`/`skipIf`/`skipUnless` (not `xfail`: a test expected to fail is work still to do).
_SKIPS = frozenset({"skip", "skipif", "skipIf", "skipUnless"})
# A skip reason that says the test waits for code still to be written.
_SKIP_DEFERS = re.compile(r"\bnot\b[^.;:!?\n]{0,20}\bimplemented\b|\bunimplemented\b|\bto be implemented\b"
                          r"|\bimplement\w*\b", re.IGNORECASE)


def _skipped_for_a_reason(function: tree_sitter.Node) -> bool:
    """A skip decorator over the test gives its reason (`@pytest.mark.skip(reason="no way to test
    this")` over an empty `test_to_cuda`), as a comment would, and the reason does not say the
    work is deferred ("not implemented", "TODO", "not yet"): the empty body is the author's
    answer, not a test left to write."""
    holder = function.parent
    if holder is None or holder.type != "decorated_definition":
        return False
    for decorator in holder.children:
        call = next((child for child in decorator.named_children if child.type == "call"), None) \
            if decorator.type == "decorator" else None
        callee = call.child_by_field_name("function") if call is not None else None
        arguments = call.child_by_field_name("arguments") if call is not None else None
        if callee is None or arguments is None or callee.text.decode().rsplit(".", 1)[-1] not in _SKIPS:
            continue
        reasons = [(argument.child_by_field_name("value") if argument.type == "keyword_argument" else argument)
                   for argument in arguments.named_children]
        said = " ".join(reason.text.decode(errors="replace") for reason in reasons
                        if reason is not None and reason.type in ("string", "concatenated_string"))
        if said and not _SAYS_DEFERRED.search(said) and not _SKIP_DEFERS.search(said):
            return True
    return False


def _run_by_a_property_decorator(function: tree_sitter.Node) -> bool:
    """Hypothesis' `@given(...)` (or a name bound to it, `@given_ints`) over a test: the decorator
    draws examples and calls the body with each, so an empty body tests the drawing itself."""
    holder = function.parent
    if holder is None or holder.type != "decorated_definition":
        return False
    module = holder
    while module.parent is not None:
        module = module.parent
    for decorator in holder.children:
        if decorator.type != "decorator":
            continue
        written = _decorator_expression(decorator).split("(", 1)[0].strip()
        if written.rsplit(".", 1)[-1] == "given":
            return True
        if written.isidentifier() and re.search(rb"(?m)^" + re.escape(written.encode()) + rb"\s*=\s*(?:\w+\.)?given\(",
                                                module.text):
            return True  # `given_booleans = given(st.booleans())` then `@given_booleans`
    return False


def _replaces_a_parameter(function: tree_sitter.Node, label: str) -> bool:
    """A nested function named like a parameter of the function it is defined in: the default of a
    callback the caller may pass (networkx's `if heuristic is None: def heuristic(u, v): return 0`)."""
    enclosing = function.parent
    while enclosing is not None and enclosing.type not in ("function_definition", "class_definition", "module"):
        enclosing = enclosing.parent
    if enclosing is None or enclosing.type != "function_definition":
        return False
    parameters = enclosing.child_by_field_name("parameters")
    for parameter in parameters.named_children if parameters is not None else ():
        name = parameter if parameter.type == "identifier" else parameter.child_by_field_name("name")
        if name is None and parameter.named_children:
            name = parameter.named_children[0]
        if name is not None and name.type == "identifier" and name.text.decode() == label:
            return True
    return False


def _used_only_when_type_checking(function: tree_sitter.Node, label: str, names: _FileNames) -> bool:
    """Every use of a module-level function in its file sits under ``if TYPE_CHECKING:`` (and there is
    one): the body never runs, the signature is what the type checker reads."""
    module = function.parent
    while module is not None and module.type != "module":
        module = module.parent
    if module is None:
        return False
    uses = _identifier_uses(module, names)
    name = function.child_by_field_name("name")
    found = [use for use in uses.get(label, ()) if name is None or use.start_byte != name.start_byte]
    return bool(found) and all(_under_type_checking(use) for use in found)


def _under_type_checking(node: tree_sitter.Node) -> bool:
    branch = node.parent
    while branch is not None:
        if branch.type == "if_statement":
            condition = branch.child_by_field_name("condition")
            consequence = branch.child_by_field_name("consequence")
            if condition is not None and consequence is not None and _TYPE_CHECKING.match(condition.text.decode()) \
                    and consequence.start_byte <= node.start_byte < consequence.end_byte:
                return True
        branch = branch.parent
    return False


def _empty_body_acknowledged(function: tree_sitter.Node) -> bool:
    """A `# type: ignore[empty-body]`, `# noqa: B027` or `# ruff: ignore[B027]` on the signature (the
    header's lines, before the body) or on a decorator's line (`@prereleases.setter  # noqa: B027`:
    packaging's setter of an abstract property)."""
    body = function.child_by_field_name("body")
    if body is None:
        return False
    decorated = function.parent if function.parent is not None and function.parent.type == "decorated_definition" else function
    header = decorated.text[: body.start_byte - decorated.start_byte].decode(errors="replace")
    # A comment after the colon sits in the body node: look at the rest of the header's last line too.
    first = body.named_children[0] if body.named_children else None
    if first is not None and first.type == "comment" and first.start_point[0] == decorated.start_point[0] + header.count("\n"):
        header += first.text.decode(errors="replace")
    return bool(_EMPTY_BODY_IGNORE.search(header))


def _member_by_design(label: str, klass: str, placeholder: str, names: _FileNames, *, abstract: bool) -> bool:
    """A method whose placeholder its own class makes deliberate: a class that does nothing at all
    (an interface declared by convention, a null object: every one of its methods is a placeholder)
    or is named a stand-in (`NopReader`, `FakeClock`); an empty constructor (no
    state to set up, like an empty C++ constructor); one half of a context manager whose other half
    does the work; a `raise NotImplementedError` that the class's own methods call (the class
    cannot work until a subclass overrides it: a template method's abstract step), or any
    placeholder step that a class named to be subclassed (`GemmBase`, `ReaderMixin`) calls; an
    empty event hook (`on_*`, `before_*`, `*_hook`, ...) that the class itself fires. An abstract base class
    declares its interface with `@abstractmethod`: a placeholder beside them is not by design."""
    if abstract:
        return False
    if klass in names.inert or _STAND_IN_WORDS.intersection(_words(klass)) or "interface" in _words(klass):
        return True  # (a class named an interface, `_ScriptLocalOptimizerInterface`, declares its methods)
    if label == "__init__" and _is_empty(placeholder):
        return True
    partner = _CONTEXT_PAIR.get(label)
    if partner is not None and partner in names.implemented.get(klass, ()):
        return True
    used = names.used_by_self.get(klass, set())
    if label in used and placeholder == RAISE_NOT_IMPLEMENTED:
        return True
    if label in used and _BASE_WORDS.intersection(_words(klass)):
        return True  # `GemmBase.epi_begin`: a step the base class calls, there for subclasses to fill in
    return label in used and _is_empty(placeholder) and bool(_HOOK_NAME.match(label))


def _owner_class(function: tree_sitter.Node) -> tree_sitter.Node | None:
    """The class whose body defines ``function`` (None for a function), also through the class
    body's own `if`/`try` blocks (`if sys.version_info < (3, 13): def __new__(cls): ...`)."""
    holder = function.parent
    if holder is not None and holder.type == "decorated_definition":
        holder = holder.parent
    owner = holder.parent if holder is not None and holder.type == "block" else None
    while owner is not None and owner.type in _CLASS_BODY_BRANCHES:
        owner = owner.parent
        if owner is not None and owner.type == "block":
            owner = owner.parent
    return owner if owner is not None and owner.type == "class_definition" else None


_CLASS_BODY_BRANCHES = frozenset({"if_statement", "else_clause", "elif_clause", "try_statement", "except_clause",
                                  "finally_clause"})


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


def _is_declaration(function: tree_sitter.Node, options: StubBodyOptions, aliases: dict[str, str]) -> bool:
    """Abstract/overload members, Protocol members and `if TYPE_CHECKING:` definitions."""
    holder = function.parent
    if holder is not None and holder.type == "decorated_definition":
        decorators = _name_pattern(options.exempt_decorators)
        for decorator in holder.named_children:
            # The written name or what the imports resolve it to: `@abstract` after `from abc import
            # abstractmethod as abstract`, and torch's `from torch._jit_internal import _overload as overload`.
            written = _decorator_expression(decorator)
            if decorator.type == "decorator" and (
                    decorators.match(written) or decorators.match(resolve(written, aliases))):
                return True
        holder = holder.parent
    # holder is now the block the definition sits in.
    owner = holder.parent if holder is not None else None
    if owner is not None and owner.type == "class_definition" and _declares_an_interface(owner, options, aliases):
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


def _declares_an_interface(cls: tree_sitter.Node, options: StubBodyOptions, aliases: dict[str, str]) -> bool:
    """A class with a ``protocol-bases`` base, directly or through classes of its own file
    (twisted's `class IReactorTCP(IReactorCore)` over `class IReactorCore(Interface)`)."""
    module = cls
    while module.parent is not None:
        module = module.parent
    local = {}
    for statement in module.named_children:
        definition = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
        if definition is not None and definition.type == "class_definition":
            name = definition.child_by_field_name("name")
            if name is not None:
                local[name.text.decode()] = definition
    seen: set[int] = set()
    pending = [cls]
    while pending:
        current = pending.pop()
        if current.id in seen:
            continue
        seen.add(current.id)
        bases = current.child_by_field_name("superclasses")
        for base in bases.named_children if bases is not None else ():
            written = base.text.decode()
            if _is_protocol(resolve(written, aliases), options.protocol_bases):
                return True
            if written in local:
                pending.append(local[written])
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
    `@abc.abstractmethod`, `@abstractproperty`, `@overload`, `@typing.overload`, pluggy's hook
    specifications `@hookspec` and `@hookspec(historic=True)`, a command-line group's callback
    `@click.group()`, ...), also
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
    `metaclass=ABCMeta` — is still reported, as flake8-bugbear's B027 reports it, unless a base
    above its class declares the method (abstract or not: the empty body is then the class's
    answer to an inherited member, not a forgotten `@abstractmethod`); a class nested
    in a class belongs to the family of the same-named nested class of each class
    related to its outer one: `CudaInterface.Worker` overrides `DeviceInterface.Worker`).
    Bases (`Base`, `mod.Base`, `Base[T]`) and subclasses are resolved through imports across files
    when the whole-project pass runs; `foxaudit check --no-project` and `check_source` see the
    file's own classes only. Data-model methods (`__exit__`, `__lt__`, `__eq__`, ...) returning a
    constant (`__exit__` → `False`: the exception propagates; `__lt__` of an infinity type);
    a function named for doing nothing (`nothing`, `do_nothing`, `noop`, `ignore`); a class
    attribute bound by assignment implements a member like a method does
    (`set_device = staticmethod(torch.cuda.set_device)`, also in an `if`/`try`/`with` block of the
    class body: trio's `if hasattr(socket, "recvmsg"): recvmsg = _make_wrapper(...)`; not under
    `if TYPE_CHECKING:`), and so does an instance attribute the
    class binds under the method's name (`self.encode = self._encode_eager` in `__init__`: the
    method only declares the slot, even when its message calls it a placeholder), and so does a
    string key of a table of callables a class body binds (warp's `_dynamic_attribute_constructors
    = {"eval_inner": lambda obj: obj._make_eval_inner()}`: the class builds the member under that
    name); with `unmarked-methods` off, an override's placeholder that does not raise (`return
    None`, `pass`, in a subclass or a sibling, not an `@abstractmethod`) answers a `raise
    NotImplementedError` as an implementation does (a tokenizer's `pad_token` is None); a `raise
    NotImplementedError` overriding a method of a built-in base (`class TwoWay(dict)`'s
    `update`: the type turns off an inherited operation); a function defined in one branch of
    an `if`/`try` whose other branch binds the same name
    (`try: from fast import f` / `except ImportError: def f(*a): pass`: the variant for when the
    feature is absent), or that a later `if`/`try` of the same block rebinds (`def
    set_allocator(fn): pass` then `if has_triton(): set_allocator = triton.set_allocator`) or
    may rebind (`try: from internal import *`), or that a function of the module rebinds through
    `global` (`global synchronize` then `synchronize = torch.accelerator.synchronize`); a
    function handed to a decorator call (`@overload(f)` implements `f`);
    in `test-files`, every function that is not a test as pytest collects it (a module-level
    `test*` function, a `test*` method of a `Test*` class, which returns no value): the others
    are doubles;
    definitions inside `if TYPE_CHECKING:` (declarations for type checkers), everything in
    `.pyi` files, and a `pass` that is not the whole function body (an `except: pass` inside a
    real body).

    Placeholders that the code itself makes deliberate are not stubs either:
    - what the function says of itself, unless it also says the work is pending (`TODO`, "yet",
      "NYI", "for now", "as a placeholder", in its comments, docstring, the comment right above it,
      its `NotImplementedError` message or its name; a marker about the documentation or the
      type annotations — "explain", "not type correct", "mypy" — is not about the body; the
      header of a module whose only definition it is speaks for it): "no-op", "nothing to do", a
      reason in a comment (`pass  # handled by the caller`, "it is not used otherwise"), a docstring that calls it a hook or a default
      ("Override this method to ...", "Default: True", "only exists to facilitate
      device-agnostic code"), a `NotImplementedError` that states a
      limitation ("deletion not supported", "please use add() instead", "should never be
      called"), a name that promises it (`_fake_rcb`, `_init_mesh_stub`, `always_true` returning
      True, `default_kwargs` returning a constant, `_not_impl` raising), a
      `# type: ignore[empty-body]` (or, for the whole file, mypy's inline
      `# mypy: disable-error-code="empty-body"`: generated ctypes bindings), `# noqa: B027` or
      ruff's `# ruff: ignore[B027]` (by code or by name, `empty-method-without-abstract-decorator`);
      a section comment over a group of functions (the nearest comment block above, past the
      definitions between, in a class body or a module) that says they do nothing (IPython's
      `# No-op functions which describe the names of available events`) and not that the work is
      pending; an empty body whose docstring holds doctest examples (`>>> 1 + 1`, IPython's
      `In [1]: x = 1`) that do not call the function (the docstring is the test a doctest runner
      collects; examples that call it show what its body must do); an empty test under a skip
      decorator that gives a reason (`@pytest.mark.skip(reason="no way to test this")`, also
      `skipif` and unittest's `skip`), unless the reason says the code is missing ("not
      implemented", "TODO", "not yet") — an `xfail` is reported;
    - an entry of a dispatch table: a decorated `def _(...)`, a function registered by a
      decorator call that names a key (`@register_lowering(aten.sink)`, `@dispatch(Var)`; not
      `@lru_cache(128)`), the fallback of `functools.singledispatch`, a function decorated by a
      project function that stores its argument in a table (IPython's `def _define_event(f):
      available_events[f.__name__] = f; return f`, or a factory's inner `def wrapped(f):
      VIEWS[name] = (f, template)` under `@export(None, template="not_found.html")`; in any file
      of the project, not a decorator that only wraps); or a declaration whose
      decorator's keyword supplies the body — a lambda or a function of the file
      (`@operator(resolver=lambda d: d.element_position)`), native code in a `snippet`, `source`
      or `code` string that reads as code (`@func_native(snippet='printf("%d", i);')`; not
      `code="E501"`, `@retry(on=ValueError)` nor `stop=stop_after_attempt(3)`);
    - a function passed to a call, returned (also in a tuple, `return wrapper, f`, or as a
      conditional's value, `return f if x else g`), bound as a method of an object
      (`model.tie_weights = f.__get__(model)`) or in a class body under another name
      (`__getitem__ = raise_error`), stored as a
      dict literal's value (a dispatch table by hand) or given as a parameter's default value
      (`def simulate(post_func=no_post_func)`: the default callback a caller may replace), or
      assigned to a name as a conditional's or boolean operator's alternative (`var_repr = eqrepr
      if include_vars else nullrepr`) or to a name that scope never calls (`fun = no_prefix` then
      `return fun`; in another module too), never
      called where it is defined — its enclosing function, or its module for a module-level
      function (a callback shaped by its callee: `_make_prim(meta=_sink_tokens)`,
      `register_autograd(op, setup_context=setup)`); a module-level function another module, a
      test too, passes to a call (`load(path, error_handler=handlers.ignore_error)`);
    - a marker function: a module-level function that the code compares by identity
      (`fn is markers.graph_break`) or by name (`callee == _get_trial_arg.__name__`, a dict keyed
      by `f.__name__`), in any file of the project: an interpreter, tracer or rewriter
      recognises it and acts in its place;
    - a module-level function that a parallel module implements or answers with another
      constant — modules whose names differ in one package (`pkg.cuda` and `pkg.mtia`), backends
      of one interface by convention, checked by the whole-project pass: MTIA's
      `is_bf16_supported` returning True is its answer where CUDA's asks the device — or that a
      sibling module implements which a module importing both puts beside it as a value of a
      module-level literal table (pdm's `FORMATS = {"flit": cast("_Format", flit),
      "requirements": requirements}`: one protocol's backends; a module's module-level tables
      are read as one), or that a
      module named a stand-in defines (django's `translation/trans_null.py`, the null object of
      `trans_real.py`);
    - what its class makes deliberate: a class whose two or more methods are all placeholders
      without a constant (an interface by convention, a null object), a class named a stand-in
      or an interface (`NopReader`, `UnsupportedSpec`, `OptimizerInterface`), an empty
      `__init__`, one half of a context manager whose other half works, a data-model method
      raising `NotImplementedError` (the type refuses that operation), a `raise
      NotImplementedError` step the class's own methods call (a template method), a step that a
      class named to be subclassed (`GemmBase`) calls or an event hook it fires (`on_*`,
      `*_hook`), a step the class calls while subclasses exist (in any file), and an override of
      a step a base class calls; classes of one family that return different constants
      (`"math.inf"` and `"INFINITY"`) give answers, not stubs, and a subclass that takes the
      method from a mixin overrides the base's placeholder.

    By default (`unmarked-methods = false`) a method whose body is `pass`, `...`, a docstring,
    `return None` or a constant is reported only when something marks it as pending (above):
    in a class such a body is usually the class's answer to its protocol, which it does not
    choose. A method that raises `NotImplementedError`, an empty method of an abstract base
    class (B027) and an empty test (`Test*.test*`) are judged either way. A project that adopts
    invariant 9 sets `unmarked-methods = true` (Foxhunt does): every method placeholder is then
    judged as above.

    In CUDA it reports a function with one of `cuda-qualifiers` (`__global__`, `__device__`,
    including templates and `extern "C"` blocks) whose body is empty (`{}`, comments only) or
    only a bare `return;`. Constructors and destructors are not stubs: an empty constructor body
    makes a type default-constructible on the device, and an initializer list
    (`half(float v) : data_(v) {}`) is where a constructor does its work. As in Python, an empty
    body is deliberate when a comment in it or right above it gives the reason ("an empty kernel
    is enough to enforce ordering", "doesn't need implementing") and none says the work is pending,
    when the name says so (`kdummy`, `noop`, `warmup_kernel`, `empty_kernel`), for a kernel that takes no parameters
    (`__global__ void empty() {}`: no buffer to work on — a timing or profiler marker, a PTX-version
    probe), for a member function of a struct or
    class (a policy's answer, reported with `unmarked-methods`), for an overload of a function
    the file implements for another type and for a function that a branch another build
    configuration compiles implements (`#if QMODE_2BIT == 1` … `#else` with the empty variant,
    the macro defined in a header foxaudit does not read; not `#if 0`). A body that holds
    statement macros the parse repair hid (`IS_TEAM_LSA({ return true; })`) is not empty.

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
    - `uncollected-test-files`: folders among the test modules the runner does not collect
      (default: pytest's `norecursedirs` in pyproject.toml): example suites the project's tests
      run in a nested session, whose empty tests are data (pytest's `testing/example_scripts/`).
    - `empty-abstract-methods-meant`: files whose abstract base classes' empty methods are hooks
      by design (default: where pyproject.toml's `[tool.ruff.lint]` ignores B027, as
      stable-baselines3 does for its callbacks): judged there as any other method's.
    - `unmarked-methods`: also report a method whose `pass`, `...`, docstring, `return None` or
      constant nothing marks as pending (default false: in a class such a body is usually the
      class's answer to its protocol — a hook, a null object, a default; `raise
      NotImplementedError`, empty methods of abstract base classes and empty tests are reported
      either way). A project that adopts invariant 9 turns it on, as Foxhunt does.
    """

    code = CODE
    name = "stub-body"
    summary = "Function body is a placeholder (pass, ..., raise NotImplementedError, constant return)"
    invariant = 9
    languages = frozenset({"python", "cuda"})
    python_nodes = ("function_definition", *_NAME_NODES)
    cuda_nodes = ("function_definition",)
    options_class = StubBodyOptions
    confirms_in_project = True

    VALID: ClassVar[list[Example]] = [
        # The class binds the name on each instance: the method only declares the slot.
        Example("class Codec:\n    def __init__(self, cached):\n"
                "        self.encode = self._encode_cached if cached else self._encode_plain\n\n"
                "    def encode(self, value):\n"
                "        raise NotImplementedError(\"a placeholder: __init__ binds the encoder\")\n\n"
                "    def _encode_cached(self, value):\n        return self._encode_plain(value)\n\n"
                "    def _encode_plain(self, value):\n        return str(value).encode()\n"),
        # A subclass of a built-in type turns off an operation the built-in implements.
        Example("class TwoWay(dict):\n    def __init__(self):\n        super().__init__()\n"
                "        self.inverse = {}\n\n    def __setitem__(self, key, value):\n"
                "        self.inverse[value] = key\n        super().__setitem__(key, value)\n\n"
                "    def update(self, other):\n        raise NotImplementedError\n"),
        # A read-only container ABC's subclass refuses a mutating method (sanic's WorkerState), a
        # mutable one refuses a mixin method it inherits implemented.
        Example("from collections.abc import Mapping\nimport typing\n\n\nclass State(Mapping):\n"
                "    def __init__(self, data):\n        self._data = data\n\n"
                "    def __getitem__(self, key):\n        return self._data[key]\n\n"
                "    def __iter__(self):\n        return iter(self._data)\n\n"
                "    def __len__(self):\n        return len(self._data)\n\n"
                "    def pop(self, key):\n        raise NotImplementedError\n\n\n"
                "class Log(typing.MutableSequence[int]):\n    def popitem(self):\n        raise NotImplementedError\n\n"
                "    def reverse(self):\n        raise NotImplementedError\n"),
        # Bound to a local the function hands on (pip's `onexc = _onerror_ignore`); another function
        # calling its own parameter of that name does not call it.
        Example("import shutil\n\n\ndef rmtree(path, onexc=None):\n    if onexc is None:\n        onexc = _onerror_ignore\n"
                "    shutil.rmtree(path, onexc=onexc)\n\n\ndef _onerror_ignore(*args):\n    pass\n\n\n"
                "def handle(onexc):\n    onexc()\n"),
        # A comment says why the method refuses (pip's in-memory wheel: "the API requires us to define it").
        Example("import importlib.metadata\n\n\nclass WheelDistribution(importlib.metadata.Distribution):\n"
                "    def read_text(self, filename):\n        return filename\n\n    def locate_file(self, path):\n"
                "        # This method doesn't make sense for an in-memory wheel, but the API requires it.\n"
                "        raise NotImplementedError\n"),
        # The refusal's message says it is a hook a subclass may fill (arch's VolatilityProcess).
        Example("class Process:\n    def update(self, index, x):\n        \"\"\"Compute one observation.\"\"\"\n"
                "        raise NotImplementedError(\"Subclasses may optionally implement\")\n"),
        # A pluggy hook specification: the docstring is the contract plugins implement.
        Example("import pluggy\n\nhookspec = pluggy.HookspecMarker(\"app\")\n\n\n@hookspec(firstresult=True)\n"
                "def app_load_config(path):\n    \"\"\"Return the configuration read from ``path``.\"\"\"\n\n\n"
                "@hookspec\ndef app_started(app):\n    \"\"\"Called once the app has started.\"\"\"\n\n\n"
                "def app_stopping(app):\n    \"\"\"Unmarked, beside marked ones: a specification too.\"\"\"\n"),
        # The marker bound to a name of the project's choosing (tox's `_spec`).
        Example("import pluggy\n\n_spec = pluggy.HookspecMarker(\"app\")\n\n\n@_spec\n"
                "def app_started(app):\n    \"\"\"Called once the app has started.\"\"\"\n"),
        # A click group: the subcommands do the work.
        Example("import click\n\n\n@click.group()\ndef cli():\n    pass\n\n\n@cli.group(chain=True)\ndef db():\n"
                "    \"\"\"Database commands.\"\"\"\n\n\n@db.command()\ndef migrate():\n    click.echo(\"migrated\")\n"),
        Example("import typer\n\napp = typer.Typer()\n\n\n@app.callback()\ndef main():\n    \"\"\"Manage users.\"\"\"\n"),
        Example("def version():\n    return 3\n"),
        Example("def ratio(a, b):\n    return a / b\n"),
        Example("def load(path):\n    try:\n        return open(path).read()\n    except OSError:\n        pass\n"
                "    return ''\n"),
        Example("import abc\n\nclass Loader(abc.ABC):\n    @abc.abstractmethod\n    def load(self, path):\n"
                "        raise NotImplementedError\n"),
        Example("from abc import abstractmethod, ABC\n\nclass Env(ABC):\n    @property\n    @abstractmethod\n"
                "    def size(self) -> int:\n        ...\n"),
        # An abstract class's empty method that answers a member its base declares (B027 is about a
        # declaration): the feed has no index to fetch, and still leaves `symbols` abstract.
        Example("import abc\n\nclass Feed(abc.ABC):\n    def run(self):\n        self.fetch_index()\n\n"
                "    @abc.abstractmethod\n    def fetch_index(self):\n        raise NotImplementedError\n\n\n"
                "class LocalFeed(Feed, abc.ABC):\n    def fetch_index(self):\n        pass\n\n"
                "    @abc.abstractmethod\n    def symbols(self):\n        raise NotImplementedError\n"),
        Example("from typing import overload\n\n@overload\ndef get(key: int) -> int: ...\n@overload\n"
                "def get(key: str) -> str: ...\ndef get(key):\n    return table[key]\n"),
        Example("import typing\n\n@typing.overload\ndef get(key: int) -> int: ...\n"),
        Example("from typing import Protocol\n\nclass Reader(Protocol):\n    def read(self, n: int) -> bytes: ...\n"
                "    def close(self) -> None:\n        pass\n"),
        Example("import typing\n\nclass Sink(typing.Protocol[T]):\n    async def put(self, item: T) -> None: ...\n"),
        # A refusal its docstring states over a bare raise (sqlalchemy's association proxy list).
        Example("from collections.abc import MutableSequence\n\n\nclass ProxyList(MutableSequence):\n"
                "    def sort(self):\n        \"\"\"Not supported, use sorted(mylist).\"\"\"\n"
                "        raise NotImplementedError()\n"),
        # zope.interface declarations (twisted): no `self`, a docstring for a body, also through an
        # interface of the same file.
        Example("from zope.interface import Interface\n\n\nclass IReactorCore(Interface):\n"
                "    def callLater(delay, callable):\n        \"\"\"Call a function later.\"\"\"\n\n\n"
                "class IReactorTCP(IReactorCore):\n    def listenTCP(port, factory):\n        \"\"\"Listen later.\"\"\"\n"),
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
        Example("class Env:\n    def last(self):\n        return self.observe(0)\n\n"
                "    # TODO: Remove `Optional` type below\n    def observe(self, agent):\n        raise NotImplementedError\n\n\n"
                "class Impl(Env):\n    def observe(self, agent):\n        return 1\n"),
        # The base case of a template recursion: a specialisation's member.
        Example("template <int N, typename T>\nstruct Sort {\n  static __device__ void run(T* v) { Sort<N - 1, T>::run(v); }\n};\n\n"
                "template <typename T>\nstruct Sort<1, T> {\n  static __device__ void run(T* v) {}\n};\n", path="sort.cuh"),
        # The body another build compiles: an architecture's kernel, a feature macro's branch.
        Example("__global__ void gemm_sm75(float* c) {\n#if __CUDA_ARCH__ == 750\n  c[0] = 1.0f;\n#endif\n}\n",
                path="gemm.cu"),
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
        Example("try:\n    add_batch_dim, remove_batch_dim = wrap_functorch()\nexcept ImportError:\n"
                "    def add_batch_dim(*args, **kwargs):\n        raise NotImplementedError\n\n"
                "    def remove_batch_dim(*args, **kwargs):\n        raise NotImplementedError\n"),
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
        # Classes of one family that return different constants: each is its class's answer.
        Example("class Printer:\n    def _print_inf(self, expr):\n        raise NotImplementedError\n\n"
                "class Py(Printer):\n    def _print_inf(self, expr):\n        return 'math.inf'\n\n"
                "class Cpp(Printer):\n    def _print_inf(self, expr):\n        return 'INFINITY'\n"),
        # A class whose methods are all placeholders declares an interface or is a null object.
        Example("class Storage:\n    def nbytes(self) -> int:\n        raise NotImplementedError\n"
                "    def cpu(self):\n        raise NotImplementedError\n"),
        Example("class Stream:\n    def __init__(self, priority=-1):\n        pass\n"
                "    def wait_stream(self, stream):\n        pass\n"),
        # Named a stand-in, or named for the constant it returns.
        Example("class NullLogger:\n    def __init__(self, path):\n        self.path = path\n"
                "    def log(self, message):\n        pass\n"),
        Example("def _fake_resolution_callback(name):\n    return None\n\ndef always_true(node):\n    return True\n"
                "\ndef _unpickle_as_none():\n    return None\n"),
        # The function says its placeholder is the behaviour, and says why.
        Example("def set_device(device):\n    '''Set the current device; on the CPU this is a no-op.'''\n"),
        Example("class Guards:\n    def check(self, x):\n        return self.guard(x)\n"
                "    def GRAD_MODE(self, guard):\n        pass  # always guarded via the global state guard\n"),
        Example("class Module:\n    def run(self, x):\n        return x\n    def input_names(self, x):\n"
                "        '''Override this method to name the inputs.'''\n        return None\n"),
        Example("def keystr(path):\n    raise NotImplementedError('key paths are not supported by the C++ backend')\n"),
        Example("class AnonymousUser:\n    def __str__(self):\n        return 'AnonymousUser'\n\n    def save(self):\n"
                "        raise NotImplementedError(\"Django doesn't provide a DB representation for AnonymousUser.\")\n"),
        # A module named a stand-in: the null object of a sibling module (django's trans_null.py).
        Example("def activate(language):\n    pass\n\n\ndef deactivate():\n    pass\n\n\n"
                "def gettext(message):\n    return message\n", path="translation/trans_null.py"),
        # A word of the name that only looks like deferral (`auto_now_add`), a typing-only member.
        Example("class Questioner:\n    def ask_merge(self, app):\n        return False\n\n"
                "    def ask_auto_now_add_addition(self, field, model):\n        return None\n\n\n"
                "class Interactive(Questioner):\n    def ask_auto_now_add_addition(self, field, model):\n"
                "        return input(field)\n"),
        Example("def NoInitField(*, init=False):\n    \"\"\"Only for typing purposes. Used as default value of private fields.\"\"\"\n"),
        # A `test_*` function that returns a value is a callback named so, not a test.
        Example("def test_processor(request):\n    return {'processors': 'yes'}\n", path="tests/test_response.py"),
        # A checker's input in a test folder (pylint's `tests/functional/u/unexpected_keyword_arg.py`):
        # no runner collects the file (`test*.py`, `*_test.py`), so its `test_*` is data, not a test.
        Example("def test_no_return():\n    pass\n", path="tests/functional/unexpected_keyword_arg.py"),
        # Where the project turned flake8-bugbear's B027 off (stable-baselines3's `per-file-ignores`
        # for callbacks.py, which sets `empty-abstract-methods-meant` unless the project sets it), an
        # abstract class's empty methods are its hooks, judged as any class's methods.
        Example("from abc import ABC\n\nclass BaseCallback(ABC):\n    def _on_step(self):\n        pass\n",
                path="pkg/callbacks.py", options={"empty-abstract-methods-meant": ["pkg/callbacks.py"]}),
        # An example suite the runner does not collect (pytest's `norecursedirs = ["testing/example_scripts"]`,
        # which sets `uncollected-test-files` unless the project sets it): pytest's own tests copy it
        # into a nested session (`pytester.copy_example`) to watch collection; its empty test is data.
        Example("def test_foo():\n    pass\n", path="testing/example_scripts/collect/pkg/test_foo.py",
                options={"test-files": ["testing/"], "uncollected-test-files": ["**/testing/example_scripts/"]}),
        Example("def disasm(code):\n    raise NotImplementedError('disasm is no longer supported')\n\n\n"
                "class Plugins:\n    @property\n    def selected(self):\n        return self._selected\n\n"
                "    @selected.setter\n    def selected(self, value):\n"
                "        raise NotImplementedError('selected can only be set through enable(key)')\n"),
        Example("class Frozen:\n    def get(self, key):\n        return self.data[key]\n"
                "    def __setitem__(self, key, value):\n        raise NotImplementedError('read-only: use with_item() instead')\n"
                "    def __hash__(self):\n        raise NotImplementedError\n"),
        # A type checker or a peer linter was told that the empty body is meant.
        Example("class CacheInfo:\n    def size(self) -> int:\n        return len(self.items)\n    @property\n"
                "    def artifacts(self) -> list[str]:  # type: ignore[empty-body]\n        ...\n"),
        Example("import abc\n\nclass PassBase(abc.ABC):\n    def requires(self, module):  # noqa: B027\n"
                "        '''Checked before the pass runs.'''\n"),
        Example("import abc\n\nclass Specifier(abc.ABC):\n    @property\n    @abc.abstractmethod\n"
                "    def prereleases(self):\n        \"\"\"Whether pre-releases are allowed.\"\"\"\n\n"
                "    @prereleases.setter  # noqa: B027\n    def prereleases(self, value):\n        \"\"\"Set it.\"\"\"\n"),
        # Bindings generated for a C library: the file tells mypy its `...` bodies are meant.
        Example("# mypy: disable-error-code=\"empty-body\"\nfrom support import dll\n\n\n@dll.bind(None)\n"
                "def LLVMInitializeX86Target() -> None: ...\n\n\n@dll.bind\ndef cuptiGetVersion(version: int) -> int: ...\n"),
        # An abstract class with a second base (freqtrade's `IStrategy(ABC, HyperStrategyMixin)`):
        # no B027, as bugbear and ruff read it — its empty methods are answers, not declarations.
        Example("from abc import ABC, abstractmethod\n\nclass Mixin:\n    def params(self):\n        return {}\n\n"
                "class Strategy(ABC, Mixin):\n    @abstractmethod\n"
                "    def signal(self, frame):\n        raise NotImplementedError\n\n"
                "    def bot_start(self, **kwargs) -> None:\n        \"\"\"Called once after the bot starts.\"\"\"\n        pass\n"),
        Example("import abc\n\nclass ToxEnv(abc.ABC):\n    def run(self):\n        self._setup()\n\n"
                "    def _setup(self) -> None:  # ruff: ignore[empty-method-without-abstract-decorator]\n"
                "        pass\n\n    def _teardown(self) -> None:  # ruff: ignore[B027]\n        pass\n"),
        # An entry of a dispatch table: registered for a key, or the fallback of singledispatch.
        Example("@register_lowering(aten.sink_tokens)\ndef sink_tokens(tokens):\n    return None\n\n"
                "@wait_stream.register_fake\ndef _(event, stream):\n    pass\n\n"
                "@functools.singledispatch\ndef to_device(x):\n    raise NotImplementedError\n"),
        # What the class itself makes deliberate: an empty constructor, one half of a context
        # manager, a step its own methods call (a template method), an event it fires.
        Example("class Benchmarker:\n    def __init__(self):\n        pass\n    def run(self, fn):\n        return fn()\n"),
        Example("class Buffer:\n    def __enter__(self):\n        return self\n    def __exit__(self, *args):\n        pass\n"),
        Example("class Function:\n    def forward(self, *args):\n        return self.forward_extended(*args)\n"
                "    def forward_extended(self, *args):\n        raise NotImplementedError\n"),
        Example("class GemmBase:\n    def run(self, params):\n        return self.epi_begin(params)\n"
                "    def epi_begin(self, params):\n        return ()\n"),
        Example("class Runner:\n    def run(self, x):\n        self.on_step(x)\n        return x\n"
                "    def on_step(self, x):\n        pass\n"),
        # A subclass that takes the method from a mixin overrides the base's placeholder.
        Example("class Node:\n    def allocate(self, block):\n        return False\n    def size(self):\n        return 0\n\n"
                "class ClearOnAllocate:\n    def allocate(self, block):\n        self.clear()\n        return super().allocate(block)\n\n"
                "class Split(ClearOnAllocate, Node):\n    pass\n"),
        # Raising is what the name promises; a stand-in named so; a limitation stated.
        Example("def install(name):\n    def _not_implemented(self, *args):\n        raise NotImplementedError(name)\n"
                "    return _not_implemented\n\ndef _init_mesh_stub():\n    pass\n"),
        Example("class WeakDep:\n    def name(self):\n        return self.buffer\n    @property\n    def index(self):\n"
                "        raise NotImplementedError('a weak dependency does not have an index')\n"),
        # A step the class calls, in a class with subclasses, and an override of such a step.
        Example("class Folder:\n    def run(self, out):\n        return out if self.insertable(out) else None\n"
                "    def insertable(self, tensor):\n        return True\n\nclass UniformFolder(Folder):\n"
                "    def insertable(self, tensor):\n        return True\n"),
        # Said above the definition, or in the docstring: a dummy, a hook, a thing never to be called.
        Example("class Progress:\n    def update(self, n):\n        self.n += n\n\n"
                "    # Don't bother implementing; use the real progress bar if you want one\n"
                "    def set_description(self, *args, **kwargs):\n        pass\n"),
        Example("def fallthrough_kernel():\n    '''A dummy function to pass to Library.impl.'''\n"
                "    raise NotImplementedError('fallthrough_kernel() should never be called.')\n\n"
                "def setup_context(ctx, inputs, output):\n    '''Set up the context (nothing to save).'''\n"),
        Example("class Choices:\n    def score(self, node):\n        return node.size\n    @staticmethod\n"
                "    def can_fuse(scheduler, node1, node2):\n        '''Hook for heuristics to prevent fusions.'''\n"
                "        return True\n"),
        Example("class UnsupportedSpec:\n    def __init__(self, name):\n        self.name = name\n    @property\n"
                "    def eval_fn(self):\n        raise NotImplementedError(f'spec not implemented for {self.name}')\n"),
        Example("def xor_sum_eager(a, dims):\n    raise NotImplementedError('xor_sum only implemented with inductor')\n"),
        Example("def flatten(func, args):\n    if func == 'flatten':\n        def _flatten_sig(input, start_dim=0):\n"
                "            pass\n        return normalize(_flatten_sig, args)\n    return args\n"),
        # A documented default; a class named an interface; a factory's no-op closure.
        Example("class Policy:\n    def name(self):\n        return 'graphs'\n"
                "    def should_wrap(self, graph) -> bool:\n        '''Whether to wrap the graph. Default: True.'''\n"
                "        return True\n"),
        Example("@jit.interface\nclass OptimizerInterface:\n    def step(self, context_id: int) -> None:\n        pass\n"),
        Example("def make_logger(name):\n    def inner(**fields):\n        pass\n\n    return inner\n"),
        # By default a method's `pass`, `return None` or constant that nothing marks as pending is
        # its class's answer (`unmarked-methods = true` reports them: the INVALID twins below).
        Example("class Book:\n    def depth(self, side):\n        return -1\n"
                "    @property\n    def size(self):\n        return None\n"),
        Example("class ShapeHandler:\n    @staticmethod\n    def store(name, index, value):\n        return None\n"
                "    def load(self, name, index):\n        return self.shapes[name]\n"),
        # A default that a later `if` rebinds when the feature is there; a compatibility shim.
        Example("def set_allocator(fn):\n    pass\n\nif has_triton():\n"
                "    if hasattr(triton, 'set_allocator'):\n        set_allocator = triton.set_allocator\n"),
        Example("def synchronize(device=None):\n    '''Wait for the CPU device.\n\n"
                "    This function only exists to facilitate device-agnostic code.\n    '''\n"),
        # A method under an `if` of the class body is a method (default mode: not reported).
        Example("class autocast(Base):\n    if sys.version_info < (3, 13):\n        def __init_subclass__(cls):\n"
                "            pass\n"),
        Example("def always_wrap_policy(*args, **kwargs) -> bool:\n    return True\n\n"
                "def default_kwargs(device):\n    return {}\n"),
        # A marker that asks for documentation, or one that ends the line of code above.
        Example("class Handler:\n    def load(self, name):\n        return self.values[name]\n"
                "    def scan(self, dtypes, combine, values):\n        # TODO: Better explain the arguments\n"
                "        raise NotImplementedError\n\nclass Kernel(Handler):\n"
                "    def scan(self, dtypes, combine, values):\n        return combine(values)\n"),
        Example("class Kernel:\n    flags = {}  # TODO: fill from the config\n\n"
                "    def check_bounds(self, expr, size):\n        pass\n"),
        # A nested function handed to a call and never called: a callback shaped by its callee.
        Example("def measure(loop):\n    def stop_hook(times):\n        return True\n    return loop(stop_hook=stop_hook)\n\n"
                "def bind(args):\n    def deque_signature(iterable=None, maxlen=None):\n        pass\n"
                "    return inspect.signature(deque_signature).bind(*args)\n"),
        # A module-level function handed to a call or stored in a dispatch table, never called in
        # its module: a callback (an op's meta function, an autograd `setup_context` with nothing
        # to save, the no-op arm of a hook table).
        Example("def _sink_meta(tokens) -> None:\n    pass\n\n"
                "sink = make_prim(schema='sink(Tensor[] tokens) -> ()', meta=_sink_meta, impl=_sink_meta)\n\n"
                "def setup_context(ctx, inputs, output):\n    '''Save state for backward.'''\n    return\n\n"
                "register_autograd('wait', backward, setup_context=setup_context)\n"),
        Example("def _full_post_load(module, state):\n    module.unshard(state)\n\n"
                "def _local_post_load(module, state):\n    pass\n\n"
                "def post_load(module, state, kind):\n"
                "    return {FULL: _full_post_load, LOCAL: _local_post_load}[kind](module, state)\n"),
        # A module-level function that is a parameter's default value, never called in its module:
        # the default callback (a null object) a caller may replace (vectorbt's `no_post_func_nb`).
        Example("def no_post_func(context, *args) -> None:\n    '''Postprocessing function that returns nothing.'''\n"
                "    return None\n\n"
                "def simulate(rows, post_func: Callable = no_post_func, pre_func=no_post_func):\n"
                "    for row in rows:\n        pre_func(row)\n        post_func(row)\n"),
        # Nested functions returned in a tuple: fixtures whose signature is the point.
        Example("class Cases:\n    @classmethod\n    def make(cls):\n"
                "        def f(a: 'an annotation'):\n            '''A docstring to copy.'''\n\n"
                "        def wrapper(b: 'another'):\n            pass\n\n        return wrapper, f\n"),
        # A marker about the type annotations is no pending work in the body.
        Example("class Handler:\n    def load(self, name):\n        return self.values[name]\n\n"
                "    # TODO: this returns None in practice, but a T keeps\n    # __getattr__ idioms type correct.\n"
                "    def store(self, name, value) -> None:\n        raise NotImplementedError\n\n"
                "class Recorder(Handler):\n    def store(self, name, value) -> None:\n"
                "        self.log.append((name, value))\n"),
        # A one-function module's header speaks for its function.
        Example("# Kept so that old pickles which name this function still load; it is not used otherwise.\n\n\n"
                "def _get_backend():\n    pass\n"),
        # A marker function: the code tells it apart by identity, a tracer acts in its place.
        Example("def graph_break(msg=''):\n    '''Force a graph break.'''\n\n\n"
                "def trace(fn, args):\n    if fn is graph_break:\n        return split(args)\n"
                "    return record(fn, args)\n"),
        # A default that a function rebinds through `global`, or that a later star import may replace.
        Example("def synchronize():\n    pass\n\n\ndef profile(fn, devices):\n    global synchronize\n"
                "    if devices != ['cpu'] and accelerator.is_available():\n"
                "        synchronize = accelerator.synchronize\n    synchronize()\n    return fn()\n"),
        Example("def initialize_metrics(cfg=None):\n    pass\n\n\ntry:\n    from metrics.static_init import *\n"
                "except ModuleNotFoundError:\n    pass\n"),
        # Test data: a builtins stub written as `.py` (mypy's test-data/), and a `Test*` class made
        # inside a test, which no runner collects (its `test` method is the test's data).
        Example("def len(o: object) -> int: pass\ndef abs(x: int) -> int: ...\n", path="test-data/fixtures/ir.py"),
        Example("import inspect\n\n\nclass TestSignatures:\n    def test_of_method(self):\n"
                "        class TestClass:\n            def test(self, arg0: str) -> None:\n                pass\n\n"
                "        assert str(inspect.signature(TestClass.test)) == '(self, arg0: str) -> None'\n",
                path="tests/test_sig.py"),
        # CUDA bodies meant empty: a reason beside it, a name that says so, a policy struct's member,
        # an overload for a type that needs nothing.
        # A kernel with no parameters has no buffer to work on: a timing, profiler-annotation or
        # PTX-version probe (cuda-samples' `empty`, cub's `EmptyKernel(void)`).
        Example("__global__ void empty() {}\n__global__ void EmptyKernel(void) { }\n"
                "void launch() { empty<<<1, 1>>>(); EmptyKernel<<<1, 1>>>(); }\n", path="graphs.cu"),
        Example("static __global__ void tiny_delay_kern() {\n  // An empty kernel is enough to enforce ordering.\n}\n"
                "__global__ void kdummy() {}\n__global__ void warmup_kernel() {}\n", path="order.cu"),
        Example("__global__ void empty_kernel(int i) {}\n", path="launch_config.cu"),
        Example("struct CodecFloat {\n  // float needs no per-kernel setup\n  inline __device__ void initKernel(float* s) {}\n"
                "  __device__ void encodePartial(float* d, float v) const {}\n};\n", path="codec.cuh"),
        Example("template <typename T>\n__device__ void acc(float l, T g, float* grad) { *grad += g * l; }\n"
                "template <typename T>\n__device__ void acc(float, T, int*) {}\n", path="grads.cuh"),
        # A section comment over a group of hooks (or the class docstring) says they do nothing.
        Example("from abc import ABC, abstractmethod\n\n\nclass Scene(ABC):\n    @abstractmethod\n"
                "    def get(self, name):\n        ...\n\n    # -- topology hooks (no-op defaults) --\n\n"
                "    def on_duplicate(self, sel):\n        pass\n\n    def on_remove(self, mask):\n        pass\n"),
        # "later" and "yet" that defer no work ("Blackwell and later", "later used in", "does nothing,
        # yet it helps"), and a doctest's comment.
        Example("def fp4_align(recipe):\n    \"\"\"FP4 GEMM requires Blackwell and later architectures.\"\"\"\n"
                "    # pylint: disable=unused-argument\n    return 128\n\n\nALIGN = fp4_align(None)\n"),
        # A negated "yet" that describes a state, not pending work (sqlalchemy's mapper events).
        Example("class MapperEvents:\n    def instrument_class(self, mapper, class_):\n"
                "        \"\"\"Receive a class when the mapper is first constructed.\n\n"
                "        Most attributes of the mapper are not yet initialized.\n        \"\"\"\n\n"
                "    def mapper_configured(self, mapper, class_):\n"
                "        \"\"\"Called for each mapper in the list of not-yet-configured mappers.\"\"\"\n"),
        Example("class Module:\n    def setup(self):\n        \"\"\"Initialise lazily.\n\n        >>> class M(Module):\n"
                "        ...   def setup(self):\n        ...     # attributes do not yet work here\n"
                "        ...     self.conv = None\n        \"\"\"\n        pass\n"),
        # Handed on by a literal or an assignment into another object: a table's element, a
        # monkeypatch (`torch.nn.init.kaiming_uniform_ = skip`), a Hypothesis test's body.
        Example("def getrandbits(n):\n    return 0\n\n\nSHIMS = {f.__name__: f for f in [getrandbits]}\n"),
        Example("import torch\n\n\ndef skip(*args, **kwargs):\n    pass\n\n\n"
                "torch.nn.init.kaiming_uniform_ = skip\n"),
        Example("from hypothesis import given, strategies as st\n\n\n@given(x=st.integers())\n"
                "def test_keyword_only(*, x):\n    pass\n", path="tests/test_given.py"),
        # (Not a step the same module calls from a literal, nor the object's own attribute — those
        # are reported: see INVALID.)
        # A nested function that is a parameter's default (networkx's A* heuristic).
        Example("def astar(graph, source, heuristic=None):\n    if heuristic is None:\n"
                "        def heuristic(u, v):\n            return 0\n    return heuristic(source, source)\n"),
        # Declarations for the type checker: called only under `if TYPE_CHECKING:`, a field specifier
        # handed to `dataclass_transform`, a method "stub for pytype"; and a refusal "Unable to …".
        Example("import typing\n\n\ndef _to_keyless(init):\n    raise NotImplementedError\n\n\nclass Rngs:\n"
                "    if typing.TYPE_CHECKING:\n        uniform = staticmethod(_to_keyless(len))\n"),
        Example("import typing_extensions as tpe\n\n\ndef module_field(*, kw_only=False, default=None):\n    ...\n\n\n"
                "@tpe.dataclass_transform(field_specifiers=(module_field,))\nclass ModuleBase:\n    pass\n"),
        Example("class PyTreeNode:\n    def replace(self, **overrides):\n        # stub for pytype\n"
                "        raise NotImplementedError\n"),
        Example("import ast\n\n\nclass Unparser(ast.NodeVisitor):\n    def visit_Name(self, node):\n        return node.id\n\n"
                "    def generic_visit(self, node):\n        raise NotImplementedError('Unable to parse %s' % node)\n"),
        # A semgrep rule's test code (saleor's .semgrep/correctness/*.py).
        Example("from celery import shared_task\n\n\n# ruleid: celery-task-without-retry\n@shared_task\n"
                "def send_email():\n    pass\n", path=".semgrep/correctness/celery/task.py"),
        # A callback in a keyword argument's tuple (sphinx's `add_node(n, html=(visit, depart))`).
        Example("def visit_node(translator, node):\n    translator.add('x')\n\n\n"
                "def depart_node(translator, node):\n    return None\n\n\n"
                "def setup(app):\n    app.add_node(object, html=(visit_node, depart_node))\n"),
        # A nested function that only carries its decorator's effect (click's option objects).
        Example("def option_object(option):\n    @option\n    def opt():\n        pass\n\n"
                "    return opt.__click_params__[0]\n"),
        # A refusal the class declares: io's capability query answers no, or one refusal is bound
        # to several inherited members.
        Example("class ReadOnly(io.RawIOBase):\n    def readinto(self, b):\n        return self._f.readinto(b)\n\n"
                "    def writable(self):\n        return False\n\n"
                "    def write(self, data):\n        raise NotImplementedError\n"),
        Example("class DisabledBackend(Backend):\n    def _is_disabled(self, *args, **kwargs):\n"
                "        raise NotImplementedError('no result backend is configured')\n\n"
                "    get = wait = _is_disabled\n"),
        # A decorator whose keyword supplies the body: a lambda the call resolves to (warp's
        # `@operator(resolver=...)`), a function of the file named, native code in a snippet.
        Example("@operator(resolver=lambda domain: domain.element_position, attr='geo')\n"
                "def position(domain, s):\n    \"\"\"World position of the sample point `s`.\"\"\"\n    pass\n\n\n"
                "def resolve_normal(domain):\n    return domain.element_normal\n\n\n"
                "@operator(resolver=resolve_normal)\ndef normal(domain, s):\n    pass\n"),
        Example("import warp as wp\n\n\ndef solve(func):\n"
                "    @wp.func_native(snippet=f'printf(\"%s: \", \"{func.__name__}\");')\n"
                "    def print_method_name():\n        pass\n\n    print_method_name()\n"),
        # Members a subclass builds from a table keyed by their names.
        Example("class Field:\n    @staticmethod\n    def eval_inner(args, s):\n        raise NotImplementedError()\n\n\n"
                "class NodalField(Field):\n    _constructors = {'eval_inner': lambda obj: obj._make_eval_inner()}\n"),
        # A marker function a rewriter recognises by name.
        Example("def _get_test_arg():\n    pass\n\n\ndef rewrite(node):\n"
                "    if node.func.id == _get_test_arg.__name__:\n        node.func.id = 'test_arg'\n"),
        # A function handed on as a value: bound as a method, a class attribute, a conditional's value.
        Example("def raise_logits_error(*args, **kwargs):\n    raise NotImplementedError(ERROR)\n\n\n"
                "def return_none(*args, **kwargs):\n    return None\n\n\n"
                "class EmptyLogits:\n    def __getattr__(self, attr):\n"
                "        return return_none if attr == 'to' else raise_logits_error\n\n"
                "    __getitem__ = raise_logits_error\n\n\n"
                "def untie(model):\n    def _no_tie(self):\n        return\n\n"
                "    model.tie_weights = _no_tie.__get__(model, model.__class__)\n"),
        # A base's `raise NotImplementedError` that its subclasses answer with `return None`.
        Example("class Tokenizer:\n    def pad_token(self):\n        raise NotImplementedError()\n\n\n"
                "class SentencePiece(Tokenizer):\n    def pad_token(self):\n        return None\n"),
        # A CUDA body of statement macros the parse repair hides, and another build's alternative.
        Example("#define IS_LSA(code) if constexpr (std::is_same_v<T, Lsa>) { code }\n"
                "#define IS_WORLD(code) if constexpr (std::is_same_v<T, World>) { code }\n\n"
                "template <typename T>\n__device__ __forceinline__ bool is_reachable(int rank) {\n"
                "    IS_LSA({\n        return true;\n    })\n\n    IS_WORLD({\n        return rank < 8;\n    })\n}\n",
                path="team.cuh"),
        Example("#if QMODE_4BIT == 1\n__device__ void shuffle_4bit(unsigned* q, int stride) {\n"
                "    q[0] = (q[0] >> 4) | (q[0] << 28);\n}\n#else\n"
                "__device__ void shuffle_4bit(unsigned* q, int stride) {\n}\n#endif\n", path="qdq_4.cuh"),
        # Doctest carriers: the docstring's examples are the test (IPython's `In [1]:` prompts too).
        Example("def test_magics():\n    \"\"\"Test calling magics from the debugger.\n\n    In [1]: x = 1\n\n"
                "    In [2]: x\n    Out[2]: 1\n    \"\"\"\n\n\ndef test_plain():\n    \"\"\"A plain doctest.\n\n"
                "    >>> 1 + 1\n    2\n    \"\"\"\n    pass\n", path="tests/test_dbg.py"),
        # Module-level prototypes under a section comment that says they do nothing, and ones a
        # decorator of the file files in its table (also by a factory's inner function).
        Example("# ------------------------------------------------------------------\n# Callback prototypes\n#\n"
                "# No-op functions which describe the names of available events.\n"
                "# ------------------------------------------------------------------\n\n"
                "def pre_execute():\n    \"\"\"Fires before code is executed.\"\"\"\n    pass\n\n\n"
                "def post_execute():\n    \"\"\"Fires after code is executed.\"\"\"\n    pass\n"),
        Example("available_events = {}\n\n\ndef _define_event(callback):\n"
                "    available_events[callback.__name__] = callback\n    return callback\n\n\n"
                "@_define_event\ndef shell_initialized(ip):\n    \"\"\"Fires after the shell is set up.\"\"\"\n    pass\n"),
        Example("VIEWS = {}\n\n\ndef export(string, template=None):\n    def wrapped(f):\n"
                "        VIEWS[f.__name__] = (f, string, template)\n        return f\n\n    return wrapped\n\n\n"
                "@export(None, template='not_found.html')\ndef not_found():\n    pass\n"),
        # A member bound in a class body's `if` block implements the base's (trio's `recvmsg`).
        Example("import socket\nimport sys\n\n\nclass SocketType:\n    if sys.platform != 'win32':\n\n"
                "        def recvmsg(self, bufsize):\n            raise NotImplementedError\n\n\n"
                "class _SocketType(SocketType):\n    if sys.platform != 'win32':\n"
                "        recvmsg = _wrap(socket.socket.recvmsg)\n"),
        # A function handed on under another name: a conditional's alternative, a name returned.
        Example("def eqrepr(value):\n    return '=%r' % (value,)\n\n\ndef nullrepr(value):\n    return ''\n\n\n"
                "def format_vars(pairs, include_vars):\n    var_repr = eqrepr if include_vars else nullrepr\n"
                "    return [name + var_repr(value) for name, value in pairs]\n\n\n"
                "def pick_prefix(name):\n    if name == 'no_prefix':\n\n        def no_prefix(history):\n"
                "            return ''\n\n        fun = no_prefix\n    else:\n        fun = last_line\n    return fun\n"),
        # An empty test skipped with its reason, as a comment gives one.
        Example("import pytest\n\n\n@pytest.mark.skip(reason='no way to test this')\ndef test_to_cuda():\n    pass\n",
                path="tests/test_utility.py"),
    ]
    INVALID: ClassVar[list[Example]] = [
        # Examples that call the function show its use; a skip or xfail that says the code is
        # missing; an alias called here; a section that says the work is pending; a decorator
        # that wraps what it decorates rather than filing it in a table.
        Example("def add(a, b):\n    \"\"\"Add two numbers.\n\n    >>> add(1, 2)\n    3\n    \"\"\"\n", expect=1),
        # A docstring that describes the finished function ("cannot be read") over a bare raise: a stub.
        Example("def load(path):\n    \"\"\"Load the model; raise ValueError if the file cannot be read.\"\"\"\n"
                "    raise NotImplementedError\n", expect=1),
        # A class of the file that derives from no interface declares nothing: its method is a stub.
        Example("from zope.interface import Interface\n\n\nclass Base:\n    pass\n\n\nclass Reactor(Base):\n"
                "    def callLater(self, delay, callable):\n        \"\"\"Call a function later.\"\"\"\n", expect=1),
        # A container ABC's subclass refusing a method the ABC does not have is a stub.
        Example("from collections.abc import Mapping\n\n\nclass Cache(Mapping):\n"
                "    def refresh(self):\n        raise NotImplementedError\n\n"
                "    def __getitem__(self, key):\n        return key\n\n"
                "    def __iter__(self):\n        return iter(())\n\n    def __len__(self):\n        return 0\n", expect=1),
        Example("import pytest\n\n\n@pytest.mark.xfail(reason='Not implemented')\ndef test_backtest():\n    pass\n\n\n"
                "@pytest.mark.skip(reason='not implemented yet')\ndef test_export():\n    pass\n",
                path="tests/test_env.py", expect=2),
        Example("def validate(rows):\n    raise NotImplementedError\n\n\ndef run(rows):\n    step = validate\n"
                "    return step(rows)\n", expect=1),
        Example("# No-op handlers for now: TODO fill them in.\n\ndef on_start():\n    pass\n\n\ndef on_stop():\n    pass\n",
                expect=2),
        Example("def logged(f):\n    def inner(*args):\n        print(f.__name__)\n        return f(*args)\n\n"
                "    return inner\n\n\n@logged\ndef compute(x):\n    pass\n", expect=1),
        # Called here after all: looped over, or stored on the object that calls it.
        Example("def normalize(rows):\n    return rows\n\n\ndef validate(rows):\n    raise NotImplementedError\n\n\n"
                "def run(rows):\n    for step in [normalize] + [validate]:\n        rows = step(rows)\n"
                "    return [check(rows) for check in [validate]]\n\n\nif __name__ == '__main__':\n    run([])\n",
                expect=1),
        Example("def compute_loss(batch):\n    raise NotImplementedError\n\n\nclass Trainer:\n    def __init__(self):\n"
                "        self.loss_fn = compute_loss\n\n    def step(self, batch):\n        return self.loss_fn(batch)\n\n\n"
                "if __name__ == '__main__':\n    Trainer().step(1)\n", expect=1),
        # Pending however it is phrased, and whatever the rest of the family does.
        Example("class Reader:\n    def calendar(self):\n        return self._calendar\n\n\n"
                "class HDF5Reader(Reader):\n    def calendar(self):\n"
                "        raise NotImplementedError('HDF5 pricing does not yet support trading calendars.')\n\n"
                "    def apply_mask(self, mask):\n        pass  # masks don't work yet\n\n"
                "    def state_dict(self):\n        # TODO: implement\n        raise NotImplementedError\n", expect=3),
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
        Example("class Book:\n    def depth(self, side):\n        return -1\n", options={"unmarked-methods": True}, expect=1),
        Example("class Env:\n    @property\n    def size(self):\n        return None\n", options={"unmarked-methods": True}, expect=1),
        Example("class Env:\n    @size.setter\n    def size(self, value):\n        pass\n", options={"unmarked-methods": True}, expect=1),
        Example("async def fetch(url):\n    ...\n", expect=1),
        # Pending work said in the name of a stand-in module's function still counts.
        Example("def activate_for_now(language):\n    pass\n", path="trans_null.py", expect=1),
        # The file-wide mypy switch covers bodies meant empty, not ones marked pending; another
        # error code switched off is no switch for empty bodies.
        Example("# mypy: disable-error-code=\"empty-body\"\nfrom support import dll\n\n\n@dll.bind(None)\n"
                "def LLVMDisposeModule() -> None: ...  # TODO: bind once the symbol is exported\n", expect=1),
        Example("# mypy: disable-error-code=\"override\"\n\n\ndef load(path):\n    ...\n", expect=1),
        Example("def outer(x):\n    def inner(y):\n        pass\n    return inner(x)\n", expect=1),
        Example("import abc\n\nclass Base(abc.ABC):\n    def hook(self):\n        raise NotImplementedError()\n", expect=1),
        Example("@functools.cache\ndef table(n):\n    return ()\n", expect=1),
        Example("def cost(order, book):\n    return (0.0, 0.0)\n", expect=1),
        Example('def include_paths(target):\n    return (\n        "#include <a.h>",\n        "#include <b.h>",\n    )\n',
                expect=1),
        Example("if TYPE_CHECKING:\n    pass\nelse:\n    def cast(x):\n        pass\n", expect=1),
        Example("__global__ void reset_state(float* ps, int n) {}\n", path="reset.cu", expect=1),
        Example("__global__ void fill_empty_buckets(float* b, int n) {}\n", path="buckets.cu", expect=1),
        # A negated "yet" beside work still pending (xarray's test double), not a state described.
        Example("def check_encoding(encoding):\n    # we haven't bothered to raise errors yet for unexpected encodings\n"
                "    pass\n", expect=1),
        Example("template <typename T>\n__device__ void accumulate(T* out, T v) {\n  // later\n}\n",
                path="acc.cuh", expect=1),
        Example('extern "C" __global__ void k(float* x) { return; }\n', path="k.cu", expect=1),
        Example('extern "C" {\n__global__ void __launch_bounds__(256) k(float* x) {}\n}\n', path="k.cu", expect=1),
        # What no build compiles (`#if 0`) is no body.
        Example("__global__ void k(float* c) {\n#if 0\n  c[0] = 1.0f;\n#endif\n}\n", path="k.cu", expect=1),
        Example("struct __align__(16) Pair { float a, b; };\n__host__ __device__ void combine(Pair p) { }\n",
                path="pair.cuh", expect=1),
        Example("def f(x):\n    pass\n", options={"exempt-decorators": []}, expect=1),
        # A member function's empty body is reported when methods are judged (as Python's), or
        # when something says its work is pending.
        Example("struct Indexer {\n  __device__ Indexer(int n) : n_(n) {}\n  __device__ void set(int i) {\n  }\n"
                "  int n_;\n};\n", path="indexer.cuh", options={"unmarked-methods": True}, expect=1),
        Example("struct Indexer {\n  // TODO: bounds\n  __device__ void check(int i) {}\n};\n", path="indexer.cuh", expect=1),
        Example("__device__ void scale(float* x) {\n  // not implemented yet, because of the layout\n}\n", path="s.cu",
                expect=1),
        Example("@cache  # memoised\ndef table(n):\n    pass\n", expect=1),
        # A class merely named Protocol, or a Protocol that is not typing's, declares nothing.
        Example("class Protocol:\n    pass\n\nclass Reader(Protocol):\n    def read(self, n):\n        ...\n", options={"unmarked-methods": True}, expect=1),
        Example("from wire import Protocol\n\nclass Reader(Protocol):\n    def read(self, n):\n        pass\n", options={"unmarked-methods": True}, expect=1),
        # An alias of an exempt decorator under another name exempts nothing by that other name.
        Example("from abc import abstractmethod as abstract\n\n@abstract_later\ndef f(x):\n    pass\n", expect=1),
        # Several placeholders in one body.
        Example("def f(x):\n    pass\n    raise NotImplementedError\n", expect=1),
        Example("def f(x):\n    \"Doc.\"\n    ...\n    pass\n    return None\n", expect=1),
        # An empty method of an abstract base class is one whatever its subclasses do (B027).
        Example("from abc import ABC\n\nclass Plot(ABC):\n    def legend(self, ax):\n        pass\n\n"
                "class Line(Plot):\n    def legend(self, ax):\n        ax.legend()\n", expect=1),
        # ... and an abstract subclass's empty method that no base above it declares (its base does not
        # make it an override).
        Example("import abc\n\nclass Feed(abc.ABC):\n    @abc.abstractmethod\n    def fetch_index(self):\n"
                "        raise NotImplementedError\n\n\nclass LocalFeed(Feed, abc.ABC):\n    def flush(self):\n"
                "        pass\n", expect=1),
        # A hook no subclass implements is a stub: here the subclass's override is a stub too.
        Example("class Op:\n    def apply(self, x):\n        raise NotImplementedError\n\nclass Noop(Op):\n"
                "    def other(self):\n        return 1\n", expect=1),
        Example("class Op:\n    def apply(self, x):\n        raise NotImplementedError\n\nclass Gpu(Op):\n"
                "    def apply(self, x):\n        pass\n", options={"unmarked-methods": True}, expect=2),
        # A branch alone, or a twin of another name, is no alternative.
        Example("if fast:\n    def record(op):\n        pass\nelse:\n    def replay(op):\n        store(op)\n", expect=1),
        # An empty test is deferred work, in a test module too.
        Example("def nothing_yet(x):\n    pass\n", expect=1),
        Example("class TestReader:\n    def test_roundtrip(self):\n        # not written yet\n        pass\n",
                path="tests/test_reader.py", expect=1),
        Example("def helper(x):\n    return None\n", path="tests/test_reader.py", options={"test-files": []}, expect=1),
        # B027 turned off for another file only: this abstract class's empty method is still one.
        Example("from abc import ABC\n\nclass BaseCallback(ABC):\n    def _on_step(self):\n        pass\n",
                path="pkg/callbacks.py", options={"empty-abstract-methods-meant": ["pkg/noise.py"]}, expect=1),
        # A test folder the runner collects, beside one it does not: its empty test is a stub.
        Example("def test_foo():\n    pass\n", path="testing/collect/test_foo.py",
                options={"test-files": ["testing/"], "uncollected-test-files": ["**/testing/example_scripts/"]}, expect=1),
        Example("def test_apply():\n    pass\n\nclass Delegator:\n    def test_method(self):\n        pass\n"
                "\ndef test_groupby():\n    def test_func(x):\n        pass\n    check(test_func)\n",
                path="tests/test_apply.py", expect=1),
        # A data-model method that does nothing is still a stub (only a constant is an answer).
        Example("class Table:\n    def __setitem__(self, key, value):\n        pass\n", options={"unmarked-methods": True}, expect=1),
        # The same constant in two classes of a family is one placeholder copied, not two answers.
        Example("class Gemm:\n    def finalize(self, kernel):\n        return ''\n\n"
                "class Amx(Gemm):\n    def finalize(self, kernel):\n        return ''\n", options={"unmarked-methods": True}, expect=2),
        # A class with real work is no interface: its placeholders are pending.
        Example("class Broker:\n    def __init__(self, url):\n        self.url = url\n"
                "    def buy(self, n):\n        raise NotImplementedError\n    def sell(self, n):\n        pass\n", options={"unmarked-methods": True}, expect=2),
        # A name that promises another constant, or that says the work is pending.
        Example("def always_true(node):\n    return False\n\ndef fake_for_now(x):\n    pass\n", expect=2),
        # Saying "nothing" while saying "later" is deferral.
        Example("def sync(self):\n    # TODO: do nothing for now, load asynchronously later\n    pass\n", expect=1),
        Example("def reset(cache):\n    # Not used yet, but we could clear it here.\n    pass\n", expect=1),
        Example("def keystr(path):\n    raise NotImplementedError('key paths are not yet supported')\n"
                "\n# TODO: register once FSDP supports hooks\ndef register(model):\n"
                "    raise NotImplementedError('FSDP is not supported')\n", expect=2),
        Example("class Int:\n    def __add__(self, other):\n        raise NotImplementedError('NYI')\n", expect=1),
        Example("class Int:\n    # Raise at once instead of building an expression tree.\n"
                "    def __sub__(self, other):\n        raise NotImplementedError('NYI')\n", expect=1),
        # Another type-checker code is no acknowledgement of an empty body.
        Example("class Cache:\n    def size(self) -> int:  # type: ignore[override]\n        ...\n", options={"unmarked-methods": True}, expect=1),
        # A wrapper configured by numbers or keywords registers nothing.
        Example("@functools.lru_cache(128)\ndef table(n):\n    return ()\n\n@retry(times=3)\ndef fetch(url):\n    pass\n",
                expect=2),
        # ... nor one configured by a class, a label, a call, nor a keyword whose lambda is pending work.
        Example("@retry(on=ValueError, stop=stop_after_attempt(3))\ndef fetch(url):\n    pass\n\n\n"
                "@rule(code='E501')\ndef check(line):\n    pass\n\n\n"
                "@operator(resolver=lambda domain: domain.position)\ndef position(domain, s):\n"
                "    # TODO: resolve on the device\n    pass\n", expect=3),
        # A `raise NotImplementedError` that the other classes of its family also raise is answered by none.
        Example("class Op:\n    def apply(self, x):\n        raise NotImplementedError\n\nclass Gpu(Op):\n"
                "    def apply(self, x):\n        raise NotImplementedError('no kernel')\n", expect=2),
        # A marker compared by name that says it is pending; an `#if 0` body is no other build's.
        Example("def _get_test_arg():\n    # TODO: return the test argument\n    pass\n\n\n"
                "def rewrite(node):\n    return node.func.id == _get_test_arg.__name__\n", expect=1),
        Example("#if 0\n__device__ void shuffle(unsigned* q) { q[0] >>= 4; }\n#else\n"
                "__device__ void shuffle(unsigned* q) {}\n#endif\n", path="q.cuh", expect=1),
        Example("#if QMODE == 1\n__device__ void shuffle(unsigned* q) { q[0] >>= 4; }\n#else\n"
                "__device__ void shuffle(unsigned* q) {\n  // TODO: the other modes\n}\n#endif\n", path="q.cuh", expect=1),
        # Empty context-manager halves beside real work, a step no one calls, a pending-named hook.
        Example("class Timer:\n    def __init__(self):\n        self.start = now()\n"
                "    def __enter__(self):\n        pass\n    def __exit__(self, *args):\n        pass\n", options={"unmarked-methods": True}, expect=2),
        Example("class Gemm:\n    def run(self, params):\n        return self.epi_begin(params)\n"
                "    def epi_begin(self, params):\n        return ()\n", options={"unmarked-methods": True}, expect=1),
        Example("class Runner:\n    def run(self, x):\n        self.save_checkpoint(x)\n        return x\n"
                "    def save_checkpoint(self, x):\n        pass\n", options={"unmarked-methods": True}, expect=1),
        Example("def not_implemented_yet(x):\n    raise NotImplementedError\n", expect=1),
        # Pending work said in or above it outweighs a registration, a callback, a stand-in class.
        Example("@register_lowering(aten._assert_scalar)\ndef _assert_scalar(data, msg):\n"
                "    # TODO: try this assert out\n    return None\n\n"
                "def unlift(module):\n    def _train(self, mode=True):\n"
                "        raise NotImplementedError('calling train() is not supported yet')\n"
                "    return bind(_train, module)\n\n"
                "class DataFrameTracer(Base):\n    # TODO: implement the special functions of datapipes\n\n"
                "    def set_shuffle_settings(self, *args, **kwargs):\n        pass\n", expect=3),
        # A name that says the answer is fixed promises a value, not nothing.
        Example("def default_policy(module):\n    pass\n", expect=1),
        # Methods in the default mode: what is marked pending, what raises, an empty test.
        Example("class Book:\n    def depth(self, side):\n        # TODO: walk the levels\n        return -1\n"
                "    def spread(self):\n        raise NotImplementedError\n"
                "    def mid(self, side):\n        '''The mid price (not implemented yet).'''\n", expect=3),
        Example("class TestBook:\n    def test_depth(self):\n        pass\n", path="test_book.py", expect=1),
        # A later binding of another name, or an earlier one, is no alternative.
        Example("def build(value):\n    if has_triton():\n        set_allocator = triton.set_allocator\n"
                "    def set_allocator_default(fn):\n        pass\n    return wrap(value, set_allocator_default(1))\n",
                expect=1),
        Example("class autocast(Base):\n    if sys.version_info < (3, 13):\n        def __init_subclass__(cls):\n"
                "            pass\n", options={"unmarked-methods": True}, expect=1),
        # A comment above that says the work is pending outweighs a stated reason.
        Example("# TODO: implement once the backend has it; not needed by the CPU path\ndef sync(x):\n    pass\n", expect=1),
        # A step the class calls but no class derives from it: the class itself is unfinished.
        Example("class Folder:\n    def run(self, out):\n        return out if self.insertable(out) else None\n"
                "    def insertable(self, tensor):\n        return True\n", options={"unmarked-methods": True}, expect=1),
        # A nested function called where it is defined does its work there.
        Example("def measure(loop):\n    def stop_hook(times):\n        return True\n    return loop(stop_hook(3))\n", expect=1),
        # The mixin beside the judged class is no subclass: the placeholder is still the base's.
        Example("class Node:\n    def allocate(self, block):\n        return False\n    def size(self):\n        return 0\n\n"
                "class Mixin:\n    def allocate(self, block):\n        self.used.append(block)\n        return True\n", options={"unmarked-methods": True}, expect=1),
        # A function handed on but also called in its module does its work here; a module's
        # header speaks only for a module of one definition; a marker about a type is no reason.
        Example("def validate(x):\n    pass\n\nregister(validate)\nvalidate(3)\n", expect=1),
        Example("# Helpers, not used by the CLI.\n\n\ndef scale(x):\n    return 2 * x\n\n\ndef shift(x):\n    pass\n",
                expect=1),
        Example("# TODO: port the backend\n\n\ndef load(path):\n    return None\n", expect=1),
        Example("# TODO: handle the int type\ndef parse(text):\n    pass\n", expect=1),
        Example("# TODO: implement type checking of the arguments\ndef validate(args):\n    pass\n", expect=1),
        # Compared by equality, not identity: no marker.
        Example("def graph_break(msg=''):\n    '''Force a graph break.'''\n\n\n"
                "def trace(fn, args):\n    if fn == graph_break:\n        return split(args)\n", expect=1),
        # A `global` of another name, or one never assigned, rebinds nothing.
        Example("def synchronize():\n    pass\n\n\ndef profile(fn):\n    global counter, synchronize\n"
                "    counter = 1\n    synchronize()\n    return fn()\n", expect=1),
    ]

    def begin(self, ctx: FileContext) -> None:
        ctx.state[CODE] = _Walked()

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        options: StubBodyOptions = ctx.options(CODE)
        if ctx.language == "cuda":
            self._visit_cuda(node, ctx, options)
            return
        if ctx.source.is_stub_file:
            return
        walked: _Walked = ctx.state[CODE]
        kind = node.type
        if kind != "function_definition":
            if kind == "class_definition":
                walked.classes.append(node)
            elif kind == "decorator":
                walked.decorators.append(node)
            elif kind == "comparison_operator":
                walked.comparisons.append(node)
            elif kind == "pair":
                key = node.child_by_field_name("key")
                named = named_object(key) if key is not None else None
                if named is not None:
                    walked.keyed_by_name.append(named)
            else:  # import_statement, import_from_statement
                walked.imports.append(node)
            return
        placeholder = placeholder_body_in(ctx.source, node)
        if placeholder is None or (placeholder == DOCSTRING and not options.docstring_only):
            return
        walked.placeholders.append((node, placeholder))

    def finish(self, ctx: FileContext) -> None:
        walked: _Walked | None = ctx.state.get(CODE)
        if walked is None or not walked.placeholders:
            return
        options: StubBodyOptions = ctx.options(CODE)
        for node, placeholder in walked.placeholders:
            self._judge(node, placeholder, walked, ctx, options)

    def _judge(self, node: tree_sitter.Node, placeholder: str, walked: _Walked, ctx: FileContext, options: StubBodyOptions) -> None:
        """Report the function ``node`` whose body is only ``placeholder``, unless it is deliberate."""
        # The file's names are read only once a placeholder body is found (most files have none),
        # and past its imports only once one is no declaration.
        if _is_declaration(node, options, _file_aliases(walked)):
            return
        if _owner_class(node) is None and node.parent is not None and node.parent.type in ("module", "decorated_definition") \
                and _declares_hookspecs(walked):
            return  # a pluggy hook specification left unmarked beside marked ones: its docstring is the contract
        if walked.empty_bodies_meant is None:
            walked.empty_bodies_meant = "empty-body" in ctx.source.text and bool(_EMPTY_BODY_FILE.search(ctx.source.text))
        if walked.empty_bodies_meant and not _marked_pending(node):
            return  # the file's `# mypy: disable-error-code="empty-body"`, as a `# type: ignore[empty-body]` on each
        names = _file_names(walked)
        name = node.child_by_field_name("name")
        label = name.text.decode() if name is not None else "function"
        owner = _owner_class(node)
        if (matches_any(ctx.path, options.test_files) or _SEMGREP_TEST in ctx.source.text) \
                and not _is_test(node, label, owner, ctx.path):
            return  # a test double: a callback, a fake's method, a fixture (or a semgrep rule's test code)
        if options.uncollected_test_files and matches_any(ctx.path, options.test_files) \
                and matches_any(ctx.path, options.uncollected_test_files):
            return  # a test of an example suite the runner never collects: the project's tests run it as data
        if owner is None and label in names.handed_to_decorators:
            return  # `@overload(f)`, `@implements(f)`: the declaration the decorated code implements
        if owner is not None and _rebound_on_instances(owner, label, names):
            return  # `self.encode = self._encode_eager` in the class: the method is a slot construction fills
        confirm: tuple[str, ...] = ()
        if not _marked_pending(node):
            if owner is None and _STAND_IN_WORDS.intersection(_words(ctx.path.rsplit("/", 1)[-1].removesuffix(".py"))):
                return  # django's translation/trans_null.py: a module named a stand-in is the null object of a sibling
            # (Something that says the work is pending — a `TODO`, "yet", "NYI" — outweighs every
            # reason below to read the placeholder as deliberate.)
            found = self._deliberate(node, label, placeholder, owner, names, options, ctx.path)
            if found is None:
                return
            confirm = found
        ctx.report(
            CODE,
            name if name is not None else node,
            f"`{label}` is a stub: its body is only {placeholder} — invariant 9: finish it or don't start it",
            hint="implement it or delete it; an interface method is @abc.abstractmethod or a Protocol member",
            confirm=confirm,
        )

    @staticmethod
    def _deliberate(
        node: tree_sitter.Node,
        label: str,
        placeholder: str,
        owner: tree_sitter.Node | None,
        names: _FileNames,
        options: StubBodyOptions,
        path: str,
    ) -> tuple[str, ...] | None:
        """None when the code makes the placeholder deliberate; otherwise the facts the
        whole-project pass confirms the finding with (empty: it stands as reported)."""
        if _NAMED_NO_OP.match(label) or _name_promises(label, node, placeholder):
            return None  # `nothing()`, `noop`, `_fake_rcb`, `always_true`: the name promises what the body does
        if _is_test(node, label, owner, path) and _run_by_a_property_decorator(node):
            return None  # `@given(st.integers()) def test_x(x): pass`: the test is the decorator drawing examples
        if _is_test(node, label, owner, path) and _skipped_for_a_reason(node):
            return None  # `@pytest.mark.skip(reason="no way to test this")`: the reason says why it is empty
        if _bound_by_another_branch(node, label) or _rebound_later(node, label, names):
            return None  # the feature-absent twin of a name another branch (or a later `if`/`try`) binds
        if _states_it_does_nothing(node):
            return None  # its docstring or comment says doing nothing is the point ("no-op", "nothing to do")
        if _is_empty(placeholder) and _carries_doctests(node, label):
            return None  # the docstring's examples are the test (`In [1]: x = 1`, `>>> 1 + 1`), the body their carrier
        if _empty_body_acknowledged(node):
            return None  # `# type: ignore[empty-body]`: the author told the type checker the body is meant empty
        if _handed_on_as_callback(node, label, names):
            return None  # a nested function passed to a call or returned, never called here: a callback
        if _replaces_a_parameter(node, label):
            return None  # `if heuristic is None: def heuristic(u, v): return 0`: the parameter's default
        if _registered(node, label, names):
            return None  # a dispatch table's entry: doing nothing or a constant is its answer for that key
        if len(label) > 4 and label.startswith("__") and label.endswith("__") and placeholder == RAISE_NOT_IMPLEMENTED:
            return None  # `__hash__`, `__delitem__` raising: the type refuses that protocol operation
        if owner is None and "." not in _qualified_name(node) and label in names.identities:
            return None  # a marker function: the code tells it apart by identity, a tracer acts in its place
        if owner is None and _used_only_when_type_checking(node, label, names):
            return None  # flax's `_to_keyless`: called only under `if TYPE_CHECKING:`, a declaration for the checker
        if owner is None and _is_empty(placeholder) and _section_says_no_op(node, None):
            return None  # `# No-op functions which describe the names of available events` over the group
        if owner is None:
            # A function's callers and sibling modules may live in other files: the whole program decides.
            return ("", _qualified_name(node), constant_answer(node), FUNCTION)
        if placeholder == RAISE_NOT_IMPLEMENTED and _refuses_builtin_method(owner, label, names):
            return None  # `class Table(dict): def update(...): raise NotImplementedError`: the type refuses it
        if RAISE_NOT_IMPLEMENTED in placeholder and _refusal_by_design(owner, label, names):
            return None  # `writable()` answers False, or `get = _is_disabled`: a refusal the class declares
        if _is_empty(placeholder) and _section_says_no_op(node, owner):
            return None  # `# -- Topology hooks (no-op defaults) --` above the group, or the class docstring says so
        # Where the project turned B027 off, its abstract classes' empty methods are hooks: judged as any method's.
        abstract = _is_abstract_base(owner, names) and not (
            options.empty_abstract_methods_meant and matches_any(path, options.empty_abstract_methods_meant))
        if abstract and _is_empty(placeholder):
            # An empty method of an abstract base class is reported whatever its subclasses do, as
            # flake8-bugbear's B027 does: it is an `@abstractmethod` forgotten, or a hook to mark —
            # unless a base above it declares the method (abstract or not): then it is this class's
            # answer to an inherited member (`pass` for "nothing to download here"), not a declaration.
            owner_name = owner.child_by_field_name("name")
            klass = owner_name.text.decode() if owner_name is not None else ""
            if any(label in names.declared.get(ancestor, ()) or label in names.implemented.get(ancestor, ())
                   for ancestor in _file_ancestors(klass, names)):
                return None
            # Its bases may live in other files: the whole program decides.
            return (_qualified_name(owner), label, constant_answer(node), _ABSTRACT_EMPTY)
        if not options.unmarked_methods and RAISE_NOT_IMPLEMENTED not in placeholder and not _is_test(node, label, owner, path):
            return None  # a method's `pass`/constant is its class's answer unless something says the work is pending
        owner_name = owner.child_by_field_name("name")
        klass = owner_name.text.decode() if owner_name is not None else ""
        if _member_by_design(label, klass, placeholder, names, abstract=abstract):
            return None
        answer = constant_answer(node)
        # Without `unmarked-methods` another class's `return None` or `pass` is that class's answer,
        # and a `raise NotImplementedError` beside it the interface (or this class's refusal).
        answered_refusal = RAISE_NOT_IMPLEMENTED in placeholder and not options.unmarked_methods
        if owner_name is not None and _implemented_in_file_family(klass, label, names, answer, answered_refusal):
            return None  # a hook its subclasses implement, or a subclass's answer to an implemented method
        called_by_class = label in names.used_by_self.get(klass, set())
        if called_by_class and any(klass in bases for bases in names.bases.values()):
            return None  # a step the class calls and its subclasses may replace: a template method's hook
        if any(label in names.used_by_self.get(ancestor, set()) for ancestor in _file_ancestors(klass, names)):
            return None  # an override of a step a base class calls: this class's answer to the hook
        # Its base classes and subclasses may live in other files: the whole program decides.
        return (_qualified_name(owner), label, answer, "called-by-class" if called_by_class else "",
                _ANSWERED_REFUSAL if answered_refusal else "")

    def confirm(self, project: Project, path: str, facts: tuple[str, ...]) -> bool:
        """A method's finding stands unless a project class above or below its class, in any
        file, implements the method (or answers it with another constant), or the class calls
        the method itself and has subclasses in the project (a template method's hook)."""
        from foxaudit.program.analysis import analysis_for
        from foxaudit.program.model import function_key
        from foxaudit.program.wiring import TEST_DATA

        analysis = analysis_for(project)
        program = analysis.program
        module = program.by_path.get(path)
        if module is not None and analysis.imports.entries.get(module.name) == TEST_DATA:
            return False  # a file a test reads or runs as data (bandit's `examples/*.py`): its stubs are the input
        class_name, method, answer, called, refusal = (*facts, "", "", "")[:5]
        if called == FUNCTION:
            if module is None:
                return True
            key = function_key(module.name, method)
            if key in _compared_by_identity(program):
                return False  # a marker function: code tells it apart by identity (an interpreter intercepts calls to it)
            if _referenced_as_a_value(program, module, method) or _passed_as_an_argument(program, module, method):
                return False  # handed on from another module (a table's entry, an alias, an argument): a callback
            if _registered_by_another_module(program, module, key):
                return False  # `@export(None, template="not_found.html")`: the decorator files it in its table
            if module.name in _fetched_by_name(program):
                return False  # `getattr(libdevice, name)` elsewhere: the module's functions are a table's values
            if key in _extended_dispatchers(program):
                return False  # `@create_db.for_db("sqlite")` elsewhere: the fallback of a dispatch table
            return not _answered_in_parallel_module(program, module, method, answer)
        class_key = function_key(module.name, class_name) if module is not None else ""
        if class_key not in program.classes:
            return True
        if called == _ABSTRACT_EMPTY:
            # An abstract class's empty method stands unless a base beside `ABC` is no abstract
            # class of the project, or a base above it declares the method.
            if not _bases_all_abstract(program, class_key):
                return False
            return not any(f"{ancestor}.{method}" in program.functions
                           or (ancestor in program.classes and method in program.classes[ancestor][1].attributes)
                           for ancestor in _program_ancestors(program, class_key))
        if (called or _calls_through_self(program, class_key, method)) and program.subclasses(class_key):
            return False  # a step the class calls, in a class that has subclasses: a template method's hook
        if any(_calls_through_self(program, ancestor, method) for ancestor in _program_ancestors(program, class_key)):
            return False  # an override of a step a base class calls: this class's answer to the hook
        return not _implemented_in_program_family(program, class_key, method, answer, refusal == _ANSWERED_REFUSAL)

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
        if _in_a_specialisation(node):
            return  # `template <class T> struct Sort<1, T> { static __device__ void run(T*) {} };`: a recursion's base case
        if _hidden_by_the_parse_repair(body, ctx):
            return  # `IS_TEAM_LSA({ return true; })`: statement macros the repair blanked — code, not an empty body
        label = name.text.decode() if name is not None else "function"
        inside, above = _cuda_comments(node)
        if any(_SAYS_DEFERRED.search(comment) for comment in inside + above):
            pass  # a `TODO` or "not implemented yet" beside it: pending, whatever else is said
        elif any(_SAYS_NO_OP.search(comment) or _GIVES_REASON.search(comment) for comment in inside) or any(
                _SAYS_NO_OP.search(comment) or _NEEDS_NOTHING.search(comment) for comment in above):
            # "// An empty kernel is enough to enforce ordering" in the body, "// float needs no
            # per-kernel setup" above (a comment above that only describes the function — "uses X
            # instead of Y" — gives no reason for an empty body)
            return
        elif _CUDA_STAND_IN.search(label):
            return  # `kdummy`, `warmup_kernel`, `noop`: the name says the empty body is the point
        elif "__global__" in spaces and _takes_no_parameters(node):
            return  # `__global__ void empty() {}`: no buffer to work on — a timing, profiler-annotation or PTX-version probe
        elif _is_cuda_member(node) and not options.unmarked_methods:
            return  # a policy struct's member (`CodecFloat::initKernel`): its class's answer, as a Python method's
        elif name is not None and label in _cuda_implemented_names(ctx):
            return  # an overload for a type that needs nothing, beside the one that does the work
        elif name is not None and label in _implemented_in_other_configurations(ctx):
            return  # `#if QMODE_2BIT == 1 … f(…) { real } #else f(…) { } #endif`: another build's alternative
        first, last = body.start_point[0] + 1, body.end_point[0] + 1
        if any(region.first_line <= last and region.last_line >= first and not region.dead
               for region in ctx.source.cuda.inactive):
            return  # its code is in a branch this configuration does not compile (`#if __CUDA_ARCH__ == 750`): another build's

        qualifier = "/".join(sorted(spaces.intersection(options.cuda_qualifiers)))
        what = "a bare `return;`" if statements else "empty"
        ctx.report(
            CODE,
            name if name is not None else node,
            f"{qualifier} function `{label}` is a stub: its body is {what} — invariant 9: finish it or don't start it",
            hint="implement the kernel or delete it (and its launch)",
        )


# CUDA names that say an empty body is the point: a dummy or no-op kernel, a warm-up launch — as
# words of the name (`kuserbuffers_dummy`, `kdummy`, `warmup_kernel`), or the whole name an empty
# kernel (`empty_kernel`, `EmptyKernel`; not `fill_empty_buckets`).
def _takes_no_parameters(function: tree_sitter.Node) -> bool:
    """The CUDA function's parameter list is `()` or `(void)`."""
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    if parameters is None:
        return False
    text = parameters.text.decode(errors="replace").strip("() \t\n")
    return text in ("", "void")


_CUDA_STAND_IN = re.compile(r"(?:^|_)k?(?:dummy|noop|nop|warmup|warm_up)(?:_|$)|(?:Dummy|Noop|NoOp|Warmup)(?![a-z])"
                            r"|^k?(?:empty|Empty)(?:_?[kK]ernel)?$")


# A comment above an empty function that says it needs nothing: "needs no …", "doesn't need …".
_NEEDS_NOTHING = re.compile(r"\bneeds? no\b|\b(?:does|do) ?n[o']?t need\b|\bis enough\b|\bnothing to\b", re.IGNORECASE)


def _cuda_comments(definition: tree_sitter.Node) -> tuple[list[str], list[str]]:
    """(the comments in a CUDA function's body, those right above it or above its template)."""
    body = definition.child_by_field_name("body")
    inside = [child.text.decode(errors="replace") for child in body.named_children if child.type == "comment"] \
        if body is not None else []
    above: list[str] = []
    node = definition.parent if definition.parent is not None and definition.parent.type == "template_declaration" \
        else definition
    sibling = node.prev_sibling
    while sibling is not None and sibling.type == "comment" and node.start_point[0] - sibling.end_point[0] <= 1:
        above.append(sibling.text.decode(errors="replace"))
        node, sibling = sibling, sibling.prev_sibling
    return inside, above


def _is_cuda_member(definition: tree_sitter.Node) -> bool:
    """A member function defined in a struct or class body."""
    holder = definition.parent
    while holder is not None and holder.type in ("template_declaration", "access_specifier"):
        holder = holder.parent
    return holder is not None and holder.type == "field_declaration_list"


def _cuda_implemented_names(ctx: FileContext) -> frozenset[str]:
    """The names of the file's CUDA functions with a body that does something (read once per file)."""
    found = ctx.state.get(f"{CODE}:cuda-implemented")
    if found is None:
        found = ctx.state[f"{CODE}:cuda-implemented"] = _implemented_function_names(ctx.source.tree)
    return found


def _implemented_function_names(tree: tree_sitter.Tree) -> frozenset[str]:
    names = set()
    for definition in tree_sitter.QueryCursor(_cuda_query("(function_definition) @f")).captures(
            tree.root_node).get("f", []):
        body = definition.child_by_field_name("body")
        name = function_name(definition)
        statements = [child for child in body.named_children if child.type != "comment"] if body is not None else []
        if name is not None and statements and not (
                len(statements) == 1 and statements[0].type == "return_statement" and statements[0].named_child_count == 0):
            names.add(name.text.decode())
    return frozenset(names)


def _implemented_in_other_configurations(ctx: FileContext) -> frozenset[str]:
    """The names of the CUDA functions with a body that does something in the file's branches that
    another build configuration compiles (``#else`` of ``#if QMODE_2BIT == 1`` whose macro comes
    from a header foxaudit does not read; not ``#if 0``): the file parsed again with those branches
    restored, once per file and only when an empty body is about to be reported."""
    found = ctx.state.get(f"{CODE}:cuda-other-configurations")
    if found is None:
        prepared = ctx.source.cuda
        regions = [region for region in prepared.inactive if not region.dead]
        found = frozenset()
        if regions:
            from foxaudit.sources.cuda_forms import normalise

            restored = bytearray(prepared.data)
            starts = [0, *(match.end() for match in re.finditer(rb"\n", ctx.source.data))]
            for region in regions:
                first = starts[region.first_line - 1]
                last = starts[region.last_line] if region.last_line < len(starts) else len(ctx.source.data)
                restored[first:last] = ctx.source.data[first:last]
            parser = tree_sitter.Parser(_cuda_language())
            found = _implemented_function_names(parser.parse(normalise(bytes(restored))))
        ctx.state[f"{CODE}:cuda-other-configurations"] = found
    return found


def _hidden_by_the_parse_repair(body: tree_sitter.Node, ctx: FileContext) -> bool:
    """The body looks empty only because the normaliser or the parse repair blanked what it holds
    (statement macros such as ``IS_TEAM_LSA({ return true; })``): the compiled text between its
    braces, its comments left out, is not the parsed one."""
    prepared = ctx.source.cuda
    start, end = body.start_byte + 1, body.end_byte - 1
    parsed, compiled = bytearray(prepared.data[start:end]), bytearray(prepared.compiled[start:end])
    for comment in body.named_children:
        if comment.type == "comment":
            blank = b" " * (comment.end_byte - comment.start_byte)
            parsed[comment.start_byte - start : comment.end_byte - start] = blank
            compiled[comment.start_byte - start : comment.end_byte - start] = blank
    return parsed.split() != compiled.split()


@functools.cache
def _cuda_language() -> tree_sitter.Language:
    import tree_sitter_cuda

    return tree_sitter.Language(tree_sitter_cuda.language())


@functools.cache
def _cuda_query(pattern: str) -> tree_sitter.Query:
    return tree_sitter.Query(_cuda_language(), pattern)


def _in_a_specialisation(definition: tree_sitter.Node) -> bool:
    """A member of a class template's (partial) specialisation, ``struct Sort<1, T> {…}``: the
    case the general template's recursion ends in, where doing nothing is the answer."""
    holder = definition.parent
    while holder is not None and holder.type in ("field_declaration_list", "template_declaration", "declaration"):
        holder = holder.parent
    if holder is None or holder.type not in ("struct_specifier", "class_specifier"):
        return False
    name = holder.child_by_field_name("name")
    return name is not None and name.type == "template_type"


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
