"""Invariant 3 — hot-path purity: roots, the call graph from them, and every transfer/sync site.

Roots: functions with a configured decorator (``@hot_path``), configured qualified names, and
code captured into a CUDA graph — the body of ``with torch.cuda.graph(...)`` (or any configured
capture context), code between ``stream.begin_capture()`` and ``end_capture()`` in one function,
callables given to ``torch.cuda.make_graphed_callables``. A capture context entered in a helper
counts too: a generator function whose body holds a capture ``with`` is itself a capture context
(``with capturing(g): step()``), and a function that calls one of its parameters inside a capture
makes the argument passed for it a root (``capture_graph(step)``).

Transfer and sync sites, everywhere outside test roots: ``.item()``, ``.cpu()``, ``.numpy()``,
``.tolist()``, ``.to("cpu")``/``.to(device="cpu")``, any ``.synchronize()`` (torch.cuda,
streams, events, CuPy devices), ``cupy.asnumpy``, CuPy ``.get()``, ``print``/``float``/``int``/
``bool`` of a tensor, and in CUDA host code ``cudaMemcpy*``/``cuMemcpy*`` (device-to-device copies
are not host transfers) and the blocking syncs ``cudaDeviceSynchronize``, ``cudaStreamSynchronize``,
``cudaEventSynchronize`` (and their driver-API and deprecated twins). A CUDA root
(``path.cu::function``) walks the host functions it calls, by name, through every CUDA file; it
matches when the function exists, transfer or not.

``.get()`` and ``print`` need *receiver evidence* — the value was bound from a
``torch.*``/``cupy.*`` call, comes from a parameter annotated as a tensor/array, or is a known
device buffer — so ``dict.get(key)`` and ``print("text")`` are never transfers. The same
evidence admits ``np.asarray(t)``, ``torch.Tensor.item(t)``, a bound ``read = t.item``, ``.to(x)``
with ``x`` bound to the CPU, data-dependent shapes (``torch.nonzero`` & co.) and, read from the
tree (``foxaudit.program.hotsyntax``), branches on tensors and boolean-mask reads; ``.item()`` of
a NumPy value and ``.synchronize()`` of the project's own class are not sites.

Classes: VIOLATION (reachable from a root; the call chain is kept), OK-PINNED (inside a
configured pinned-read function or on a configured pinned receiver), COLD-PATH (not reachable).
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter

from foxaudit.globs import first_path_match, name_matches
from foxaudit.program.hotsyntax import syntax_sites
from foxaudit.program.model import MODULE_SCOPE, Module, Program, function_key
from foxaudit.program.pyscan import Call, Span
from foxaudit.program.wiring import Site
from foxaudit.sources.base import ts_language
from foxaudit.sources.cuda import enclosing_function, execution_spaces, function_name

VIOLATION, OK_PINNED, COLD_PATH = "VIOLATION", "OK-PINNED", "COLD-PATH"
# torch.* / cupy.* callees whose result is not a device array (modules, devices, streams, ...).
_NOT_ARRAYS = frozenset({
    "nn", "optim", "cuda", "utils", "distributions", "device", "Generator", "jit", "compile", "no_grad",
    "inference_mode", "enable_grad", "set_grad_enabled", "autograd", "dtype", "Size", "finfo", "iinfo",
    "backends", "profiler", "distributed", "manual_seed", "load", "save", "onnx", "fx", "hub", "library",
    "amp", "mps", "xpu", "export", "func", "testing", "is_tensor", "is_grad_enabled", "get_default_dtype",
    "numel", "RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel", "fuse", "get_array_module",
    "get_default_memory_pool", "get_default_pinned_memory_pool", "asnumpy",
})
# Tensor methods whose result lives on the host (a Python number, list, NumPy array).
_HOST_RESULTS = frozenset({"item", "tolist", "numpy", "get", "size", "dim", "numel", "stride", "data_ptr", "element_size"})


_CONFLICTING = "<bound to arrays of different libraries>"


def _array_library(canonical: str) -> str | None:
    """The library of the array a ``canonical`` callee returns: torch | cupy | numpy | None."""
    head, _, rest = canonical.partition(".")
    if head == "numpy" or canonical == "cupy.asnumpy":
        return "numpy"
    if head not in ("torch", "cupy") or not rest:
        return None
    if rest.split(".")[0] in _NOT_ARRAYS or (rest.split(".")[-1][:1].isupper() and not rest.endswith("Tensor")):
        return None  # a module, device, stream, generator class (cupy.random.RandomState), ...
    return head


def _annotation_library(annotation: str) -> str | None:
    """torch | cupy | numpy for an annotation naming one of their array types (``X | None`` too);
    None when it is anything else, or a union with anything else (``Tensor | float``: unknown)."""
    found: set[str | None] = set()
    for part in annotation.replace("Optional[", "").replace("]", "").split("|"):
        part = part.strip()
        if part == "None":
            continue
        if part in ("cupy.ndarray", "cp.ndarray") or part.startswith("cupy."):
            found.add("cupy")
        elif part.startswith(("numpy.", "np.", "npt.")):
            found.add("numpy")
        elif part.endswith("Tensor"):  # torch.Tensor, Tensor, torch.FloatTensor
            found.add("torch")
        else:
            found.add(None)
    return found.pop() if len(found) == 1 else None
_CUPY_GET_KEYWORDS = {"stream", "order", "out", "blocking"}


@dataclass(frozen=True)
class Root:
    label: str  # what makes it a root
    key: str  # function key (or a region id for capture blocks)
    site: Site


@dataclass
class TransferSite:
    kind: str  # .item() | .cpu() | torch.cuda.synchronize | cudaMemcpy DeviceToHost | ...
    site: Site
    function: str  # function key of the enclosing scope ('' for CUDA)
    status: str = COLD_PATH
    chain: tuple[str, ...] = ()
    reason: str = ""

    @property
    def hint(self) -> str:
        """How to take this kind of site off the step, in terms of the user's own code."""
        if "Synchronize" in self.kind or self.kind.endswith("synchronize()") or self.kind.endswith(".synchronize"):
            if "::" in self.function:
                return ("let the device order the work (stream order, or cudaStreamWaitEvent between streams) instead of"
                        " blocking the host here, or move the sync after the step")
            return ("drop the sync from the step: work on one stream is already ordered; synchronise once after the"
                    " step, where the host needs the result")
        if "::" in self.function:
            return ("copy asynchronously into pinned host memory (cudaMemcpyAsync on the step's stream) and read it"
                    " after the step, or keep the value on the device")
        return ("keep the value on the device (feed the tensor to the next operation; torch.where instead of a Python"
                " branch), or read it after the step — every N steps, copied with non_blocking=True into pinned memory")


