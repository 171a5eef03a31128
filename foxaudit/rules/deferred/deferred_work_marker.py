"""FX901: deferred-work markers in comments and docstrings."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import ClassVar

import tree_sitter

from foxaudit.rules._support.options import freeze, option_error, string_tuple
from foxaudit.rules.base import Example, FileContext, Rule, RuleOptions

CODE = "FX901"
DEFAULT_TAGS = ("TODO", "FIXME", "XXX", "HACK", "TBD")

# ruff splits the first word of a comment on every non-alphanumeric character (`TODO:` → `TODO`,
# `todo_list` → `todo`); `[^\W_]` is exactly "alphanumeric" in Unicode.
_FIRST_WORD = re.compile(r"[^\W_]*")
# What may precede the first word of a CUDA comment line: `//`, `/*`, ` * ` continuation stars,
# Doxygen's `///`, `//!`, `///<`, `@todo` and `\todo`.
_CUDA_LEAD = re.compile(r"[\s/*!<@\\]*")
# Inline code spans quote a word rather than use it: "`TODO`" mentions the tag.
# A code span closes with a run of backticks as long as its opening one (Markdown, reST's
# ``literal``): a docstring may quote another project's marker in one.
_CODE_SPAN = re.compile(r"(`+)[^`\n]*?\1")
_FENCE = re.compile(r"^\s*(```|~~~)")
# In a `#define`/`#pragma` argument, the first `//` or `/*` outside a string or char literal.
_PREPROC_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//|/\*')


@dataclass(frozen=True)
class DeferredWorkMarkerOptions(RuleOptions):
    tags: tuple[str, ...] = field(
        default=DEFAULT_TAGS,
        metadata={"help": "Marker words. One opening a comment matches in any case; elsewhere only in upper case."},
    )
    docstrings: bool = field(
        default=True,
        metadata={"help": "Also check docstrings and other bare string statements (attribute docs)."},
    )
    honour_peer_suppressions: bool = field(
        default=False,
        metadata={"help": "Skip a marker on a line that ruff or pylint is told to accept: a bare `# noqa`,"
                          " `# noqa: FIX001`-`FIX004` for the tag's code (or `# ruff: ignore[...]` naming it"
                          " or its rule name), `# pylint: disable=fixme` (or W0511)."},
    )

    def __post_init__(self) -> None:
        tags = string_tuple(CODE, "tags", self.tags, allow_empty=False)
        for tag in tags:
            if not _FIRST_WORD.fullmatch(tag):
                raise option_error(CODE, "tags", "a tag must be one alphanumeric word", tag,
                                   'a word like "TODO"', "remove punctuation and spaces from the tag")
        if not isinstance(self.docstrings, bool):
            raise option_error(CODE, "docstrings", "expected a boolean", self.docstrings, "true or false",
                               "write docstrings = true or docstrings = false")
        if not isinstance(self.honour_peer_suppressions, bool):
            raise option_error(CODE, "honour-peer-suppressions", "expected a boolean", self.honour_peer_suppressions,
                               "true or false", "write honour-peer-suppressions = true")
        freeze(self, "tags", tags)


@dataclass(frozen=True)
class _Matchers:
    lower_list: tuple[str, ...]  # cheap pre-filter: does the lower-cased text contain a tag at all?
    upper: re.Pattern[str]  # an upper-case, word-bounded tag anywhere
    lower_tags: frozenset[str]
    docstring_opening: re.Pattern[str]  # `Todo:` opening a docstring line (napoleon's section)


@functools.lru_cache(maxsize=32)
def _matchers(tags: tuple[str, ...]) -> _Matchers:
    ordered = sorted(tags, key=len, reverse=True)
    alternation = "|".join(re.escape(tag) for tag in ordered)
    upper = "|".join(re.escape(tag.upper()) for tag in ordered)
    return _Matchers(
        lower_list=tuple(tag.lower() for tag in ordered),
        upper=re.compile(rf"\b(?:{upper})\b"),
        lower_tags=frozenset(tag.lower() for tag in tags),
        # `Todo:` / `todo: x`, a heading line `TODOs` / `Todo` alone, a task-list item `- [todo] x`;
        # but not numpydoc's `todo : str` (a parameter named todo).
        docstring_opening=re.compile(
            rf"\s*(?:[-*+][ \t]+)?(?:\[(?P<bracketed>{alternation})\]"
            rf"|(?P<tag>{alternation})(?::(?=\s|$)|s?[ \t]*:?[ \t]*$))", re.IGNORECASE),
    )


# `# todo_include_todos = False`: a commented-out setting whose name starts with the tag (Sphinx's
# quickstart conf.py); `# todo_list items` stays a marker, as ruff reads it.
_SETTING_SWITCHED_OFF = re.compile(r"[^\W\d]\w*_\w*\s*=(?!=)\s*\S")


def _opening_word(text: str, start: int, matchers: _Matchers) -> str | None:
    """The tag that opens ``text`` at ``start``: the first word, or a bracketed one (`[todo] x`,
    a task-list item); None when the word there is no tag."""
    bracketed = text.startswith("[", start)
    word = _FIRST_WORD.match(text, start + bracketed).group()  # type: ignore[union-attr]
    if word.lower() not in matchers.lower_tags:
        return None
    if bracketed and not text.startswith("]", start + 1 + len(word)):
        return None
    return word


def _python_opening(text: str, matchers: _Matchers) -> tuple[int, str] | None:
    """ruff's FIX rules: the first word of the comment, or of any later `#`-section, is a tag."""
    offset = 0
    # A `#` inside a code span (``#FIXME: spawn`` quoting another project) opens no section.
    subset = text = _blank_code_spans(text)
    while True:
        trimmed = subset.lstrip("#").lstrip()
        start = offset + len(subset) - len(trimmed)
        word = _opening_word(trimmed, 0, matchers)
        bracketed = trimmed.startswith("[")
        if word is not None and not _IN_A_NAME_AFTER.match(trimmed, bracketed + len(word)) \
                and not _SETTING_SWITCHED_OFF.match(trimmed):
            return start + bracketed, word  # (not `# xxx/newdir/. exists`: a path that starts with the word)
        following = trimmed.find("#")
        if following < 0:
            return None
        offset = start + following
        subset = text[offset:]


