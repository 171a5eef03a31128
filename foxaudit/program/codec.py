"""Summaries ↔ bytes in a data-only format: JSON of plain values, no code, no pickle.

A summary file in the cache (or coming back from a scanning worker) is only ever parsed as JSON,
and the only objects built from it are the summary classes listed in ``_CLASSES`` — each from
its own fields — plus tuples, lists, sets, frozensets, dicts and complex numbers. A crafted file can
therefore produce a wrong summary (a miss, when it does not even decode) but never run anything.

Encoding is driven by the records' declared field types (their dataclass annotations), so the C
JSON encoder does nearly all the work: a record is the array of its field values in declaration
order (``json.dumps`` asks ``_fields_of`` for it), a tuple or list is an array, a ``dict[str, X]``
an object, and the decoder rebuilds each value from the type its position declares. Only fields
declared ``object`` (a literal's value, a subscript key: any Python literal) and unions other
than ``X | None`` use the self-describing *tagged* form of ``encode``/``decode``: a JSON scalar
is itself; every array is ``[tag, *items]`` with tag ``t`` tuple, ``l`` list, ``s`` set, ``f``
frozenset, ``d`` dict (keys and values alternating), ``i`` an integer too long for JSON's
decimal form (hex text), ``c`` a complex number (real, imaginary), or a class name followed by
the field values. Sets are written sorted, so one summary always encodes to the same bytes.

A Python summary file holds ``key\\n py LENGTHS\\n index\\n lazy…\\n body``: the key it was
written for (a file copied under another name is a miss), the byte lengths of the lines that
follow up to the body, the summary's index (a JSON object, one member per index field except the
lazy ones), one line per field of ``ModuleSummary.LAZY`` (its JSON value, in that order: parsed
only when an analysis first reads the field) and its body (a JSON object, for the lists
``ModuleSummary`` keeps encoded until an analysis first reads one; empty for a summary made as
an index alone, whose body is scanned then and kept in a ``.body`` entry of its own). JSON text
holds no raw line break, so the lines split unambiguously; the lengths let ``read_summary`` read an entry's index
alone (a twentieth of its bytes on pandas) and the rest only when a lazy field or the body is
first read. A CUDA summary file holds ``key\\n cuda\\n record``.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import types
import typing
from collections.abc import Callable
from typing import Any

from foxaudit.program.cudascan import CudaConstant, CudaSummary, Kernel, Launch, Memcpy
from foxaudit.program.pyscan import (
    LONG_INT_BITS,
    NOT_FIELDS,
    Arg,
    Assignment,
    Call,
    ClassDef,
    DictEntry,
    Encoded,
    Function,
    ImportRef,
    ModuleSummary,
    Span,
    SubscriptWrite,
    WithBlock,
)

_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (Arg, Assignment, Call, ClassDef, DictEntry, Function, ImportRef, Span, SubscriptWrite, WithBlock,
                CudaConstant, CudaSummary, Kernel, Launch, Memcpy)
}  # fmt: skip
# Record classes are frozen dataclasses, except the tuple records (Span, a NamedTuple): their
# fields are their items.
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: cls._fields if issubclass(cls, tuple) else tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[attr-defined]
    for cls in _CLASSES.values()
}
_TUPLE_RECORDS = frozenset(cls for cls in _CLASSES.values() if issubclass(cls, tuple))
_new = object.__new__
_new_tuple = tuple.__new__
_CONTAINERS = {"t": tuple, "l": list, "s": set, "f": frozenset}


class CodecError(ValueError):
    """The bytes are not a summary in this format (treated as a cache miss)."""


_SCALARS = frozenset({str, int, bool, float, type(None)})


# -- the tagged form (values whose type the schema leaves open) ----------------------------------
def encode(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        if kind is int and value.bit_length() >= LONG_INT_BITS:
            return ["i", hex(value)]
        return value
    if kind is tuple or kind is list:
        # Scalars inline (no call per leaf); only long ints need encode() among them.
        return ["t" if kind is tuple else "l", *[
            item if type(item) in _SCALARS and type(item) is not int else encode(item) for item in value
        ]]
    if kind is complex:
        return ["c", value.real, value.imag]
    if kind is set or kind is frozenset:
        # Sorted: the same summary always encodes to the same bytes.
        return ["s" if kind is set else "f", *sorted(map(encode, value), key=repr)]
    if kind is dict:
        flat: list[Any] = ["d"]
        for key, item in value.items():
            flat.append(encode(key))
            flat.append(encode(item))
        return flat
    getter = _TAGGED_GETTERS.get(kind)
    if getter is None:
        fields = _FIELDS.get(kind)
        if fields is None:
            raise TypeError(f"cannot encode a {kind.__name__} in a summary")
        getter = _TAGGED_GETTERS[kind] = _getter(fields)
    # A record: its class name, then its fields (scalars inline, as for a tuple).
    return [kind.__name__, *[
        item if type(item) in _SCALARS and type(item) is not int else encode(item) for item in getter(value)
    ]]


def _getter(fields: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The field values of a record, as a tuple (one C call)."""
    if len(fields) > 1:
        return operator.attrgetter(*fields)
    return lambda record: (getattr(record, fields[0]),)