@dataclass
class UnresolvedCall:
    text: str
    site: Site
    function: str
    note: str
    chain: tuple[str, ...]


@dataclass
class HotPath:
    roots: list[Root]
    reached: dict[str, tuple[str | None, str]]  # function key → (parent key, how)
    # Every transfer site, classified (the audit's table): found on first use, since the rules
    # need only the violations, and with nothing hot there are none.
    find_sites: Callable[[], list[TransferSite]] = field(repr=False, compare=False)
    unresolved: list[UnresolvedCall]
    unmatched_roots: list[str]
    captured_regions: dict[tuple[str, int], str] = field(default_factory=dict)  # (path, with id) → label
    # Something is hot: a root reached a function, or code is captured (a region, a CUDA root).
    # Without that no site can be a violation, and the sites need not be found for the rules.
    anything_hot: bool = True
    # The violations alone, from the sites of the modules something hot is in (the same sites
    # ``find_sites`` classifies there); None: filter ``sites``.
    find_violations: Callable[[], list[TransferSite]] | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def sites(self) -> list[TransferSite]:
        return self.find_sites()

    @functools.cached_property
    def violations(self) -> list[TransferSite]:
        if not self.anything_hot:
            return []
        if self.find_violations is not None and "sites" not in self.__dict__:
            return self.find_violations()
        return [site for site in self.sites if site.status == VIOLATION]


def _placed(
    site: TransferSite, region: str | None, reached: dict[str, tuple[str | None, str]], settings, call: Call | None
) -> TransferSite:
    """Where a transfer site stands: inside a captured region or reached from a root (a violation
    with its call chain, unless pinned), else on the cold path with the reason it is excluded."""
    if region is not None:
        site.chain, hot = (f"<capture {region}>",), True
    else:
        hot = site.function in reached
        site.chain = chain(reached, site.function) if hot else ()
    pinned = _pinned_reason(settings, site.function, call)
    if pinned:
        site.status, site.reason = OK_PINNED, pinned
    elif hot:
        site.status = VIOLATION
    else:
        site.reason = _excluded(settings, site.function)
    return site


