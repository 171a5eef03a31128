"""Invariants 1 and 5 — the layout read statically, ISV writes, CUDA↔Python constants.

The layout module is *parsed, never imported* (foxaudit must not run a client's code to lint
it): every configured layout call ``Layout("PREFIX", (slot, ...))`` is read with its slots —
``Slot("NAME", width=.., writer=Writer.X)`` calls or plain strings — following module-level
names, tuple-unpacking aliases (``_G, _C = Writer.GPU_COMPUTED, Writer.CPU_INPUT``) and ``a + b``
concatenation. Offsets are the running sum of widths; the constants are ``PREFIX_NAME`` (offset),
``PREFIX_NAME_WIDTH`` (when the width is > 1) and ``PREFIX_STRIDE``.

GPU drives (FX1xx): a host write is ``<isv>[... SLOT ...] = v`` (also augmented, slices and
in-place methods such as ``.fill_``/``.copy_``) or ``<isv>.write(SLOT, v)`` on a configured ISV
receiver. Writing a slot whose writer class is GPU-computed is a violation unless the writing
function is configured reset dispatch (bootstrap), a kernel reference (the CPU twin of the
kernel that owns the slot) or the bus implementation. A write whose slot cannot be named is
reported separately, not guessed.

One layout (FX5xx): constants with the same name in a CUDA file and in the Python layout/constant
modules must be equal; a hand-written CUDA file that defines a constant the generated header
defines is a second source of truth. A generated header is checked by running its configured
check command (cached by the content of the generator's package and the header) — but only when
the user allows it from outside the analysed tree (``FOXAUDIT_RUN_GENERATORS=1`` or
``foxaudit check --run-generators``): the command is written in the analysed repository's own
``pyproject.toml``, so running it unasked would let a pull request execute anything on the
machine that lints it. Without the opt-in the header is checked statically: it must define every
slot offset and stride of each layout it mirrors, with the layout's values.
"""

from __future__ import annotations

import ast
import hashlib
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field

import tree_sitter

from foxaudit.config import generators_allowed
from foxaudit.globs import name_matches, path_matches
from foxaudit.program.model import Program
from foxaudit.program.pyscan import Span
from foxaudit.program.wiring import Site
from foxaudit.sources.base import SourceFile
from foxaudit.sources.constexpr import evaluate


@dataclass(frozen=True)
class SlotDef:
    layout: str  # prefix
    name: str
    offset: int
    width: int
    writer: str  # writer class ('' when none)
    doc: str
    site: Site

    @property
    def constant(self) -> str:
        return f"{self.layout}_{self.name}"


