"""FX801: numeric literals in the index of a multi-field buffer (``ps[:, 3]``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

import tree_sitter

from foxaudit.diagnostics import Edit
from foxaudit.rules._support.constants import (
    UPPER_NAME,
    NamedConstant,
    load_constants,
    python_module_for,
)
from foxaudit.rules._support.options import (
    freeze,
    int_map,
    option_error,
    string_map,
    string_tuple,
)
from foxaudit.rules._support.paths import matches_any
from foxaudit.rules.base import Example, FileContext, Rule, RuleOptions
from foxaudit.sources.base import node_span

CODE = "FX801"
_CONSTANT_SUFFIXES = (".py", ".pyi", ".cu", ".cuh", ".h", ".hpp")
_PYTHON_NUMBERS = frozenset({"integer", "float"})
_C_INTEGER = re.compile(r"^([+-]?)(0[xX][0-9a-fA-F']+|0[bB][01']+|0[0-7']*|[1-9][0-9']*)[uUlLzZ]*$")


# Buffer names guessed for any project; a list of one's own is a statement that they are buffers.
DEFAULT_BUFFERS = ("ps", "isv")


@dataclass(frozen=True)
class RawIndexIntoNamedBufferOptions(RuleOptions):
    buffers: tuple[str, ...] = field(
        default=DEFAULT_BUFFERS,
        metadata={"help": "Names of multi-field buffers; matched on the subscripted expression's last name (ps, self.ps)."},
    )
    definition_sites: tuple[str, ...] = field(
        default=("trainer/layout.py", "cuda/generated/*"),
        metadata={"help": "Path globs where raw indices are allowed (where the named constants are defined)."},
    )
    constants_from: tuple[str, ...] = field(
        default=("trainer/layout.py", "cuda/generated/layout.cuh"),
        metadata={"help": "Python modules and C/CUDA headers (repository-relative) whose UPPER_CASE integer "
                          "constants name the slots; missing files are skipped.", "dependency": True},
    )
    prefixes: dict[str, str] = field(
        default_factory=lambda: {"isv": "ISV_", "ps": "PS_"},
        metadata={"help": "Table buffer → constant-name prefix: the constants that may name an index of that buffer."},
    )
    constants: dict[str, int] = field(
        default_factory=dict,
        metadata={"help": "Extra named constants (table NAME → integer) for layouts not in a parsable file."},
    )
    constants_module: str = field(
        default="trainer.layout",
        metadata={"help": "Python module that the extra `constants` are imported from by --fix."},
    )
    require_layout: bool = field(
        default=True,
        metadata={"help": "With the default `buffers`, report only in a project that names its slots: a "
                          "`constants-from` file defines constants or `constants` is set. false: report in every "
                          "project. A `buffers` list of your own is always checked."},
    )

    def __post_init__(self) -> None:
        freeze(self, "buffers", string_tuple(CODE, "buffers", self.buffers, allow_empty=False))
        freeze(self, "definition_sites", string_tuple(CODE, "definition-sites", self.definition_sites))
        paths = string_tuple(CODE, "constants-from", self.constants_from)
        for path in paths:
            if not path.endswith(_CONSTANT_SUFFIXES) or path.startswith("/") or "\\" in path:
                raise option_error(CODE, "constants-from", "expected a repository-relative Python module or "
                                   "C/CUDA header", path, "a path like trainer/layout.py or cuda/generated/layout.cuh",
                                   "use a relative POSIX path ending in .py, .cuh, .cu or .h")
        freeze(self, "constants_from", paths)
        freeze(self, "prefixes", dict(string_map(CODE, "prefixes", self.prefixes)))
        constants = dict(int_map(CODE, "constants", self.constants))
        for name in constants:
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise option_error(CODE, "constants", "a constant name must be an identifier", name,
                                   "a name like PS_CASH", "rename the key to a valid identifier")
        freeze(self, "constants", constants)
        if not isinstance(self.require_layout, bool):
            raise option_error(CODE, "require-layout", "expected a boolean", self.require_layout, "true or false",
                               "write require-layout = true or require-layout = false")
        if not isinstance(self.constants_module, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*",
                                                                          self.constants_module):
            raise option_error(CODE, "constants-module", "expected a dotted Python module name",
                               self.constants_module, 'a name like "trainer.layout"',
                               'write constants-module = "package.module"')


@dataclass
class _Literal:
    """A raw index found in Python, held until ``finish`` builds the libcst edits for the file."""

    span: tuple[int, int, int, int]
    text: str
    buffer: str
    constant: NamedConstant


@dataclass
class _FileState:
    definition_site: bool
    constants: tuple[NamedConstant, ...] | None = None
    layout_known: bool | None = None  # computed on the first raw index of the file
    pending: list[_Literal] = field(default_factory=list)


def _literal_value(text: str, language: str) -> int | None:
    """The integer a literal denotes (``0x26``, ``38u``, ``1_000``, ``-1``); None for floats."""
    compact = text.replace(" ", "")
    if language == "python":
        try:
            return int(compact.replace("_", ""), 0)
        except ValueError:
            return None
    match = _C_INTEGER.match(compact)
    if match is None:
        return None
    sign, digits = match.group(1), match.group(2).replace("'", "")
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXbB":
        value = int(digits, 8)
    else:
        value = int(digits, 0)
    return -value if sign == "-" else value


class RawIndexIntoNamedBuffer(Rule):
    """Flags numeric literals in an index into a multi-field buffer (`ps[:, 3]`, `isv[-1]`).

    ## What it does
    Reports every numeric literal inside the index expression of a subscript whose subscripted
    expression ends in one of `buffers` (`ps[...]`, `self.ps[...]`, `state.isv[...]`, a row
    `ps[env][...]` in Python; `ps[...]`, `s.ps[...]`, `s->isv[...]`, `ps[env][...]` in CUDA), outside the `definition-sites`:
    `ps[3]`, `isv[-1]`, `ps[i * 38 + 14]` (two findings), `ps[0:4]`, `ps[:, 3]`,
    `self.ps[..., 2]`. An offset from a named constant is still a raw index: `isv[ISV_X + 1]`
    is reported, because the slot it reaches has no name (and no constant is offered for the
    `1`: whichever constant equals 1 would keep the value and lose the meaning). `ps[PS_CASH]`,
    `ps[i * PS_STRIDE + PS_CASH]` and `ps[:, PS_CASH]` are fine. Literals that index another
    object inside the index (`ps[order[0]]`) belong to that object and are not reported here.
    Macro bodies (raw text to the parser) are not checked.

    By default (`require-layout = true`) the rule reports only in a project that names its
    slots: one of the `constants-from` files defines constants, or `constants` is set. A
    repository without a layout has nothing to name a slot with, and there a `ps` is far more
    likely an ordinary list (`ps = [proc_a, proc_b]; ps[0].wait()`) than a multi-field buffer,
    so reporting would only be noise. Set `require-layout = false` (as Foxhunt itself does) to
    report in every project. A `buffers` list of your own (anything but the default
    `["ps", "isv"]`) is always checked: configuring it says those names are multi-field buffers.

    The message names the constant to use when the `constants-from` files define exactly one
    constant with that value and the buffer's prefix (`prefixes`, `PS_` for `ps`): Python
    files are offered constants a Python module binds (and the inline `constants`), CUDA files
    constants from C/CUDA headers (and the inline `constants`). A layout module may compute
    its constants (`PS_CASH: int = PS.offsets["CASH"]`): a name it binds without a static value
    takes its value from a header in `constants-from` (the one generated from it).

    ## Why is this bad
    Invariant 8, named dimensions, not indices. A layout changes: a slot is inserted and every
    `ps[:, 3]` silently reads the wrong field, with no error anywhere — the values are still
    floats. A named constant moves with the layout, is found by search, and the header
    generated from the same table keeps Python and CUDA in agreement.

    ## Example
    ```python
    cash = ps[:, 3]
    value = ps[env * 38 + 14]
    ```

    ## Use instead
    ```python
    from trainer.layout import PS_CASH, PS_STRIDE, PS_VALUE

    cash = ps[:, PS_CASH]
    value = ps[env * PS_STRIDE + PS_VALUE]
    ```
    `foxaudit check --fix` replaces each literal on its own when it maps to exactly one
    constant (never a slice bound, nor an offset from another constant, where an equal value
    would not mean the same thing): in Python the literal is located with libcst (its parse
    and positions, only for files with a fixable finding) and the import of the constant is
    added (from the module that defines it, one `from ... import A, B` line per module) when
    the name is not yet bound at module level; in CUDA as a text edit (the generated header
    is assumed to be included).

    ## Options
    - `buffers`: buffer names (default `["ps", "isv"]`).
    - `definition-sites`: path globs where raw indices are allowed.
    - `constants-from`: files whose UPPER_CASE integer constants name the slots.
    - `prefixes`: buffer → constant-name prefix (default `{isv = "ISV_", ps = "PS_"}`).
    - `constants`, `constants-module`: extra constants given inline, and the module `--fix`
      imports them from.
    - `require-layout`: with the default `buffers`, report only when the project defines slot
      constants (default true); configured `buffers` are always checked.
    """

    code = CODE
    name = "raw-index-into-named-buffer"
    summary = "Raw numeric index into a multi-field buffer; use the named constant"
    invariant = 8
    languages = frozenset({"python", "cuda"})
    python_nodes = ("subscript",)
    cuda_nodes = ("subscript_expression",)
    options_class = RawIndexIntoNamedBufferOptions
    fixable = True

    # Examples carry their layout inline so they do not depend on the checked repository's files.
    _LAYOUT: ClassVar[dict[str, Any]] = {"constants-from": [], "constants": {"PS_POSITION": 0, "PS_CASH": 3, "PS_VALUE": 14, "PS_STRIDE": 38, "ISV_TAU": 0,
                             "ISV_GAMMA": 1, "ISV_EPSILON": 1}}

    # In a project without slot constants (the examples' empty root) the rule is dormant unless told otherwise.
    _ANYWHERE: ClassVar[dict[str, Any]] = {"require-layout": False}

    VALID: ClassVar[list[Example]] = [
        Example("cash = ps[PS_CASH]\n"),
        Example("value = ps[i * PS_STRIDE + PS_CASH]\n"),
        Example("cash = ps[:, PS_CASH]\nall_slots = ps[...]\n"),
        Example("rows = prices[3]\nshape = ps.shape[1]\n"),
        Example("total = ps[:, PS_CASH].sum(dim=0)\n"),
        Example("def read(ps, order):\n    return ps[order[0]]\n"),
        Example("PS_CASH = 3\nhead = ps[3]\n", path="trainer/layout.py"),
        Example("const float v = ps[3];\n", path="cuda/generated/layout.cuh"),
        Example("ps_like = {'a': 1}\nx = ps_like['a']\nps['cash'] = 1\n"),
        Example("x = ps[3]\n", options={"buffers": ["isv"]}),
        Example("__global__ void k(float* ps, int env) { ps[env * PS_STRIDE + PS_CASH] = 0.0f; }\n", path="k.cu"),
        Example("__global__ void k(const float* __restrict__ isv, float* out) { out[0] = isv[ISV_TAU]; }\n",
                path="k.cu"),
        Example("#define CASH_OF(p) p[3]\n", path="m.cuh"),
        Example("first_filled = ps[filled, PS_ENTRY_PRICE][0]\nhead = ps[rows][...][0]\n"),
        # No layout anywhere: `ps` here is a list of processes, not a buffer.
        Example("ps = [spawn(cmd) for cmd in commands]\nps[0].wait()\nlast = ps[-1]\n"),
        Example("x = ps[3]\n", options={"constants-from": ["missing/layout.py"]}),
    ]
    INVALID: ClassVar[list[Example]] = [
        Example("ps = [spawn(cmd) for cmd in commands]\nps[0].wait()\n", options=_ANYWHERE, expect=1),
        Example("cash = ps[3]\n", options=_LAYOUT, expect=1,
                fixed="from trainer.layout import PS_CASH\ncash = ps[PS_CASH]\n"),
        Example('"""Accounting."""\nimport torch\n\nfrom trainer.layout import PS_STRIDE\n\n\n'
                "def value(ps, i):\n    return ps[i * 38 + 14]\n",
                options=_LAYOUT, expect=2,
                fixed='"""Accounting."""\nimport torch\n\nfrom trainer.layout import PS_STRIDE\n'
                      "from trainer.layout import PS_VALUE\n\n\n"
                      "def value(ps, i):\n    return ps[i * PS_STRIDE + PS_VALUE]\n"),
        Example("from trainer.layout import PS_CASH\n\ncash = ps[:, 3]\n", options=_LAYOUT, expect=1,
                fixed="from trainer.layout import PS_CASH\n\ncash = ps[:, PS_CASH]\n"),
        Example("x = isv[-1]\n", options=_ANYWHERE, expect=1),
        Example("head = ps[0:4]\n", options=_ANYWHERE, expect=2),
        Example("class Env:\n    def cash(self):\n        return self.ps[..., 2]\n", options=_ANYWHERE, expect=1),
        Example("def step(state):\n    state.isv[ISV_TAU + 1] = 0.5\n", options=_ANYWHERE, expect=1),
        Example("gamma = isv[1]\n", options=_LAYOUT, expect=1),
        Example("x = ps[2.0]\n", options=_ANYWHERE, expect=1),
        Example("async def f(ps):\n    return f'{ps[3]}'\n", options=_LAYOUT, expect=1),
        Example("x = weights[3]\n", options={"buffers": ["weights"], "require-layout": False}, expect=1),
        # Explicit `buffers` without any layout file: still checked (no constant to offer).
        Example("x = weights[3]\n", options={"buffers": ["weights"]}, expect=1),
        Example("__global__ void k(float* ps, int env) {\n  ps[env * 38 + 3] = 0.0f;\n}\n", path="k.cu",
                options=_LAYOUT, expect=2,
                fixed="__global__ void k(float* ps, int env) {\n  ps[env * PS_STRIDE + PS_CASH] = 0.0f;\n}\n"),
        Example("struct State { float* isv; };\n__device__ float tau(const State* s) { return s->isv[0] + s[0].isv[-1]; }\n",
                path="k.cuh", options=_ANYWHERE, expect=2),
        Example("template <int N>\n__global__ void k(float* ps) { ps[N + 0x3] = 1.0f; }\n"
                "void launch(float* ps) { k<4><<<1, 32>>>(ps); }\n", path="k.cu", options=_ANYWHERE, expect=1),
        Example("struct __align__(16) Slot { float v; };\n__global__ void k(float* ps) { ps[3] = 0.0f; }\n",
                path="k.cu", options=_ANYWHERE, expect=1),
        Example("__device__ float cash(float ps[][38], int env) { return ps[env][3]; }\n", path="k.cuh", options=_ANYWHERE, expect=1),
        Example("row_cash = ps[env][3]\n", options=_LAYOUT, expect=1, fixed="from trainer.layout import PS_CASH\n"
                "row_cash = ps[env][PS_CASH]\n"),
    ]

    def begin(self, ctx: FileContext) -> None:
        options: RawIndexIntoNamedBufferOptions = ctx.options(CODE)
        ctx.state[CODE] = _FileState(definition_site=matches_any(ctx.path, options.definition_sites))

    def visit(self, node: tree_sitter.Node, ctx: FileContext) -> None:
        state: _FileState = ctx.state[CODE]
        if state.definition_site:
            return
        options: RawIndexIntoNamedBufferOptions = ctx.options(CODE)
        python = ctx.language == "python"
        field_name = "value" if python else "argument"
        target = node.child_by_field_name(field_name)
        # `ps[env][3]`: a row of the buffer (one index, not a slice), indexed again; the buffer is
        # still `ps`. `ps[mask, PS_CASH][0]` indexes a selection of envs instead, not a row.
        while target is not None and target.type == node.type and _selects_one_row(target, python):
            target = target.child_by_field_name(field_name)
        if target is None:
            return
        if target.type in ("attribute", "field_expression"):
            target = target.child_by_field_name("attribute" if python else "field")
        if target is None or target.type not in ("identifier", "field_identifier"):
            return
        buffer = target.text.decode()
        if buffer not in options.buffers:
            return
        indices = node.children_by_field_name("subscript") if python else node.children_by_field_name("indices")
        literals = _numeric_literals(indices, python)
        if not literals:
            return
        if state.layout_known is None:
            # Configured buffers are checked anywhere: naming them says they are multi-field buffers.
            state.layout_known = (
                not options.require_layout or options.buffers != DEFAULT_BUFFERS or _names_slots(ctx, options)
            )
        if not state.layout_known:
            return
        for literal in literals:
            self._report(literal, buffer, ctx, options, state)

    def _report(self, literal: tree_sitter.Node, buffer: str, ctx: FileContext,
                options: RawIndexIntoNamedBufferOptions, state: _FileState) -> None:
        text = ctx.source.node_text(literal)
        span = node_span(ctx.source, literal)
        offset = _named_operand(literal)
        if offset is not None:
            ctx.report(CODE, span, f"raw index `{text}` into named buffer `{buffer}` — invariant 8: `{offset}` reaches"
                                   " a slot without a name; give that slot its own constant",
                       hint="add the slot to the layout and index with its constant")
            return
        if literal.parent is not None and literal.parent.type == "slice":
            # A slice bound counts rows or spans slots; a slot constant that happens to share the
            # value would keep the number and lose the meaning, so none is offered.
            ctx.report(CODE, span, _message(text, buffer, "name the bounds of this range"),
                       hint="define the range's bounds as constants in the layout and slice with them")
            return
        value = _literal_value(text, ctx.language)
        candidates = self._candidates(buffer, value, ctx, options, state) if value is not None else []
        if len(candidates) == 1:
            constant = candidates[0]
            if ctx.language == "python" and constant.module:
                state.pending.append(_Literal(span, text, buffer, constant))
                return
            edits = () if ctx.language == "python" else (Edit(*span, constant.name),)
            ctx.report(CODE, span, _message(text, buffer, f"use the named constant `{constant.name}`"),
                       hint=f"replace `{text}` with `{constant.name}`", edits=edits)
            return
        if candidates:
            names = " or ".join(f"`{constant.name}`" for constant in candidates)
            ctx.report(CODE, span, _message(text, buffer, f"use a named constant ({names} have this value)"),
                       hint="pick the constant that names this slot")
            return
        site = options.definition_sites[0] if options.definition_sites else "the layout module"
        ctx.report(CODE, span, _message(text, buffer, "use a named constant"),
                   hint=f"define the slot as a constant in {site} and index with its name")

    def _candidates(self, buffer: str, value: int, ctx: FileContext, options: RawIndexIntoNamedBufferOptions,
                    state: _FileState) -> list[NamedConstant]:
        prefix = options.prefixes.get(buffer)
        if prefix is None:
            return []
        if state.constants is None:
            from_files = load_constants(ctx.project_root, options.constants_from)
            inline = tuple(NamedConstant(name, number, "", options.constants_module) for name, number in options.constants.items())
            python = ctx.language == "python"
            state.constants = tuple(
                constant for constant in inline + from_files
                if (not constant.path) or (constant.path.endswith((".py", ".pyi")) == python)
            )
        chosen: dict[str, NamedConstant] = {}
        for constant in state.constants:
            if constant.value == value and constant.name.startswith(prefix) and constant.name not in chosen:
                chosen[constant.name] = constant
        return sorted(chosen.values(), key=lambda constant: constant.name)

    def finish(self, ctx: FileContext) -> None:
        state: _FileState = ctx.state[CODE]
        if not state.pending:
            return
        edits_by_span = _python_edits(ctx, state.pending)
        for literal in state.pending:
            ctx.report(
                CODE,
                literal.span,
                _message(literal.text, literal.buffer, f"use the named constant `{literal.constant.name}`"),
                hint=f"replace `{literal.text}` with `{literal.constant.name}` (from {literal.constant.module})",
                edits=edits_by_span.get(literal.span, ()),
            )


def _names_slots(ctx: FileContext, options: RawIndexIntoNamedBufferOptions) -> bool:
    """Whether the project defines slot names: inline `constants`, or a `constants-from` file with
    at least one (files are read once per process; see ``load_constants``)."""
    return bool(options.constants) or bool(load_constants(ctx.project_root, options.constants_from))


def _message(text: str, buffer: str, advice: str) -> str:
    return (f"raw index `{text}` into `{buffer}`, a multi-field buffer (FX801 `buffers`) — invariant 8: "
            f"{advice}, not a number")


def _selects_one_row(subscript: tree_sitter.Node, python: bool) -> bool:
    if python:
        indices = subscript.children_by_field_name("subscript")
    else:
        argument_list = subscript.child_by_field_name("indices")
        indices = argument_list.named_children if argument_list is not None else []
    return len(indices) == 1 and indices[0].type not in ("slice", "ellipsis", "comment")


def _named_operand(literal: tree_sitter.Node) -> str | None:
    """The expression when a literal offsets a constant, ``isv[ISV_GAMMA + 1]``: replacing the 1 by whichever
    constant equals 1 would keep the value and lose the meaning, so no constant is offered."""
    parent = literal.parent
    if parent is None or parent.type not in ("binary_operator", "binary_expression"):
        return None
    operator = parent.child_by_field_name("operator")
    if operator is None or operator.type not in ("+", "-"):
        return None
    for side in ("left", "right"):
        operand = parent.child_by_field_name(side)
        if operand is not None and operand.id != literal.id and operand.type == "identifier" \
                and UPPER_NAME.match(operand.text.decode()):
            return parent.text.decode()
    return None


def _numeric_literals(indices: list[tree_sitter.Node], python: bool) -> list[tree_sitter.Node]:
    """Numeric literals in the index expressions (a unary minus belongs to its literal); literals
    under a nested subscript index that other object and are skipped."""
    numbers = _PYTHON_NUMBERS if python else frozenset({"number_literal"})
    nested = "subscript" if python else "subscript_expression"
    negation = "unary_operator" if python else "unary_expression"
    found: list[tree_sitter.Node] = []
    stack = list(reversed(indices))
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in numbers:
            found.append(node)
        elif kind == nested:
            continue
        elif kind == negation and node.child_count == 2 and node.children[0].type == "-" \
                and node.children[1].type in numbers:
            found.append(node)
        else:
            stack.extend(reversed(node.named_children))
    return found


def _python_edits(ctx: FileContext, pending: list[_Literal]) -> dict[tuple[int, int, int, int], tuple[Edit, ...]]:
    """Edits per literal: the literal → the constant's name, located through libcst's positions,
    plus the import of the name when the module does not bind it yet."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        module = ctx.source.cst()
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return {}
    wanted = {(literal.span[0], literal.span[1]): literal for literal in pending}
    located: dict[tuple[int, int, int, int], Edit] = {}
    for node, code_range in positions.items():
        if not isinstance(node, (cst.Integer, cst.UnaryOperation)):
            continue
        literal = wanted.get((code_range.start.line, code_range.start.column + 1))
        if literal is None or module.code_for_node(node) != literal.text:
            continue
        if isinstance(node, cst.UnaryOperation) and not isinstance(node.expression, cst.Integer):
            continue
        span = (code_range.start.line, code_range.start.column + 1, code_range.end.line, code_range.end.column + 1)
        located[literal.span] = Edit(*span, literal.constant.name)
    bound = _module_bindings(module)
    own_module = python_module_for(ctx.path)
    missing: dict[str, set[str]] = {}  # module → names the file's fixes need imported from it
    for literal in pending:
        constant = literal.constant
        needs_import = not (constant.name in bound or constant.module == own_module or (constant.module, "*") in bound)
        if literal.span in located and needs_import:
            missing.setdefault(constant.module, set()).add(constant.name)
    # One import per module, identical on every diagnostic that needs it: any subset of the
    # fixes applied alone still leaves valid code, and all of them apply in one round.
    imports = {name: _import_edit(ctx, module, positions, name, sorted(names)) for name, names in missing.items()}
    result: dict[tuple[int, int, int, int], tuple[Edit, ...]] = {}
    for literal in pending:
        edit = located.get(literal.span)
        if edit is None:
            continue
        constant = literal.constant
        if constant.name in missing.get(constant.module, ()):
            result[literal.span] = (edit, imports[constant.module])
        else:
            result[literal.span] = (edit,)
    return result