def hot_path(program: Program) -> HotPath:
    settings = program.settings
    roots: list[Root] = []
    # 1. decorators and qualified names
    matched_patterns: set[str] = set()
    out_of_scope = {m.name for m in program.modules.values() if first_path_match(m.path, settings.out_of_scope)}
    decorators = set(settings.hot_path_decorators)

    def names_a_root(module: Module, decorator: str) -> bool:
        canonical = program.canonical(module, decorator)
        # `@hot_path`, `@markers.hot_path`, and an alias `from m import hot_path as hot` (`@hot`).
        return bool({decorator.rsplit(".", 1)[-1], canonical.rsplit(".", 1)[-1], canonical} & decorators)

    dotted = any("." in name for name in decorators)

    def may_decorate_a_root(module: Module) -> bool:
        """Does a decorator of ``module`` name a root? Answered from the index where it can be:
        with no dotted root decorator configured, a decorator names one only by its own last name
        or through an import that binds another name to one (``from m import hot_path as hot``);
        resolving the names (which reads the module's imports) is left for those modules."""
        summary = module.summary
        if not summary.decorators:
            return False
        if not dotted:
            if any(decorator.rpartition(".")[2] in decorators for decorator in summary.decorators):
                return True
            if summary.imported_names.isdisjoint(decorators):
                return False
        return any(names_a_root(module, decorator) for decorator in summary.decorators)

    # Only the functions of a module some decorator of which names a root are read (all of them
    # when roots are also configured by name: every function key is matched against them).
    decorated = [
        module
        for module in program.modules.values()
        if not module.is_test and module.name not in out_of_scope and (settings.hot_path_roots or may_decorate_a_root(module))
    ]
    candidates = {function_key(module.name, function.qualname) for module in decorated for function in module.summary.functions}
    for key in sorted(candidates):
        module, function = program.functions[key]
        for decorator in function.decorators:
            if names_a_root(module, decorator):
                roots.append(Root(f"@{decorator}", key, Site(module.path, function.span, function.qualname)))
                break
        for pattern in settings.hot_path_roots:
            if name_matches(key, [pattern]):
                matched_patterns.add(pattern)
                roots.append(Root(f"configured root `{pattern}`", key, Site(module.path, function.span, function.qualname)))
    cuda_roots = [pattern for pattern in settings.hot_path_roots if "::" in pattern]
    host = _cuda_host(program, whole=bool(cuda_roots))
    cuda_reached: dict[str, tuple[str | None, str]] = {}
    for pattern in cuda_roots:
        for key in host.functions_matching(pattern):
            matched_patterns.add(pattern)  # a CUDA host function (path.cu::function), transfer or not
            cuda_reached.setdefault(key, (None, f"configured root `{pattern}`"))
    cuda_reached = host.walk(cuda_reached, settings)
    unmatched = [pattern for pattern in settings.hot_path_roots if pattern not in matched_patterns]
    # 2. capture contexts (and helpers that enter them)
    capture_helpers = _capture_helpers(program)
    helper_names = {key.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for key, index in capture_helpers.items() if index >= 0}
    graphed_tails = frozenset(name.rsplit(".", 1)[-1] for name in settings.graphed_callables)
    capture_methods = frozenset(settings.capture_begin_methods) | frozenset(settings.capture_end_methods)
    regions: set[str] = set()  # modules whose calls were read above (region calls are keyed by identity)
    region_calls: list[tuple[Module, Call, str]] = []  # calls inside captured regions, with the region label
    captured: dict[tuple[str, int], str] = {}
    for module in program.modules.values():
        if module.is_test or module.name in out_of_scope:
            continue
        begin_lines: dict[str, list[int]] = {}
        end_lines: dict[str, list[int]] = {}
        summary = module.summary
        if not summary.call_methods.isdisjoint(capture_methods):
            for call in summary.calls:
                if call.method in settings.capture_begin_methods and call.receiver:
                    begin_lines.setdefault(call.scope, []).append(call.span.line)
                elif call.method in settings.capture_end_methods and call.receiver:
                    end_lines.setdefault(call.scope, []).append(call.span.line)
        has_capture = False
        for block in summary.withs if _may_capture(program, module, capture_helpers) else ():
            for context in block.contexts:
                label = _capture_label(program, module, context, capture_helpers)
                if label:
                    captured[(module.path, block.id)] = f"{label} at {module.path}:{block.span.line}"
                    has_capture = True
                    break
        if not (
            has_capture
            or begin_lines
            or not summary.call_methods.isdisjoint(graphed_tails | helper_names)
            or _imports_named(module, graphed_tails)
        ):
            continue  # no call of this module can open a region or name a root: its body stays unread
        regions.add(module.path)
        for call in summary.calls:
            label = next((captured[(module.path, w)] for w in call.withs if (module.path, w) in captured), None)
            if label is None:
                for begin in begin_lines.get(call.scope, ()):
                    ends = [end for end in end_lines.get(call.scope, ()) if end > begin]
                    if begin < call.span.line and (not ends or call.span.line < min(ends)):
                        label = f"stream capture at {module.path}:{begin}"
                        break
            if label is not None:
                region_calls.append((module, call, label))
            # make_graphed_callables(fn, ...) and capture helpers taking a callable
            canonical = program.canonical(module, call.func) if _may_name(program, module, call, graphed_tails) else ""
            if canonical in settings.graphed_callables and call.args:
                for key in _callable_targets(program, module, call, call.args[0]):
                    roots.append(Root(f"`{call.func}` argument", key, Site(module.path, call.span, call.scope)))
            if call.method not in helper_names:
                continue  # resolving only plausible helper calls keeps this pass cheap
            for target in _targets(program, module, call):
                param_index = capture_helpers.get(target)
                if param_index is not None and param_index >= 0 and param_index < len(call.args):
                    for key in _callable_targets(program, module, call, call.args[param_index]):
                        roots.append(Root(f"captured by `{target}`", key, Site(module.path, call.span, call.scope)))
    # 3. reachability
    reached: dict[str, tuple[str | None, str]] = {}
    queue: deque[str] = deque()
    for root in roots:
        if root.key not in reached:
            reached[root.key] = (None, root.label)
            queue.append(root.key)
    region_keys: dict[str, str] = {}
    for module, call, label in region_calls:
        region = f"<capture {label}>"
        region_keys.setdefault(region, label)
        for target in _targets(program, module, call):
            if target not in reached and not _excluded(settings, target):
                reached[target] = (region, f"called at {module.path}:{call.span.line}")
                queue.append(target)
    # The calls of each scope, read a module at a time as the walk reaches it: a project whose
    # capture regions reach few functions scans few bodies (flashinfer: 1,636 modules, 233k
    # calls, was 28 s of a 65 s run for the whole call graph).
    calls_by_module: dict[str, dict[str, list[tuple[Module, Call]]]] = {}

    def calls_in(key: str) -> list[tuple[Module, Call]]:
        name = key.split(":", 1)[0]
        table = calls_by_module.get(name)
        if table is None:
            table = calls_by_module[name] = {}
            owner = program.modules.get(name)
            for call in owner.summary.calls if owner is not None else ():
                table.setdefault(program.scope_key(owner, call.scope), []).append((owner, call))
        return table.get(key, [])

    while queue:
        current = queue.popleft()
        for module, call in calls_in(current):
            for target in _targets(program, module, call):
                if target not in reached and not _excluded(settings, target):
                    reached[target] = (current, f"called at {module.path}:{call.span.line}")
                    queue.append(target)
    for region, label in region_keys.items():
        reached.setdefault(region, (None, label))
    # 4. transfer sites (when first asked for)
    region_call_ids = {(module.path, id(call)): label for module, call, label in region_calls}
    # A site is a violation only inside a captured region (a `with` block, a stream capture, a
    # region call) or in a reached function; CUDA sites only in a function a CUDA root reaches.
    anything_hot = bool(reached or captured or region_calls or cuda_reached)

    # The sites are placed against the reachability found so far (the CUDA walk's keys join
    # ``reached`` below; no Python site is keyed like them).
    placed_against = dict(reached)

    def find_sites() -> list[TransferSite]:
        return _transfer_sites(program, out_of_scope, captured, placed_against, region_call_ids, regions, host, cuda_reached)

    # A violation lies in a module a reached function, a captured region or a region call is in:
    # the rules read the sites of those alone (the audit's table reads them all).
    hot_modules = {key.split(":", 1)[0] for key in placed_against}
    hot_paths = {path for path, _ in captured} | {path for path, _ in region_call_ids}

    def find_violations() -> list[TransferSite]:
        return [site for site in _transfer_sites(
            program, out_of_scope, captured, placed_against, region_call_ids, regions, host, cuda_reached,
            only=(hot_modules, hot_paths),
        ) if site.status == VIOLATION]

    # 5. unresolved calls on the hot path
    unresolved: list[UnresolvedCall] = []
    for key in sorted(reached):
        for module, call in calls_in(key):
            resolution = program.resolve_call(module, call)
            if resolution.kind in ("unresolved", "parameter"):
                unresolved.append(
                    UnresolvedCall(call.func or f"….{call.method}", Site(module.path, call.span, call.scope), key, resolution.note, chain(reached, key))
                )
    for module, call, label in region_calls:
        resolution = program.resolve_call(module, call)
        helper_index = capture_helpers.get(program.scope_key(module, call.scope), -1)
        if resolution.kind == "parameter" and helper_index >= 0:
            continue  # the callable a capture helper captures: its callers' arguments are roots
        if resolution.kind in ("unresolved", "parameter"):
            unresolved.append(
                UnresolvedCall(call.func or f"….{call.method}", Site(module.path, call.span, call.scope), f"<capture {label}>", resolution.note, (f"<capture {label}>",))
            )
    unresolved.sort(key=lambda u: (u.site.path, u.site.span.line, u.site.span.column))
    reached.update({key: how for key, how in cuda_reached.items() if key not in reached})
    return HotPath(roots, reached, find_sites, unresolved, unmatched, captured, anything_hot, find_violations)