def _cuda_line_opening(line: str, matchers: _Matchers) -> tuple[int, str] | None:
    """The first word of a comment line (or of a later `//`-section on it) is a tag, any case."""
    position = 0
    while True:
        start = _CUDA_LEAD.match(line, position).end()  # type: ignore[union-attr]
        word = _opening_word(line, start, matchers)
        if word is not None:
            return start + line.startswith("[", start), word
        following = line.find("//", start)
        if following < 0:
            return None
        position = following


def _cuda_markers(text: str, matchers: _Matchers) -> list[tuple[int, str]]:
    """One marker per line of a CUDA comment: a `/* … */` block spans lines, and each tagged line
    is its own promise, as each `//` line and each docstring line is."""
    found: list[tuple[int, str]] = []
    line_start = 0
    for line in text.split("\n"):
        marker = _first(_cuda_line_opening(line, matchers), _upper_anywhere(line, matchers))
        if marker is not None:
            found.append((line_start + marker[0], marker[1]))
        line_start += len(line) + 1
    return found


def _blank_code_spans(text: str) -> str:
    return _CODE_SPAN.sub(lambda match: " " * len(match.group()), text)


# `see TODO in ...`, `(see the FIXME above)`: the comment points at a marker elsewhere (reported
# where it is written, when it is in the tree); the pointer itself promises nothing.
_REFERS_TO_TAG = re.compile(r"\bsee\s+(?:the\s+)?$", re.IGNORECASE)
# A tag in a cell of a table drawn with `|` (reST grid tables in a docstring's literal block).
_TABLE_CELL_BEFORE = re.compile(r"\|[ \t]*$")
_TABLE_CELL_AFTER = re.compile(r"[ \t]*\|")
# A tag named as an example or in a list of tags: "like FIXME, XXX", "such as TODO", "FIXME and XXX".
_NAMED_AS_EXAMPLE = re.compile(r"\b(?:like|such as|e\.g\.,?|for example,?|including|as in)\s+$"
                               r"|\b(?:TODO|FIXME|XXX|HACK)(?:,|\s+(?:and|or))\s+$"
                               r"|\b(?:END|End|end)(?:\s+(?:OF|of|Of))?\s+$")  # `# END OF HACK`: closes the marked block