@dataclass
class LayoutDef:
    prefix: str
    slots: list[SlotDef]
    stride: int
    doc: str
    site: Site

    def constants(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for slot in self.slots:
            out[slot.constant] = slot.offset
            if slot.width > 1:
                out[f"{slot.constant}_WIDTH"] = slot.width
        out[f"{self.prefix}_STRIDE"] = self.stride
        return out


@dataclass
class LayoutModel:
    path: str
    layouts: list[LayoutDef]
    problems: list[tuple[Site, str]] = field(default_factory=list)

    def layout(self, prefix: str) -> LayoutDef | None:
        return next((layout for layout in self.layouts if layout.prefix == prefix), None)

    def constants(self) -> dict[str, tuple[int, Site]]:
        out: dict[str, tuple[int, Site]] = {}
        for layout in self.layouts:
            sites = {slot.constant: slot.site for slot in layout.slots}
            for name, value in layout.constants().items():
                out[name] = (value, sites.get(name.removesuffix("_WIDTH"), layout.site))
        return out


def read_layout(program: Program) -> LayoutModel | None:
    settings = program.settings
    if not settings.layout_module:
        return None
    source = program.sources.get(settings.layout_module)
    if source is None:
        return None
    return _LayoutReader(source, settings).read()


class _LayoutReader:
    def __init__(self, source: SourceFile, settings):
        self.source = source
        self.settings = settings
        self.assigned: dict[str, tree_sitter.Node] = {}
        self.problems: list[tuple[Site, str]] = []

    def text(self, node: tree_sitter.Node) -> str:
        return self.source.node_text(node)

    def site(self, node: tree_sitter.Node) -> Site:
        line, column = self.source.position(node.start_byte)
        end_line, end_column = self.source.position(node.end_byte)
        return Site(self.source.path, Span(line, column, end_line, end_column))

    def read(self) -> LayoutModel:
        root = self.source.tree.root_node
        layout_nodes: list[tuple[str, tree_sitter.Node]] = []
        for statement in root.named_children:
            if statement.type != "expression_statement" or not statement.named_children:
                continue
            node = statement.named_children[0]
            if node.type != "assignment":
                continue
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is None or right is None:
                continue
            if left.type == "identifier":
                self.assigned[self.text(left)] = right
                if right.type == "call" and self._callee(right) in self.settings.layout_calls:
                    layout_nodes.append((self.text(left), right))
            elif left.type in ("pattern_list", "tuple_pattern") and right.type in ("expression_list", "tuple"):
                names = [c for c in left.named_children]
                values = [c for c in right.named_children]
                for name, value in zip(names, values, strict=False):
                    if name.type == "identifier":
                        self.assigned[self.text(name)] = value
        layouts: list[LayoutDef] = []
        for _, call in layout_nodes:
            layout = self._layout(call)
            if layout is not None:
                layouts.append(layout)
        return LayoutModel(self.source.path, layouts, self.problems)

    def _callee(self, call: tree_sitter.Node) -> str:
        function = call.child_by_field_name("function")
        if function is None:
            return ""
        return self.text(function).rsplit(".", 1)[-1]

    def _resolve(self, node: tree_sitter.Node, depth: int = 0) -> tree_sitter.Node:
        while node.type == "identifier" and depth < 8:
            target = self.assigned.get(self.text(node))
            if target is None:
                break
            node = target
            depth += 1
        return node

    def _items(self, node: tree_sitter.Node, depth: int = 0) -> list[tree_sitter.Node]:
        node = self._resolve(node)
        if node.type == "parenthesized_expression" and node.named_children:
            return self._items(node.named_children[0], depth + 1)
        if node.type in ("tuple", "list"):
            return [c for c in node.named_children if c.type != "comment"]
        if node.type == "binary_operator" and depth < 8:
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None:
                return self._items(left, depth + 1) + self._items(right, depth + 1)
        self.problems.append((self.site(node), f"cannot read the slots of this layout statically ({self.text(node)[:60]!r})"))
        return []

    def _args(self, call: tree_sitter.Node) -> tuple[list[tree_sitter.Node], dict[str, tree_sitter.Node]]:
        positional, keywords = [], {}
        arguments = call.child_by_field_name("arguments")
        for child in arguments.named_children if arguments is not None else ():
            if child.type == "keyword_argument":
                name, value = child.child_by_field_name("name"), child.child_by_field_name("value")
                if name is not None and value is not None:
                    keywords[self.text(name)] = value
            elif child.type != "comment":
                positional.append(child)
        return positional, keywords

    def _literal(self, node: tree_sitter.Node | None):
        if node is None:
            return None
        node = self._resolve(node)
        text = self.text(node)
        if node.type == "integer" and text.isdigit():
            return int(text)
        if node.type == "string" and len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0] and "\\" not in text and text[0] not in text[1:-1]:
            return text[1:-1]
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return None

    def _width(self, node: tree_sitter.Node) -> int | None:
        """A literal width, or ``sum(s.width for s in SLOTS)`` over a statically readable tuple."""
        value = self._literal(node)
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"sum\(\s*(\w+)\.\w+\s+for\s+\1\s+in\s+(\w+)\s*\)", self.text(node).strip())
        if match is None:
            return None
        total = 0
        for item in self._items(self.assigned.get(match.group(2), node)):
            item = self._resolve(item)
            if item.type == "string":
                total += 1
                continue
            if item.type != "call":
                return None
            args, kwargs = self._args(item)
            width_node = kwargs.get(self.settings.slot_width_param) or (args[1] if len(args) > 1 else None)
            width = 1 if width_node is None else self._literal(width_node)
            if not isinstance(width, int):
                return None
            total += width
        return total

    def _layout(self, call: tree_sitter.Node) -> LayoutDef | None:
        positional, keywords = self._args(call)
        prefix = self._literal(keywords.get("prefix") or (positional[0] if positional else None))
        slots_node = keywords.get("slots") or keywords.get("names") or (positional[1] if len(positional) > 1 else None)
        if not isinstance(prefix, str) or slots_node is None:
            return None
        doc_value = self._literal(keywords.get("doc") or (positional[2] if len(positional) > 2 else None))
        slots: list[SlotDef] = []
        offset = 0
        readable = True
        for item in self._items(slots_node):
            item = self._resolve(item)
            name, width, writer, doc = None, 1, "", ""
            if item.type == "string":
                name = self._literal(item)
            elif item.type == "call" and self._callee(item) in self.settings.slot_calls:
                args, kwargs = self._args(item)
                name = self._literal(kwargs.get(self.settings.slot_name_param) or (args[0] if args else None))
                width_node = kwargs.get(self.settings.slot_width_param) or (args[1] if len(args) > 1 else None)
                if width_node is not None:
                    width_value = self._width(width_node)
                    if width_value is None:
                        self.problems.append(
                            (self.site(width_node), f"cannot compute the width of {prefix} slot statically ({self.text(width_node)[:60]!r}); later offsets are unknown")
                        )
                        readable = False
                    else:
                        width = width_value
                writer_node = kwargs.get(self.settings.slot_writer_param)
                if writer_node is not None:
                    writer = self.text(self._resolve(writer_node)).rsplit(".", 1)[-1]
                doc_literal = self._literal(kwargs.get("doc"))
                doc = doc_literal if isinstance(doc_literal, str) else ""
            if not isinstance(name, str):
                self.problems.append((self.site(item), f"cannot read this {prefix} slot statically ({self.text(item)[:60]!r})"))
                continue
            if not readable:
                break
            slots.append(SlotDef(prefix, name, offset, width, writer, doc, self.site(item)))
            offset += width
        if not readable:
            return None
        return LayoutDef(prefix, slots, offset, doc_value if isinstance(doc_value, str) else "", self.site(call))