def _transfer_sites(
    program: Program,
    out_of_scope: set[str],
    captured: dict[tuple[str, int], str],
    reached: dict[str, tuple[str | None, str]],
    region_call_ids: dict[tuple[str, int], str],
    regions: set[str],
    host: _CudaHost,
    cuda_reached: dict[str, tuple[str | None, str]],
    only: tuple[set[str], set[str]] | None = None,
) -> list[TransferSite]:
    """Every transfer/sync site outside test roots and out-of-scope code, placed (see ``_placed``),
    in file and position order; with ``only`` (module names, paths), the Python sites of those
    modules and the CUDA sites of reached functions alone."""
    settings = program.settings
    sites: list[TransferSite] = []
    for module in program.modules.values():
        if module.is_test or module.name in out_of_scope:
            continue
        if only is not None and module.name not in only[0] and module.path not in only[1]:
            continue
        evidence = _Evidence(program, module)
        source = program.sources.get(module.path)
        if source is not None and evidence.knows_tensors:
            for found in syntax_sites(source, lambda scope, text, evidence=evidence: evidence.library(scope, text) in ("torch", "cupy")):
                key = program.scope_key(module, found.scope)
                site = TransferSite(found.kind, Site(module.path, found.span, found.scope), key)
                sites.append(_placed(site, _region_at(module, found.span, captured), reached, settings, None))
        # The index holds every call that may be a transfer (same facts, same order); region
        # calls are matched by identity, so a module read above is read in full again.
        full = module.path in regions or bool(evidence.bound_methods)
        for call in module.summary.calls if full else module.summary.transfer_calls:
            kind = _transfer_kind(program, module, call, evidence)
            if kind is None:
                continue
            key = program.scope_key(module, call.scope)
            site = TransferSite(kind, Site(module.path, call.span, call.scope), key)
            site = _placed(site, region_call_ids.get((module.path, id(call))), reached, settings, call)
            if site.status == VIOLATION and site.chain and site.chain[0].startswith("<capture"):
                guard = _capture_guard(program, module, call)
                if guard:
                    site.status, site.chain, site.reason = COLD_PATH, (), guard
            sites.append(site)
    cuda_sites: list[tuple[str, str, str, Span]] = []  # (kind, path, enclosing, span)
    for path, summary in sorted(program.cuda.items()):
        if first_path_match(path, settings.out_of_scope):
            continue
        for memcpy in summary.memcpys:
            if memcpy.device_code or memcpy.direction in ("DeviceToDevice",):
                continue
            cuda_sites.append((f"{memcpy.function} {memcpy.direction}", path, memcpy.enclosing, memcpy.span))
    cuda_sites.extend(host.syncs)
    for kind, path, enclosing, span in cuda_sites:
        key = f"{path}::{enclosing}"
        if only is not None and key not in cuda_reached:
            continue
        site = TransferSite(kind, Site(path, span, enclosing), key)
        if key in cuda_reached:
            site.status, site.chain = VIOLATION, chain(cuda_reached, key)
        pinned = _pinned_reason(settings, key, None)
        if pinned:
            site.status, site.reason = OK_PINNED, pinned
        elif site.status != VIOLATION:
            site.reason = _excluded(settings, key)
        sites.append(site)
    sites.sort(key=lambda s: (s.site.path, s.site.span.line, s.site.span.column))
    return sites