# Per record class: ``_getter`` of its fields (the tagged form's records).
_TAGGED_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def decode(value: Any) -> Any:
    if type(value) is not list:
        return value
    if not value or type(value[0]) is not str:
        raise CodecError("an array without a tag")
    tag = value[0]
    # Scalars are decoded inline (no call per leaf): most items of a summary are strings and ints.
    items = [item if type(item) is not list else decode(item) for item in value[1:]]
    cls = _CLASSES.get(tag)
    if cls is not None:
        return _record(cls, items)
    container = _CONTAINERS.get(tag)
    if container is not None:
        return container(items)
    if tag == "d":
        if len(items) % 2:
            raise CodecError("a dict with an odd number of items")
        return dict(zip(items[::2], items[1::2]))
    if tag == "c":
        if len(items) != 2 or not all(type(part) in (int, float) for part in items):
            raise CodecError("a malformed complex number")
        return complex(items[0], items[1])
    if tag == "i":
        if len(items) != 1 or type(items[0]) is not str:
            raise CodecError("a malformed long integer")
        return int(items[0], 16)
    raise CodecError(f"unknown record type {tag!r}")


def _record(cls: type, items: list[Any]) -> Any:
    fields = _FIELDS[cls]
    if len(items) != len(fields):
        raise CodecError(f"{cls.__name__} with {len(items)} fields vs {len(fields)}")
    if cls in _TUPLE_RECORDS:
        return _new_tuple(cls, items)
    # What the generated __init__ would store, without its per-field object.__setattr__
    # (frozen dataclasses): the records have no __post_init__ and no derived fields.
    record = _new(cls)
    record.__dict__.update(zip(fields, items))
    return record