def _module_bindings(module) -> set[object]:  # libcst.Module → names bound at module level
    """Names bound at module level, also inside top-level ``if``/``try``/``with`` blocks."""
    import libcst as cst

    bound: set[object] = set()
    statements = list(module.body)
    while statements:
        statement = statements.pop()
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            bound.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                _bind_small(small, bound)
        elif isinstance(statement, (cst.If, cst.Try, cst.With, cst.Else, cst.ExceptHandler, cst.Finally)):
            body = statement.body
            statements.extend(body.body if isinstance(body, cst.IndentedBlock) else [cst.SimpleStatementLine(body.body)])
            for branch in (getattr(statement, "orelse", None), getattr(statement, "finalbody", None)):
                if branch is not None:
                    statements.append(branch)
            statements.extend(getattr(statement, "handlers", ()))
    return bound


def _bind_small(small, bound: set[object]) -> None:
    import libcst as cst

    if isinstance(small, cst.ImportFrom):
        if isinstance(small.names, cst.ImportStar):
            if small.module is not None and not small.relative:
                bound.add((cst.helpers.get_full_name_for_node(small.module), "*"))
            return
        for alias in small.names:
            bound.add(alias.asname.name.value if alias.asname else cst.helpers.get_full_name_for_node(alias.name))
    elif isinstance(small, cst.Import):
        for alias in small.names:
            name = alias.asname.name.value if alias.asname else cst.helpers.get_full_name_for_node(alias.name)
            bound.add(str(name).split(".")[0])
    elif isinstance(small, cst.Assign):
        for target in small.targets:
            if isinstance(target.target, cst.Name):
                bound.add(target.target.value)
    elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
        bound.add(small.target.value)


def _import_edit(ctx: FileContext, module, positions, from_module: str, names: list[str]) -> Edit:
    """Insert ``from <module> import A, B`` after the module's leading imports (or docstring)."""
    import libcst as cst

    statement_line = f"from {from_module} import {', '.join(names)}"
    anchor = None
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        docstring = index == 0 and len(statement.body) == 1 and isinstance(statement.body[0], cst.Expr) \
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
        imports = all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body)
        if not (docstring or imports):
            break
        anchor = statement.body[-1]
    if anchor is None:
        if module.body:
            first = positions[module.body[0]].start
            return Edit(first.line, 1, first.line, 1, statement_line + "\n")
        line = ctx.source.line_count
        end = len(ctx.source.line_text(line)) + 1
        return Edit(line, end, line, end, ("\n" if end > 1 else "") + statement_line + "\n")
    end_line = positions[anchor].end.line
    end_column = len(ctx.source.line_text(end_line)) + 1
    return Edit(end_line, end_column, end_line, end_column, "\n" + statement_line)