# What asks whether the current stream is being captured (torch, CUDA's runtime, CuPy, Warp).
_CAPTURE_QUERIES = frozenset({"is_current_stream_capturing", "is_capturing", "is_stream_capturing",
                              "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo", "is_capture_active"})


def _capture_guard(program: Program, module: Module, call: Call) -> str:
    """Why a transfer reached only from a captured region does not run while capturing: its
    function asks first (`if torch.cuda.is_current_stream_capturing(): return …`) or is told
    (warp's `stream_is_capturing` parameter) — code written to skip the read-back under capture,
    as the capture itself requires. '' when neither. (A root that runs eagerly every step is no
    capture: its sites are not excused.)"""
    function = program.function_at(module, call.scope) if call.scope else None
    told = [param for param in (function.params if function is not None else ()) if "capturing" in param.lower()]
    if told:
        return f"skipped while capturing: its function is told whether the stream is capturing (`{told[0]}`)"
    for other in module.summary.calls:
        if other.scope == call.scope and other.method in _CAPTURE_QUERIES and other.span.line <= call.span.line:
            return f"skipped while capturing: its function asks `{other.method}()` first (line {other.span.line})"
    return ""


# Host calls that block until the device (or a stream, or an event) is done: a host sync.
_CUDA_SYNCS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
})
_CUDA_SYNC_TEXT = re.compile(r"\b(?:cuda|cu)(?:Device|Stream|Event|Thread|Ctx)Synchronize\b")


@functools.cache
def _cuda_query() -> tree_sitter.Query:
    return tree_sitter.Query(ts_language("cuda"), "(function_definition) @def (call_expression) @call")


@dataclass
class _CudaHost:
    """Host functions of the CUDA files, the names each one calls, and its blocking syncs."""

    functions: dict[str, list[str]] = field(default_factory=dict)  # function name → keys `path::name`
    callees: dict[str, set[str]] = field(default_factory=dict)  # key → names of the functions it calls
    syncs: list[tuple[str, str, str, Span]] = field(default_factory=list)  # (kind, path, enclosing, span)

    def functions_matching(self, pattern: str) -> list[str]:
        return sorted(key for keys in self.functions.values() for key in keys if name_matches(key, [pattern]))

    def walk(self, reached: dict[str, tuple[str | None, str]], settings) -> dict[str, tuple[str | None, str]]:
        """Everything the roots in ``reached`` call, by name: the same file's definition first,
        else every file's (a header's helper); configured exclusions are not entered."""
        queue = deque(reached)
        while queue:
            current = queue.popleft()
            path = current.split("::", 1)[0]
            for name in sorted(self.callees.get(current, ())):
                keys = self.functions.get(name, [])
                local = [key for key in keys if key.split("::", 1)[0] == path]
                for key in local or keys:
                    if key not in reached and not _excluded(settings, key):
                        reached[key] = (current, f"called in {path}")
                        queue.append(key)
        return reached


def _cuda_host(program: Program, *, whole: bool) -> _CudaHost:
    """Read from each CUDA file's tree (preprocessed as nvcc would): every file when a CUDA root
    needs the call graph (``whole``), else only the files that name a sync function."""
    host = _CudaHost()
    for path, source in sorted(program.sources.items()):
        if source.language != "cuda" or first_path_match(path, program.settings.out_of_scope):
            continue
        if not whole and not _CUDA_SYNC_TEXT.search(source.text):
            continue
        captures = tree_sitter.QueryCursor(_cuda_query()).captures(source.tree.root_node)
        names: dict[int, str] = {}  # definition node id → key, host functions only
        for node in captures.get("def", ()):
            name = function_name(node)
            spaces = execution_spaces(node)
            if name is None or (spaces & {"__global__", "__device__"} and "__host__" not in spaces):
                continue
            text = source.node_text(name)
            key = f"{path}::{text}"
            names[node.id] = key
            host.functions.setdefault(text, []).append(key)
        for node in captures.get("call", ()):
            function = node.child_by_field_name("function")
            while function is not None and function.type in ("qualified_identifier", "template_function"):
                function = function.child_by_field_name("name")
            if function is None or function.type != "identifier":
                continue
            definition = enclosing_function(node)
            key = names.get(definition.id) if definition is not None else None
            if key is None:
                continue  # device code, or outside any function
            callee = source.node_text(function)
            if callee in _CUDA_SYNCS:
                line, column = source.position(node.start_byte)
                end_line, end_column = source.position(node.end_byte)
                host.syncs.append((callee, path, key.split("::", 1)[1], Span(line, column, end_line, end_column)))
            elif any(child.type == "kernel_call_syntax" for child in node.children):
                continue  # a kernel launch: device code, nothing on the host to walk into
            else:
                host.callees.setdefault(key, set()).add(callee)
    return host


def chain(reached: dict[str, tuple[str | None, str]], key: str) -> tuple[str, ...]:
    path = [key]
    seen = {key}
    current = reached.get(key, (None, ""))[0]
    while current is not None and current not in seen:
        path.append(current)
        seen.add(current)
        current = reached.get(current, (None, ""))[0]
    return tuple(reversed(path))


def _region_at(module: Module, span: Span, captured: dict[tuple[str, int], str]) -> str | None:
    """The label of the captured ``with`` block whose body holds ``span`` (innermost), if any."""
    inside = [
        (block.span.line, label)
        for block in module.summary.withs
        if (label := captured.get((module.path, block.id))) is not None and block.span.line < span.line <= block.span.end_line
    ]
    return max(inside)[1] if inside else None


