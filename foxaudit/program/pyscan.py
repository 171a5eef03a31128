"""One Python file → a ``ModuleSummary``: the facts every whole-program analysis needs.

Extraction is syntactic and configuration-free (so a summary is cached by file content alone):
imports, definitions, every call with its callee text and literal arguments, assignments that
bind a call result, subscript writes, ``with`` contexts and module constants. Meaning (which
call is a transfer, which name is a kernel, what is reachable) is given later, by the analyses,
from these facts and the settings.

Speed: one tree-sitter query collects the interesting nodes in C; Python touches only those
nodes and walks up their parents (a few levels) to find the enclosing scope.
"""

from __future__ import annotations

import ast
import bisect
import functools
import operator
import re
from collections.abc import Iterable
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import tree_sitter

from foxaudit.sources.base import SourceFile, ts_language
from foxaudit.sources.placeholders import (
    RAISE_NOT_IMPLEMENTED,
    callable_table_keys,
    class_body_statements,
    compared_by_name,
    constant_answer,
    named_object,
    placeholder_body_in,
    stores_its_argument,
)

_MAX_TEXT = 160
# Literal containers with more named children (elements) than this are data: a list or tuple is
# an Arg of kind "large", and the dict entries inside any of them are not recorded.
_MAX_ITEMS = 1000
_R = TypeVar("_R")
_QUERY_TEXT = """
(import_statement) @import
(import_from_statement) @from
(function_definition) @def
(class_definition) @class
(call) @call
(with_statement) @with
(assignment) @assign
(augmented_assignment) @augassign
(yield) @yield
(pair) @pair
(lambda) @lambda
(decorated_definition) @decorated
(comparison_operator) @compare
(pair key: (attribute attribute: (identifier) @name_dunder) @named_key (#any-of? @name_dunder "__name__" "__qualname__"))
[(list) (tuple) (set) (dictionary)] @container
((if_statement condition: (_) @condition consequence: (_) @type_checking)
 (#any-of? @condition "TYPE_CHECKING" "typing.TYPE_CHECKING"))
"""


# What the scanner walks the tree for; the per-file pass runs it in its own walk when it will
# summarise the file (``scan_python(captures=...)``).
SCAN_QUERY = _QUERY_TEXT
# What an index alone reads (``scan_python(body=False)``): the dict entries, the literal containers
# (read only to leave out the entries of large ones) and augmented assignments are the body's.
# Their captures were ≈ 15 % of a pandas file's walk: on a tree whose summaries are made as indexes
# alone the per-file pass runs this query instead. Either set of captures makes the same index.
SCAN_INDEX_QUERY = "\n".join(
    line for line in _QUERY_TEXT.split("\n") if not line.endswith(("@pair", "@container", "@augassign"))
)


@functools.cache
def _query() -> tree_sitter.Query:
    return tree_sitter.Query(ts_language("python"), _QUERY_TEXT)


class _Fields:
    """The Python grammar's ids of the fields the scanner reads: ``child_by_field_id(f.name)`` is
    ``child_by_field_name("name")`` without looking the name up among the grammar's fields on
    every call (≈ 1.3 → 0.45 µs a lookup; a pandas module's scan makes ≈ 2,000)."""

    alias: int
    arguments: int
    attribute: int
    body: int
    condition: int
    definition: int
    function: int
    key: int
    left: int
    module_name: int
    name: int
    object: int
    operator: int
    parameters: int
    right: int
    subscript: int
    superclasses: int
    type: int
    value: int


@functools.cache
def _fields() -> _Fields:
    language = ts_language("python")
    fields = _Fields()
    for name in _Fields.__annotations__:
        found = language.field_id_for_name(name)
        if found is None:
            raise ValueError(f"the Python grammar has no field {name!r} — hint: update the scanner for this tree-sitter-python")
        setattr(fields, name, found)
    return fields


@dataclass(frozen=True)
class Arg:
    """An argument as far as static reading tells: its kind, text and literal value."""

    kind: str  # str | fstring | int | float | name | attribute | call | list (list, tuple, set) | large | concat | comprehension | other
    text: str
    # str/int/float for literals; tuple of Args for a list/tuple literal and for the operands of
    # a `+` chain (concat); (element, variable, iterable) for a one-clause comprehension; the two
    # branches of a conditional expression (kind other) when one of them is an fstring or concat.
    # A list or tuple of more than _MAX_ITEMS elements is kind "large" with its text alone: data
    # (a generated table), never a list of names, and expanding it made a 5 MB module's summary
    # 44 MB.
    value: object = None
    dotted: str = ""  # for name/attribute/call: the dotted callee or name


class Span(NamedTuple):
    """A source range, 1-based (``end_column`` one past the last character).

    A tuple of its four numbers: the summary codec writes it as a JSON array without a call back
    into Python and reads it back with ``tuple.__new__`` (a summary holds about as many spans as
    every other record together).
    """

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class ImportRef:
    """``import a.b`` (names empty) or ``from a import x`` (module ``a``, names ``x``)."""

    module: str  # absolute dotted module (relative imports resolved), '' if unresolvable
    names: tuple[tuple[str, str], ...]  # (imported name, local alias) for from-imports
    alias: str  # for plain imports: the local name bound ('' → first component)
    span: Span
    type_checking: bool
    dynamic: bool = False  # importlib.import_module / __import__ with a literal
    scope: str = ""


@dataclass(frozen=True)
class Call:
    func: str  # dotted callee text ('self.env.step', 'torch.cuda.synchronize'); '' when complex
    method: str  # last name of the callee ('step', 'item')
    receiver: str  # source text of the receiver ('self.env', 'x[0]'), '' for a bare name
    receiver_kind: str  # name | attribute | call | subscript | other | ''
    receiver_call: str  # when the receiver is a call: its dotted callee
    args: tuple[Arg, ...]
    kwargs: tuple[tuple[str, Arg], ...]
    span: Span
    scope: str  # qualified name of the enclosing function ('' at module level)
    withs: tuple[int, ...]  # ids of the enclosing `with` statements, innermost first
    called: bool = False  # the result is called at once: f(x)(...)
    bound_to: str = ""  # 'name' or 'self.attr' when the result is assigned
    subscript_base: str = ""  # receiver is `base[index]`: base text
    subscript_index: str = ""

    def kwarg(self, name: str) -> Arg | None:
        for key, value in self.kwargs:
            if key == name:
                return value
        return None


@dataclass(frozen=True)
class WithBlock:
    id: int
    scope: str
    contexts: tuple[Call, ...]  # the context expressions that are calls
    context_names: tuple[str, ...]  # context expressions that are plain names/attributes
    span: Span


@dataclass(frozen=True)
class Function:
    qualname: str  # 'f', 'Class.method', 'outer.inner'
    name: str
    class_name: str  # qualname of the enclosing class, '' for functions
    params: tuple[str, ...]
    annotations: tuple[tuple[str, str], ...]  # param → annotation text
    decorators: tuple[str, ...]  # dotted text of each decorator (call arguments dropped)
    span: Span
    is_generator: bool
    # The body only stands in for one (foxaudit.sources.placeholders): `pass`, `...`, a
    # docstring, `raise NotImplementedError`, a constant return.
    placeholder: bool = False
    # The constant such a body returns (`return "math.inf"`), "" otherwise: classes of one
    # family that return different constants answer the method, each in its own way.
    answer: str = ""
    # The body is (or includes) `raise NotImplementedError`: a refusal or an interface, where a
    # placeholder that does not raise (`return None`, `pass`) answers the method.
    raises_not_implemented: bool = False
    # A module-level function that stores its argument in a table (`available_events[f.__name__]
    # = f`, a factory's inner `VIEWS[name] = (f, template)`): as a decorator it registers what
    # it decorates, whose body is then that table's entry (foxaudit.sources.placeholders).
    stores_argument: bool = False


@dataclass(frozen=True)
class ClassDef:
    qualname: str
    bases: tuple[str, ...]
    decorators: tuple[str, ...]
    fields: tuple[str, ...]  # annotated class attributes, in order (dataclass parameters)
    span: Span
    # Names the class body binds by assignment (`set_device = staticmethod(torch.cuda.set_device)`),
    # also in its `if`/`try`/`with` blocks: members a subclass inherits just as it inherits methods.
    attributes: tuple[str, ...] = ()
    # String keys of the tables of callables the class body binds (`_constructors = {"eval_inner":
    # lambda obj: obj._make_eval_inner()}`): members the class builds under those names at run time.
    table_members: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assignment:
    """``target = <value>`` where the value is a call or a literal (targets: name or self.attr)."""

    target: str  # 'x' or 'self.x' or 'x.y'
    scope: str
    value: Arg
    call: Call | None
    span: Span


@dataclass(frozen=True)
class SubscriptWrite:
    """``base[index] = v`` / ``base[index] += v`` / ``base[index].fill_(v)``."""

    base: str
    index: str
    index_names: tuple[str, ...]
    scope: str
    span: Span
    how: str  # '=' | '+=' | method name
    value: str = ""  # source text of the assigned value ('' for in-place methods)
    key: object = None  # the index when it is one literal (a dict key such as named["env.ps"])


