"""FX902: functions whose body is a placeholder."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import ClassVar

import tree_sitter

from foxaudit.rules._support.cuda import execution_spaces, function_name
from foxaudit.rules._support.options import freeze, option_error, string_tuple
from foxaudit.rules.base import Example, FileContext, Rule, RuleOptions

CODE = "FX902"
DEFAULT_EXEMPT_DECORATORS = (
    "abstractmethod",
    "abstractproperty",
    "abstractclassmethod",
    "abstractstaticmethod",
    "overload",
)
_CONSTANT_LEAVES = frozenset({"integer", "float", "true", "false", "none", "string", "concatenated_string"})
_CONSTANT_CONTAINERS = frozenset({"tuple", "list", "dictionary", "set", "pair", "parenthesized_expression"})
_NOT_IMPLEMENTED = frozenset({"NotImplementedError", "NotImplemented"})
_RECEIVERS = frozenset({"self", "cls"})
_TYPE_CHECKING = re.compile(r"^(?:\w+\.)*TYPE_CHECKING$")


@dataclass(frozen=True)
class StubBodyOptions(RuleOptions):
    exempt_decorators: tuple[str, ...] = field(
        default=DEFAULT_EXEMPT_DECORATORS,
        metadata={"help": "Decorators (last dotted name part) whose functions are declarations, not stubs."},
    )
    protocol_bases: tuple[str, ...] = field(
        default=("Protocol",),
        metadata={"help": "Base classes (last dotted name part) whose members are interface declarations."},
    )
    docstring_only: bool = field(
        default=True,
        metadata={"help": "Report a function whose body is only a docstring (it does nothing)."},
    )
    cuda_qualifiers: tuple[str, ...] = field(
        default=("__global__", "__device__"),
        metadata={"help": "CUDA execution-space qualifiers whose functions must not have an empty body."},
    )

    def __post_init__(self) -> None:
        freeze(self, "exempt_decorators", string_tuple(CODE, "exempt-decorators", self.exempt_decorators))
        freeze(self, "protocol_bases", string_tuple(CODE, "protocol-bases", self.protocol_bases))
        freeze(self, "cuda_qualifiers", string_tuple(CODE, "cuda-qualifiers", self.cuda_qualifiers))
        if not isinstance(self.docstring_only, bool):
            raise option_error(CODE, "docstring-only", "expected a boolean", self.docstring_only, "true or false",
                               "write docstring-only = true or docstring-only = false")


@functools.lru_cache(maxsize=32)
def _name_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """Matches a decorator or base-class expression whose last dotted part is one of ``names``."""
    alternation = "|".join(re.escape(name) for name in names) or r"(?!)"
    return re.compile(rf"^@?\s*(?:[\w.]+\.)?(?:{alternation})\s*(?:[\[(].*)?$", re.DOTALL)


def _first_named(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The first named child (tree-sitter 0.26 raises IndexError for a missing one)."""
    return node.named_child(0) if node.named_child_count else None


def _is_constant(node: tree_sitter.Node) -> bool:
    """A literal value: numbers, strings without interpolation, booleans, None, containers of them."""
    stack = [node]
    while stack:
        current = stack.pop()
        kind = current.type
        if kind == "unary_operator":
            stack.append(current.named_children[-1])
        elif kind in _CONSTANT_LEAVES:
            if kind in ("string", "concatenated_string") and _has_interpolation(current):
                return False
        elif kind in _CONSTANT_CONTAINERS:
            stack.extend(child for child in current.named_children if child.type != "comment")
        else:
            return False
    return True


def _has_interpolation(string: tree_sitter.Node) -> bool:
    stack = [string]
    while stack:
        current = stack.pop()
        if current.type == "interpolation":
            return True
        stack.extend(current.named_children)
    return False


def _raises_not_implemented(statement: tree_sitter.Node) -> bool:
    exception = _first_named(statement)
    if exception is not None and exception.type == "call":
        exception = exception.child_by_field_name("function")
    if exception is not None and exception.type == "attribute":
        exception = exception.child_by_field_name("attribute")
    return exception is not None and exception.type == "identifier" and exception.text.decode() in _NOT_IMPLEMENTED


def _parameter_names(parameters: tree_sitter.Node | None) -> list[str]:
    names = []
    for parameter in parameters.named_children if parameters is not None else ():
        if parameter.type == "identifier":
            names.append(parameter.text.decode())
            continue
        name = parameter.child_by_field_name("name")
        if name is None:  # *args / **kwargs: `list_splat_pattern (identifier)`
            name = next((child for child in parameter.named_children if child.type == "identifier"), None)
        if name is not None:
            names.append(name.text.decode())
    return names