def _targets(program: Program, module: Module, call: Call) -> tuple[str, ...]:
    return program.resolve_call(module, call).targets


def _capture_label(program: Program, module: Module, context: Call, helpers: dict[str, int]) -> str | None:
    canonical = program.canonical(module, context.func) if context.func else ""
    if canonical in program.settings.capture_contexts:
        return f"`{context.func}`"
    if -1 not in helpers.values():
        return None  # no context-manager helper exists: nothing to resolve
    for target in _targets(program, module, context):
        if helpers.get(target) == -1:
            return f"`{context.func}` (capture helper)"
    return None


def _may_capture(program: Program, module: Module, helpers: dict[str, int]) -> bool:
    """Could ``_capture_label`` name a ``with`` of ``module``? Answered from the summary's index
    (the callees its ``with`` statements enter), so the blocks are decoded only where one could."""
    funcs = module.summary.with_funcs
    if not funcs:
        return False
    if -1 in helpers.values():
        return True  # a context-manager helper exists: resolution decides, block by block
    contexts = program.settings.capture_contexts
    # A callee canonicalises to a capture context only if its own last name, or (an undotted
    # one) that of what an import binds it to, is one's last name: most modules' names need no
    # resolving (which would read their imports).
    tails = {context.rpartition(".")[2] for context in contexts}
    if all(func.rpartition(".")[2] not in tails for func in funcs) and module.summary.imported_names.isdisjoint(tails):
        return False
    return any(func and program.canonical(module, func) in contexts for func in funcs)


def _capture_helpers(program: Program) -> dict[str, int]:
    """function key → -1 for a context-manager helper that captures, or the index of the callable
    parameter it calls inside a capture."""
    helpers: dict[str, int] = {}
    calls_in_with: dict[str, dict[int, list[Call]]] = {}

    def in_with(module: Module, with_id: int) -> list[Call]:
        """Calls inside one ``with`` block (the module's body is read on the first question)."""
        table = calls_in_with.get(module.name)
        if table is None:
            table = {}
            for call in module.summary.calls:
                for inner in call.withs:
                    table.setdefault(inner, []).append(call)
            calls_in_with[module.name] = table
        return table.get(with_id, [])

    begin_methods = frozenset(program.settings.capture_begin_methods)
    for _ in range(4):  # helpers of helpers
        changed = False
        for module in program.modules.values():
            capture_ids: set[int] = set()
            for block in module.summary.withs if _may_capture(program, module, helpers) else ():
                for context in block.contexts:
                    if _capture_label(program, module, context, helpers):
                        capture_ids.add(block.id)
            for call in () if module.summary.call_methods.isdisjoint(begin_methods) else module.summary.calls:
                if call.method in program.settings.capture_begin_methods and call.receiver:
                    key = function_key(module.name, call.scope)
                    function = program.function_at(module, call.scope)
                    if function is not None and function.is_generator and key not in helpers:
                        helpers[key] = -1
                        changed = True
            for block in module.summary.withs if capture_ids else ():
                if block.id not in capture_ids or not block.scope:
                    continue
                key = function_key(module.name, block.scope)
                function = program.function_at(module, block.scope)
                if function is None:
                    continue
                if function.is_generator and key not in helpers:
                    helpers[key] = -1
                    changed = True
                params = [p for p in function.params if p not in ("self", "cls")] if function.class_name else list(function.params)
                for call in in_with(module, block.id):
                    if call.scope == block.scope and call.func in params and key not in helpers:
                        helpers[key] = params.index(call.func)
                        changed = True
        if not changed:
            break
    return helpers


def _callable_targets(program: Program, module: Module, call: Call, arg) -> tuple[str, ...]:
    items = arg.value if arg.kind == "list" else (arg,)
    keys: list[str] = []
    for item in items or ():
        if item.kind not in ("name", "attribute"):
            continue
        dotted = item.dotted or item.text
        if dotted.startswith("self."):
            klass = program.enclosing_class(module, call.scope)
            if klass is not None:
                method = program.class_method(klass, dotted[5:])
                if method:
                    keys.append(method)
            continue
        kind, key = program.lookup(program.canonical(module, dotted))
        if kind == "function":
            keys.append(key)
        elif kind == "class":
            for method in ("__call__", "forward"):
                found = program.class_method(key, method)
                if found:
                    keys.append(found)
    return tuple(keys)


def _device_attributes(program: Program, module: Module) -> set[tuple[str, str]]:
    """(class key, attribute) pairs the module's methods assign from a torch/cupy call
    (`self.buf = torch.zeros(...)`): receiver evidence for print. A class's pairs come from its own
    module, so each module's evidence reads its own (a project's every body is not scanned)."""
    found: set[tuple[str, str]] = set()
    if not _uses_device_library(program, module):
        return found
    for assignment in module.summary.assignments:
        if assignment.call is None or not assignment.target.startswith("self."):
            continue
        canonical = program.canonical(module, assignment.call.func)
        if canonical.startswith(("torch.", "cupy.")):
            klass = program.enclosing_class(module, assignment.scope)
            if klass:
                found.add((klass, assignment.target[5:]))
    return found


