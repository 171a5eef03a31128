"""The one evaluator of constant expressions in Python and C/CUDA source (never ``eval``).

Layout constants are written as expressions (``PS_STRIDE = PS_CASH + 4``, ``#define HALF
(BLOCK / 2)``): FX801 names slots with their values, FX502 compares the Python and CUDA copies,
and the layout audit prints them. All of them ask this module, so ``/`` means one thing per
language: true division in Python, truncation toward zero between integers in C.

Accepted: integer and float literals (C suffixes ``u l f``, C octal ``017``), names with a known
value, parentheses, unary ``+ - ~``, binary ``+ - * / // % << >> | & ^``, C casts to integer
types, and ``int(...)`` in Python. Anything else — a call, an attribute, an unknown name, a
shift by more than 256 bits, an integer past 4,096 bits — is "not a constant" (None): the
expression is walked as an AST with bounded arithmetic, so no input can run code or hang.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping
from typing import Literal

Dialect = Literal["python", "c"]
Number = int | float

_MAX_SHIFT = 256
_MAX_BITS = 4096
_MAX_TEXT = 2000  # a constant longer than this is data, not a layout expression

_C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_C_CAST = re.compile(r"\(\s*(?:unsigned\s+|signed\s+|const\s+)*(?:int|long|short|char|size_t|u?int\d+_t)\s*\)")
_C_FLOAT_SUFFIX = re.compile(r"((?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)[fFlL]\b")
_C_INT_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlLzZ]+\b")
_C_OCTAL = re.compile(r"\b0([0-7]+)\b")


class _NotConstant(Exception):
    """The expression is not a constant this evaluator knows (raised inside the walk)."""


def evaluate(text: str, known: Mapping[str, object], dialect: Dialect) -> Number | None:
    """The value of ``text`` as a constant expression of ``dialect``, or None."""
    text = text.strip()
    if not text or len(text) > _MAX_TEXT:
        return None
    if dialect == "c":
        text = c_to_python_syntax(text).strip()
    try:
        tree = ast.parse(text, mode="eval")
        value = _Walk(known, dialect).value(tree.body)
    except (SyntaxError, ValueError, _NotConstant, ArithmeticError, RecursionError, MemoryError):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def evaluate_int(text: str, known: Mapping[str, object], dialect: Dialect) -> int | None:
    """``evaluate`` restricted to integer results (slot indices, sizes)."""
    value = evaluate(text, known, dialect)
    return value if isinstance(value, int) else None


def c_to_python_syntax(text: str) -> str:
    """C literal and cast spellings → Python's (comments dropped, suffixes and casts removed)."""
    text = _C_COMMENT.sub(" ", text)
    text = _C_CAST.sub(" ", text)
    text = _C_FLOAT_SUFFIX.sub(r"\1", text)
    text = _C_INT_SUFFIX.sub(r"\1", text)
    text = _C_OCTAL.sub(r"0o\1", text)
    return text.replace("\\\n", " ").replace("\n", " ")


def _c_quotient(left: int, right: int) -> int:
    """C's integer division: truncation toward zero (Python's ``//`` floors)."""
    quotient = abs(left) // abs(right)
    return quotient if (left >= 0) == (right >= 0) else -quotient


class _Walk:
    def __init__(self, known: Mapping[str, object], dialect: Dialect):
        self.known = known
        self.dialect = dialect

    def value(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Constant):
            if type(node.value) in (int, float):
                return self.bounded(node.value)
            raise _NotConstant
        if isinstance(node, ast.Name):
            found = self.known.get(node.id)
            if type(found) not in (int, float):
                raise _NotConstant
            return found  # type: ignore[return-value]
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Invert) and isinstance(operand, int):
                return ~operand
            raise _NotConstant
        if isinstance(node, ast.BinOp):
            return self.bounded(self.binary(node.op, self.value(node.left), self.value(node.right)))
        if (
            self.dialect == "python"
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "int"
            and len(node.args) == 1
            and not node.keywords
        ):
            return int(self.value(node.args[0]))
        raise _NotConstant

    def binary(self, op: ast.operator, left: Number, right: Number) -> Number:
        both_int = isinstance(left, int) and isinstance(right, int)
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Div):
            return _c_quotient(left, right) if self.dialect == "c" and both_int else left / right  # type: ignore[arg-type]
        if isinstance(op, ast.FloorDiv) and self.dialect == "python":
            return left // right
        if isinstance(op, ast.Mod):
            if self.dialect == "c" and both_int:
                return left - right * _c_quotient(left, right)  # type: ignore[arg-type]
            return left % right
        if not both_int:
            raise _NotConstant
        if isinstance(op, (ast.LShift, ast.RShift)):
            if not 0 <= right <= _MAX_SHIFT:  # type: ignore[operator]
                raise _NotConstant
            return left << right if isinstance(op, ast.LShift) else left >> right  # type: ignore[operator]
        if isinstance(op, ast.BitOr):
            return left | right  # type: ignore[operator]
        if isinstance(op, ast.BitAnd):
            return left & right  # type: ignore[operator]
        if isinstance(op, ast.BitXor):
            return left ^ right  # type: ignore[operator]
        raise _NotConstant

    @staticmethod
    def bounded(value: Number) -> Number:
        if isinstance(value, int) and value.bit_length() > _MAX_BITS:
            raise _NotConstant
        return value
