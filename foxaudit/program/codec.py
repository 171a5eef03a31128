"""Summaries ↔ bytes in a data-only format: JSON arrays of plain values, no code, no pickle.

A summary file in the cache (or coming back from a scanning worker) is only ever parsed as JSON,
and the only objects built from it are the summary classes listed in ``_CLASSES`` — each from
its own fields — plus tuples, lists, sets, frozensets, dicts and complex numbers. A crafted file can
therefore produce a wrong summary (a miss, when it does not even decode) but never run anything.

Encoding: a JSON scalar is itself; every array is ``[tag, *items]`` with tag ``t`` tuple, ``l``
list, ``s`` set, ``f`` frozenset, ``d`` dict (keys and values alternating), ``i`` an integer too
long for JSON's decimal form (hex text), ``c`` a complex number (real, imaginary), or a class
name followed by the field values in declaration order. A file holds ``key\\n index\\n body``: the key it was written for (a file
copied under another name is a miss), the summary's index and its body, kept as raw bytes until
an analysis first reads it (see ``ModuleSummary``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from foxaudit.program.cudascan import CudaConstant, CudaSummary, Kernel, Launch, Memcpy
from foxaudit.program.pyscan import (
    Arg,
    Assignment,
    Call,
    ClassDef,
    DictEntry,
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
_FIELDS: dict[type, tuple[str, ...]] = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _CLASSES.values()}
_new = object.__new__
# Integers past this many bits print with more than CPython's 4,300-digit limit.
_LONG_INT_BITS = 14_000
_CONTAINERS = {"t": tuple, "l": list, "s": set, "f": frozenset}


class CodecError(ValueError):
    """The bytes are not a summary in this format (treated as a cache miss)."""


_SCALARS = frozenset({str, int, bool, float, type(None)})


def encode(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        if kind is int and value.bit_length() >= _LONG_INT_BITS:
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
    fields = _FIELDS.get(kind)
    if fields is None:
        raise TypeError(f"cannot encode a {kind.__name__} in a summary")
    # A record's __dict__ holds its fields in declaration order (set by __init__, or by decode).
    return [kind.__name__, *[
        item if type(item) in _SCALARS and type(item) is not int else encode(item) for item in value.__dict__.values()
    ]]


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
        fields = _FIELDS[cls]
        if len(items) != len(fields):
            raise CodecError(f"{tag} with {len(items)} fields vs {len(fields)}")
        # What the generated __init__ would store, without its per-field object.__setattr__
        # (frozen dataclasses): the records have no __post_init__ and no derived fields.
        record = _new(cls)
        record.__dict__.update(zip(fields, items))
        return record
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


def _dumps(value: Any) -> bytes:
    return json.dumps(encode(value), separators=(",", ":")).encode()


def encode_body(body: dict[str, list]) -> bytes:
    return _dumps(body)


def decode_body(data: bytes) -> dict[str, list]:
    try:
        body = decode(json.loads(data))
    except (ValueError, TypeError) as error:
        raise CodecError(str(error)) from None
    if not isinstance(body, dict):
        raise CodecError("a summary body that is not a dict")
    return body


def dump_summary(key: str, summary: ModuleSummary | CudaSummary) -> bytes:
    if isinstance(summary, CudaSummary):
        return b"\n".join((key.encode(), b"cuda", _dumps(summary)))
    index = {name: value for name, value in vars(summary).items() if name not in ("_body", "_blob")}
    return b"\n".join((key.encode(), b"py", _dumps(index), summary.body_bytes()))


def load_summary(key: str, data: bytes) -> ModuleSummary | CudaSummary:
    """The summary stored in ``data`` for ``key``; raises CodecError for anything else."""
    parts = data.split(b"\n", 3)
    if len(parts) < 3 or parts[0] != key.encode():
        raise CodecError("not the entry of this key")
    try:
        payload = decode(json.loads(parts[2]))
    except (ValueError, TypeError) as error:
        raise CodecError(str(error)) from None
    if parts[1] == b"cuda" and isinstance(payload, CudaSummary):
        return payload
    if parts[1] != b"py" or len(parts) != 4 or not isinstance(payload, dict):
        raise CodecError("a malformed summary")
    return ModuleSummary.from_index(payload, parts[3])