# "the TODO above its definition", "that FIXME below": a pointer at a marker written elsewhere.
_POINTS_AT_TAG = re.compile(r"\s+(?:above|below)\b", re.IGNORECASE)


# A tag word used as a placeholder inside a name, path or command (`sys.XXX`, `XXX.json`,
# `--token XXX`) — and `XXX` as a placeholder noun (`another XXX link`, `where XXX is the field`):
# the text names something, it promises nothing.
_IN_A_NAME_BEFORE = re.compile(r"(?:[.\-/$<{]|(?:^|\s)--[A-Za-z][\w-]*\s+)$")
_IN_A_NAME_AFTER = re.compile(r"\.\w|[/>}\[]")
# `XXX` as an argument of a call sketched in a comment: after `(` or `,`, before `)` or `,`.
_ARGUMENT_BEFORE = re.compile(r"[(,]\s*$")
_ARGUMENT_AFTER = re.compile(r"\s*[),]")
_PLACEHOLDER_NOUN = re.compile(r"\b(?:a|an|the|another|each|every|any|some|where|with|of|named|called)\s+$", re.IGNORECASE)


# `XXX` inside a name somewhere in the same docstring or comment (`XXXOscillator`, `clean_XXX`,
# `XXX.lines`): there it is a metavariable, in every other place of that text too.
_XXX_IN_A_NAME = re.compile(r"[A-Za-z0-9_]XXX|XXX[A-Za-z0-9_]|XXX\.\w")
# `YYY` / `ZZZ` beside it (`Weights from XXX not used in YYY`): a family of metavariables.
_METAVARIABLE_FAMILY = re.compile(r"\b(?:YYY|ZZZ)\b")
# The tag names a kind of comment (`common mistakes in TODO comments`, `the FIXME markers`): the
# text is about markers, it is none.
_KIND_OF_COMMENT = re.compile(r"\s+(?:comments?|tags?|markers?|notes?|items?|lists?|lines?|entries)\b", re.IGNORECASE)


def _upper_anywhere(text: str, matchers: _Matchers, context: str | None = None) -> tuple[int, str] | None:
    """An upper-case tag anywhere in ``text`` (one line of ``context``, the whole docstring, when given)."""
    blanked = _blank_code_spans(text)
    whole = context if context is not None else text
    metavariable = _XXX_IN_A_NAME.search(whole) is not None or _METAVARIABLE_FAMILY.search(whole) is not None
    for match in matchers.upper.finditer(blanked):
        if match.group() == "XXX" and metavariable:
            continue
        if _REFERS_TO_TAG.search(blanked, 0, match.start()) or _POINTS_AT_TAG.match(blanked, match.end()):
            continue
        if _KIND_OF_COMMENT.match(blanked, match.end()) and blanked[:match.start()].strip(" \t#/*!<@\\\n"):
            continue  # mid-sentence `… in TODO comments`; a comment that opens with `TODO list:` still counts
        quote = blanked[match.start() - 1 : match.start()]
        if quote in ("'", '"') and blanked.startswith(quote, match.end()):
            continue  # `"api_key": "XXX"`: the tag is a quoted value (a placeholder in an example payload)
        line_start = blanked.rfind("\n", 0, match.start()) + 1
        line_end = blanked.find("\n", match.end())
        before, after = blanked[line_start : match.start()], blanked[match.end() : line_end if line_end >= 0 else None]
        if before.replace('"""', "").count('"') % 2 == 1 and '"' in after.replace('"""', ""):
            continue  # `# print("XXX in pass %d" % n)`: inside a string of commented-out code
        if _TABLE_CELL_BEFORE.search(before) and _TABLE_CELL_AFTER.match(after):
            continue  # `| XXX |`: a cell of a table drawn in text
        if _NAMED_AS_EXAMPLE.search(before):
            continue  # "notes in the code like FIXME, XXX": the tags are named, not used
        if _IN_A_NAME_BEFORE.search(blanked, 0, match.start()) or _IN_A_NAME_AFTER.match(blanked, match.end()):
            continue
        if match.group() == "XXX" and not blanked.startswith(":", match.end()) and _PLACEHOLDER_NOUN.search(
                blanked, 0, match.start()):
            continue
        if match.group() == "XXX" and _ARGUMENT_BEFORE.search(before) and _ARGUMENT_AFTER.match(after):
            continue  # `make_tensor(make_shared_ptr(XXX), XXX)`: a placeholder argument of a sketched call
        return match.start(), match.group()
    return None