def _python_placeholder(function: tree_sitter.Node, options: StubBodyOptions) -> str | None:
    """What the body is, when it is only a placeholder; None for a real body."""
    body = function.child_by_field_name("body")
    if body is None:
        return None
    statements = [child for child in body.named_children if child.type != "comment"]
    if statements and _is_docstring(statements[0]):
        statements = statements[1:]
        if not statements:
            return "a docstring" if options.docstring_only else None
    if len(statements) != 1:
        return None
    statement = statements[0]
    kind = statement.type
    if kind == "pass_statement":
        return "`pass`"
    if kind == "expression_statement":
        value = _first_named(statement)
        return "`...`" if statement.named_child_count == 1 and value is not None and value.type == "ellipsis" else None
    if kind == "raise_statement":
        return "`raise NotImplementedError`" if _raises_not_implemented(statement) else None
    if kind == "return_statement":
        value = _first_named(statement)
        if value is None or value.type == "none":
            return "`return None`" if value is not None else "a bare `return`"
        if not _is_constant(value):
            return None
        parameters = _parameter_names(function.child_by_field_name("parameters"))
        ignored = [name for name in parameters if name not in _RECEIVERS and not name.startswith("_")]
        if ignored:
            shown = ", ".join(f"`{name}`" for name in ignored)
            return f"a constant `{_one_line(value.text.decode())}` that ignores {shown}"
    return None


def _one_line(text: str, limit: int = 40) -> str:
    """A literal as it fits in a one-line message: whitespace runs collapsed, long ones cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _is_docstring(statement: tree_sitter.Node) -> bool:
    if statement.type != "expression_statement" or statement.named_child_count != 1:
        return False
    value = _first_named(statement)
    return value is not None and value.type in ("string", "concatenated_string")


def _decorator_expression(decorator: tree_sitter.Node) -> str:
    """The decorator's expression without a trailing comment: tree-sitter keeps
    `@overload  # type: ignore[override]` in one decorator node."""
    for child in decorator.named_children:
        if child.type != "comment":
            return child.text.decode()
    return decorator.text.decode()


def _is_declaration(function: tree_sitter.Node, options: StubBodyOptions) -> bool:
    """Abstract/overload members, Protocol members and `if TYPE_CHECKING:` definitions."""
    holder = function.parent
    if holder is not None and holder.type == "decorated_definition":
        decorators = _name_pattern(options.exempt_decorators)
        for decorator in holder.named_children:
            if decorator.type == "decorator" and decorators.match(_decorator_expression(decorator)):
                return True
        holder = holder.parent
    # holder is now the block the definition sits in.
    owner = holder.parent if holder is not None else None
    if owner is not None and owner.type == "class_definition":
        bases = owner.child_by_field_name("superclasses")
        protocol = _name_pattern(options.protocol_bases)
        for base in bases.named_children if bases is not None else ():
            if protocol.match(base.text.decode()):
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

    Not stubs: functions decorated with one of `exempt-decorators` (`@abstractmethod`,
    `@abc.abstractmethod`, `@abstractproperty`, `@overload`, `@typing.overload`, ...), members of
    a class that lists a `protocol-bases` class (`Protocol`, `typing.Protocol`, `Protocol[T]`)
    among its bases, definitions inside `if TYPE_CHECKING:` (declarations for type checkers),
    everything in `.pyi` files, and a `pass` that is not the whole function body (an
    `except: pass` inside a real body).

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
    - `protocol-bases`: base classes whose members are declarations.
    - `docstring-only`: whether a docstring-only body is a stub (default true).
    - `cuda-qualifiers`: CUDA qualifiers whose functions need a body.
    """

    code = CODE
    name = "stub-body"
    summary = "Function body is a placeholder (pass, ..., raise NotImplementedError, constant return)"
    invariant = 9
    languages = frozenset({"python", "cuda"})
    python_nodes = ("function_definition",)
    cuda_nodes = ("function_definition",)
    options_class = StubBodyOptions

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
    ]

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        options: StubBodyOptions = ctx.options(CODE)
        if ctx.language == "cuda":
            self._visit_cuda(node, ctx, options)
            return
        if ctx.source.is_stub_file:
            return
        placeholder = _python_placeholder(node, options)
        if placeholder is None or _is_declaration(node, options):
            return
        name = node.child_by_field_name("name")
        label = name.text.decode() if name is not None else "function"
        ctx.report(
            CODE,
            name if name is not None else node,
            f"`{label}` is a stub: its body is only {placeholder} — invariant 9: finish it or don't start it",
            hint="implement it or delete it; an interface method is @abc.abstractmethod or a Protocol member",
        )

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