@dataclass(frozen=True)
class DictEntry:
    """``{"key": value}`` with a literal key (how classes expose their tensors by name)."""

    key: object
    value: str
    scope: str
    span: Span


_new = object.__new__
_set = object.__setattr__
_new_tuple = tuple.__new__


def _built(cls: type[_R], fields: dict[str, object]) -> _R:
    """``cls(**fields)`` for a frozen record without the generated ``__init__``'s
    ``object.__setattr__`` per field (a quarter of the scan's time: pandas' summaries hold about
    a million records). ``fields`` names every field, as the codec's decoder fills them
    (``foxaudit.program.codec._record``); the records have no ``__post_init__``."""
    record = _new(cls)
    _set(record, "__dict__", fields)
    return record


# A quoted relative path of a Python file: the tail `.py"` is found first (a literal, fast), then
# the opening quote behind it.
_PY_FILE_TAIL = re.compile(r"""\.py(["'])""")
_RELATIVE_PY_PATH = re.compile(r"(?:\.{1,2}/)*[\w-][\w.-]*(?:/[\w.-]+)*")


def _python_file_literals(text: str) -> frozenset[str]:
    """The quoted relative ``.py`` paths written in ``text`` (``../`` allowed; no URL, no absolute path)."""
    if ".py" not in text:
        return frozenset()
    found: set[str] = set()
    for match in _PY_FILE_TAIL.finditer(text):
        opening = text.rfind(match.group(1), max(0, match.start() - _MAX_REFERENCE), match.start())
        literal = text[opening + 1 : match.start()] + ".py" if opening >= 0 else ""
        if literal and _RELATIVE_PY_PATH.fullmatch(literal):
            found.add(literal)
    return frozenset(found)


def _span(line: int, column: int, end_line: int, end_column: int) -> Span:
    return _new_tuple(Span, (line, column, end_line, end_column))


def _ascii_text(text: str) -> Callable[[tree_sitter.Node], str]:
    """A node's text in a file whose byte offsets are character offsets: a slice of ``text``."""

    def node_text(node: tree_sitter.Node) -> str:
        return text[node.start_byte : node.end_byte]

    return node_text


def _ascii_span(node: tree_sitter.Node) -> Span:
    """A node's span in such a file: tree-sitter's (row, byte column) is (line - 1, column - 1)."""
    (row, column), (end_row, end_column) = node.start_point, node.end_point
    return _new_tuple(Span, (row + 1, column + 1, end_row + 1, end_column + 1))


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _char_offsets(text: str) -> Callable[[int], int]:
    """Byte offset (in ``text`` encoded as UTF-8) → character offset in ``text``, for offsets on
    character boundaries (where tree-sitter's nodes start and end)."""
    after: list[int] = []  # the byte offset just after each non-ASCII character
    extra: list[int] = []  # the bytes beyond one per character up to there
    total = 0
    for match in _NON_ASCII.finditer(text):
        size = len(match.group().encode("utf-8"))
        after.append(match.start() + total + size)
        total += size - 1
        extra.append(total)

    def char_at(offset: int) -> int:
        index = bisect.bisect_right(after, offset) - 1
        return offset if index < 0 else offset - extra[index]

    return char_at


def _mapped_text(text: str, char_at: Callable[[int], int]) -> Callable[[tree_sitter.Node], str]:
    """A node's text in a file with non-ASCII characters: a slice of ``text``."""

    def node_text(node: tree_sitter.Node) -> str:
        return text[char_at(node.start_byte) : char_at(node.end_byte)]

    return node_text


def _mapped_span(char_at: Callable[[int], int]) -> Callable[[tree_sitter.Node], Span]:
    """A node's span in such a file without carriage returns: tree-sitter's row is the line - 1,
    and its byte column is where the line starts."""

    def span(node: tree_sitter.Node) -> Span:
        start, end = node.start_byte, node.end_byte
        (row, column), (end_row, end_column) = node.start_point, node.end_point
        return _new_tuple(Span, (
            row + 1, char_at(start) - char_at(start - column) + 1, end_row + 1, char_at(end) - char_at(end - end_column) + 1,
        ))  # fmt: skip

    return span


# The scanner builds calls, arguments, assignments, subscript writes, dict entries and `with`
# blocks as the arrays the codec writes for those records (their fields in declaration order,
# a literal's value in the tagged form: ``foxaudit.program.codec``), so a summary is encoded by
# the C JSON encoder without a call back into Python per record, and no record object is built
# in the worker that only encodes it; ``foxaudit.program.codec.raw_member`` turns them into the
# lazy fields a ModuleSummary decodes when an analysis reads them (a test checks these
# positions against the records' fields).
_KIND, _TEXT, _VALUE = 0, 1, 2  # of an Arg: kind, text, value, dotted
_FUNC, _METHOD, _SCOPE, _BOUND_TO = 0, 1, 8, 11  # of a Call
_CONTEXTS = 2  # of a WithBlock
# Integers of this many bits or more are written in the tagged form as hex text (["i", "0x…"]):
# their decimal form passes CPython's 4,300-digit limit.
LONG_INT_BITS = 14_000
_RECEIVER_KINDS = {"identifier": "name", "attribute": "attribute", "call": "call", "subscript": "subscript"}


def _tagged_number(value: float) -> object:
    """A literal number as the codec's tagged form writes it."""
    if type(value) is int and value.bit_length() >= LONG_INT_BITS:
        return ["i", hex(value)]
    return value


# Methods and names whose calls may be host transfers or syncs (hotpath._transfer_kind decides);
# a summary keeps these calls in its index, so that pass never needs a module's full body.
TRANSFER_METHODS = frozenset({
    "item", "cpu", "numpy", "tolist", "to", "synchronize", "get", "asnumpy", "deviceSynchronize",
    "asarray", "array", "asanyarray", "nonzero", "argwhere", "masked_select", "unique", "where",
})
TRANSFER_BUILTINS = frozenset({"print", "float", "int", "bool"})
# Callees whose literal argument names a module the call imports (an ImportRef of the index).
_DYNAMIC_IMPORTS = frozenset({"importlib.import_module", "import_module", "__import__"})
# PEP 723 inline script metadata: `# /// script` opens it (`uv run x.py`, `pipx run x.py`).
_INLINE_SCRIPT_METADATA = re.compile(r"^# /// script[ \t]*$", re.MULTILINE)
# A command line before a file name: a Python runner (`python`, `python3.11`, `pypy`, `streamlit
# run`), or a flag (`mitmproxy -s`, `mitmdump -s`, `locust -f`), then an optional folder path.
_COMMAND_BEFORE_A_FILE = r"(?:(?<![\w.-])(?:python[\d.]*|pypy3?|py|run)\s+(?:-{1,2}[\w-]+\s+)*|\s-{1,2}[\w-]+[ =])(?:[\w.~-]*/)*"


def _gives_its_own_command(text: str, path: str) -> bool:
    """The module's text shows the command line that runs it by its own file name (mitmproxy's
    addons: `Run as follows: mitmproxy -s anatomy.py`; `Usage: python tools/make_index.py`)."""
    basename = path.rpartition("/")[2]
    if basename == "__init__.py" or basename not in text:
        return False
    return re.search(_COMMAND_BEFORE_A_FILE + re.escape(basename) + r"(?![\w.-])", text) is not None
# A quoted `module.path:Name` reference, the whole string (`"app.agents.remote:RemoteAgent"`).
# and a quoted dotted path to a class, `"src.models.s4block.S4Block"` (a registry that `hydra.utils.
# get_class`/`get_method` or `pydoc.locate` resolves; its module part two parts or more): the tail
# of each, and what the module part must be.
_REFERENCE_TAIL = re.compile(r"""(?::[A-Za-z_]\w*|\.[A-Z]\w*)(["'])""")
_DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_MAX_REFERENCE = 256
# What precedes a quoted annotation: `name:` (not a dict's `"key":`), `->`, `Optional[`, `Union[x, `.
_ANNOTATION_BEFORE = re.compile(r"(?:[\w\])]\s*:|->|\w\[|\w\[[^\[\]\"']*,)\s*$")
_BODY = ("calls", "assignments", "subscript_writes", "dict_entries")
# The encoded body of a summary made as an index alone (``scan_python(body=False)``): its body is
# scanned when an analysis first reads it (``ModuleSummary.rescan_with``).
UNSCANNED = b""
# ModuleSummary's own attributes, which are no summary fields (not encoded, not compared).
NOT_FIELDS = ("_body", "_blob", "_rescan", "_digest", "body_digest")


class Encoded:
    """An index field as the codec read it from a cache entry (its JSON text, not yet parsed; or
    a function that reads that text from the entry when first asked), decoded on first use by
    ``read``; a damaged one reads as ``empty`` (as a damaged body does)."""

    __slots__ = ("_raw", "read", "empty")

    def __init__(self, raw: bytes | Callable[[], bytes], read: Callable[[object], object], empty: object):
        self._raw = raw
        self.read = read
        self.empty = empty

    @property
    def raw(self) -> bytes:
        if type(self._raw) is not bytes:
            self._raw = self._raw()  # type: ignore[operator]
        return self._raw  # type: ignore[return-value]


