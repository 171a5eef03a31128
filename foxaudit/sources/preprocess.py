"""CUDA as nvcc sees it: conditional compilation resolved, before tree-sitter parses the file.

tree-sitter-cuda has no preprocessor: it parses every branch of ``#if/#else/#endif`` as if all
were compiled, so a statement split across branches (two ``for (...) {`` heads sharing one body)
is a parse error, and code under ``#if 0`` looks live to every rule. ``preprocess`` evaluates
the conditionals the way the C preprocessor does and returns a copy of the file in which every
line of an inactive branch, and every conditional directive line, is blanked (its bytes become
spaces, its newline stays). Byte offsets, lines and columns are unchanged, so a node of the tree
parsed from the copy points at the same place in the original file; comments are kept even in
inactive branches, so marker rules (FX901) still see a `TODO` written there.

What decides a condition:
- integer literals, ``true``/``false``, the operators of ``#if`` (``defined``, ``!``, ``&&``,
  ``||``, comparisons, arithmetic, ``?:``);
- macros ``#define``d or ``#undef``ed earlier in the same file (object-like ones by value);
- the configured ``defines`` (``[tool.foxaudit.cuda] defines``), on top of ``BUILTIN_DEFINES``,
  what nvcc and the CUDA headers define when compiling device code for a current GPU;
- any other identifier is an undefined macro and counts as 0, as in C — except a build switch
  whose ``#ifdef`` (or ``#if defined(…)``) wraps all of the file's code with no ``#else``
  (``#ifdef USE_CUDA`` around a whole ``.cu``): the build defines it whenever it compiles the
  file, so it counts as defined (unless ``defines`` says otherwise).
``__has_include(...)`` counts as true (the header is there on a machine with the CUDA toolkit).
A condition that cannot be evaluated (a function-like macro call, malformed syntax) selects its
branch when no earlier branch of the group was taken, so exactly one branch is parsed.

Then ``normalise`` rewrites, in place and column for column, the forms nvcc accepts that the
grammar does not (see ``_NORMALISATIONS``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# What `nvcc -arch=sm_90` defines for the device pass on Linux, and what the CUDA 13 headers
# define that kernels commonly test. `[tool.foxaudit.cuda] defines` overrides any of them
# (a value of false undefines one, e.g. `__CUDA_ARCH__ = false` for the host pass).
BUILTIN_DEFINES: Mapping[str, str] = {
    "__CUDACC__": "1",
    "__NVCC__": "1",
    "__CUDA_ARCH__": "900",
    "__CUDACC_VER_MAJOR__": "13",
    "__CUDACC_VER_MINOR__": "0",
    "CUDART_VERSION": "13000",
    "CUDA_VERSION": "13000",
    "__cplusplus": "201703L",
    "__linux__": "1",
    "__x86_64__": "1",
}

FUNCTION_LIKE = "\0function-like"  # the value recorded for `#define F(x) ...`


@dataclass(frozen=True)
class InactiveRegion:
    """Lines (1-based, inclusive) of one branch that is not compiled, and the directive that
    opened it (``#if 0``, ``#ifdef ENABLE_BF16``, ``#else``)."""

    first_line: int
    last_line: int
    directive: str

    @property
    def dead(self) -> bool:
        """No build configuration compiles it (``#if 0``, ``#elif false``); another one may
        compile any other inactive branch (``#ifdef ENABLE_BF16``, ``#if __CUDA_ARCH__ == 750``)."""
        return bool(DEAD_CONDITION.match(self.directive))


# The directive of a branch no build configuration compiles.
DEAD_CONDITION = re.compile(r"^\s*#\s*(el)?if\s+(0|false)\s*(//.*|/\*.*)?$")


@dataclass(frozen=True)
class Preprocessed:
    data: bytes  # same length as the input; inactive branches and conditional directives blanked
    inactive: tuple[InactiveRegion, ...]


def preprocess(data: bytes, defines: Mapping[str, str | None] | None = None,
               comments: list[tuple[int, int]] | None = None) -> Preprocessed:
    """Resolve ``#if``/``#ifdef``/``#ifndef``/``#elif``/``#else``/``#endif`` (see the module doc).

    ``defines`` maps a macro to its value text, or to None to undefine a built-in one."""
    if b"#" not in data:
        return Preprocessed(data, ())
    macros: dict[str, str] = dict(BUILTIN_DEFINES)
    for name, value in (defines or {}).items():
        if value is None:
            macros.pop(name, None)
        else:
            macros[name] = value
    comments = comment_spans(data) if comments is None else comments
    # Each directive line once: (start, end, line number, directive, argument).
    directives = [(start, end, line, *_directive(_without_comments(data, start, end, comments).strip()))
                  for start, end, line in _directive_lines(data, comments)]
    switch = _whole_file_switch(data, comments, directives)
    if switch is not None and switch not in (defines or {}):
        macros[switch] = "1"  # the build compiles this file only with the switch on: check it so
    out = bytearray(data)
    inactive: list[InactiveRegion] = []
    # One frame per open #if group: [enclosing group active, a branch was taken, this branch active].
    stack: list[list[bool]] = []
    open_region: tuple[int, str] | None = None  # (first line, directive) of the inactive run being built
    code_from = 0  # start of the code between the previous directive and this one

    def active() -> bool:
        return all(frame[2] for frame in stack)

    for start, end, line_number, directive, argument in directives:
        was_active = active()
        if not was_active:
            _blank(out, code_from, start, comments)
        code_from = end
        if directive not in _CONDITIONALS:
            if not was_active:
                _blank(out, start, end, comments)
            elif directive == "define":
                match = _DEFINE.match(argument)
                if match:
                    name, parameters, value = match.groups()
                    macros[name] = FUNCTION_LIKE if parameters is not None else value.strip()
            elif directive == "undef":
                macros.pop(argument.split()[0] if argument.split() else "", None)
            continue
        _blank(out, start, end, comments)
        if directive in ("if", "ifdef", "ifndef"):
            taken = was_active and _condition(directive, argument, macros) is not False
            stack.append([was_active, taken, taken])
        elif not stack:
            continue  # a stray #else/#elif/#endif: nvcc would reject it; keep going
        elif directive == "endif":
            stack.pop()
        else:
            frame = stack[-1]
            if directive == "else":
                frame[2] = frame[0] and not frame[1]
            else:  # elif, elifdef, elifndef
                kind = {"elif": "if", "elifdef": "ifdef", "elifndef": "ifndef"}[directive]
                frame[2] = frame[0] and not frame[1] and _condition(kind, argument, macros) is not False
            frame[1] = frame[1] or frame[2]
        now_active = active()
        if was_active and not now_active:
            open_region = (line_number + data.count(b"\n", start, end) + 1, f"#{directive} {argument}".strip())
        elif not was_active and now_active and open_region is not None:
            inactive.append(InactiveRegion(open_region[0], line_number - 1, open_region[1]))
            open_region = None
    if not active():
        _blank(out, code_from, len(data), comments)
    if open_region is not None:
        inactive.append(InactiveRegion(open_region[0], data.count(b"\n") + 1, open_region[1]))
    return Preprocessed(bytes(out), tuple(region for region in inactive if region.first_line <= region.last_line))


_CONDITIONALS = frozenset({"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"})
# A build switch tested alone: `#ifdef USE_CUDA`, `#if defined(USE_CUDA)`, `#if USE_CUDA`.
_SWITCH = re.compile(r"(?:defined\s*\(\s*([A-Za-z_]\w*)\s*\)|defined\s+([A-Za-z_]\w*)|([A-Za-z_]\w*))\s*$")
_OUTSIDE_CODE = re.compile(rb"^[ \t]*#[^\n]*$|\s+", re.MULTILINE)


def _whole_file_switch(data: bytes, comments: list[tuple[int, int]], directives: list[tuple[int, int, int, str, str]]) -> str | None:
    """The macro of an ``#ifdef X`` / ``#if defined(X)`` that wraps all of the file's code, with no
    ``#else`` (LightGBM's ``src/**/cuda/*.cu`` under ``#ifdef USE_CUDA``): a build switch the
    build turns on whenever it compiles the file. Outside it only comments, blank lines and
    other directives (``#include``, ``#pragma once``). None when there is no such group."""
    parsed = [(start, end, directive, argument) for start, end, _, directive, argument in directives]
    first = next((index for index, (_, _, kind, _) in enumerate(parsed) if kind in _CONDITIONALS), None)
    if first is None or parsed[first][2] not in ("ifdef", "if"):
        return None
    depth = 0
    closing = None
    for index in range(first, len(parsed)):
        kind = parsed[index][2]
        if kind in ("if", "ifdef", "ifndef"):
            depth += 1
        elif kind == "endif":
            depth -= 1
            if depth == 0:
                closing = index
                break
        elif depth == 1 and kind in ("else", "elif", "elifdef", "elifndef"):
            return None
    if closing is None or any(kind in _CONDITIONALS for _, _, kind, _ in parsed[closing + 1 :]):
        return None
    outside = _without_comments(data, 0, parsed[first][0], comments) + _without_comments(data, parsed[closing][1], len(data), comments)
    if _OUTSIDE_CODE.sub(b"", outside.encode()).strip():
        return None
    argument = parsed[first][3].strip()
    if parsed[first][2] == "ifdef":
        return argument.split()[0] if argument.split() else None
    match = _SWITCH.match(argument)
    return next((group for group in match.groups() if group), None) if match is not None else None
_DEFINE = re.compile(r"([A-Za-z_]\w*)(\([^)]*\))?(.*)", re.DOTALL)
_DIRECTIVE = re.compile(r"#\s*([a-z_]+)\b(.*)", re.DOTALL)


def _directive(text: str) -> tuple[str, str]:
    match = _DIRECTIVE.match(text)
    if match is None:
        return "", ""
    return match.group(1), match.group(2).replace("\\\n", " ").strip()


def _condition(kind: str, argument: str, macros: Mapping[str, str]) -> bool | None:
    """True/False, or None when the condition cannot be evaluated."""
    if kind in ("ifdef", "ifndef"):
        name = argument.split()[0] if argument.split() else ""
        return (name in macros) == (kind == "ifdef")
    try:
        value = _Evaluator(argument, macros).evaluate()
    except _Undecidable:
        return None
    return None if value is None else value != 0


# ---------------------------------------------------------------------------------------------
# #if expressions: a small Pratt parser over C preprocessor tokens; None is "cannot be known".

class _Undecidable(Exception):
    pass


_TOKEN = re.compile(
    r"\s*(?:(0[xX][0-9a-fA-F']+|\d[\d']*)[uUlL]*|([A-Za-z_]\w*)|('(?:\\.|[^'\\])+')|"
    r"(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>!~&|^?:,]))"
)
_BINARY = {  # operator → (precedence, function); higher binds tighter
    "||": (1, None), "&&": (2, None),
    "|": (3, lambda a, b: a | b), "^": (4, lambda a, b: a ^ b), "&": (5, lambda a, b: a & b),
    "==": (6, lambda a, b: int(a == b)), "!=": (6, lambda a, b: int(a != b)),
    "<": (7, lambda a, b: int(a < b)), ">": (7, lambda a, b: int(a > b)),
    "<=": (7, lambda a, b: int(a <= b)), ">=": (7, lambda a, b: int(a >= b)),
    "<<": (8, lambda a, b: a << b if 0 <= b < 64 else None), ">>": (8, lambda a, b: a >> b if 0 <= b < 64 else None),
    "+": (9, lambda a, b: a + b), "-": (9, lambda a, b: a - b),
    "*": (10, lambda a, b: a * b),
    "/": (10, lambda a, b: int(a / b) if b else None), "%": (10, lambda a, b: a - b * int(a / b) if b else None),
}
_ALWAYS_TRUE_CALLS = frozenset({"__has_include", "__has_include_next"})
_MAX_EXPANSION = 32


class _Evaluator:
    def __init__(self, text: str, macros: Mapping[str, str], depth: int = 0):
        self.macros = macros
        self.depth = depth
        self.tokens = self._tokenize(text)
        self.index = 0

    @staticmethod
    def _tokenize(text: str) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        position = 0
        text = text.rstrip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                raise _Undecidable(text[position:])
            number, name, char, operator = match.groups()
            if number is not None:
                tokens.append(("number", number.replace("'", "")))
            elif name is not None:
                tokens.append(("name", name))
            elif char is not None:
                tokens.append(("number", str(_char_value(char))))
            else:
                tokens.append(("op", operator))
            position = match.end()
        return tokens

    def evaluate(self) -> int | None:
        value = self._expression(0)
        if self.index != len(self.tokens):
            raise _Undecidable("trailing tokens")
        return value

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        token = self._peek()
        if token is None:
            raise _Undecidable("unexpected end")
        self.index += 1
        return token

    def _expect(self, operator: str) -> None:
        if self._take() != ("op", operator):
            raise _Undecidable(f"expected {operator}")

    def _expression(self, minimum: int) -> int | None:
        left = self._unary()
        while True:
            token = self._peek()
            if token is None or token[0] != "op":
                return left
            operator = token[1]
            if operator == "?" and minimum == 0:
                self.index += 1
                when_true = self._expression(0)
                self._expect(":")
                when_false = self._expression(0)
                left = None if left is None else (when_true if left else when_false)
                continue
            if operator not in _BINARY or _BINARY[operator][0] < minimum:
                return left
            precedence, function = _BINARY[operator]
            self.index += 1
            right = self._expression(precedence + 1)
            if operator == "&&":
                left = 0 if left == 0 or right == 0 else (None if left is None or right is None else 1)
            elif operator == "||":
                left = 1 if (left not in (0, None)) or (right not in (0, None)) else (
                    None if left is None or right is None else 0)
            else:
                left = None if left is None or right is None else function(left, right)  # type: ignore[misc]

    def _unary(self) -> int | None:
        kind, text = self._take()
        if kind == "op":
            if text == "(":
                value = self._expression(0)
                self._expect(")")
                return value
            operand = self._unary()
            if operand is None:
                return None
            if text == "!":
                return int(not operand)
            if text == "-":
                return -operand
            if text == "+":
                return operand
            if text == "~":
                return ~operand
            raise _Undecidable(text)
        if kind == "number":
            return int(text, 16) if text[:2] in ("0x", "0X") else int(text, 8) if text.startswith("0") and len(text) > 1 else int(text)
        if text == "defined":
            parenthesised = self._peek() == ("op", "(")
            if parenthesised:
                self.index += 1
            name_kind, name = self._take()
            if name_kind != "name":
                raise _Undecidable("defined without a name")
            if parenthesised:
                self._expect(")")
            return int(name in self.macros)
        if text in ("true", "false"):
            return int(text == "true")
        if self._peek() == ("op", "("):
            self._skip_arguments()
            if text in _ALWAYS_TRUE_CALLS:
                return 1
            return None  # a function-like macro (or __has_builtin & co.): value unknown
        value = self.macros.get(text)
        if value is None:
            return 0  # an undefined macro is 0 in #if
        if value == FUNCTION_LIKE or self.depth >= _MAX_EXPANSION:
            return None
        if not value.strip():
            raise _Undecidable(f"{text} expands to nothing")
        try:
            return _Evaluator(value, self.macros, self.depth + 1).evaluate()
        except _Undecidable:
            return None

    def _skip_arguments(self) -> None:
        depth = 0
        while True:
            kind, text = self._take()
            if (kind, text) == ("op", "("):
                depth += 1
            elif (kind, text) == ("op", ")"):
                depth -= 1
                if depth == 0:
                    return


def _char_value(literal: str) -> int:
    body = literal[1:-1]
    escapes = {"\\n": 10, "\\t": 9, "\\0": 0, "\\\\": 92, "\\'": 39}
    return escapes.get(body, ord(body[-1]))


# ---------------------------------------------------------------------------------------------
# Lexing just enough of C: where comments are, where logical (continued) lines are.

def comment_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte spans of every ``//`` and ``/* */`` comment, skipping string and
    character literals (an unterminated literal ends at its line's end, as nvcc would complain
    and move on)."""
    spans: list[tuple[int, int]] = []
    for match in _LEXEME.finditer(data):
        if match.group("comment") is not None:
            spans.append(match.span())
    return spans


_LEXEME = re.compile(
    rb"(?=[/\"'R])(?:"
    rb'(?P<raw>R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)")'
    rb'|(?P<string>"(?:[^"\\\n]|\\.)*(?:"|$))'
    rb"|(?P<char>(?<![\w'])'(?:[^'\\\n]|\\.)*(?:'|$))"
    rb"|(?P<comment>//[^\n]*(?:(?<=\\)\n[^\n]*)*|/\*.*?(?:\*/|\Z)))",
    re.MULTILINE | re.DOTALL,
)


_DIRECTIVE_START = re.compile(rb"^[ \t]*#", re.MULTILINE)


def _directive_lines(data: bytes, comments: list[tuple[int, int]]) -> Iterable[tuple[int, int, int]]:
    """(start, end, 1-based line) of each directive, its backslash-continued lines joined; a
    ``#`` inside a block comment does not start one."""
    comment_starts = [span[0] for span in comments]
    line_number, counted_to, reach = 1, 0, 0
    length = len(data)
    for match in _DIRECTIVE_START.finditer(data):
        start = match.start()
        if start < reach:
            continue  # a continuation line of the previous directive
        index = bisect.bisect_right(comment_starts, start) - 1
        if index >= 0 and comments[index][0] < start < comments[index][1]:
            continue
        end = data.find(b"\n", start)
        end = length if end < 0 else end
        while end < length and data[start:end].rstrip(b"\r").endswith(b"\\"):
            following = data.find(b"\n", end + 1)
            end = length if following < 0 else following
        line_number += data.count(b"\n", counted_to, start)
        counted_to = start
        reach = end
        yield start, end, line_number


def _overlapping(comments: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    # Comments are sorted and disjoint: bisect to the first one that may reach into [start, end).
    index = max(bisect.bisect_right(comments, (start, start)) - 1, 0)
    found = []
    while index < len(comments) and comments[index][0] < end:
        if comments[index][1] > start:
            found.append((max(comments[index][0], start), min(comments[index][1], end)))
        index += 1
    return found


def _without_comments(data: bytes, start: int, end: int, comments: list[tuple[int, int]]) -> str:
    chunk = bytearray(data[start:end])
    for comment_start, comment_end in _overlapping(comments, start, end):
        chunk[comment_start - start : comment_end - start] = _NOT_NEWLINE.sub(b" ", data[comment_start:comment_end])
    return chunk.decode("utf-8", errors="replace").replace("\\\r\n", " ").replace("\\\n", " ")


def _blank(out: bytearray, start: int, end: int, comments: list[tuple[int, int]]) -> None:
    """Spaces over [start, end) except newlines and comments."""
    position = start
    for keep_start, keep_end in [*_overlapping(comments, start, end), (end, end)]:
        if keep_start > position:
            out[position:keep_start] = _NOT_NEWLINE.sub(b" ", bytes(out[position:keep_start]))
        position = max(position, keep_end)


_NOT_NEWLINE = re.compile(rb"[^\r\n]")