# -- ISV writes (FX1xx) -------------------------------------------------------------------------
@dataclass
class IsvWrite:
    slots: list[SlotDef]  # empty: unresolved
    site: Site
    function: str
    expression: str
    status: str  # violation | allowed | unresolved
    reason: str


@dataclass
class IsvModel:
    layout: LayoutDef | None
    writes: list[IsvWrite]
    kernel_writers: dict[str, list[Site]]  # slot constant → kernels writing it (site = kernel def)
    readers: dict[str, list[Site]]  # slot constant → Python/CUDA sites that read it


def isv_model(program: Program, model: LayoutModel | None) -> IsvModel:
    settings = program.settings
    layout = model.layout(settings.isv_layout) if model is not None else None
    if layout is None:
        return IsvModel(None, [], {}, {})
    by_constant = {slot.constant: slot for slot in layout.slots}
    buffers = set(settings.isv_buffers)
    writes: list[IsvWrite] = []
    write_lines: set[tuple[str, int]] = set()

    def classify(slots: list[SlotDef], function: str) -> tuple[str, str]:
        if not slots:
            if name_matches(function, settings.isv_bus_functions):
                return "allowed", "bus implementation"
            if name_matches(function, settings.isv_bootstrap_functions):
                return "allowed", "reset dispatch (the slot is chosen at run time)"
            return "unresolved", "the slot index names no ISV slot constant"
        gpu = [slot for slot in slots if slot.writer in settings.isv_gpu_writers]
        if not gpu:
            return "allowed", ", ".join(sorted({slot.writer or "no writer class" for slot in slots}))
        if name_matches(function, settings.isv_bootstrap_functions):
            return "allowed", "bootstrap in reset dispatch"
        if name_matches(function, settings.isv_reference_functions):
            return "allowed", "kernel reference (CPU twin of the kernel)"
        if name_matches(function, settings.isv_bus_functions):
            return "allowed", "bus implementation"
        return "violation", f"{', '.join(slot.constant for slot in gpu)} is {gpu[0].writer}"

    for module in program.modules.values():
        if module.is_test or module.path == settings.layout_module or program.out_of_scope(module.path):
            continue
        for write in module.summary.subscript_writes:
            if not _is_buffer(write.base, buffers):
                continue
            slots = _slots_named(write.index_names, by_constant)
            function = program.scope_key(module, write.scope)
            status, reason = classify(slots, function)
            writes.append(IsvWrite(slots, Site(module.path, write.span, write.scope), function, f"{write.base}[{write.index}] {write.how}", status, reason))
            write_lines.add((module.path, write.span.line))
        for call in module.summary.calls:
            if call.method not in settings.isv_write_methods or not call.receiver:
                continue
            if not _is_buffer(call.receiver, buffers) or not call.args:
                continue
            first = call.args[0]
            if first.kind == "str":
                # Bus methods that take the slot's name: write_input("EPOCH_INDEX", v).
                slots = [slot for slot in layout.slots if slot.name == first.value or slot.constant == first.value]
            else:
                names = re.findall(r"[A-Za-z_][\w.]*", first.text)
                slots = _slots_named(names, by_constant)
            function = program.scope_key(module, call.scope)
            status, reason = classify(slots, function)
            writes.append(IsvWrite(slots, Site(module.path, call.span, call.scope), function, f"{call.receiver}.{call.method}({call.args[0].text}, …)", status, reason))
            write_lines.add((module.path, call.span.line))
    writes.sort(key=lambda w: (w.site.path, w.site.span.line, w.site.span.column))
    kernel_writers: dict[str, list[Site]] = {}
    readers: dict[str, list[Site]] = {}
    names = sorted(by_constant, key=len, reverse=True)
    if names:
        reference = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
        for path, summary in sorted(program.cuda.items()):
            source = program.sources.get(path)
            if source is None or summary.generated or path in settings.generated_headers:
                continue
            kernels = [(k.span.line, k.end_line, k) for k in summary.kernels]
            for match in reference.finditer(source.text):
                line = source.text.count("\n", 0, match.start()) + 1
                kernel = next((k for start, end, k in kernels if start <= line <= end), None)
                line_text = source.line_text(line)
                tail = line_text[line_text.find(match.group(1)) :]
                is_write = bool(re.match(r"[\w\s+*\-()]*\]\s*(?:[-+*/]?=)(?!=)", tail[len(match.group(1)) :]))
                if kernel is not None and is_write:
                    sites = kernel_writers.setdefault(match.group(1), [])
                    label = Site(path, kernel.span, kernel.name)
                    if label not in sites:
                        sites.append(label)
                else:
                    readers.setdefault(match.group(1), []).append(Site(path, Span(line, 1, line, 1), kernel.name if kernel else ""))
        layout_module = program.by_path.get(settings.layout_module)
        for module in program.modules.values():
            if module.is_test or module.path == settings.layout_module or layout_module is None:
                continue
            source = program.sources.get(module.path)
            if source is None:
                continue
            # Only names this module imports from the layout module are references (a docstring
            # that mentions ISV_TAU in another package is not a reader).
            imported = {
                local for local, target in program.bindings(module).items()
                if target.rpartition(".")[0] == layout_module.name and target.rpartition(".")[2] in by_constant
            } | ({target.rpartition(".")[2] for target in program.bindings(module).values()} & {"*"})
            if not imported:
                continue
            for match in reference.finditer(source.text):
                if match.group(1) not in imported:
                    continue
                line = source.text.count("\n", 0, match.start()) + 1
                if (module.path, line) in write_lines:
                    continue
                stripped = source.line_text(line).lstrip()
                if stripped.startswith(("import ", "from ", "#", match.group(1) + ",")):
                    continue
                readers.setdefault(match.group(1), []).append(Site(module.path, Span(line, 1, line, 1)))
    return IsvModel(layout, writes, kernel_writers, readers)