def _mentions_tag(text: str, matchers: _Matchers) -> bool:
    lowered = text.lower()
    for tag in matchers.lower_list:
        if tag in lowered:
            return True
    return False


def _first(*found: tuple[int, str] | None) -> tuple[int, str] | None:
    present = [item for item in found if item is not None]
    return min(present) if present else None


class DeferredWorkMarker(Rule):
    """Flags deferred-work markers (`TODO`-style tags) in comments and docstrings.

    ## What it does
    Reports a marker tag (default: the five configured in `tags`) in a Python comment, a Python
    docstring or other bare string statement, or a CUDA comment — including a trailing comment on
    a `#define` or `#pragma` line, which tree-sitter folds into the directive's argument.

    A tag is a marker when it *opens* a comment in any case (`# todo: x`, `#Fixme`, `// hack -`,
    `/* tbd */`, `@todo` in Doxygen, a later `# ...` section as in `# noqa: E501 # todo`) —
    everything ruff's FIX001–FIX004 report, FX901 reports too — or when it appears anywhere in
    a comment or docstring in upper case as a whole word (`# see below; <TAG> fix`). In a
    docstring a line opening with the tag and a colon (napoleon's `Todo:` section) matches in
    any case (`Todo:`, `todo: measure`); a numpydoc parameter named like a tag (`todo : str`,
    a space before the colon) is not a section. One finding per tagged line: a `/* … */` block or a
    docstring with tags on two lines gives two. A heading line of a docstring that is the tag alone,
    plural or not (`TODOs`, `Todo`), and a bracketed tag opening a comment or a task-list item
    (`# [todo] x`, `- [todo] x`) are markers too.

    Not markers: a lower-case word in running text (`# this is a hack`), a longer word
    (`# Todoist`, `# XXXL size`), a tag quoted in an inline code span or a fenced code block of a
    docstring (documentation that *mentions* the tag), an upper-case tag right after "see" or
    "see the" (`(see TODO in the reference implementation)`: a pointer to a marker written
    elsewhere, reported where it is written), a tag that is part of a name, a path or a command
    (`sys.XXX`, `# xxx/newdir/. exists`, `--token XXX`), `XXX` as a placeholder noun after an
    article or "where" (`another XXX link`, `where XXX is the field`; `the XXX:` still counts)
    or beside `YYY`/`ZZZ` in the same text, an upper-case tag that names a kind of comment in the
    middle of a sentence (`common mistakes in TODO comments`),
    and ordinary string literals that are
    values — `TAGS = ("...", "...")`, arguments, f-strings in expressions — so that a tool which
    searches for the word can contain it. Every bare string statement counts as documentation:
    module, class and function docstrings and also attribute docstrings and strings used as
    block comments, because they exist only for readers.

    ## Why is this bad
    Invariant 9, no deferred work: if it can't be finished, it doesn't start. A marker is a
    promise nobody tracks; it rots in place while the code around it ships as if complete. Work
    that must wait belongs in the issue tracker, where it is prioritised and visible.

    ## Example
    ```python
    def fill_ratio(order):
        # todo: account for partial fills
        return order.filled / order.size
    ```

    ## Use instead
    Finish the work, or file an issue and remove the marker:
    ```python
    def fill_ratio(order):
        return (order.filled + order.partially_filled) / order.size
    ```

    ## Options
    - `tags`: the marker words (default `["TODO", "FIXME", "XXX", "HACK", "TBD"]`).
    - `docstrings`: whether docstrings and bare string statements are checked (default true).
    - `honour-peer-suppressions`: when migrating from ruff or pylint, accept the markers those
      tools were already told to accept on the same line — a bare `# noqa`, `# noqa: FIX001`
      (`FIXME`), `FIX002` (`TODO`), `FIX003` (`XXX`), `FIX004` (`HACK`) for the tag found, ruff's
      own `# ruff: ignore[...]` naming that code or its rule name (`line-contains-todo`), and
      `# pylint: disable=fixme` / `disable=W0511` (default false: a peer's suppression carries
      no reason, foxaudit's `# foxaudit: ignore[FX901] -- reason` does).
    """

    code = CODE
    name = "deferred-work-marker"
    summary = "Deferred-work marker (a `TODO`-style tag) in a comment or docstring"
    invariant = 9
    languages = frozenset({"python", "cuda"})
    python_nodes = ("comment", "expression_statement")
    cuda_nodes = ("comment", "preproc_arg")
    options_class = DeferredWorkMarkerOptions

    VALID: ClassVar[list[Example]] = [
        Example("# this is a hack around numpy's rounding\nx = 1\n"),
        Example("# Todoist sync runs nightly\n# XXXL size is allowed\n"),
        Example('TAGS = ("TODO", "FIXME", "XXX", "HACK", "TBD")\n'),
        Example('def search(text):\n    """Find markers."""\n    return "TODO" in text or text.startswith("FIXME")\n'),
        # A quoted tag is a value (an example payload's placeholder); "the TODO above" points at a marker.
        Example('class Table:\n    \"\"\"A table, like::\n\n       +-----+-----+\n       | AAA | XXX |\n'
                '       +-----+-----+\n    \"\"\"\n'),
        Example('class NotesChecker:\n    \"\"\"Checks for warning notes in the code like FIXME, XXX.\"\"\"\n'),
        Example('def check(nodes):\n    # print(\"XXX in pass %d\" % len(nodes))\n    return nodes\n'),
        Example('def materials(stage):\n    stage.load()\n    # END OF HACK\n    return stage\n'),
        Example("def spawn():\n    # The default is `fork` (``#FIXME: spawn`` in its context.py).\n    return 1\n"),
        # A picture drawn with `X` rows (a causal mask), a placeholder argument, a quoted marker in
        # a reST literal.
        Example("__device__ int mask(int i) {\n    // The causal mask:\n    // XXXX\n    //  XXX\n    //   XX\n"
                "    return i;\n}\n", path="k.cu"),
        Example("// sA is shared memory: make_tensor(make_shared_ptr(XXX), XXX)\n", path="k.cuh"),
        Example('def probe():\n    """The default (``#FIXME: spawn`` in its ``context.py``)."""\n    return 1\n'),
        Example('def payload():\n    """Build the message.\n\n    {"type": "subscribe", "api_key": "XXX"}\n    """\n'
                '    return {}\n'),
        Example('def update(original):\n    # Not needed if the map used hashes, as suggested in the TODO above its definition\n'
                '    return dict(original)\n'),
        Example('message = f"found TODO in {path}"\n'),
        Example('def scan():\n    """Report each `TODO` tag the scanner sees."""\n'
                "    return 1\n"),
        Example('"""Docs.\n\n```python\n# TODO: in a fenced example\n```\n"""\n'),
        Example("# the to-do list lives in the tracker\n"),
        Example("# todo_include_todos = False\n"),  # a commented-out setting (Sphinx's quickstart conf.py)
        # A family of metavariables (transformers' docstring), a kind of comment named (cpplint).
        Example('def load():\n    """The warning *Weights from XXX not used in YYY* means that the layer XXX is not\n'
                '    used by YYY."""\n    return 1\n'),
        Example("# Checks for common mistakes in TODO comments.\n# Count the FIXME markers per file.\n"),
        Example("# TODOS are tracked elsewhere\n"),
        # A pointer to a marker written elsewhere is no marker of its own.
        Example("# the fast path stays off (see TODO in the reference\n# implementation about parity)\nfast = False\n"),
        Example("x = 1  # foxaudit: ignore[FX401] -- documented reason\n"),
        # A tag word as a placeholder inside a name, a path or a command, or as a placeholder noun.
        Example('class Envelope:\n    """An envelope around an indicator.\n\n    - Class XXXEnvelope(XXX, EnvelopeMixIn)\n'
                '    - XXX calculates lines[0] (inherited from XXX)\n    """\n'),
        Example("# Handle special cases for sys.XXX streams\n# --token XXX \\\n# xxx/newdir/. exists if xxx/newdir exists\n"
                'def test_add_inline():\n    """The "Add another XXX" link adds items; see clean_XXX(), where XXX is the field."""\n'),
        Example('"""TODO in a docstring, but docstrings are off."""\n', options={"docstrings": False}),
        Example("# TODO is not a tag here\n", options={"tags": ["WIP"]}),
        Example("# TODO: port the cache  # noqa: FIX002\n# FIXME: later  # noqa: FIX001, E501\n"
                "x = 1  # XXX  # noqa\n# HACK around it  # pylint: disable=fixme\n# TODO: y  # pylint: disable=W0511\n"
                "# TODO: z  # ruff: ignore[line-contains-todo]\n# FIXME: w  # ruff: ignore[E501, FIX001]\n",
                options={"honour-peer-suppressions": True}),
        Example('def update(grid, todo):\n    """Update the grid.\n\n    Parameters\n    ----------\n'
                "    todo : string (one of 'left', 'right')\n    \"\"\"\n    return grid[todo]\n"),
        Example('static const char* kTag = "TODO"; // the tag the scanner searches for\n', path="scan.cu"),
        Example('#define TAG "// TODO"\n', path="tag.cuh"),
        Example("/* the hack flag of the loader */\n__global__ void k() { }\n", path="k.cu"),
        Example("#pragma unroll // unrolled for speed\nfor (int i = 0; i < 4; ++i) {}\n", path="loop.cu"),
        # A bracketed word that is no tag, or a tag that opens a link's text, and the plural in prose.
        Example("# [todo list](https://example.com): where open work is tracked\n# [x] done\n"),
        Example('def plan():\n    """Plan.\n\n    Todos are tracked in the issue tracker.\n    """\n'),
    ]
    INVALID: ClassVar[list[Example]] = [
        Example("# TODO: account for partial fills\nx = 1\n", expect=1),
        Example("# todo: lower case opening\n", expect=1),
        Example("# Fixme later\n", expect=1),
        Example("#TODO(alice) tighten the bound\n", expect=1),
        Example("# xxx - remove\n", expect=1),
        Example("# Hack: around the cache\n", expect=1),
        Example("# TBD\n", expect=1),
        Example("# TODO list: the cache, the pool\n# the rest works; XXX notes below are stale\n", expect=1),
        Example("# see below; TODO fix\n", expect=1),
        Example("# This is a HACK around the cache; it is a TODO.\n# the XXX: remove\n# ---- stages ---- TODO: tune these\n",
                expect=3),
        Example("x = compute()  # noqa: E501 # todo: split\n", expect=1),
        Example('"""Module doc.\n\nFIXME: remove the legacy path.\n"""\n', expect=1),
        Example('class Book:\n    """Order book.\n\n    Todo:\n        levels beyond ten.\n    """\n', expect=1),
        Example('async def step():\n    """One step. HACK around the stale cache."""\n    return 1\n', expect=1),
        Example('limit = 3\n"""Attribute doc: TBD once measured."""\n', expect=1),
        Example('def f():\n    """Sum.\n\n    todo: handle overflow\n    """\n    return 1\n', expect=1),
        Example("def outer():\n    def inner():\n        # FIXME nested\n        return 1\n    return inner\n",
                expect=1),
        Example("if TYPE_CHECKING:\n    # TODO drop after 3.12\n    from x import Y\n", expect=1),
        Example("# WIP: half done\n", options={"tags": ["WIP"]}, expect=1),
        # Peer suppressions count only when asked for, and only for the tag's own code.
        Example("# TODO: port the cache  # noqa: FIX002\n", expect=1),
        Example("# TODO: port the cache  # noqa: FIX001\n# FIXME  # noqa: E501\n# XXX  # pylint: disable=line-too-long\n"
                "# HACK  # ruff: ignore[line-contains-todo]\n",
                options={"honour-peer-suppressions": True}, expect=4),
        # A heading of deferred work and task-list items (found on pfrl: both were missed).
        Example('class Queue:\n    """Persistent queue.\n\n    Features:\n    - persist on disk\n'
                '      - [todo] remove popped data from disk\n\n    TODOs\n    - buffered writes\n    """\n',
                expect=2),
        Example("# [todo] remove popped data from disk\n", expect=1),
        Example("// [TODO] vectorise the loads\n", path="k.cu", expect=1),
        Example("// TODO: vectorise\n__global__ void k(float* x) { x[0] = 1; }\n", path="k.cu", expect=1),
        Example("/* fixme: bank conflicts */\n", path="k.cuh", expect=1),
        Example("/**\n * Reduce a block.\n * @todo handle n % 32 != 0\n */\n", path="r.cuh", expect=1),
        # Each tagged line of a block comment is its own marker (found on llm.c: the second was missed).
        Example("/*\nTODO(general): fuse the two passes\nthen the norm.\nTODO(perf): vectorise the loads\n*/\n",
                path="adamw.cu", expect=2),
        Example("#define BLOCK 256 // TODO tune per arch\n", path="k.cu", expect=1),
        Example("__global__ void k(float* x) {\n    // XXX\n    x[0] = 1;\n}\n", path="k.cu", expect=1),
        Example('#define NAME "x" /* hack */\n', path="k.cu", expect=1),
        Example("#pragma unroll // FIXME: unroll factor\nfor (int i = 0; i < 4; ++i) {}\n", path="k.cu",
                expect=1),
        Example('extern "C" {\n// XXX signature shared with the loader\n__global__ void k() {}\n}\n',
                path="k.cu", expect=1),
        Example("template <int N>\n__device__ float f() { return N; } // TBD: N > 32\n", path="k.cuh",
                expect=1),
    ]

    def begin(self, ctx: FileContext) -> None:
        # A comment or docstring mentions a tag only if the file does (the pre-filter is a
        # substring test on lower-cased text, and lower-casing is per character but for Greek
        # final sigma, which no ASCII tag holds): most files mention none (79 % of pandas'), and
        # their comments are then not read.
        tags = ctx.options(CODE).tags
        ctx.state[CODE] = not all(tag.isascii() for tag in tags) or _mentions_tag(ctx.source.text, _matchers(tags))
        if not ctx.state[CODE]:
            # Then no visit reports anything: the walk need not collect the file's comments and
            # expression statements for this rule (almost half of the nodes it collects on pandas).
            ctx.skip_walk(CODE)

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        if not ctx.state[CODE]:
            return
        options: DeferredWorkMarkerOptions = ctx.options(CODE)
        kind = node.type
        if kind == "expression_statement":
            if options.docstrings and node.named_child_count == 1:
                child = node.named_child(0)
                if child is not None and child.type in ("string", "concatenated_string"):
                    self._check_docstring(child, ctx, options)
            return
        text = ctx.source.node_text(node)
        matchers = _matchers(options.tags)
        if not _mentions_tag(text, matchers):
            return
        if _row_of_a_drawing(ctx.source.text, node.start_byte, text):
            return
        if ctx.language == "python":
            found = _first(_python_opening(text, matchers), _upper_anywhere(text, matchers))
            if found is not None:
                _report(ctx, node, text, found, "comment")
            return
        start, where = 0, "comment"
        if kind == "preproc_arg":
            start, where = _preproc_comment_start(text), "comment on a preprocessor line"
            if start is None:
                return
        for offset, tag in _cuda_markers(text[start:], matchers):
            _report(ctx, node, text, (start + offset, tag), where)

    def _check_docstring(self, string: tree_sitter.Node, ctx: FileContext, options: DeferredWorkMarkerOptions) -> None:
        text = ctx.source.node_text(string)
        matchers = _matchers(options.tags)
        if not _mentions_tag(text, matchers):
            return
        in_fence = False
        line_start = 0
        for line in text.split("\n"):
            if _FENCE.match(line):
                in_fence = not in_fence
            elif not in_fence:
                found = _upper_anywhere(line, matchers, text)
                opening = matchers.docstring_opening.match(_strip_quotes(line))
                if opening is not None:
                    offset = len(line) - len(_strip_quotes(line))
                    group = "bracketed" if opening.group("bracketed") else "tag"
                    found = _first(found, (offset + opening.start(group), opening.group(group)))
                if found is not None:
                    _report(ctx, string, text, (line_start + found[0], found[1]), "docstring")
            line_start += len(line) + 1