class _Evidence:
    """Is this expression a device array? (bound from torch./cupy. calls, annotated, a buffer)"""

    def __init__(self, program: Program, module: Module):
        self.program = program
        self.module = module
        self._bound: dict[tuple[str, str], str] | None = None

    @functools.cached_property
    def buffers(self) -> set[tuple[str, str]]:
        return _device_attributes(self.program, self.module)

    @property
    def bound(self) -> dict[tuple[str, str], str]:
        """(scope, local) → canonical callee it was bound from; built on the module's first question."""
        if self._bound is None:
            self._bound = {}
            if not _uses_device_library(self.program, self.module):
                return self._bound  # nothing here can be bound from torch.* / cupy.*
            for assignment in self.module.summary.assignments:
                call = assignment.call
                if call is None or "." in assignment.target:
                    continue
                canonical = self.program.canonical(self.module, call.func)
                if call.receiver and call.receiver_kind in ("name", "attribute") and not canonical.startswith(("torch.", "cupy.", "numpy.")):
                    # y = x.sum(): a tensor's method returns a tensor (its reads return host values).
                    receiver = self._bound.get((assignment.scope, call.receiver))
                    library = _array_library(receiver) if receiver else None
                    if library in ("torch", "cupy") and call.method not in _HOST_RESULTS:
                        canonical = f"{library}.Tensor.{call.method}"
                slot = (assignment.scope, assignment.target)
                earlier = self._bound.get(slot)
                if earlier is not None and _array_library(earlier) != _array_library(canonical):
                    # `d = np.logical_or(..)` then `d = torch.Tensor(d)`: which one a line sees
                    # depends on the flow, so the name's library is unknown in this scope.
                    canonical = _CONFLICTING
                self._bound[slot] = canonical
        return self._bound

    @functools.cached_property
    def knows_tensors(self) -> bool:
        """Could any name of this module be known as a tensor? If not, its tree need not be read
        for branches and masks (nothing there could be reported)."""
        if not _uses_device_library(self.program, self.module):
            return False
        if any(_array_library(canonical) in ("torch", "cupy") for canonical in self.bound.values()):
            return True
        for function in self.module.summary.functions:
            if any(_annotation_library(self.program.canonical(self.module, annotation.strip().strip("'\""))) in ("torch", "cupy")
                   for _, annotation in function.annotations):
                return True
        module_classes = {function_key(self.module.name, klass.qualname) for klass in self.module.summary.classes}
        return any(klass in module_classes for klass, _ in self.buffers)

    @functools.cached_property
    def bound_methods(self) -> dict[tuple[str, str], str]:
        """(scope, local) → transfer method for ``read = t.item`` (a bound method called later)."""
        found: dict[tuple[str, str], str] = {}
        if not _uses_device_library(self.program, self.module):
            return found
        for assignment in self.module.summary.assignments:
            value = assignment.value
            if assignment.call is not None or value.kind != "attribute" or "." in assignment.target:
                continue
            receiver, _, method = (value.dotted or value.text).rpartition(".")
            if method in ("item", "cpu", "numpy", "tolist") and receiver and self.library(assignment.scope, receiver) != "numpy":
                found[(assignment.scope, assignment.target)] = method
        return found

    def library(self, scope: str, text: str) -> str | None:
        """'torch' | 'cupy' when ``text`` in ``scope`` is evidently a tensor/array of that library,
        'numpy' for a NumPy value (already on the host), None when unknown."""
        bound = self.bound.get((scope, text))
        if bound:
            return _array_library(bound)
        function = self.program.function_at(self.module, scope)
        if function is not None:
            for param, annotation in function.annotations:
                if param == text:
                    return _annotation_library(self.program.canonical(self.module, annotation.strip().strip("'\"")))
        if text.startswith("self.") and text.count(".") == 1:
            klass = self.program.enclosing_class(self.module, scope)
            if klass is not None and (klass, text[5:]) in self.buffers:
                return "torch"
        return None


def _transfer_kind(program: Program, module: Module, call: Call, evidence: _Evidence) -> str | None:
    method = call.method
    if call.receiver:
        if method in ("item", "cpu", "numpy", "tolist") and not call.args:
            if method in ("item", "tolist") and evidence.library(call.scope, call.receiver) == "numpy":
                return None  # a NumPy scalar or array is already on the host
            return f".{method}()"
        if method == "to" and _is_cpu_target(program, module, call):
            return '.to("cpu")'
        if method == "synchronize":
            canonical = program.canonical(module, call.func) if call.func else ""
            if canonical == "torch.cuda.synchronize":
                return canonical
            if program.resolve_call(module, call).kind == "project":
                return None  # a method of the project's own class: walked into like any call
            return f"`{call.receiver}`.synchronize()"
        if method in _SHAPE_METHODS and evidence.library(call.scope, call.receiver) in ("torch", "cupy"):
            return f".{method}() (data-dependent shape)"
        if method == "get" and not call.args and all(key in _CUPY_GET_KEYWORDS for key, _ in call.kwargs):
            receiver_lib = None
            if call.receiver_kind == "call":
                receiver_lib = "cupy" if program.canonical(module, call.receiver_call).startswith("cupy.") else None
            else:
                receiver_lib = evidence.library(call.scope, call.receiver)
            if receiver_lib == "cupy":
                return "CuPy .get()"
            return None
    canonical = program.canonical(module, call.func) if _may_name(program, module, call, _SYNC_TAILS) else ""
    if canonical in ("torch.cuda.synchronize", "cupy.cuda.runtime.deviceSynchronize", "cupy.cuda.Device.synchronize"):
        return canonical
    if canonical in ("cupy.asnumpy", "cupy.ndarray.get"):
        return canonical
    bound_method = evidence.bound_methods.get((call.scope, call.func)) if not call.receiver and not call.args else None
    if bound_method is not None:
        return f".{bound_method}() (bound as `{call.func}`)"
    if canonical in _UNBOUND_TRANSFERS and call.args:
        return f"{canonical}(tensor)"  # torch.Tensor.item(t): the method through its class
    first = call.args[0] if call.args else None
    tensor_arg = first is not None and first.kind in ("name", "attribute") and evidence.library(call.scope, first.text) in ("torch", "cupy")
    if canonical in _NUMPY_CONVERSIONS and tensor_arg:
        return f"{canonical}(tensor)"
    if canonical in _SHAPE_FUNCTIONS and tensor_arg and (canonical != "torch.where" or len(call.args) == 1):
        return f"{canonical} (data-dependent shape)"
    if call.func in ("print", "float", "int", "bool") and call.func not in program.bindings(module):
        for arg in call.args:
            if arg.kind in ("name", "attribute") and evidence.library(call.scope, arg.text):
                return f"{call.func}(tensor)"
    return None