def _is_buffer(text: str, patterns: set[str]) -> bool:
    """``isv`` matches any receiver whose last name is isv; ``isv.tensor`` matches ``x.isv.tensor``."""
    for pattern in patterns:
        if "." in pattern:
            if text == pattern or text.endswith("." + pattern):
                return True
        elif text.rsplit(".", 1)[-1] == pattern:
            return True
    return False


def _slots_named(names, by_constant) -> list[SlotDef]:
    found: list[SlotDef] = []
    for name in names:
        constant = name.rsplit(".", 1)[-1]
        slot = by_constant.get(constant)
        if slot is not None and slot not in found:
            found.append(slot)
    return found


# -- one layout (FX5xx) ---------------------------------------------------------------------------
@dataclass
class ConstantMismatch:
    name: str
    cuda: Site
    cuda_value: object
    python: Site
    python_value: object


@dataclass
class Redefinition:
    name: str
    site: Site
    generated: Site


@dataclass
class HeaderCheck:
    path: str
    command: str
    fresh: bool
    message: str
    ran: bool = True  # False: checked statically, the command was not executed

    @property
    def verdict(self) -> str:
        """Who says so, for the FX503 message."""
        if self.ran:
            return f"`{self.command}` says: {self.message}"
        return f"{self.message}; `{self.command}` not run"