def _tagged_field(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is float or kind is bool or value is None:
        return value
    if kind is int and value.bit_length() < LONG_INT_BITS:
        return value
    return encode(value)


# -- the schema: how each declared type is written and read back ---------------------------------
# A value's schema is (encoder or None, decoder or None); None means "JSON writes and reads it
# as it is" (a scalar, or a container of scalars that needs no rebuilding).
_Schema = tuple[Callable[[Any], Any] | None, Callable[[Any], Any] | None]
_PLAIN: _Schema = (None, None)
_TAGGED: _Schema = (_tagged_field, decode)


def _schema(hint: Any) -> _Schema:
    if hint in (str, int, float, bool, type(None)):
        return _PLAIN
    if hint in _FIELDS:
        return (None, _record_decoder(hint))
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [option for option in arguments if option is not type(None)]
        if len(options) == 1 and len(arguments) == 2 and options[0] in _FIELDS:
            inner = _record_decoder(options[0])
            return (None, lambda value: None if value is None else inner(value))
        return _TAGGED
    if origin is tuple and len(arguments) == 2 and arguments[1] is Ellipsis:
        return _sequence(tuple, _schema(arguments[0]))
    if origin is tuple and arguments:
        return _fixed_tuple([_schema(argument) for argument in arguments])
    if origin in (list, set, frozenset) and len(arguments) == 1:
        return _sequence(origin, _schema(arguments[0]))
    if origin is dict and len(arguments) == 2 and arguments[0] is str:
        return _mapping(_schema(arguments[1]))
    return _TAGGED


def _sequence(kind: type, item: _Schema) -> _Schema:
    encode_item, decode_item = item
    ordered = kind in (set, frozenset)

    def write_value(value: Any) -> Any:
        if encode_item is None:
            # Sets sorted: one summary, one byte string (and a JSON array either way).
            return sorted(value) if ordered else value
        items = [encode_item(element) for element in value]
        return sorted(items, key=repr) if ordered else items

    def read_value(value: Any) -> Any:
        if type(value) is not list:
            raise CodecError(f"a {kind.__name__} that is not an array")
        if decode_item is None:
            return value if kind is list else kind(value)
        return kind(map(decode_item, value))

    return (write_value if ordered or encode_item is not None else None, read_value if decode_item is not None or kind is not list else _check_list)


def _check_list(value: Any) -> Any:
    if type(value) is not list:
        raise CodecError("a list that is not an array")
    return value


def _fixed_tuple(items: list[_Schema]) -> _Schema:
    encoders = [write for write, _ in items]
    decoders = [read for _, read in items]

    def write_value(value: Any) -> Any:
        return [element if convert is None else convert(element) for convert, element in zip(encoders, value)]

    count = len(decoders)

    def read_value(value: Any) -> Any:
        if type(value) is not list or len(value) != count:
            raise CodecError("a tuple of the wrong length")
        return tuple(element if convert is None else convert(element) for convert, element in zip(decoders, value))

    def read_plain(value: Any) -> Any:
        # Every item as JSON read it (a (name, annotation) pair): no generator per tuple.
        if type(value) is not list or len(value) != count:
            raise CodecError("a tuple of the wrong length")
        return tuple(value)

    return (write_value if any(encoders) else None, read_value if any(decoders) else read_plain)


def _mapping(item: _Schema) -> _Schema:
    encode_item, decode_item = item

    def write_value(value: Any) -> Any:
        return {key: encode_item(element) for key, element in value.items()}  # type: ignore[misc]

    def read_value(value: Any) -> Any:
        if type(value) is not dict:
            raise CodecError("a dict that is not an object")
        return value if decode_item is None else {key: decode_item(element) for key, element in value.items()}

    return (write_value if encode_item is not None else None, read_value)


# Record decoders are built on first use (classes refer to each other: Assignment → Call → Arg).
_RECORD_DECODERS: dict[type, Callable[[Any], Any]] = {}
# Per record class: how json.dumps gets its field values, and the fields that need converting.
_RECORD_ENCODERS: dict[type, tuple[Callable[[Any], Any], tuple[tuple[int, Callable[[Any], Any]], ...]]] = {}


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _fields_reader(cls: type, converters: list[tuple[int, Callable[[Any], Any]]]) -> Callable[[Any], Any]:
    """A decoder of ``cls`` from the array of its fields (JSON as read), each field at an index of
    ``converters`` converted first."""
    fields = _FIELDS[cls]
    count = len(fields)

    def read(value: Any) -> Any:
        if type(value) is not list or len(value) != count:
            raise CodecError(f"a {cls.__name__} record that is not an array of its {count} fields")
        for index, convert in converters:
            value[index] = convert(value[index])
        record = _new(cls)
        record.__dict__.update(zip(fields, value))
        return record

    return read


def _record_decoder(cls: type) -> Callable[[Any], Any]:
    found = _RECORD_DECODERS.get(cls)
    if found is not None:
        return found
    fields = _FIELDS[cls]
    count = len(fields)
    converters: list[tuple[int, Callable[[Any], Any]]] = []
    if cls in _TUPLE_RECORDS:
        # Plain items (a span's four numbers): the tuple made from the array as JSON read it.
        def read_tuple(value: Any) -> Any:
            if type(value) is not list or len(value) != count:
                raise CodecError(f"a {cls.__name__} that is not an array of its {count} fields")
            return _new_tuple(cls, value)

        _RECORD_DECODERS[cls] = read_tuple
        return read_tuple

    read_value = _fields_reader(cls, converters)
    # Registered before the fields' schemas are built (into ``converters``, which the reader reads
    # when called), so a recursive type finds it.
    _RECORD_DECODERS[cls] = read_value
    hints = _hints(cls)
    for index, name in enumerate(fields):
        decode_field = _schema(hints[name])[1]
        if decode_field is not None:
            converters.append((index, decode_field))
    return read_value


def _record_encoder(cls: type) -> tuple[Callable[[Any], Any], tuple[tuple[int, Callable[[Any], Any]], ...]]:
    found = _RECORD_ENCODERS.get(cls)
    if found is None:
        fields = _FIELDS[cls]
        hints = _hints(cls)
        getter = _getter(fields)
        plan = tuple((index, write) for index, name in enumerate(fields) if (write := _schema(hints[name])[0]) is not None)
        found = (getter, plan)
        _RECORD_ENCODERS[cls] = found
    return found


# Per record class: the function that turns a record into the array json.dumps writes.
_RECORD_ARRAYS: dict[type, Callable[[Any], Any]] = {}


def _record_array(kind: type) -> Callable[[Any], Any]:
    getter, plan = _record_encoder(kind)
    if not plan:
        return getter  # the field values as they are (a tuple: a JSON array)

    if len(plan) == 1 and plan[0][1] is _tagged_field:
        index = plan[0][0]

        def one_tagged(value: Any) -> Any:
            # Most such fields (Arg.value) hold None or a string, which the tagged form writes as
            # they are: the fields' tuple is then the array (JSON writes a tuple as one).
            values = getter(value)
            item = values[index]
            if item is None or type(item) is str:
                return values
            listed = list(values)
            listed[index] = _tagged_field(item)
            return listed

        return one_tagged

    def converted(value: Any) -> Any:
        values = list(getter(value))
        for index, convert in plan:
            values[index] = convert(values[index])
        return values

    return converted


def _fields_of(value: Any) -> Any:
    """json.dumps' ``default``: a record as the array of its field values (converted where their
    declared type needs it); JSON writes everything else inside it in C."""
    kind = type(value)
    array = _RECORD_ARRAYS.get(kind)
    if array is None:
        if kind not in _FIELDS:
            raise TypeError(f"cannot encode a {kind.__name__} in a summary")
        array = _RECORD_ARRAYS[kind] = _record_array(kind)
    return array(value)


_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False, default=_fields_of).encode
# For what the scanner already built as arrays (``pyscan._KIND``): JSON values only, so anything
# else (a record object) is a TypeError rather than a silently different encoding.
_dumps_raw = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