def _imports_named(module: Module, names: frozenset[str]) -> bool:
    """Does ``module`` from-import one of ``names`` (possibly under another local name)? (Or
    import a module of one of those names under an alias: the index does not tell them apart, and
    this only decides whether the module's calls are read.)"""
    return not module.summary.imported_names.isdisjoint(names)


def _uses_device_library(program: Program, module: Module) -> bool:
    """Could some callee of ``module`` canonicalise to ``torch.*``/``cupy.*``? If not, nothing
    in it is bound from a device-array call, and its assignments need not be read."""
    if module.name.split(".")[0] in _DEVICE_LIBRARIES:
        return True
    bindings = program.bindings(module)
    return any(bindings.get(head, head).split(".")[0] in _DEVICE_LIBRARIES for head in module.summary.call_heads)


_DEVICE_LIBRARIES = frozenset({"torch", "cupy"})
# Called through the class with the tensor as the argument: torch.Tensor.item(t).
_UNBOUND_TRANSFERS = frozenset({"torch.Tensor.item", "torch.Tensor.cpu", "torch.Tensor.numpy", "torch.Tensor.tolist"})
# NumPy arrays made from a device tensor copy it to the host first (and wait for it).
_NUMPY_CONVERSIONS = frozenset({"numpy.asarray", "numpy.array", "numpy.asanyarray"})
# Results whose size depends on the data: the host waits for the device to learn the shape.
_SHAPE_FUNCTIONS = frozenset({
    "torch.nonzero", "torch.argwhere", "torch.masked_select", "torch.unique", "torch.where",
    "cupy.nonzero", "cupy.argwhere", "cupy.unique",
})
_SHAPE_METHODS = frozenset({"nonzero", "argwhere", "masked_select", "unique"})
_SYNC_TAILS = frozenset({"synchronize", "deviceSynchronize", "asnumpy", "get", "item", "cpu", "numpy", "tolist",
                         "asarray", "array", "asanyarray", *(name.rsplit(".", 1)[1] for name in _SHAPE_FUNCTIONS)})


def _may_name(program: Program, module: Module, call: Call, tails: frozenset[str]) -> bool:
    """Could ``call.func`` canonicalise to a dotted name ending in one of ``tails``?

    Only an import alias of the whole callee (``from torch.cuda import synchronize as sync``)
    changes its last part, so every other call is decided without resolving its name.
    """
    if not call.func:
        return False
    return call.method in tails or ("." not in call.func and call.func in program.bindings(module))


def _is_cpu_target(program: Program, module: Module, call: Call) -> bool:
    """``.to("cpu")``, ``.to(torch.device("cpu"))``, and ``.to(x)`` where ``x`` is a name bound
    to one of those in the same function or at module level (``DEVICE = "cpu"``)."""
    candidates = list(call.args[:1])
    device = call.kwarg("device")
    if device is not None:
        candidates.append(device)
    for arg in candidates:
        if _names_cpu(arg):
            return True
        if arg.kind == "name":
            bound = [a.value for a in module.summary.assignments if a.target == arg.text and a.scope == call.scope]
            if not bound and arg.text in module.summary.constants and arg.text not in _params(program, module, call.scope):
                bound = [module.summary.constants[arg.text]]
            # Every binding must name the CPU: `d = "cpu"` then `d = "cuda"` is not known.
            if bound and all(_names_cpu(value) for value in bound):
                return True
    return False


def _names_cpu(arg) -> bool:
    if arg.kind == "str" and str(arg.value).startswith("cpu"):
        return True
    return arg.kind == "call" and arg.dotted.endswith("device") and ("'cpu'" in arg.text or '"cpu"' in arg.text) and " if " not in arg.text


def _params(program: Program, module: Module, scope: str) -> tuple[str, ...]:
    function = program.function_at(module, scope)
    return function.params if function is not None else ()


def _excluded(settings, key: str) -> str:
    """The reason when ``key`` is a configured non-GPU function the walk does not enter."""
    for pattern, reason in settings.hot_path_exclude.items():
        if name_matches(key, [pattern]):
            return reason
    return ""


def _pinned_reason(settings, key: str, call: Call | None) -> str:
    for pattern, reason in settings.pinned_functions.items():
        if name_matches(key, [pattern]):
            return reason
    if call is not None and call.receiver:
        for pattern, reason in settings.pinned_receivers.items():
            if name_matches(call.receiver, [pattern]):
                return reason
    return ""


__all__ = ["MODULE_SCOPE", "HotPath", "TransferSite", "chain", "hot_path"]