# A comment line drawn with `X` runs (`// XXXX`, `//  XXX`): a row of a picture, such as a mask's.
_X_ROW = re.compile(r"^[ \t]*(?://+|#+)[ \t]*X+(?:[ \t]+X+)*[ \t]*$")


def _row_of_a_drawing(source: str, start: int, text: str) -> bool:
    """A comment made of `X` runs alone whose line above or below is one too: a picture drawn in
    comments (FlashMLA's causal mask), not a marker on each of its rows."""
    line_start = source.rfind("\n", 0, start) + 1
    line_end = source.find("\n", start)
    line = source[line_start : line_end if line_end >= 0 else len(source)]
    if not _X_ROW.match(line) or "\n" in text:
        return False
    above_end = line_start - 1
    above = source[source.rfind("\n", 0, max(above_end, 0)) + 1 : above_end] if above_end > 0 else ""
    below_start = line_end + 1 if line_end >= 0 else len(source)
    below_end = source.find("\n", below_start)
    below = source[below_start : below_end if below_end >= 0 else len(source)]
    return bool(_X_ROW.match(above) or _X_ROW.match(below))


def _strip_quotes(line: str) -> str:
    """A docstring's first line begins with its prefix and quotes: `r\"\"\"Todo: ...`."""
    return line.lstrip().lstrip("rRbBuU").lstrip("\"'")