# -- ModuleSummary's index and body: their fields' declared types -------------------------------
# A field missing here (a scanner newer than this table) is written in the tagged form.
_INDEX_TYPES: dict[str, Any] = {
    "path": str,
    "imports": list[ImportRef],
    "functions": list[Function],
    "classes": list[ClassDef],
    "withs": list[WithBlock],
    "constants": dict[str, Arg],
    "defined_names": set[str],
    "has_main_guard": bool,
    "run_by_path": str,
    "call_methods": frozenset[str],
    "call_heads": frozenset[str],
    "transfer_calls": tuple[Call, ...],
    "module_calls": frozenset[tuple[str, str, bool]],
    "identities": frozenset[str],
    "fetched": frozenset[str],
    "statement_calls": frozenset[tuple[str, int]],
    "file_literals": frozenset[str],
    "function_names": frozenset[str],
    "method_names": frozenset[str],
    "decorators": frozenset[str],
    "with_funcs": frozenset[str],
    "imported_names": frozenset[str],
    "calls": list[Call],
    "assignments": list[Assignment],
    "subscript_writes": list[SubscriptWrite],
    "dict_entries": list[DictEntry],
}
_MEMBER_SCHEMAS: dict[str, _Schema] = {}


def _member(name: str) -> _Schema:
    found = _MEMBER_SCHEMAS.get(name)
    if found is None:
        if name == "assignments":
            found = _body_assignments()
        else:
            found = _schema(_INDEX_TYPES[name]) if name in _INDEX_TYPES else _TAGGED
        _MEMBER_SCHEMAS[name] = found
    return found


def _body_assignments() -> _Schema:
    """The body's ``list[Assignment]``, each call read as the position ``decode_body`` resolves."""
    fields = _FIELDS[Assignment]
    hints = _hints(Assignment)
    converters = [
        (index, convert) for index, name in enumerate(fields)
        if name != "call" and (convert := _schema(hints[name])[1]) is not None
    ]  # fmt: skip

    read_one = _fields_reader(Assignment, converters)

    def read(value: Any) -> Any:
        if type(value) is not list:
            raise CodecError("assignments that are not an array")
        return [read_one(item) for item in value]

    return (None, read)