@dataclass
class LayoutSync:
    mismatches: list[ConstantMismatch]
    redefinitions: list[Redefinition]
    headers: list[HeaderCheck]
    python_constants: dict[str, tuple[object, Site]]


def layout_sync(program: Program, model: LayoutModel | None) -> LayoutSync:
    settings = program.settings
    # Every Python copy of every constant: a CUDA constant is compared with each of them (the
    # first copy alone let a change in a second module's mirror pass unnoticed).
    copies: dict[str, list[tuple[object, Site]]] = {}
    layout_constants = model.constants() if model is not None else {}
    for name, (value, site) in layout_constants.items():
        copies[name] = [(value, site)]
    first = {name: value for name, (value, _) in layout_constants.items()}
    for module in program.modules.values():
        if not any(path_matches(module.path, pattern) for pattern in (*settings.constant_modules, settings.layout_module) if pattern):
            continue
        # A name means the module's own copy when it has one, else the first copy seen.
        known = dict(first)
        for name, arg in module.summary.constants.items():
            if not name.isupper() or name in layout_constants:
                continue
            value = _evaluate_python(arg.text, known)
            if value is None:
                continue
            known[name] = value
            first.setdefault(name, value)
            assignment = next((a for a in module.summary.assignments if a.target == name and not a.scope), None)
            span = assignment.span if assignment else Span(1, 1, 1, 1)
            copies.setdefault(name, []).append((value, Site(module.path, span)))
    python = {name: found[0] for name, found in copies.items()}
    mismatches: list[ConstantMismatch] = []
    generated_defs: dict[str, Site] = {}
    generated_paths = {path for path, summary in program.cuda.items() if summary.generated} | set(settings.generated_headers)
    for path in sorted(generated_paths):
        summary = program.cuda.get(path)
        if summary is None:
            continue
        for constant in summary.constants:
            generated_defs.setdefault(constant.name, Site(path, constant.span))
    redefinitions: list[Redefinition] = []
    for path, summary in sorted(program.cuda.items()):
        if program.out_of_scope(path):
            continue
        for constant in summary.constants:
            site = Site(path, constant.span)
            if constant.value is not None:
                for value, python_site in copies.get(constant.name, ()):
                    if not _equal(constant.value, value):
                        mismatches.append(ConstantMismatch(constant.name, site, constant.text, python_site, value))
            if path not in generated_paths and constant.name in generated_defs:
                redefinitions.append(Redefinition(constant.name, site, generated_defs[constant.name]))
    run = generators_allowed()
    headers = [
        _check_header(program, path, command) if run else _static_header_check(program, path, command, model)
        for path, command in sorted(settings.generated_headers.items())
    ]
    return LayoutSync(mismatches, redefinitions, headers, python)


def _equal(left: object, right: object) -> bool:
    try:
        return abs(float(left) - float(right)) <= 1e-6 * max(1.0, abs(float(right)))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return left == right