def _preproc_comment_start(text: str) -> int | None:
    if "/" not in text:
        return None
    for match in _PREPROC_TOKENS.finditer(text):
        if match.group() in ("//", "/*"):
            return match.start()
    return None


# ruff's flake8-fixme codes and rule names, by tag: a `# noqa: FIX002` or a
# `# ruff: ignore[line-contains-todo]` accepts a `TODO` on its line.
_RUFF_CODES = {"fixme": "FIX001", "todo": "FIX002", "xxx": "FIX003", "hack": "FIX004"}
_RUFF_NAMES = {"fixme": "line-contains-fixme", "todo": "line-contains-todo", "xxx": "line-contains-xxx",
               "hack": "line-contains-hack"}
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
# ruff's own line suppression (0.15+), by code or by rule name: `# ruff: ignore[FIX002, E501]`.
_RUFF_IGNORE = re.compile(r"#\s*ruff:\s*ignore\[(?P<rules>[^\]]*)\]", re.IGNORECASE)
_PYLINT_DISABLE = re.compile(r"#\s*pylint:\s*disable\s*=\s*(?P<names>[\w\-, ]+)")


def peer_suppressed(line_text: str, tag: str) -> bool:
    """A ruff ``# noqa`` (bare, or naming the tag's FIX code), a ``# ruff: ignore[...]`` naming the tag's
    code or rule name, or pylint ``disable=fixme`` on the line."""
    for match in _NOQA.finditer(line_text):
        codes = match.group("codes")
        if codes is None:
            return True  # a bare `# noqa` silences every ruff rule on the line
        wanted = _RUFF_CODES.get(tag.lower())
        if wanted is not None and wanted in re.split(r"[\s,]+", codes.upper()):
            return True
    for match in _RUFF_IGNORE.finditer(line_text):
        rules = {rule.strip().lower() for rule in match.group("rules").split(",")}
        if rules & {_RUFF_CODES.get(tag.lower(), "").lower(), _RUFF_NAMES.get(tag.lower(), "")} - {""}:
            return True
    for match in _PYLINT_DISABLE.finditer(line_text):
        names = {name.strip().lower() for name in match.group("names").split(",")}
        if names & {"fixme", "w0511", "all"}:
            return True
    return False


def _report(ctx: FileContext, node: tree_sitter.Node, text: str, found: tuple[int, str], where: str) -> None:
    offset, tag = found
    start_byte = node.start_byte + len(text[:offset].encode("utf-8"))
    line, column = ctx.source.position(start_byte)
    options: DeferredWorkMarkerOptions = ctx.options(CODE)
    if options.honour_peer_suppressions and peer_suppressed(ctx.source.line_text(line), tag):
        return
    span = (line, column, line, column + len(tag))
    ctx.report(
        CODE,
        span,
        f"deferred-work marker `{tag}` in a {where} — invariant 9: finish the work or don't start it",
        hint="do the work now, or file an issue for it and delete the marker",
    )
