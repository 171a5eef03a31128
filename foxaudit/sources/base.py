"""A source file parsed once: bytes, text, line table and a tree-sitter tree.

Python and CUDA files are both parsed with tree-sitter (fast, error-tolerant: a CUDA file
with ERROR nodes still yields the parts that parsed). Rules that need libcst's precision
(codemods) ask for ``SourceFile.cst()``, which parses lazily and is cached on the object.
"""

from __future__ import annotations

import bisect
import codecs
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import tree_sitter

    from foxaudit.sources.cuda_forms import PreparedCuda

Language = Literal["python", "cuda"]

PYTHON_SUFFIXES = (".py", ".pyi")
CUDA_SUFFIXES = (".cu", ".cuh")


@functools.cache
def ts_language(language: Language) -> tree_sitter.Language:
    # Grammars (and tree-sitter itself) load on first use: a warm (fully cached) run never needs them.
    import tree_sitter

    if language == "python":
        import tree_sitter_python

        return tree_sitter.Language(tree_sitter_python.language())
    import tree_sitter_cuda

    return tree_sitter.Language(tree_sitter_cuda.language())


@functools.cache
def _parser(language: Language) -> tree_sitter.Parser:
    import tree_sitter

    return tree_sitter.Parser(ts_language(language))


def language_of(path: str | Path) -> Language | None:
    name = str(path)
    if name.endswith(PYTHON_SUFFIXES):
        return "python"
    if name.endswith(CUDA_SUFFIXES):
        return "cuda"
    return None


# PEP 263: a comment on line 1 or 2 naming the file's encoding (CPython's own pattern).
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def declared_encoding(data: bytes) -> str:
    """The codec a Python file declares (PEP 263), "utf-8" without a usable declaration.

    Like CPython, line 2 counts only when line 1 is blank or a comment; an unknown codec name is
    left to CPython's verdict (FX001 reports its syntax error) and the bytes are read as UTF-8."""
    for line in data.split(b"\n", 2)[:2]:
        match = _CODING.match(line)
        if match is not None:
            try:
                name = codecs.lookup(match.group(1).decode("ascii")).name
            except (LookupError, UnicodeDecodeError):
                return "utf-8"
            return "utf-8" if name in ("utf-8", "utf-8-sig") else name
        stripped = line.strip()
        if stripped and not stripped.startswith(b"#"):
            break
    return "utf-8"


@dataclass
class SourceFile:
    """One file. ``path`` is repository-relative with POSIX separators."""

    path: str
    data: bytes
    language: Language
    # Macros for CUDA conditional compilation ([tool.foxaudit.cuda] defines): name → value text,
    # None to undefine a built-in one. See foxaudit/sources/preprocess.py.
    defines: tuple[tuple[str, str | None], ...] = ()
    text: str = field(init=False)
    # The encoding the bytes were written in: "utf-8", or a PEP 263 declaration's codec. A
    # file in another encoding is held as UTF-8 (``data`` re-encoded) so every offset is UTF-8.
    encoding: str = field(init=False, default="utf-8")
    _tree: tree_sitter.Tree | None = field(default=None, init=False, repr=False)
    _cst: object | None = field(default=None, init=False, repr=False)
    # Python function node id → ``placeholders.placeholder_body`` of it, in this file's one tree
    # (``placeholder_body_in``): FX902 and the whole-program scanner ask it of every function.
    placeholders: dict[int, str | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Invalid text raises UnicodeDecodeError here; the engine turns it into FX001.
        encoding = declared_encoding(self.data) if self.language == "python" else "utf-8"
        self.text = self.data.decode(encoding)
        if encoding != "utf-8":
            self.data = self.text.encode("utf-8")
            self.encoding = encoding

    @functools.cached_property
    def _line_starts(self) -> list[int]:
        """Offsets just after each newline, built on first use: most files report nothing and
        never need a position (a Python loop over the bytes cost ~1.5 s on pandas' tree)."""
        return [0, *(match.end() for match in _NEWLINE.finditer(self.data))]

    @classmethod
    def from_text(cls, path: str, text: str, language: Language | None = None) -> SourceFile:
        lang = language or language_of(path)
        if lang is None:
            raise ValueError(f"unknown source language for {path!r} — hint: use .py, .pyi, .cu or .cuh")
        return cls(path=path, data=text.encode("utf-8"), language=lang)

    @property
    def tree(self) -> tree_sitter.Tree:
        if self._tree is None:
            if self.language == "cuda":
                self._tree = self.cuda.tree
            else:
                self._tree = _parser(self.language).parse(self.data)
        return self._tree

    @functools.cached_property
    def cuda(self) -> PreparedCuda:
        """The CUDA file as nvcc sees it (conditionals resolved, forms the grammar lacks
        normalised, same byte offsets) and its tree; see foxaudit/sources/cuda_forms.py."""
        from foxaudit.sources.cuda_forms import prepare

        return prepare(self.data, _parser("cuda"), dict(self.defines))

    @property
    def is_stub_file(self) -> bool:
        return self.path.endswith(".pyi")

    def cst(self):  # -> libcst.Module; imported lazily, most runs never need it
        if self._cst is None:
            import libcst

            # Text, not bytes, for a re-encoded file: libcst would obey its coding declaration.
            self._cst = libcst.parse_module(self.data if self.encoding == "utf-8" else self.text)
        return self._cst

    def node_text(self, node: tree_sitter.Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def position(self, byte_offset: int) -> tuple[int, int]:
        """1-based (line, character column) of a byte offset."""
        line_index = _bisect_right(self._line_starts, byte_offset) - 1
        start = self._line_starts[line_index]
        column = len(self.data[start:byte_offset].decode("utf-8", errors="replace")) + 1
        return line_index + 1, column

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        start = self._line_starts[line - 1]
        end = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.data)
        return self.data[start:end].decode("utf-8", errors="replace").rstrip("\r")

    @property
    def line_count(self) -> int:
        return len(self._line_starts)


def node_span(source: SourceFile, node: tree_sitter.Node) -> tuple[int, int, int, int]:
    """(line, column, end_line, end_column), 1-based characters, end exclusive."""
    line, column = source.position(node.start_byte)
    end_line, end_column = source.position(node.end_byte)
    return line, column, end_line, end_column


_bisect_right = bisect.bisect_right
_NEWLINE = re.compile(b"\n")