def _evaluate_python(text: str, known: dict[str, object]) -> int | float | None:
    """Value of a Python constant expression, or None (``foxaudit.sources.constexpr``)."""
    return evaluate(text, known, "python")


def _static_header_check(program: Program, path: str, command: str, model: LayoutModel | None) -> HeaderCheck:
    """What can be known without running ``command``: the header exists and, for each layout it
    mirrors (defines one of its slot offsets or its stride), defines every slot offset, the stride
    and any ``_WIDTH`` it has with the layout's values (a slot added, removed or resized in Python
    changes one of them). A header that mirrors no layout passes: only its generator knows."""
    if not (program.root / path).is_file():
        return HeaderCheck(path, command, False, f"{path} is missing", ran=False)
    summary = program.cuda.get(path)
    defined = {constant.name: constant for constant in summary.constants} if summary is not None else {}
    problems: list[str] = []
    for layout in model.layouts if model is not None else ():
        expected = {slot.constant: slot.offset for slot in layout.slots}
        expected[f"{layout.prefix}_STRIDE"] = layout.stride
        if not expected.keys() & defined.keys():
            continue
        widths = {f"{slot.constant}_WIDTH": slot.width for slot in layout.slots if slot.width > 1}
        expected.update({name: width for name, width in widths.items() if name in defined})
        for name, value in expected.items():
            constant = defined.get(name)
            if constant is None:
                problems.append(f"lacks {name}")
            elif constant.value is not None and not _equal(constant.value, value):
                problems.append(f"{name} = {constant.text} vs {value} in {model.path}")  # type: ignore[union-attr]
    if problems:
        shown = ", ".join(problems[:3]) + (f" and {len(problems) - 3} more" if len(problems) > 3 else "")
        return HeaderCheck(path, command, False, shown, ran=False)
    return HeaderCheck(path, command, True, "matches the layout", ran=False)


def _check_header(program: Program, path: str, command: str) -> HeaderCheck:
    """Run ``command`` (``{path}`` → the header's absolute path); exit 0 means the header is current.

    Only with the user's opt-in (:func:`generators_allowed`); the caller checks it.

    Cached by the command, the header's content and the content of the generator's package (the
    top-level package of a ``python -m pkg.mod`` command, else every Python file), so a warm run
    executes nothing.
    """
    header = program.root / path
    digest = hashlib.sha1(command.encode())
    try:
        digest.update(header.read_bytes())
    except OSError:
        return HeaderCheck(path, command, False, f"{path} is missing", ran=False)
    words = shlex.split(command)
    package = ""
    if "-m" in words and words.index("-m") + 1 < len(words):
        package = words[words.index("-m") + 1].split(".")[0]
    for source_path, source in sorted(program.sources.items()):
        if source.language == "python" and (not package or source_path.startswith(package + "/")):
            digest.update(source_path.encode())
            digest.update(hashlib.sha1(source.data).digest())
    key = "header-" + digest.hexdigest()
    # The generator's verdict, cached by its inputs in the run's cache (data only).
    store = program.cache.store
    cached = store.get(key) if store is not None else None
    if cached is not None and isinstance(cached.get("fresh"), bool) and isinstance(cached.get("message"), str):
        return HeaderCheck(path, command, cached["fresh"], cached["message"])
    argv = [sys.executable if word in ("python", "python3") else word.replace("{path}", str(header)) for word in words]
    try:
        result = subprocess.run(argv, cwd=program.root, capture_output=True, text=True, timeout=program.settings.generator_timeout, check=False)
    except subprocess.TimeoutExpired:
        return HeaderCheck(path, command, False, f"`{command}` ran past {program.settings.generator_timeout:g} s")
    except OSError as error:
        return HeaderCheck(path, command, False, f"`{command}` could not run ({error})")
    output = (result.stderr.strip() or result.stdout.strip()).splitlines()
    message = output[-1] if output else f"exit status {result.returncode}"
    fresh = result.returncode == 0
    if store is not None:
        store.put(key, {"fresh": fresh, "message": message})
    return HeaderCheck(path, command, fresh, message)