def _encode_members(members: dict[str, Any]) -> bytes:
    payload = {}
    for name, value in members.items():
        write = _member(name)[0]
        payload[name] = value if write is None else write(value)
    return _dumps(payload).encode()


def _encode_member(name: str, value: Any) -> bytes:
    """One lazy index field's line: as it was read when it was never decoded."""
    if type(value) is Encoded:
        return value.raw  # type: ignore[no-any-return]
    write = _member(name)[0]
    return _dumps(value if write is None else write(value)).encode()


def _decode_members(data: bytes) -> dict[str, Any]:
    """The members of ``data`` (a JSON object), each rebuilt from the type its name declares."""
    try:
        payload = json.loads(data)
        if type(payload) is not dict:
            raise CodecError("summary members that are not an object")
        for name, value in payload.items():
            read = _member(name)[1]
            if read is not None:
                payload[name] = read(value)
    except CodecError:
        raise
    except (ValueError, TypeError, AttributeError, IndexError, KeyError, RecursionError) as error:
        raise CodecError(f"{type(error).__name__}: {error}") from None
    return payload


# An assignment in the body names the call it binds by the call's position in the body's calls
# (the call is written once; an assignment repeating it was 18 % of a pandas summary's bytes), and
# reads back as that same Call object.
_ASSIGNMENT_CALL = _FIELDS[Assignment].index("call")


def encode_body(body: dict[str, list]) -> bytes:
    positions = {id(call): index for index, call in enumerate(body.get("calls", ()))}
    assignments = []
    for assignment in body.get("assignments", ()):
        fields = list(_record_encoder(Assignment)[0](assignment))
        call = fields[_ASSIGNMENT_CALL]
        if call is not None:
            if id(call) not in positions:
                raise TypeError("an assignment's call is not one of the body's calls")
            fields[_ASSIGNMENT_CALL] = positions[id(call)]
        assignments.append(fields)
    return _encode_members({**body, "assignments": assignments} if "assignments" in body else body)


def decode_body(data: bytes) -> dict[str, list]:
    body = _decode_members(data)
    calls = body.get("calls", [])
    for assignment in body.get("assignments", ()):
        position = assignment.call
        if position is not None:
            if type(position) is not int or not 0 <= position < len(calls):
                raise CodecError("an assignment's call is no position in the body's calls")
            assignment.__dict__["call"] = calls[position]
    return body


def raw_member(name: str, value: Any) -> Encoded:
    """A lazy index field from the arrays the scanner built (the records' encoded form): encoded
    now, decoded into records when an analysis first reads it."""
    return _encoded(name, _dumps_raw(value).encode())


def raw_body(body: dict[str, list]) -> bytes:
    """The body (``encode_body``'s bytes) from the arrays the scanner built."""
    return _dumps_raw(body).encode()


def _encoded(name: str, raw: bytes | Callable[[], bytes]) -> Encoded:
    return Encoded(raw, _member(name)[1] or _identity, typing.get_origin(_INDEX_TYPES[name])())


def dump_summary(key: str, summary: ModuleSummary | CudaSummary) -> bytes:
    if isinstance(summary, CudaSummary):
        return b"\n".join((key.encode(), b"cuda", _dumps(summary).encode()))
    fields = {name: value for name, value in vars(summary).items() if name not in NOT_FIELDS}
    lines = [_encode_members({name: value for name, value in fields.items() if name not in ModuleSummary.LAZY})]
    lines.extend(_encode_member(name, fields[name]) for name in ModuleSummary.LAZY)
    lengths = b" ".join(str(len(line)).encode() for line in lines)
    return b"\n".join((key.encode(), b"py " + lengths, *lines, summary.body_bytes()))


def _header(key: str, data: bytes) -> tuple[bytes, int]:
    """(the kind line, the offset just after it) of an entry's first bytes; CodecError when they
    are not those of ``key``'s entry."""
    first = data.find(b"\n")
    if first < 0 or data[:first] != key.encode():
        raise CodecError("not the entry of this key")
    second = data.find(b"\n", first + 1)
    if second < 0:
        raise CodecError("a malformed summary")
    return data[first + 1 : second], second + 1