class _DecodedOnRead:
    """A ModuleSummary index field that may hold an ``Encoded`` value until it is first read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> object:
        if instance is None:
            return self
        value = instance.__dict__[self.name]
        if type(value) is Encoded:
            import json

            try:
                value = value.read(json.loads(value.raw))
            except (ValueError, TypeError, AttributeError, IndexError, KeyError, RecursionError):
                value = value.empty  # CodecError included: a damaged member reads empty
            instance.__dict__[self.name] = value
        return value

    def __set__(self, instance: object, value: object) -> None:
        instance.__dict__[self.name] = value


class ModuleSummary:
    """One module's facts in two tiers, so a large tree is not decoded whole on every run.

    The *index* (imports, definitions, ``with`` blocks, constants, the set of called method names
    and callee heads, the calls that may be transfers, what the module-level calls are) is read
    with the summary. The *body* (every
    call, assignment, subscript write and dict entry) stays encoded bytes (``foxaudit.program.codec``)
    until an analysis first reads one of those lists; analyses consult the index to skip modules
    that cannot matter (on pandas most modules' bodies are never decoded). A summary made as an
    index alone (``scan_python(body=False)``) has no body yet: it is scanned on that first read
    (``rescan_with``). Either way the lists hold the same facts.
    """

    # Index fields left encoded (not even parsed) in a loaded summary until an analysis reads
    # them: they are most of an index's bytes, and after an edit the analyses read them for few
    # modules. The program model names functions from ``function_names``/``method_names`` and
    # decodes a module's functions when a lookup first reaches it; the hot path reads the
    # decorators and ``with`` contexts' callees from ``decorators``/``with_funcs`` and decodes
    # ``functions``/``withs`` only where one could make a root or a captured region; it reads the
    # transfer calls only when something is hot; constants are read where a name is resolved.
    # The names of functions and methods, the callee heads, the imports and the names a module
    # binds are read for a module only where a lookup or a name's resolution reaches it (the hot
    # path asks ``imported_names`` whether a module from-imports a name), so they are lazy too.
    LAZY = (
        "functions", "withs", "constants", "transfer_calls", "function_names", "method_names", "call_heads",
        "imports", "defined_names",
    )  # fmt: skip
    functions = _DecodedOnRead()
    withs = _DecodedOnRead()
    constants = _DecodedOnRead()
    transfer_calls = _DecodedOnRead()
    function_names = _DecodedOnRead()
    method_names = _DecodedOnRead()
    call_heads = _DecodedOnRead()
    imports = _DecodedOnRead()
    defined_names = _DecodedOnRead()

    def __init__(self, path: str):
        self.path = path
        self.imports: list[ImportRef] = []
        self.functions: list[Function] = []
        self.classes: list[ClassDef] = []
        self.withs: list[WithBlock] = []
        self.constants: dict[str, Arg] = {}  # module-level NAME = literal
        self.defined_names: set[str] = set()  # module-level names bound
        self.has_main_guard = False
        # "pep723": a `# /// script` block; "shebang": a `#!…python…` first line; "command": the
        # text gives the command line that runs the file by its own name (`mitmproxy -s x.py`)
        self.run_by_path = ""
        self.call_methods: frozenset[str] = frozenset()  # last callee name of every call
        self.call_heads: frozenset[str] = frozenset()  # first part of every dotted callee
        self.transfer_calls: tuple[Call, ...] = ()  # calls named like a transfer or sync (in order)
        # (callee, method, bound or tested) of each call at module level (class bodies included):
        # what importing the module runs, readable without the body. A call whose result is
        # assigned to a name, or tested by an `if`/`while` condition or an `assert`, computes a
        # value; any other (`main()`, `addons = [Search()]`, a decorator) does work at import.
        self.module_calls: frozenset[tuple[str, str, bool]] = frozenset()
        # Dotted names an `is` / `is not` compares against (`fn is markers.graph_break`), and the
        # objects whose `__name__`/`__qualname__` a `==`/`in` compares or a dict key reads
        # (`callee == _get_trial_arg.__name__`): values the code tells apart by identity or by
        # name — sentinels, and marker functions an interpreter or rewriter intercepts.
        self.identities: frozenset[str] = frozenset()
        # Dotted names of what the module fetches attributes of by a computed name into a variable
        # (`pyfunc = getattr(libdevice, func[5:])`): a module whose functions are a table's values.
        self.fetched: frozenset[str] = frozenset()
        # (callee, line) of the module-level calls made in an expression statement (`Edge(n1, n2)`,
        # `asyncio.run(main())`, `session.add(Company(...))`), not in an assignment (`app =
        # App(middleware=[Timeout(5)])`), a condition or a decorator.
        self.statement_calls: frozenset[tuple[str, int]] = frozenset()
        # Quoted relative paths of Python files the module's text writes (`"eval.py"`,
        # `"examples/x.py"`): files a test reads or runs as data (``wiring``'s test data).
        self.file_literals: frozenset[str] = frozenset()
        # Over the lazy fields, read without them (see LAZY):
        self.function_names: frozenset[str] = frozenset()  # ``name`` of every function
        self.method_names: frozenset[str] = frozenset()  # ``name`` of every method
        self.decorators: frozenset[str] = frozenset()  # every decorator text of every function
        self.with_funcs: frozenset[str] = frozenset()  # the callee of every call a ``with`` enters
        # The last name of what an import binds under a name of its own: each name a from-import
        # imports, and an aliased module's (``import a.b as c``: ``b``).
        self.imported_names: frozenset[str] = frozenset()
        self._body: dict[str, list] | None = {name: [] for name in _BODY}
        # The encoded body (or a function that reads it from the cache entry) until first read.
        self._blob: bytes | Callable[[], bytes] | None = None
        # What makes the body of a summary that has none yet (``UNSCANNED``): a scan of its file.
        self._rescan: Callable[[], bytes] | None = None
        # The sha256 (hex) of the encoded body an analysis read, once one did, where the run
        # records what its findings depend on beside the indexes (``foxaudit.engine.run``).
        self._digest = False
        self.body_digest = ""

    @classmethod
    def from_index(cls, index: dict[str, object], body: bytes | Callable[[], bytes]) -> ModuleSummary:
        """A summary from decoded index fields and the still-encoded body (a cache entry).

        Every index field must be present with the type a scan gives it; anything else is a
        ValueError (the codec's callers treat it as a cache miss).
        """
        summary = cls("")
        expected = {name: type(value) for name, value in vars(summary).items() if name not in NOT_FIELDS}
        if index.keys() != expected.keys() or any(
            type(index[name]) is not kind and not (name in cls.LAZY and type(index[name]) is Encoded) for name, kind in expected.items()
        ):
            raise ValueError("summary index fields differ from this version's")
        summary.__dict__.update(index)
        summary.encoded_body(body)  # type: ignore[arg-type]
        return summary

    def encoded_body(self, blob: bytes | Callable[[], bytes]) -> None:
        """Hold ``blob`` (the codec's body, or a function that reads it from a cache entry) as
        the body, decoded when an analysis first reads it; ``UNSCANNED`` for none yet."""
        self._body = None
        self._blob = blob

    def rescan_with(self, scan: Callable[[], bytes], *, digest: bool = False) -> None:
        """``scan`` makes the encoded body when it is ``UNSCANNED`` (an index-only summary) and
        an analysis first reads it; ``digest``: keep the read body's ``body_digest``."""
        self._rescan = scan
        self._digest = digest

    def body_bytes(self) -> bytes:
        """The body in the codec's format (what a cache entry stores)."""
        from foxaudit.program.codec import encode_body

        if self._body is None:
            if type(self._blob) is not bytes:
                self._blob = self._blob()  # type: ignore[misc]
            return self._blob  # type: ignore[return-value]
        return encode_body(self._body)

    def _loaded(self) -> dict[str, list]:
        if self._body is None:
            import hashlib

            from foxaudit.program.codec import CodecError, decode_body

            blob = self.body_bytes()
            if blob == UNSCANNED and self._rescan is not None:
                blob = self._blob = self._rescan()
            if self._digest:
                self.body_digest = hashlib.sha256(blob).hexdigest()
            try:
                body = decode_body(blob)
            except CodecError:
                # A damaged cache entry whose index decoded: its body reads as empty (the file's
                # next change, or --no-cache, rescans it) rather than failing every analysis.
                body = {}
            self._body = {name: body[name] if isinstance(body.get(name), list) else [] for name in _BODY}
            self._blob = None
        return self._body

    @property
    def body_loaded(self) -> bool:
        return self._body is not None

    @property
    def calls(self) -> list[Call]:
        return self._loaded()["calls"]

    @property
    def assignments(self) -> list[Assignment]:
        return self._loaded()["assignments"]

    @property
    def subscript_writes(self) -> list[SubscriptWrite]:
        return self._loaded()["subscript_writes"]

    @property
    def dict_entries(self) -> list[DictEntry]:
        return self._loaded()["dict_entries"]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModuleSummary):
            return NotImplemented
        for summary in (self, other):
            for name in self.LAZY:
                getattr(summary, name)  # decoded: an encoded field compares by its records
        mine = {key: value for key, value in self.__dict__.items() if key not in NOT_FIELDS}
        theirs = {key: value for key, value in other.__dict__.items() if key not in NOT_FIELDS}
        return mine == theirs and self._loaded() == other._loaded()

    __hash__ = None  # type: ignore[assignment]


def scan_python(
    source: SourceFile,
    module: str,
    is_package: bool,
    captures: dict[str, list[tree_sitter.Node]] | None = None,
    *,
    body: bool = True,
) -> ModuleSummary:
    """Summarise one Python file. ``module`` is its dotted name (for relative imports);
    ``captures``: those of ``SCAN_QUERY`` on ``source``'s tree, when a walk already found them
    (they are consumed), else the scanner runs the query itself.

    ``body=False`` makes the index alone (every index field as a full scan makes it) and leaves
    the body unscanned (``ModuleSummary.scanned_body``): the whole-program pass reads few
    modules' bodies on most trees (18 of pandas' 1,440), and the calls' arguments,
    assignments, subscript writes and dict entries are most of a scan's work."""
    return _Scanner(source, module, is_package, body).run(captures)


class _Scanner:
    def __init__(self, source: SourceFile, module: str, is_package: bool, body: bool = True):
        self.source = source
        self.body = body
        self.f = _fields()
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.summary = ModuleSummary(path=source.path)
        # Texts and positions come from the decoded text, not by decoding bytes per node: an
        # ASCII file's byte offsets are character offsets, and another's are mapped through its
        # non-ASCII characters. (A lone carriage return may count as a line break for
        # tree-sitter: such a file's positions take the byte-offset path of SourceFile.position.)
        if len(source.text) == len(source.data):
            self.text = _ascii_text(source.text)  # type: ignore[method-assign]
            if b"\r" not in source.data:
                self.span = _ascii_span  # type: ignore[method-assign]
        else:
            char_at = _char_offsets(source.text)
            self.text = _mapped_text(source.text, char_at)  # type: ignore[method-assign]
            if b"\r" not in source.data:
                self.span = _mapped_span(char_at)  # type: ignore[method-assign]
        self.with_ids: dict[int, int] = {}
        self.scopes: dict[int, tuple[str, str]] = {}
        self.calls_by_range: dict[tuple[int, int], list] = {}  # the array of each call (see _KIND)
        self.call_positions: dict[tuple[int, int], int] = {}  # each call's position in ``calls``
        # Facts about a node's parent, gathered from the parents' side before the calls are read:
        # ``node.parent`` costs tree-sitter a descent from the root (≈ 15 µs per call site).
        self.called: set[tuple[int, int]] = set()  # calls that are the callee of a call: f(x)(y)
        self.bound_to: dict[tuple[int, int], str] = {}  # call range → the target it is assigned to
        self.decorated: dict[int, tuple[str, ...]] = {}  # definition id → its decorators' texts
        self.dotted_memo: dict[int, str] = {}
        self.nested_scopes: dict[int, tuple[str, str]] = {}  # nesting index → scope_at()
        # nesting index → the `with` statements around it up to the nearest function, class or
        # lambda, innermost first: (with id, body start, body end).
        self.with_chains: dict[int, tuple[tuple[int, int, int], ...]] = {}
        self.type_checking: list[tuple[int, int]] = []  # byte ranges of `if TYPE_CHECKING:` bodies
        # The records the codec writes as arrays (see ``_KIND``), kept as those arrays:
        self.calls: list[list] = []
        self.withs: list[list] = []
        self.constants: dict[str, list] = {}  # module-level NAME = literal
        self.assignments: list[list] = []
        self.subscript_writes: list[list] = []
        self.dict_entries: list[list] = []
        # An index alone (``body`` False): (callee, method, scope, bound to) of every call, what
        # ``finish`` reads of the calls; the calls that need a whole record for the index
        # (``call``): `with` contexts by range, and the imports' renamed names.
        # (callee, method, scope, bound to — or "(tested)" for a module-level call in a condition
        # or an assert) of every call, in the order scanned
        self.callees: list[tuple[str, str, str, str]] = []
        self.tested_memo: dict[int, Any] = {}  # node id → ``tested_at_module_level``'s answer for what it holds
        self.with_values: set[tuple[int, int]] = set()
        self.renamed: dict[str, str] = {}
        self.index_funcs = TRANSFER_BUILTINS | _DYNAMIC_IMPORTS
        self.fetched: set[str] = set()  # ``ModuleSummary.fetched``'s names (``fetched_by_name``)
        self.statement_calls: set[tuple[str, int]] = set()  # ``ModuleSummary.statement_calls``
        self.statement_memo: dict[int, Any] = {}  # node id → ``in_expression_statement``'s answer

    # -- helpers ------------------------------------------------------------------------
    # ``text`` and ``span`` are called for most nodes the scan reads: an ASCII file's are
    # closures over its text chosen once (``_ascii_text``, ``_ascii_span``), not a test per call.
    def text(self, node: tree_sitter.Node) -> str:
        return self.source.node_text(node)

    def span(self, node: tree_sitter.Node) -> Span:
        line, column = self.source.position(node.start_byte)
        end_line, end_column = self.source.position(node.end_byte)
        return _span(line, column, end_line, end_column)

    def scope_of(self, node: tree_sitter.Node) -> tuple[str, str]:
        """(qualified function scope, qualified class scope) enclosing ``node``."""
        return self.scope_at(self.nesting.innermost(node))

    def scope_at(self, index: int) -> tuple[str, str]:
        """The scopes inside nesting node ``index`` (-1: the module), memoised per node: a
        ``with`` or ``lambda`` has the scopes of what encloses it."""
        if index < 0:
            return "", ""
        found = self.nested_scopes.get(index)
        if found is None:
            nesting = self.nesting
            if nesting.types[index] in ("function_definition", "class_definition"):
                found = self._definition_scope(nesting.nodes[index])
            else:
                found = self.scope_at(nesting.parents[index])
            self.nested_scopes[index] = found
        return found

    def _definition_scope(self, definition: tree_sitter.Node) -> tuple[str, str]:
        """Scopes *inside* ``definition`` (memoised per definition node)."""
        cached = self.scopes.get(definition.id)
        if cached is not None:
            return cached
        outer_func, outer_class = self.scope_of(definition)
        name_node = definition.child_by_field_id(self.f.name)
        name = self.text(name_node) if name_node is not None else "?"
        outer = outer_func if len(outer_func) >= len(outer_class) else outer_class
        qual = f"{outer}.{name}" if outer else name
        if definition.type == "function_definition":
            result = (qual, outer_class)
        else:
            result = (outer_func, qual)
        self.scopes[definition.id] = result
        return result

    def dotted(self, node: tree_sitter.Node | None) -> str:
        if node is None:
            return ""
        kind = node.type
        if kind == "identifier":
            return self.text(node)
        if kind != "attribute" and kind != "call":
            return ""
        # Memoised: a chain `a.b().c().d()` asks for each link's prefix once per call in it.
        memo = self.dotted_memo
        found = memo.get(node.id)
        if found is not None:
            return found
        # Down the chain to its head (a name, something else, or a link already known), then
        # back up, link by link: a loop, not a recursion, so a chain of any length is read
        # (and reads the same in a summary with a body and in an index alone).
        f = self.f
        chain = [node]
        while True:
            link = chain[-1]
            inner = link.child_by_field_id(f.object if link.type == "attribute" else f.function)
            inner_type = inner.type if inner is not None else ""
            if inner_type == "identifier":
                found = self.text(inner)  # type: ignore[arg-type]
                break
            if inner_type != "attribute" and inner_type != "call":
                found = ""
                break
            known = memo.get(inner.id)  # type: ignore[union-attr]
            if known is not None:
                found = known
                break
            chain.append(inner)  # type: ignore[arg-type]
        for link in reversed(chain):
            if link.type == "attribute":
                attr = link.child_by_field_id(f.attribute)
                found = f"{found}.{self.text(attr)}" if found and attr is not None else ""
            else:
                found = f"{found}()" if found else ""
            memo[link.id] = found
        return found

    def arg(self, node: tree_sitter.Node) -> list:
        """The ``Arg`` of an expression, as the codec writes it (see ``_KIND``)."""
        kind = node.type
        text = self.text(node)
        if len(text) > _MAX_TEXT and kind not in ("string", "concatenated_string"):
            # Long expressions (lambdas, nested calls) are only ever displayed: keep summaries small.
            text = text[:_MAX_TEXT] + "…"
        if kind == "string" or kind == "concatenated_string":
            # An interpolation needs a brace: most strings skip the walk over their parts.
            if "{" in text and any(child.type == "interpolation" for child in _descendants_shallow(node)):
                return ["fstring", text, None, ""]
            value = _plain_string(text)
            if value is None:
                try:
                    value = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    return ["other", text, None, ""]
            if isinstance(value, bytes):
                value = value.decode("utf-8", errors="replace")
            return ["str", text, value, ""]
        # (The kinds below are tested by how often they occur.)
        if kind == "identifier":
            return ["name", text, None, text]
        if kind == "attribute":
            return ["attribute", text, None, self.dotted(node)]
        if kind == "call":
            return ["call", text, None, self.dotted(node.child_by_field_id(self.f.function))]
        if kind == "integer":
            if text.isdigit():
                return ["int", text, _tagged_number(int(text)), ""]
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return ["other", text, None, ""]
            # tree-sitter calls `1j` an integer too: an imaginary literal is no int constant.
            return ["int", text, _tagged_number(value), ""] if type(value) is int else ["other", text, None, ""]
        if kind == "float":
            try:
                return ["float", text, float(text.replace("_", "")), ""]
            except ValueError:
                return ["other", text, None, ""]
        if kind == "unary_operator" and text.startswith("-"):
            inner = node.named_children[0] if node.named_children else None
            if inner is not None and inner.type in ("integer", "float"):
                value = self.arg(inner)[_VALUE]
                if type(value) is list:  # a long integer in the tagged form
                    value = int(value[1], 16)
                if isinstance(value, (int, float)):
                    return [inner.type if inner.type == "float" else "int", text, _tagged_number(-value), ""]
        if kind in ("list", "tuple", "set"):
            if node.named_child_count > _MAX_ITEMS:
                return ["large", text, None, ""]
            items = ["t", *(["Arg", *self.arg(child)] for child in node.named_children if child.type != "comment")]
            return ["list", text, items, ""]
        if kind == "binary_operator" and _is_concat(node, self.f):
            # PREAMBLE + r"""...""" (CuPy sources), ['a'] + [f'k<{t}>' for t in T] (names):
            # the operands, flattened, so the analyses can join what is literal. `a + b + c` nests
            # to the left: its spine is walked in a loop (a chain of any length is read).
            spine = [node]
            while True:
                left = spine[-1].child_by_field_id(self.f.left)
                # (An operand with a side missing reads as "other" on its own, as it always did.)
                if left is None or left.type != "binary_operator" or not _is_concat(left, self.f) or None in (
                    left.child_by_field_id(self.f.left), left.child_by_field_id(self.f.right)
                ):
                    break
                spine.append(left)
            parts: list = ["t"]
            for side in (left, *(link.child_by_field_id(self.f.right) for link in reversed(spine))):
                if side is None:
                    return ["other", text, None, ""]
                part = self.arg(side)
                if part[_KIND] == "concat":
                    parts.extend(part[_VALUE][1:])  # its operands, already in the nested form
                else:
                    parts.append(["Arg", *part])
            return ["concat", text, parts, ""]
        if kind in ("list_comprehension", "generator_expression"):
            # [f'k<{t}>' for t in TYPES]: the element and, for one `for` clause, its variable and
            # iterable (a literal list expands; anything else stays unresolved).
            # With several clauses or a tuple target the variable is '' (nothing expands, but
            # f'k<{x}, {y}>' still names k).
            body = node.child_by_field_id(self.f.body)
            clauses = [child for child in node.named_children if child.type in ("for_in_clause", "if_clause")]
            if body is not None and clauses and clauses[0].type == "for_in_clause":
                left = clauses[0].child_by_field_id(self.f.left)
                right = clauses[0].child_by_field_id(self.f.right)
                if left is not None and right is not None:
                    single = len(clauses) == 1 and left.type == "identifier"
                    variable = ["Arg", "name", self.text(left) if single else "", None, ""]
                    return ["comprehension", text, ["t", ["Arg", *self.arg(body)], variable, ["Arg", *self.arg(right)]], ""]
        if kind == "conditional_expression" and len(node.named_children) == 3:
            # `"_pytest." + name if name in builtin else name`: a module name built on one branch.
            # Kind "other" as any expression; the built branches are kept as its value so the
            # dynamic-import reading can take the one that names a package (none: value None).
            branches = [self.arg(node.named_children[0]), self.arg(node.named_children[2])]
            if any(branch[_KIND] in ("fstring", "concat") for branch in branches):
                return ["other", text, ["t", *(["Arg", *branch] for branch in branches)], ""]
            return ["other", text, None, ""]
        if kind == "parenthesized_expression" and len(node.named_children) == 1:
            inner = self.arg(node.named_children[0])
            return inner if inner[_KIND] in ("concat", "comprehension", "str", "fstring", "list") else ["other", text, None, ""]
        return ["other", text, None, ""]

    def decorator_text(self, node: tree_sitter.Node) -> str:
        expr = next((c for c in node.named_children if c.type != "comment"), None)
        if expr is None:
            return ""
        if expr.type == "call":
            return self.dotted(expr.child_by_field_id(self.f.function))
        return self.dotted(expr) or self.text(expr)

    def in_type_checking(self, node: tree_sitter.Node) -> bool:
        """Inside the body of an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``), at any depth."""
        start = node.start_byte
        return any(body_start <= start < body_end for body_start, body_end in self.type_checking)

    def enclosing_withs(self, node: tree_sitter.Node, enclosing: int) -> tuple[int, ...]:
        """The ids of the `with` blocks whose body holds ``node``, innermost first;
        ``enclosing``: the nesting index of what encloses it (``_Nesting.innermost``)."""
        chain = self.with_chain(enclosing)
        if not chain:
            return ()
        start, end = node.start_byte, node.end_byte
        # A `with` encloses the node's execution only when the node is in its body (not in its
        # own context expressions).
        return tuple(ident for ident, body_start, body_end in chain if body_start <= start and end <= body_end)

    def with_chain(self, index: int) -> tuple[tuple[int, int, int], ...]:
        found = self.with_chains.get(index)
        if found is None:
            nesting = self.nesting
            if index < 0 or nesting.types[index] != "with_statement":
                found = ()  # a function, class or lambda: its body runs outside these `with` blocks
            else:
                statement = nesting.nodes[index]
                body = statement.child_by_field_id(self.f.body)
                outer = self.with_chain(nesting.parents[index])
                if body is None:
                    found = outer
                else:
                    ident = self.with_ids.setdefault(statement.id, len(self.with_ids))
                    found = ((ident, body.start_byte, body.end_byte), *outer)
            self.with_chains[index] = found
        return found

    def finish(self) -> None:
        """The index over what was scanned, and the array records encoded into the summary."""
        from foxaudit.program.codec import raw_body, raw_member

        summary = self.summary
        calls = self.calls
        callees = self.callees
        summary.call_methods = frozenset([method for _, method, _, _ in callees])
        summary.call_heads = frozenset([func.partition(".")[0] for func, _, _, _ in callees if func])
        summary.module_calls = frozenset([(func, method, bool(bound)) for func, method, scope, bound in callees if not scope])
        renamed = _renamed(summary.imports)
        transfer_calls = [
            call
            for call in calls
            if call[_METHOD] in TRANSFER_METHODS
            or call[_FUNC] in TRANSFER_BUILTINS
            or ("." not in call[_FUNC] and renamed.get(call[_FUNC]) in TRANSFER_METHODS)
        ]
        functions = summary.functions
        summary.function_names = frozenset(function.name for function in functions)
        summary.method_names = frozenset(function.name for function in functions if function.class_name)
        summary.decorators = frozenset(decorator for function in functions for decorator in function.decorators)
        summary.with_funcs = frozenset([context[_FUNC] for block in self.withs for context in block[_CONTEXTS]])
        summary.imported_names = frozenset(
            [imported for ref in summary.imports for imported, _ in ref.names]
            + [ref.module.rpartition(".")[2] for ref in summary.imports if ref.alias and not ref.names]
        )
        summary.withs = raw_member("withs", self.withs)
        summary.constants = raw_member("constants", self.constants)
        summary.transfer_calls = raw_member("transfer_calls", transfer_calls)
        if not self.body:
            summary.encoded_body(UNSCANNED)
            return
        summary.encoded_body(raw_body({
            "calls": calls,
            "assignments": self.assignments,
            "subscript_writes": self.subscript_writes,
            "dict_entries": self.dict_entries,
        }))  # fmt: skip

    def absolute(self, level: int, name: str) -> str:
        if level == 0:
            return name
        parts = self.package.split(".") if self.package else []
        if level - 1 > len(parts):
            return ""
        base = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join([*base, name] if name else base)

    # -- main -----------------------------------------------------------------------------
    def run(self, captures: dict[str, list[tree_sitter.Node]] | None = None) -> ModuleSummary:
        root = self.source.tree.root_node
        if captures is None:
            captures = tree_sitter.QueryCursor(_query()).captures(root)
        # Literal containers are only looked at for their size; the dict entries inside large
        # ones are dropped before sorting (a generated table has one per row).
        large = _Ranges(node for node in captures.pop("container", ()) if node.named_child_count > _MAX_ITEMS)
        if large and "pair" in captures:
            captures["pair"] = [node for node in captures["pair"] if not large.contains(node)]
        # Document order; nodes that start together (chained calls `x.a().b()`) innermost
        # first — the captures' own order among them is not stable between processes.
        # (Two stable sorts on C-level keys: a key tuple per node costs more.)
        for nodes in captures.values():
            nodes.sort(key=_END)
            nodes.sort(key=_START)
        summary = self.summary
        self.nesting = _Nesting([*captures.get("def", ()), *captures.get("class", ()), *captures.get("with", ()), *captures.get("lambda", ())])
        for node in captures.get("with", ()):
            self.with_ids.setdefault(node.id, len(self.with_ids))
        self.type_checking = [(node.start_byte, node.end_byte) for node in captures.get("type_checking", ())]
        for node in captures.get("decorated", ()):
            definition = node.child_by_field_id(self.f.definition)
            if definition is not None:
                self.decorated[definition.id] = tuple(self.decorator_text(d) for d in node.children if d.type == "decorator")
        generators: set[str] = set()
        for node in captures.get("yield", ()):
            scope, _ = self.scope_of(node)
            if scope:
                generators.add(scope)
        for node in captures.get("import", ()):
            self.import_statement(node)
        for node in captures.get("from", ()):
            self.from_statement(node)
        for node in captures.get("class", ()):
            self.class_definition(node)
        for node in captures.get("def", ()):
            self.function_definition(node, generators)
        for node in captures.get("call", ()):
            function = node.child_by_field_id(self.f.function)
            if function is not None and function.type == "call":
                self.called.add((function.start_byte, function.end_byte))
        for node in captures.get("assign", ()):
            right = node.child_by_field_id(self.f.right)
            if right is not None and right.type == "call":
                left = node.child_by_field_id(self.f.left)
                if left is not None and left.type in ("identifier", "attribute"):
                    self.bound_to[(right.start_byte, right.end_byte)] = self.dotted(left) or self.text(left)
        if not self.body:
            self.renamed = _renamed(summary.imports)
            self.with_values = {
                (value.start_byte, value.end_byte)
                for node in captures.get("with", ())
                for value in self.with_values_of(node)
                if value.type == "call"
            }
        for node in captures.get("call", ()):
            self.call(node)
        for node in captures.get("with", ()):
            self.with_statement(node)
        for node in captures.get("assign", ()):
            self.assignment(node)
        for node in captures.get("pair", ()) if self.body else ():
            key, value = node.child_by_field_id(self.f.key), node.child_by_field_id(self.f.value)
            if key is None or value is None:
                continue
            literal = self.arg(key)
            if literal[_KIND] in ("str", "int"):
                scope, _ = self.scope_of(node)
                self.dict_entries.append([literal[_VALUE], self.text(value), scope, self.span(node)])  # DictEntry's fields
        identities: set[str] = set()
        for node in captures.get("compare", ()):
            if any(child.type in ("is", "is not") for child in node.children):
                identities.update(self.dotted(operand) for operand in node.named_children
                                  if operand.type in ("identifier", "attribute"))
            else:  # `callee == _get_trial_arg.__name__`: the function told apart by its name
                identities.update(self.dotted(named) for named in compared_by_name(node))
        for node in captures.get("named_key", ()):
            # `{_get_trial_arg.__name__: ...}`: a table keyed by the function's name
            named = named_object(node)
            if named is not None:
                identities.add(self.dotted(named))
        identities.discard("")
        summary.identities = frozenset(identities)
        summary.fetched = frozenset(self.fetched)
        summary.statement_calls = frozenset(self.statement_calls)
        for node in captures.get("augassign", ()) if self.body else ():
            left = node.child_by_field_id(self.f.left)
            operator = node.child_by_field_id(self.f.operator)
            if left is not None and left.type == "subscript":
                self.subscript_write(left, self.text(operator) if operator is not None else "+=")
        first_line = self.source.text[:200].partition("\n")[0]
        summary.run_by_path = "pep723" if _INLINE_SCRIPT_METADATA.search(self.source.text, 0, 4000) else (
            "shebang" if first_line.startswith("#!") and "python" in first_line else
            "command" if _gives_its_own_command(self.source.text, self.source.path) else "")
        self.colon_references()
        summary.file_literals = _python_file_literals(self.source.text)
        for child in root.named_children:
            if child.type == "if_statement":
                condition = child.child_by_field_id(self.f.condition)
                if condition is not None and "__name__" in self.text(condition) and "__main__" in self.text(condition):
                    summary.has_main_guard = True
            if child.type in ("function_definition", "class_definition"):
                name = child.child_by_field_id(self.f.name)
                if name is not None:
                    summary.defined_names.add(self.text(name))
            if child.type == "decorated_definition":
                definition = child.child_by_field_id(self.f.definition)
                name = definition.child_by_field_id(self.f.name) if definition is not None else None
                if name is not None:
                    summary.defined_names.add(self.text(name))
        self.finish()
        return summary

    def import_statement(self, node: tree_sitter.Node) -> None:
        scope, _ = self.scope_of(node)
        type_checking = self.in_type_checking(node)
        for child in node.children_by_field_id(self.f.name):
            if child.type == "aliased_import":
                name = self.text(child.child_by_field_id(self.f.name))
                alias = self.text(child.child_by_field_id(self.f.alias))
            else:
                name = self.text(child)
                alias = ""
            self.summary.imports.append(
                ImportRef(name, (), alias, self.span(node), type_checking, scope=scope)
            )

    def colon_references(self) -> None:
        """A string that is exactly `module.path:Name` (an entry-point-style reference: plugin
        registries, `strategy_path="my_strategies:EMACross"`) or `package.module.Class` (a class
        registry: s4's `"src.models.sequence.modules.s4block.S4Block"`) names a module that code
        imports when it resolves the reference: a dynamic import of it, from the module's top level."""
        text = self.source.text
        counted, line = 0, 1  # the lines before `counted`, counted once as the matches go down the file
        # The tail (`:Name"`, `.Class"`) starts with a literal character, which `re` finds fast;
        # the string's opening quote is then looked for behind it (a pattern starting with the
        # quote scanned every position: 1 s of CPU on Megatron-LM's 20 MB).
        for match in _REFERENCE_TAIL.finditer(text):
            quote = match.group(1)
            opening = text.rfind(quote, max(0, match.start() - _MAX_REFERENCE), match.start())
            module = text[opening + 1 : match.start()]
            if opening < 0 or not _DOTTED_PATH.fullmatch(module) or (text[match.start()] == "." and "." not in module):
                continue
            if opening and (text[opening - 1].isalnum() or text[opening - 1] in "_."):
                continue  # `f"x"` … `"`: the quote closes another string
            before = text[text.rfind("\n", 0, opening) + 1 : opening]
            code = before.partition("#")[0]
            if "#" in before and code.count('"') % 2 == 0 and code.count("'") % 2 == 0:
                continue  # in a comment (`# see "pkg.mod:Name"`): nothing runs it
            if text[match.start()] == "." and _ANNOTATION_BEFORE.search(before):
                continue  # a quoted annotation (`x: "pkg.mod.Class"`, `-> "…"`, `Optional["…"]`): the type checker's
            start = opening + 1
            if start < counted:  # (a match inside the previous one's span: count from the start)
                counted, line = 0, 1
            line += text.count("\n", counted, start)
            counted = start
            column = start - text.rfind("\n", 0, start)
            self.summary.imports.append(ImportRef(module, (), "", _span(line, column, line, column + len(module)),
                                                  False, dynamic=True))

    def from_statement(self, node: tree_sitter.Node) -> None:
        scope, _ = self.scope_of(node)
        module_node = node.child_by_field_id(self.f.module_name)
        if module_node is None:
            return
        if module_node.type == "relative_import":
            prefix = next((c for c in module_node.children if c.type == "import_prefix"), None)
            level = self.text(prefix).count(".") if prefix is not None else 0
            dotted = next((c for c in module_node.children if c.type == "dotted_name"), None)
            module = self.absolute(level, self.text(dotted) if dotted is not None else "")
        else:
            module = self.text(module_node)
        names: list[tuple[str, str]] = []
        for child in node.children_by_field_id(self.f.name):
            if child.type == "aliased_import":
                names.append((self.text(child.child_by_field_id(self.f.name)), self.text(child.child_by_field_id(self.f.alias))))
            else:
                imported = self.text(child)
                names.append((imported, imported))
        if any(c.type == "wildcard_import" for c in node.children):
            names.append(("*", "*"))
        self.summary.imports.append(
            ImportRef(module, tuple(names), "", self.span(node), self.in_type_checking(node), scope=scope)
        )

    def class_definition(self, node: tree_sitter.Node) -> None:
        name = node.child_by_field_id(self.f.name)
        if name is None:
            return
        scope, class_scope = self.scope_of(node)
        outer = class_scope or scope
        qualname = f"{outer}.{self.text(name)}" if outer else self.text(name)
        bases = []
        superclasses = node.child_by_field_id(self.f.superclasses)
        if superclasses is not None:
            for child in superclasses.named_children:
                if child.type == "subscript":  # `Reader(Base[T])`, `OpenpyxlReader(BaseExcelReader["Workbook"])`
                    child = child.child_by_field_id(self.f.value) or child
                if child.type in ("identifier", "attribute"):
                    bases.append(self.dotted(child))
        decorators = self.decorated.get(node.id, ())
        fields: list[str] = []
        attributes: list[str] = []
        members: list[str] = []
        body = node.child_by_field_id(self.f.body)
        if body is not None:
            # (`if hasattr(socket, "recvmsg"): recvmsg = _make_wrapper(...)` binds the member where
            # the platform has it; a dataclass's fields are its body's own annotated names.)
            for statement in class_body_statements(body):
                if statement.type != "expression_statement" or not statement.named_children:
                    continue
                inner = statement.named_children[0]
                left = inner.child_by_field_id(self.f.left) if inner.type == "assignment" else None
                if left is None or left.type != "identifier":
                    continue
                if inner.child_by_field_id(self.f.type) is not None and statement.parent == body:
                    fields.append(self.text(left))
                right = inner.child_by_field_id(self.f.right)
                if right is not None:
                    attributes.append(self.text(left))
                    members.extend(callable_table_keys(right))
        self.summary.classes.append(
            ClassDef(qualname, tuple(bases), decorators, tuple(fields), self.span(node), tuple(attributes), tuple(members))
        )

    def function_definition(self, node: tree_sitter.Node, generators: set[str]) -> None:
        name = node.child_by_field_id(self.f.name)
        if name is None:
            return
        scope, class_scope = self.scope_of(node)
        # The direct parent scope decides whether this is a method: the class must be nearer
        # than any enclosing function.
        outer = scope if len(scope) >= len(class_scope) else class_scope
        qualname = f"{outer}.{self.text(name)}" if outer else self.text(name)
        is_method = bool(class_scope) and len(class_scope) > len(scope)
        params: list[str] = []
        annotations: list[tuple[str, str]] = []
        parameters = node.child_by_field_id(self.f.parameters)
        if parameters is not None:
            for child in parameters.named_children:
                ident, annotation = _param(child)
                if ident is not None:
                    params.append(self.text(ident))
                    if annotation is not None:
                        annotations.append((self.text(ident), self.text(annotation)))
        decorators = self.decorated.get(node.id, ())
        placeholder = placeholder_body_in(self.source, node)
        self.summary.functions.append(
            _built(Function, {
                "qualname": qualname,
                "name": self.text(name),
                "class_name": class_scope if is_method else "",
                "params": tuple(params),
                "annotations": tuple(annotations),
                "decorators": decorators,
                "span": self.span(node),
                "is_generator": qualname in generators,
                "placeholder": placeholder is not None,
                "answer": constant_answer(node),
                "raises_not_implemented": placeholder is not None and RAISE_NOT_IMPLEMENTED in placeholder,
                "stores_argument": not scope and not class_scope and stores_its_argument(node),
            })
        )

    def callee(self, function: tree_sitter.Node) -> tuple[str, str, tree_sitter.Node | None]:
        """(dotted callee, method, the receiver's node) of a call's ``function`` node."""
        function_type = function.type
        if function_type == "attribute":
            attr = function.child_by_field_id(self.f.attribute)
            obj = function.child_by_field_id(self.f.object)
            method = self.text(attr) if attr is not None else ""
            # ``dotted(function)``, from the children already at hand.
            found = self.dotted_memo.get(function.id)
            if found is None:
                head = self.dotted(obj)
                found = f"{head}.{method}" if head and attr is not None else ""
                self.dotted_memo[function.id] = found
            return found, method, obj
        if function_type == "identifier":
            name = self.text(function)
            return name, name, None
        if function_type == "call":
            return self.dotted(function), "", None
        return "", "", None

    def tested_at_module_level(self, node: tree_sitter.Node, scope: str) -> str:
        """"(tested)" for a module-level call in the condition of an `if`, `elif` or `while`, or in
        an `assert` (`if version.parse(np.__version__) >= …:`, a compatibility check): its value
        decides what the module defines, no work is done for its own sake; "" otherwise."""
        if scope:
            return ""

        def verdict(child: tree_sitter.Node, parent: tree_sitter.Node | None) -> str | None:
            if parent is None or parent.type in _STATEMENT_BOUNDARIES:
                return ""
            if parent.type == "assert_statement":
                return "(tested)"
            if parent.type in ("if_statement", "elif_clause", "while_statement"):
                condition = parent.child_by_field_name("condition")
                return "(tested)" if condition is not None and condition.id == child.id else ""
            return None

        return self.climb(node, self.tested_memo, verdict)

    def in_expression_statement(self, node: tree_sitter.Node) -> bool:
        """The node is part of an expression statement (`Edge(n1, n2)`, `asyncio.run(main())`,
        `session.add(Company(...))`), not of an assignment, a condition or a definition."""

        def verdict(child: tree_sitter.Node, parent: tree_sitter.Node | None) -> bool | None:
            if parent is None or parent.type in _STATEMENT_BOUNDARIES or parent.type in _BINDINGS:
                # (tree-sitter wraps an assignment in an expression statement: `x = f()` binds.)
                return parent is not None and parent.type == "expression_statement"
            return None

        return self.climb(node, self.statement_memo, verdict)

    @staticmethod
    def climb(node: tree_sitter.Node, memo: dict[int, Any],
              verdict: Callable[[tree_sitter.Node, tree_sitter.Node | None], Any]) -> Any:
        """Walk up from ``node`` until ``verdict(child, parent)`` answers (not None); each node on
        the way is remembered with the answer in ``memo``, so a chain of 5,000 nested calls walks
        once."""
        path: list[int] = []
        child = node
        while True:
            known = memo.get(child.id)
            if known is not None:
                result = known
                break
            path.append(child.id)
            parent = child.parent
            result = verdict(child, parent)
            if result is not None:
                break
            child = parent  # type: ignore[assignment]  # (verdict answers at the root)
        for node_id in path:
            memo[node_id] = result
        return result

    def fetched_by_name(self, node: tree_sitter.Node) -> None:
        """``x = getattr(module, name)`` with a name that is no literal: the module's dotted name is
        kept (``ModuleSummary.fetched``)."""
        arguments = node.child_by_field_id(self.f.arguments)
        items = [child for child in arguments.named_children if child.type != "comment"] if arguments is not None else []
        if len(items) >= 2 and items[0].type in ("identifier", "attribute") and self.arg(items[1])[_KIND] != "str":
            dotted = self.dotted(items[0])
            if dotted and dotted.partition(".")[0] not in ("self", "cls"):
                self.fetched.add(dotted)

    def call(self, node: tree_sitter.Node) -> None:
        function = node.child_by_field_id(self.f.function)
        if function is None:
            return
        func, method, obj = self.callee(function)
        where = (node.start_byte, node.end_byte)
        if func == "getattr" and where in self.bound_to:
            self.fetched_by_name(node)
        enclosing = self.nesting.innermost(node)
        scope = self.scope_at(enclosing)[0]
        if func and not scope and self.in_expression_statement(node):
            self.statement_calls.add((func, node.start_point[0] + 1))
        if not self.body and not (
            method in TRANSFER_METHODS or func in self.index_funcs or where in self.with_values
            or ("." not in func and self.renamed.get(func) in TRANSFER_METHODS)
        ):
            # An index alone: what the index says of every call (``finish``); the record is
            # made only for a call the index holds whole (a transfer, a `with` context, a
            # dynamic import).
            self.callees.append((func, method, scope, self.bound_to.get(where, "") or self.tested_at_module_level(node, scope)))
            return
        arguments = node.child_by_field_id(self.f.arguments)
        text, arg = self.text, self.arg
        args: list[list] = []
        kwargs: list[list] = []
        if arguments is not None and arguments.type == "argument_list":
            for child in arguments.named_children:
                child_type = child.type
                if child_type == "keyword_argument":
                    key = child.child_by_field_id(self.f.name)
                    value = child.child_by_field_id(self.f.value)
                    if key is not None and value is not None:
                        kwargs.append([text(key), arg(value)])
                elif child_type == "list_splat" or child_type == "dictionary_splat":
                    args.append(["splat", text(child), None, ""])
                elif child_type != "comment":
                    args.append(arg(child))
        receiver = ""
        receiver_kind = ""
        receiver_call = ""
        subscript_base = ""
        subscript_index = ""
        if obj is not None:
            receiver = text(obj)
            if len(receiver) > _MAX_TEXT:
                receiver = receiver[:_MAX_TEXT] + "…"
            obj_type = obj.type
            receiver_kind = _RECEIVER_KINDS.get(obj_type, "other")
            if obj_type == "call":
                receiver_call = self.dotted(obj.child_by_field_id(self.f.function))
            elif obj_type == "subscript":
                base = obj.child_by_field_id(self.f.value)
                subscript_base = text(base) if base is not None else ""
                subscript_index = ", ".join(text(c) for c in obj.children_by_field_id(self.f.subscript))
        # Call's fields in declaration order: the codec's array of a Call (see ``_KIND``).
        record = [
            func, method, receiver, receiver_kind, receiver_call, args, kwargs, self.span(node), scope,
            self.enclosing_withs(node, enclosing), where in self.called, self.bound_to.get(where, ""), subscript_base,
            subscript_index,
        ]  # fmt: skip
        self.call_positions[where] = len(self.calls)
        self.calls.append(record)
        self.calls_by_range[where] = record
        self.callees.append((func, method, scope, record[_BOUND_TO] or self.tested_at_module_level(node, scope)))
        if self.body and subscript_base and method.endswith("_") and not method.startswith("_") and obj is not None:
            self.subscript_write(obj, method)
        if args and ("lazy" in func.rpartition(".")[2].lower() or func.rpartition(".")[2] == "include"):
            # optuna's `_LazyImport("optuna.study._dataframe")`, TensorFlow's `LazyLoader("np",
            # globals(), "numpy")`: a lazy module object imports the dotted name it is given;
            # Django's `include("shop.urls")` imports the URL configuration it names.
            for arg in args:
                if arg[_KIND] == "str" and "." in str(arg[_VALUE]) and _DOTTED_PATH.fullmatch(str(arg[_VALUE])):
                    self.summary.imports.append(ImportRef(str(arg[_VALUE]), (), "", self.span(node),
                                                          self.in_type_checking(node), dynamic=True, scope=scope))
        if func in _DYNAMIC_IMPORTS and args and args[0][_KIND] == "str":
            target = str(args[0][_VALUE])
            level = len(target) - len(target.lstrip("."))
            if level:
                package = next((value for key, value in kwargs if key == "package"), None)
                package_arg = package or (args[1] if len(args) > 1 else None)
                if package_arg is not None and package_arg[_KIND] == "name" and package_arg[_TEXT] in ("__name__", "__package__"):
                    target = self.absolute(level, target[level:])
                elif package_arg is not None and package_arg[_KIND] == "str":
                    base = str(package_arg[_VALUE])
                    parts = base.split(".")
                    target = ".".join([*parts[: len(parts) - (level - 1)], target[level:]]).strip(".")
                else:
                    target = ""
            if target:
                self.summary.imports.append(
                    ImportRef(target, (), "", self.span(node), self.in_type_checking(node), dynamic=True, scope=scope)
                )

    def with_values_of(self, node: tree_sitter.Node) -> Iterable[tree_sitter.Node]:
        """The context expressions of a ``with`` statement (``as`` targets left out)."""
        for clause in node.children:
            if clause.type != "with_clause":
                continue
            for item in clause.named_children:
                value = item.child_by_field_id(self.f.value)
                if value is not None and value.type == "as_pattern":
                    value = value.named_children[0] if value.named_children else None
                if value is not None:
                    yield value

    def with_statement(self, node: tree_sitter.Node) -> None:
        contexts: list[list] = []
        names: list[str] = []
        ident = self.with_ids.setdefault(node.id, len(self.with_ids))
        for value in self.with_values_of(node):
            if value.type == "call":
                found = self.calls_by_range.get((value.start_byte, value.end_byte))
                if found is not None:
                    contexts.append(found)
            elif value.type in ("identifier", "attribute"):
                names.append(self.dotted(value))
        scope, _ = self.scope_of(node)
        self.withs.append([ident, scope, contexts, names, self.span(node)])  # WithBlock's fields

    def assignment(self, node: tree_sitter.Node) -> None:
        left = node.child_by_field_id(self.f.left)
        right = node.child_by_field_id(self.f.right)
        if left is None:
            return
        if left.type == "subscript":
            if self.body:
                self.subscript_write(left, "=", self.text(right) if right is not None else "")
            return
        if right is None:
            return
        scope, class_scope = self.scope_of(node)
        if left.type == "identifier" and not scope and not class_scope:
            self.summary.defined_names.add(self.text(left))
        if left.type in ("pattern_list", "tuple_pattern") and not scope and not class_scope:
            for child in left.named_children:
                if child.type == "identifier":
                    self.summary.defined_names.add(self.text(child))
        if left.type not in ("identifier", "attribute"):
            return
        if not self.body and (scope or class_scope or left.type != "identifier"):
            return  # an index alone: of the assignments it holds the module's constants only
        target = self.dotted(left)
        if not target:
            return
        value = self.arg(right)
        call = None
        if right.type == "call":
            call = self.call_positions.get((right.start_byte, right.end_byte))
        if not scope and not class_scope and left.type == "identifier" and value[_KIND] in ("str", "int", "float", "name", "attribute", "other", "list", "large", "call", "concat", "comprehension"):
            self.constants[target] = value
        if self.body and value[_KIND] in ("call", "str", "int", "float", "name", "attribute", "list", "large", "fstring", "other", "concat", "comprehension"):
            # Assignment's fields, the call it binds by its position in ``calls`` (codec.encode_body)
            self.assignments.append([target, scope, value, call, self.span(node)])

    def subscript_write(self, node: tree_sitter.Node, how: str, value: str = "") -> None:
        base = node.child_by_field_id(self.f.value)
        if base is None:
            return
        indices = node.children_by_field_id(self.f.subscript)
        key = None
        if len(indices) == 1:
            literal = self.arg(indices[0])
            if literal[_KIND] in ("str", "int"):
                key = literal[_VALUE]
        index_text = ", ".join(self.text(i) for i in indices)
        names: list[str] = []
        for index in indices:
            names.extend(_identifiers(self, index))
        scope, _ = self.scope_of(node)
        # SubscriptWrite's fields
        self.subscript_writes.append([self.text(base), index_text, names, scope, self.span(node), how, value, key])


class _Nesting:
    """Functions, classes, ``with`` statements and lambdas by byte range: what encloses a node,
    innermost first, found by bisection. Walking ``node.parent`` instead costs the node's depth
    per step (tree-sitter finds a parent by descending from the root), which made a chain of
    5,000 calls take minutes."""

    def __init__(self, nodes: list[tree_sitter.Node]):
        self.nodes = sorted(nodes, key=lambda node: (node.start_byte, -node.end_byte))
        self.starts = [node.start_byte for node in self.nodes]
        self.ends = [node.end_byte for node in self.nodes]
        self.ids = [node.id for node in self.nodes]
        self.types = [node.type for node in self.nodes]
        self.parents: list[int] = []  # index of the innermost enclosing node, -1 at the top
        stack: list[int] = []
        for index, end in enumerate(self.ends):
            while stack and self.ends[stack[-1]] < end:
                stack.pop()
            self.parents.append(stack[-1] if stack else -1)
            stack.append(index)

    def innermost(self, node: tree_sitter.Node) -> int:
        """The index of the innermost node enclosing ``node`` (not ``node`` itself), -1 if none;
        the next one out is ``parents[index]``."""
        start, end, ident = node.start_byte, node.end_byte, node.id
        # The innermost enclosing node is the last one that starts at or before ``node``, or one
        # of its ancestors (ranges nest).
        index = bisect.bisect_right(self.starts, start) - 1
        ends, ids, parents = self.ends, self.ids, self.parents
        while index >= 0 and (end > ends[index] or ids[index] == ident):
            index = parents[index]
        return index


_START = operator.attrgetter("start_byte")
_END = operator.attrgetter("end_byte")


class _Ranges:
    """Byte ranges of some nodes (the large literals): does one of them contain a node?"""

    def __init__(self, nodes: Iterable[tree_sitter.Node]):
        # Only the outermost of nested ranges matter; sorted by start, they do not overlap.
        self.starts: list[int] = []
        self.ends: list[int] = []
        for node in sorted(nodes, key=lambda node: (node.start_byte, -node.end_byte)):
            if self.ends and node.end_byte <= self.ends[-1]:
                continue
            self.starts.append(node.start_byte)
            self.ends.append(node.end_byte)

    def __bool__(self) -> bool:
        return bool(self.starts)

    def contains(self, node: tree_sitter.Node) -> bool:
        index = bisect.bisect_right(self.starts, node.start_byte) - 1
        return index >= 0 and node.end_byte <= self.ends[index]


# What binds a value to a name: a call under one computes the value, it is not run for its own sake.
_BINDINGS = frozenset({"assignment", "augmented_assignment", "named_expression"})
_STATEMENT_BOUNDARIES = frozenset({"module", "block", "expression_statement", "decorated_definition", "class_definition",
                                   "function_definition", "return_statement"})


def _renamed(imports: Iterable[ImportRef]) -> dict[str, str]:
    """Local alias → imported name of each from-import that renames (``import asnumpy as to_host``)."""
    return {alias: imported for ref in imports for imported, alias in ref.names if alias != imported}


def _is_concat(node: tree_sitter.Node, fields: _Fields) -> bool:
    """A binary operator node whose operator is ``+``."""
    operator = node.child_by_field_id(fields.operator)
    return operator is not None and operator.type == "+"


def _plain_string(text: str) -> str | None:
    """The value of a simple quoted literal without escapes or prefixes (literal_eval is slow)."""
    if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0] and "\\" not in text:
        if text.startswith(('"""', "'''")):
            return text[3:-3] if len(text) >= 6 else None
        inner = text[1:-1]
        if text[0] not in inner:
            return inner
    return None


def _param(node: tree_sitter.Node) -> tuple[tree_sitter.Node | None, tree_sitter.Node | None]:
    if node.type == "identifier":
        return node, None
    fields = _fields()
    if node.type in ("typed_parameter",):
        ident = next((c for c in node.named_children if c.type == "identifier"), None)
        return ident, node.child_by_field_id(fields.type)
    if node.type in ("default_parameter", "typed_default_parameter"):
        return node.child_by_field_id(fields.name), node.child_by_field_id(fields.type)
    if node.type in ("list_splat_pattern", "dictionary_splat_pattern"):
        ident = next((c for c in node.named_children if c.type == "identifier"), None)
        return ident, None
    return None, None


def _identifiers(scanner: _Scanner, node: tree_sitter.Node) -> list[str]:
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.append(scanner.text(current))
        elif current.type == "attribute":
            found.append(scanner.dotted(current) or scanner.text(current))
        else:
            stack.extend(current.named_children)
    return found


def _descendants_shallow(node: tree_sitter.Node):
    stack = list(node.children)
    while stack:
        current = stack.pop()
        yield current
        if current.type in ("string", "concatenated_string"):
            stack.extend(current.children)