def body_offset(data: bytes) -> int:
    """Where the body of an encoded summary entry begins (its end for a CUDA entry, which has
    none): what comes before it is the index. CodecError for a malformed entry."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    if second < 0:
        raise CodecError("a malformed summary")
    kind = data[first + 1 : second]
    if kind == b"cuda":
        return len(data)
    offset = second + 1 + sum(length + 1 for length in _py_lengths(kind))
    if offset > len(data):
        raise CodecError("a malformed summary")
    return offset


def _py_lengths(kind: bytes) -> list[int]:
    """The line lengths a Python entry's kind line gives (index, then each lazy field)."""
    words = kind.split(b" ")
    if words[0] != b"py" or len(words) != 2 + len(ModuleSummary.LAZY) or not all(word.isdigit() for word in words[1:]):
        raise CodecError("a malformed summary")
    return [int(word) for word in words[1:]]


def _load_cuda(data: bytes) -> CudaSummary:
    if b"\n" in data:
        raise CodecError("a malformed summary")
    try:
        return _record_decoder(CudaSummary)(json.loads(data))  # type: ignore[no-any-return]
    except CodecError:
        raise
    except (ValueError, TypeError, AttributeError, IndexError, KeyError, RecursionError) as error:
        raise CodecError(f"{type(error).__name__}: {error}") from None


def _python_summary(index_line: bytes, lazy: list[bytes | Callable[[], bytes]], body: bytes | Callable[[], bytes]) -> ModuleSummary:
    index = _decode_members(index_line)
    for name, raw in zip(ModuleSummary.LAZY, lazy):
        if name in index:
            raise CodecError(f"summary member {name} in the index and on its own line")
        index[name] = _encoded(name, raw)
    try:
        return ModuleSummary.from_index(index, body)
    except ValueError as error:  # CodecError included
        raise CodecError(str(error)) from None


def load_summary(key: str, data: bytes) -> ModuleSummary | CudaSummary:
    """The summary stored in ``data`` for ``key``; raises CodecError for anything else."""
    kind, offset = _header(key, data)
    if kind == b"cuda":
        return _load_cuda(data[offset:])
    lines: list[bytes] = []
    for length in _py_lengths(kind):
        end = offset + length
        if data[end : end + 1] != b"\n":
            raise CodecError("a malformed summary")
        lines.append(data[offset:end])
        offset = end + 1
    return _python_summary(lines[0], lines[1:], data[offset:])  # type: ignore[arg-type]


# An entry's first read: most pandas entries' key, kind line and index fit.
_HEAD_BYTES = 16384


def read_summary(key: str, path: str) -> ModuleSummary | CudaSummary | None:
    """The summary of ``key`` in the entry at ``path``, reading its index alone: the lazy fields
    and the body are read from the file when first needed (an entry is content-addressed and
    replaced only by an identical one; one gone or changed meanwhile reads as damaged: empty).
    None when there is no entry; raises CodecError for one that is not ``key``'s."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_HEAD_BYTES)
            if len(data) < _HEAD_BYTES:
                return load_summary(key, data)  # the whole entry
            kind, offset = _header(key, data)
            if kind == b"cuda":
                return _load_cuda(data[offset:] + handle.read())
            lengths = _py_lengths(kind)
            end = offset + lengths[0]
            if len(data) < end + 1:
                data += handle.read(end + 1 - len(data))
    except OSError:
        return None
    if data[end : end + 1] != b"\n":
        raise CodecError("a malformed summary")
    lazy: list[bytes | Callable[[], bytes]] = []
    start = end + 1
    for length in lengths[1:]:
        lazy.append(_part_of(path, start, length))
        start += length + 1
    return _python_summary(data[offset:end], lazy, _part_of(path, start, -1))


def _part_of(path: str, offset: int, length: int) -> Callable[[], bytes]:
    """A function that reads ``length`` bytes (and the line break after them; -1: the rest of the
    file) of the entry at ``path`` from ``offset``; b"" when they are not there."""

    def read() -> bytes:
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                if length < 0:
                    return handle.read()
                data = handle.read(length + 1)
        except OSError:
            return b""
        return data[:-1] if len(data) == length + 1 and data.endswith(b"\n") else b""

    return read


def _identity(value: Any) -> Any:
    return value
