"""One ``foxaudit check``: discover → hash → cache lookup → analyse misses (in parallel) →
whole-project pass → per-file-ignores/suppressions → sorted diagnostics (→ ``--fix`` rounds).

The warm path is deliberately thin: read each file's bytes, hash them, read the cache entry.
Nothing is parsed and no pool is started unless some file missed the cache; a handful of
misses are analysed in-process (starting workers would cost more than it saves).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foxaudit.config import generators_allowed
from foxaudit.diagnostics import Diagnostic
from foxaudit.engine import cache as cache_module
from foxaudit.engine.discovery import Discovered, discover
from foxaudit.engine.findings import UNUSED_SUPPRESSION, unused_suppression
from foxaudit.engine.resolve import Resolved, registered

if TYPE_CHECKING:
    from foxaudit.program.model import SourceRoots

# Below this many cache misses, analysing in-process beats starting a worker pool.
IN_PROCESS_LIMIT = 24
MAX_FIX_ROUNDS = 10
# A file stamped this close to the run's start is hashed again next run, whatever its stamp says.
RACY_NS = 2_000_000_000


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic]
    files: int
    cache_hits: int = 0
    analysed: int = 0
    fixed: int = 0
    digests: dict[str, bytes] = field(default_factory=dict, repr=False)
    absolute: dict[str, str] = field(default_factory=dict, repr=False)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def open_cache(root: Path, cache_dir: str | os.PathLike[str] | None = None, use_cache: bool = True) -> cache_module.Cache | None:
    return cache_module.Cache(cache_module.cache_directory(root, cache_dir)) if use_cache else None


def check(
    resolved: Resolved,
    paths: list[str] | None = None,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    fix: bool = False,
    project: bool = True,
) -> CheckResult:
    """Run the whole check (and ``--fix`` rounds); raises DiscoveryError for a missing path.

    With explicit ``paths`` the whole-project rules still analyse the whole project (an import
    graph of three files means nothing) but only findings in the given files are reported.
    ``project=False`` skips the whole-project rules (the per-file pre-commit hook).
    """
    whole = project and bool(resolved.project_codes or resolved.confirming_codes)
    if paths and all(os.path.abspath(path) == str(resolved.settings.root) for path in paths):
        paths = None  # `foxaudit check .` at the root is the bare check: one listing, not two
    # The configuration files the import graph reads (YAML `_target_`), listed with the sources.
    configs: list[Discovered] | None = [] if whole else None
    # Vendored code and what the project keeps from its hooks and linters: read by the graph, never reported.
    unreported: list[Discovered] = []
    files = discover(resolved.settings, paths, configs=None if paths else configs, unreported=unreported)
    store = open_cache(resolved.settings.root, cache_dir, use_cache)
    scope: list[Discovered] | None = None
    if whole:
        if paths:
            unreported = []
            scope = discover(resolved.settings, None, configs=configs, unreported=unreported)
        else:
            scope = files
        if unreported:
            scope = sorted([*scope, *unreported], key=lambda item: item.relative)
    result = _check_once(resolved, files, jobs, store, scope, configs, {item.relative for item in unreported})
    if fix:
        result = _fix_rounds(resolved, files, jobs, store, scope, result, configs, {item.relative for item in unreported})
    if store is not None:
        # Keep the cache bounded (``Store.prune_if_due``): free for a run that wrote nothing.
        store.prune_if_due()
    return result


def _fix_rounds(
    resolved: Resolved,
    files: list[Discovered],
    jobs: int | None,
    store: cache_module.Cache | None,
    scope: list[Discovered] | None,
    result: CheckResult,
    configs: list[Discovered] | None = None,
    unreported: frozenset[str] | set[str] = frozenset(),
) -> CheckResult:
    """``--fix``: apply the offered edits and check again until nothing changes."""
    from foxaudit.engine.fix import fix_file

    fixed_total = 0
    for _ in range(MAX_FIX_ROUNDS):
        by_path: dict[str, list[Diagnostic]] = {}
        for diagnostic in result.diagnostics:
            if diagnostic.edits and diagnostic.path in result.absolute:
                by_path.setdefault(diagnostic.path, []).append(diagnostic)
        fixed_round = 0
        for path, diagnostics in by_path.items():
            fixed_round += fix_file(result.absolute[path], result.digests[path], diagnostics)
        if not fixed_round:
            break
        fixed_total += fixed_round
        result = _check_once(resolved, files, jobs, store, scope, configs, unreported)
    result.fixed = fixed_total
    return result


def _check_once(
    resolved: Resolved,
    files: list[Discovered],
    jobs: int | None,
    store: cache_module.Cache | None,
    scope: list[Discovered] | None,
    configs: list[Discovered] | None = None,
    unreported: frozenset[str] | set[str] = frozenset(),
) -> CheckResult:
    """One check of ``files``; the whole-project pass reads ``scope`` (the project: ``files`` and
    the ``unreported`` paths beside them when every file is checked) and reports in ``files``."""
    results: dict[str, Any] = {}
    keys: dict[str, str] = {}
    digests: dict[str, bytes] = {}
    misses: list[tuple[str, str, str]] = []
    # Whole-program summaries made by the per-file pass from its own parse (path → Prepared).
    prepared: dict[str, Any] = {}
    unreadable: list[Diagnostic] = []
    # Every file's bytes as hashed, for the project pass (which would otherwise read them again).
    contents: dict[str, bytes] = {}
    hits = 0
    # One snapshot entry per file set answers a run where nothing changed with a single read;
    # otherwise it still answers for every file whose key it recorded, and only the others' own
    # entries are looked up (one edit: one entry read, not one per file).
    snapshot_name = _snapshot_name(resolved, files)
    snapshot = store.get(snapshot_name) if store is not None else None
    known, recorded, stats = _snapshot_entries(snapshot)
    started = time.time_ns()
    seen: dict[str, list[Any]] = {}
    for item in files:
        try:
            status = os.stat(item.absolute)
            stamp = [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]
            # Unchanged since the snapshot hashed it (a write always moves ctime): its digest is
            # the one recorded, and its bytes need not be read.
            digest = _recorded_digest(stats.get(item.relative), stamp)
            # Its key too: the snapshot's name covers everything else a key hashes.
            key = recorded.get(item.relative) if digest is not None else None
            if digest is None:
                with open(item.absolute, "rb") as handle:
                    data = handle.read()
                digest = hashlib.sha256(data).digest()
                if scope is not None:
                    contents[item.relative] = data
        except OSError as error:
            if "FX001" in resolved.codes_for(item.relative):
                from foxaudit.rules.tool.parse_error import (
                    unreadable as unreadable_file,
                )

                unreadable.append(unreadable_file(item.relative, item.absolute, error))
            continue
        if status.st_mtime_ns < started - RACY_NS and status.st_ctime_ns < started - RACY_NS:
            # Only stamps older than the timestamp granularity are trusted next run: a file
            # written twice within one tick could keep its mtime (git's "racy clean" rule).
            seen[item.relative] = [*stamp, digest.hex()]
        digests[item.relative] = digest
        keys[item.relative] = key if type(key) is str else cache_module.file_key(
            resolved.fingerprint, item.relative, resolved.codes_for(item.relative), digest
        )
    snapshot_key = _snapshot_state(keys)
    if snapshot is not None and snapshot.get("state") == snapshot_key and set(known) == set(keys):
        results = known
        hits = len(results)
    else:
        for item in files:
            key = keys.get(item.relative)
            if key is None:
                continue
            entry = known.get(item.relative) if recorded.get(item.relative) == key else None
            if entry is None and store is not None:
                entry = store.get(key)
            if entry is not None:
                results[item.relative] = entry
                hits += 1
            else:
                misses.append((item.absolute, item.relative, key))
        summarise = scope is not None
        # (The few files of an edit are analysed in-process, with their bodies: no prediction.)
        bodies = summarise and (len(misses) < IN_PROCESS_LIMIT or _bodies_read_widely(resolved, misses, contents))
        # The workers hand their entries back and this process writes them, in one pack for a
        # cold run's many (``Store.batch``): one file created, not one result and one summary
        # per source file.
        with store.batch() if store is not None else contextlib.nullcontext():
            for relative, key, entry, summary in _analyse(resolved, misses, jobs, store, summarise=summarise, bodies=bodies):
                results[relative] = entry
                if store is not None and key is not None:
                    store.put(key, entry)
                if summary is not None:
                    prepared[relative] = _stored_summary(summary, store) if store is not None else summary
        if store is not None:
            store.put(snapshot_name, {"state": snapshot_key, "files": results, "keys": keys, "stats": seen})

    diagnostics: list[Diagnostic] = list(unreadable)
    deferred: dict[str, list[list[Any]]] = {}
    pending: list[tuple[Diagnostic, tuple[str, ...]]] = []
    for relative, entry in results.items():
        diagnostics.extend(cache_module.decode_diagnostics(relative, entry["d"]))
        if entry.get("s"):
            deferred[relative] = entry["s"]
        if entry.get("p"):
            pending.extend(cache_module.decode_pending(relative, entry["p"]))
    if scope is None:
        # No whole-project pass: what the file itself says is the answer.
        diagnostics.extend(diagnostic for diagnostic, _ in pending)
    else:
        reported = {item.relative for item in files}
        # `foxaudit check .` names every file: it is the whole project, and the findings placed on
        # the configuration (pyproject.toml, which is no source file) belong to it as they do to
        # a bare `foxaudit check`.
        whole = scope is files or reported | unreported == {item.relative for item in scope}
        from foxaudit.engine.project import read_config_targets, read_cython_imports

        found = _project_pass(
            resolved, scope, _scope_keys(resolved, scope, keys, contents, store), deferred, store, prepared, contents, pending,
            read_config_targets(configs or [], store), read_cython_imports(configs or []),
        )
        # One FX001 per file: the per-file verdict (CPython's syntax error) says it best.
        unparsable = {d.path for d in diagnostics if d.code == "FX001"}
        diagnostics.extend(
            d for d in found if (d.path in reported or (whole and d.path not in unreported))
            and not (d.code == "FX001" and d.path in unparsable)
        )
    diagnostics.sort()
    return CheckResult(
        diagnostics=diagnostics,
        files=len(files),
        cache_hits=hits,
        analysed=len(misses),
        digests=digests,
        absolute={item.relative: item.absolute for item in files},
    )


def _snapshot_entries(snapshot: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(path → cached entry, path → the key it was cached under, path → [size, mtime, ctime,
    inode, digest] when hashed) of a snapshot; empty for a missing or malformed one (the cache is
    data anyone may have written: checked, not trusted)."""
    if snapshot is None:
        return {}, {}, {}
    files, keys, stats = snapshot.get("files"), snapshot.get("keys", {}), snapshot.get("stats", {})
    if not isinstance(files, dict) or not isinstance(keys, dict) or not isinstance(stats, dict):
        return {}, {}, {}
    if not all(type(entry) is dict and type(entry.get("d")) is list for entry in files.values()):
        return {}, {}, {}
    return files, keys, stats


def _recorded_digest(memo: Any, stamp: list[int]) -> bytes | None:
    """The content digest a snapshot recorded for a file with exactly this stat ``stamp``."""
    if type(memo) is not list or len(memo) != 5 or memo[:4] != stamp or type(memo[4]) is not str:
        return None
    try:
        digest = bytes.fromhex(memo[4])
    except ValueError:
        return None
    return digest if len(digest) == hashlib.sha256().digest_size else None


def _snapshot_name(resolved: Resolved, files: list[Discovered]) -> str:
    """The snapshot's entry name: the file set's (and the run fingerprint's, and the enabled
    codes and per-file ignores that decide each file's codes: with the content digest, all a
    file key hashes), not their contents, so one snapshot per project and scope is overwritten
    as files change instead of one more per edit."""
    names = hashlib.sha256(resolved.fingerprint.encode())
    codes = [sorted(resolved.enabled), [[list(globs), sorted(ignored)] for globs, ignored in resolved.per_file_ignores]]
    names.update(json.dumps(codes).encode() + b"\0")
    for relative in sorted(item.relative for item in files):
        names.update(relative.encode("utf-8", errors="surrogateescape") + b"\0")
    return "snapshot-" + names.hexdigest()


def _snapshot_state(keys: dict[str, str]) -> str:
    """What the snapshot answers for: every file's key."""
    state = hashlib.sha256()
    for relative in sorted(keys):
        state.update(keys[relative].encode())
    return state.hexdigest()


def _bodies_read_widely(resolved: Resolved, misses: list[tuple[str, str, str]], contents: dict[str, bytes]) -> bool:
    """Will the project pass read most summaries' bodies (``program.analysis.bodies_read_widely``)?
    Then the per-file pass makes them with the index; else it makes indexes alone, and the few
    bodies read are scanned then. A missed file whose bytes this run did not read counts as
    one that may need them."""
    from foxaudit.program.analysis import bodies_read_widely
    from foxaudit.program.settings import ProgramSettings

    if any(relative not in contents for _, relative, _ in misses):
        return True
    settings = ProgramSettings.from_table(resolved.program)
    return bodies_read_widely(settings, (contents[relative] for _, relative, _ in misses if relative.endswith(".py")))


def _stored_summary(prepared: Any, store: cache_module.Cache) -> Any:
    """``prepared`` (a summary the per-file pass made), cached (``model.store_prepared``)."""
    from foxaudit.program.model import store_prepared

    return store_prepared(prepared, store)


def _analyse(
    resolved: Resolved,
    misses: list[tuple[str, str, str]],
    jobs: int | None,
    store: cache_module.Cache | None,
    *,
    summarise: bool = False,
    bodies: bool = True,
) -> Iterator[tuple[str, str | None, dict[str, Any], Any]]:
    """(path, the key to cache its entry under (None: not to be cached), cache entry, Prepared
    summary or None) of each missed file; nothing is written here (the caller caches); with ``summarise``
    each file's whole-program summary is made from the tree its rules walked (one parse), with
    its body when ``bodies`` (else the index alone: ``pyscan.scan_python(body=False)``). The
    few files analysed in-process get their bodies: an edited file's body is what the project
    pass compares when an analysis read it (``_reused_findings``)."""
    if not misses:
        return
    workers = min(jobs or default_jobs(), len(misses))
    caching = store is not None
    if workers <= 1 or len(misses) < IN_PROCESS_LIMIT:
        _init_worker(resolved, caching, summarise, bodies or len(misses) < IN_PROCESS_LIMIT)
        for task in misses:
            yield _analyse_one(task)
        return
    from concurrent.futures import ProcessPoolExecutor

    # Load typed options once here, so workers receive them instead of each re-resolving.
    resolved.options  # noqa: B018
    resolved.program  # noqa: B018
    # Big files first: the pool's tail is then made of small tasks and both cores finish together.
    ordered = sorted(misses, key=lambda task: _size(task[0]), reverse=True)
    chunk = max(1, min(16, len(ordered) // (workers * 16)))
    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(resolved, caching, summarise, bodies)) as pool:
        yield from pool.map(_analyse_in_worker, ordered, chunksize=chunk)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


_WORKER: dict[str, Any] = {}


def _init_worker(resolved: Resolved, caching: bool, summarise: bool = False, bodies: bool = True) -> None:
    from foxaudit.engine.analyze import Analyzer

    if _WORKER.get("resolved") is not resolved:
        _WORKER["resolved"] = resolved
        _WORKER["analyzer"] = Analyzer(resolved)
    _WORKER["caching"] = caching
    _WORKER["source_roots"] = _source_roots(resolved) if summarise else None
    _WORKER["bodies"] = bodies
    if summarise and "scan_query" not in _WORKER:
        from foxaudit.program.pyscan import SCAN_INDEX_QUERY, SCAN_QUERY

        _WORKER["scan_query"] = SCAN_QUERY
        _WORKER["scan_index_query"] = SCAN_INDEX_QUERY


def _summarised_module(relative: str, source_roots: SourceRoots) -> bool:
    """Will the whole-program pass summarise this file as a Python module?"""
    from foxaudit.program.model import module_name_for

    return module_name_for(relative, source_roots) is not None


def _source_roots(resolved: Resolved) -> SourceRoots:
    from foxaudit.program.model import SourceRoots
    from foxaudit.program.settings import ProgramSettings

    return SourceRoots.at(resolved.settings.root, ProgramSettings.from_table(resolved.program).source_roots)


def _analyse_one(task: tuple[str, str, str]) -> tuple[str, str | None, dict[str, Any], Any]:
    absolute, relative, _ = task
    analyzer = _WORKER["analyzer"]
    try:
        with open(absolute, "rb") as handle:
            data = handle.read()
    except OSError as error:
        from foxaudit.rules.tool.parse_error import unreadable

        return relative, None, {"d": cache_module.encode_diagnostics([unreadable(relative, absolute, error)])}, None
    source_roots = _WORKER["source_roots"]
    # A Python module that will be summarised is walked once: the scanner's query runs in the
    # rules' walk and the scanner reads its captures — an index alone's (fewer) where the summary
    # will be one. (Asked of the bytes as read; the summary's own question below is asked of the
    # bytes as decoded, and when only that one says "whole" the scanner walks the tree itself.)
    also = ""
    if source_roots is not None and _summarised_module(relative, source_roots):
        whole = _WORKER["bodies"] or _may_exceed_cpython_limits(data.removeprefix(_UTF8_BOM))
        also = _WORKER["scan_query"] if whole else _WORKER["scan_index_query"]
    outcome = analyzer.analyze(relative, data, also=also)
    pending = {id(diagnostic) for diagnostic, _ in outcome.pending}
    entry: dict[str, Any] = {"d": cache_module.encode_diagnostics([d for d in outcome.diagnostics if id(d) not in pending])}
    if outcome.deferred:
        entry["s"] = outcome.deferred
    if outcome.pending:
        entry["p"] = cache_module.encode_pending(outcome.pending)
    key = None
    if _WORKER["caching"]:
        # Key what was actually analysed: the file may have changed since the main process hashed it.
        resolved = _WORKER["resolved"]
        key = cache_module.file_key(resolved.fingerprint, relative, resolved.codes_for(relative), hashlib.sha256(data).digest())
    if source_roots is None or outcome.source is None:
        return relative, key, entry, None
    from foxaudit.program.model import prepare_summary
    from foxaudit.rules.tool.parse_error import may_exceed_cpython_limits

    # A file that may nest past CPython's limits is summarised whole: its full scan may run out
    # of recursion where an index alone would not, and the two must agree on which files fail.
    body = _WORKER["bodies"] or may_exceed_cpython_limits(outcome.source.data)
    captures = outcome.captures if not body or also == _WORKER["scan_query"] else None
    summary = prepare_summary(outcome.source, source_roots, None, captures, body=body)
    if summary is not None and summary.error:
        # A scanner that raises is a foxaudit bug the program build reports once; summarising
        # more files in this process would only repeat it.
        _WORKER["source_roots"] = None
    return relative, key, entry, summary


# analyze.UTF8_BOM, which the analyser strips before it decodes (not imported here: the warm
# path loads no parser).
_UTF8_BOM = b"\xef\xbb\xbf"


def _may_exceed_cpython_limits(data: bytes) -> bool:
    from foxaudit.rules.tool.parse_error import may_exceed_cpython_limits

    return may_exceed_cpython_limits(data)


def _analyse_in_worker(task: tuple[str, str, str]) -> tuple[str, str | None, dict[str, Any], Any]:
    relative, key, entry, summary = _analyse_one(task)
    return relative, key, entry, summary.without_summary() if summary is not None else None


def _scope_keys(
    resolved: Resolved,
    scope: list[Discovered],
    keys: dict[str, str],
    contents: dict[str, bytes],
    store: cache_module.Cache | None = None,
) -> dict[str, str]:
    """Content keys of every file of the project (those checked this run are already known);
    the bytes read on the way are added to ``contents``. A file the whole project's snapshot
    recorded with its current stat stamp is not read (``foxaudit check FILES`` in a big tree)."""
    if all(item.relative in keys for item in scope):
        return keys
    complete = dict(keys)
    whole = store.get(_snapshot_name(resolved, scope)) if store is not None else None
    stats = _snapshot_entries(whole)[2]
    for item in scope:
        if item.relative in complete:
            continue
        try:
            status = os.stat(item.absolute)
            digest = _recorded_digest(
                stats.get(item.relative), [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]
            )
            if digest is None:
                with open(item.absolute, "rb") as handle:
                    data = handle.read()
                contents[item.relative] = data
                digest = hashlib.sha256(data).digest()
        except OSError:
            continue
        complete[item.relative] = cache_module.file_key(resolved.fingerprint, item.relative, resolved.codes_for(item.relative), digest)
    return complete


def _project_pass(
    resolved: Resolved,
    files: list[Discovered],
    keys: dict[str, str],
    deferred: dict[str, list[list[Any]]],
    store: cache_module.Cache | None,
    prepared: dict[str, Any] | None = None,
    contents: dict[str, bytes] | None = None,
    pending: list[tuple[Diagnostic, tuple[str, ...]]] | None = None,
    config_targets: dict[str, tuple[tuple[int, str], ...]] | None = None,
    cython_imports: dict[str, str] | None = None,
) -> list[Diagnostic]:
    """Run whole-project rules and confirm the per-file pass's ``pending`` findings (cached on
    every file key + config + what the YAML files name and the Cython modules import), then filter
    their findings.

    Beside each project entry, an inputs entry records what its findings were made from: every
    file's content key with the digest of its summary, and the files whose content the rules
    read beyond their summaries. On a miss, the latest state of this configuration and file set
    (a pointer entry names it) still answers when every file that changed since has the summary
    it had then, none of them was read so and none has a finding pending confirmation: the rules
    would find what they found then.
    """
    digest = hashlib.sha256(resolved.fingerprint.encode() + resolved.project_fingerprint.encode())
    digest.update(",".join(sorted(resolved.project_codes)).encode())
    # FX503 runs the repository's generator commands only with the user's opt-in; the two verdicts
    # (the generator's, the static check's) must not answer for each other.
    generators = generators_allowed()
    digest.update(b"generators-run" if generators else b"generators-not-run")
    # What the YAML files name (`_target_`), before the pointer's name: an edit of one is a new
    # configuration, whose findings no earlier state's may answer for.
    config_targets = config_targets or {}
    digest.update(json.dumps(sorted(config_targets.items())).encode())
    # So are the Cython modules' run-time imports (they reach Python modules; no source file's key covers them).
    cython_imports = cython_imports or {}
    digest.update(json.dumps(sorted(cython_imports.items())).encode())
    # And which files are read but not reported (vendored, kept from the project's hooks and linters).
    digest.update(json.dumps([item.relative for item in files if not item.owned]).encode())
    # A generator reads its header from disk, past the content log: no reuse when they run.
    latest_name = _latest_name(digest, keys) if store is not None and not generators else None
    for relative in sorted(keys):
        digest.update(relative.encode("utf-8", errors="surrogateescape") + b"\0" + keys[relative].encode())
    project_key = "project-" + digest.hexdigest()
    entry = store.get(project_key) if store is not None else None
    if entry is not None:
        raw = cache_module.decode_project(entry["d"])
        if latest_name is not None and entry.get("inputs") is True:
            _point_latest(store, latest_name, project_key)  # type: ignore[arg-type]
    else:
        raw = None
        inputs: dict[str, Any] | None = None
        recorded = _latest_inputs(store, latest_name) if latest_name is not None else None
        changed_pending = recorded is not None and any(
            recorded[0].get(diagnostic.path, [None])[0] != keys.get(diagnostic.path) for diagnostic, _facts in pending or []
        )
        if recorded is not None and not changed_pending:
            raw = _reused_findings(resolved, files, keys, recorded, store, prepared or {}, contents or {})
            if raw is not None:
                inputs = {"files": {relative: [keys[relative], pair[1]] for relative, pair in recorded[0].items()}, "reads": recorded[1]}
        if raw is None:
            raw, inputs = _run_project_rules(
                resolved, files, store, prepared or {}, contents or {}, pending or [], keys=keys if latest_name is not None else None,
                previous=recorded[0] if recorded is not None else {}, config_targets=config_targets,
                cython_imports=cython_imports,
            )
        if store is not None:
            encoded = cache_module.encode_project(raw)
            recording = inputs is not None and latest_name is not None
            if recording:
                # Apart from the findings: a warm run reads those alone.
                store.put(_inputs_name(project_key), {**inputs, "d": encoded})  # type: ignore[dict-item]
            store.put(project_key, {"d": encoded, "inputs": recording})
            if recording:
                store.put(latest_name, {"project": project_key})  # type: ignore[arg-type]

    kept: list[Diagnostic] = []
    used: set[tuple[str, int]] = set()
    index: dict[tuple[str, int, str], list[int]] = {}
    for path, suppressions in deferred.items():
        for number, suppression in enumerate(suppressions):
            for line in suppression[5]:
                index.setdefault((path, line, suppression[4]), []).append(number)
    for diagnostic in raw:
        if diagnostic.code not in resolved.codes_for(diagnostic.path) and diagnostic.code != "FX001":
            continue
        covering = index.get((diagnostic.path, diagnostic.line, diagnostic.code))
        if covering:
            used.update((diagnostic.path, number) for number in covering)
            continue
        kept.append(diagnostic)
    for path, suppressions in deferred.items():
        if UNUSED_SUPPRESSION not in resolved.codes_for(path):
            continue
        for number, suppression in enumerate(suppressions):
            if (path, number) not in used:
                kept.append(unused_suppression(path, tuple(suppression[:4]), suppression[4], "suppresses nothing"))
    return kept


def _latest_name(base: Any, keys: dict[str, str]) -> str:
    """The pointer entry's name: the configuration's and the file set's, not the files' content."""
    names = base.copy()
    names.update(b"latest")
    for relative in sorted(keys):
        names.update(relative.encode("utf-8", errors="surrogateescape") + b"\0")
    return "project-latest-" + names.hexdigest()


def _point_latest(store: cache_module.Cache, latest_name: str, project_key: str) -> None:
    """Name ``project_key`` the latest state (a tree edited back to an earlier state is compared
    with that state next time, not with the one it left)."""
    pointer = store.get(latest_name)
    if pointer is None or pointer.get("project") != project_key:
        store.put(latest_name, {"project": project_key})


def _latest_inputs(store: cache_module.Cache | None, latest_name: str) -> tuple[dict[str, list[str]], list[str], list[Any]] | None:
    pointer = store.get(latest_name) if store is not None else None
    named = pointer.get("project") if pointer is not None else None
    if type(named) is not str or not named.startswith("project-"):
        return None
    return _recorded_inputs(store.get(_inputs_name(named)))  # type: ignore[union-attr]


def _inputs_name(project_key: str) -> str:
    """Where the inputs of the findings cached under ``project_key`` are recorded."""
    return "project-inputs-" + project_key.removeprefix("project-")


def _recorded_inputs(entry: dict[str, Any] | None) -> tuple[dict[str, list[str]], list[str], list[Any]] | None:
    """(path → [content key, summary digest], paths read, encoded findings) of an inputs entry;
    None for a missing or malformed one (the cache is data anyone may have written: checked,
    not trusted)."""
    if entry is None:
        return None
    files, reads, rows = entry.get("files"), entry.get("reads"), entry.get("d")
    if type(files) is not dict or type(reads) is not list or type(rows) is not list:
        return None
    for pair in files.values():
        if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str or type(pair[1]) is not str:
            return None
    if not all(type(path) is str for path in reads):
        return None
    return files, reads, rows


def _reused_findings(
    resolved: Resolved,
    files: list[Discovered],
    keys: dict[str, str],
    recorded: tuple[dict[str, list[str]], list[str], list[Any]],
    store: cache_module.Cache | None,
    prepared: dict[str, Any],
    contents: dict[str, bytes],
) -> list[Diagnostic] | None:
    """The recorded findings, when they still hold (see ``_project_pass``); else None."""
    from foxaudit.engine.project import project_source
    from foxaudit.program.model import body_digest, summary_digest

    summaries, reads, rows = recorded
    if summaries.keys() != keys.keys():
        return None
    changed = [relative for relative, key in keys.items() if summaries[relative][0] != key]
    if not set(changed).isdisjoint(reads):
        return None
    by_path = {item.relative: item for item in files}
    roots = _source_roots(resolved)
    for relative in changed:
        source = project_source(resolved, by_path[relative], contents)
        index, _, body = summaries[relative][1].partition(BODY_READ)
        current = ABSENT if source is None else summary_digest(source, roots, prepared.get(relative), store)
        if current is None or current != index:
            return None
        # The body too, where an analysis read it (else no analysis would read it now either).
        if body and body != body_digest(source, roots, prepared.get(relative), store):  # type: ignore[arg-type]
            return None
    try:
        return cache_module.decode_project(rows)
    except (TypeError, ValueError, IndexError):
        return None


# The summary digest of a file the project model leaves out (binary, not decodable).
ABSENT = ""
# Between a file's index digest and its body's, in the inputs' record of a file whose summary
# body an analysis read (a body no analysis read is not what the findings were made from).
BODY_READ = "+"


def _run_project_rules(
    resolved: Resolved,
    files: list[Discovered],
    store: cache_module.Cache | None,
    prepared: dict[str, Any],
    contents: dict[str, bytes],
    pending: list[tuple[Diagnostic, tuple[str, ...]]],
    *,
    keys: dict[str, str] | None = None,
    previous: dict[str, list[str]] | None = None,
    config_targets: dict[str, tuple[tuple[int, str], ...]] | None = None,
    cython_imports: dict[str, str] | None = None,
) -> tuple[list[Diagnostic], dict[str, Any] | None]:
    """The rules' findings, and (when ``keys`` are given) the inputs they were found from: each
    file's content key and summary digest (``previous`` answers for files whose key it has) and
    the files whose content was read. No inputs when a rule failed or the program was not built."""
    from foxaudit.engine.project import build_project
    from foxaudit.program.project import ContentReads
    from foxaudit.rules.tool.parse_error import internal_failure

    project = build_project(
        resolved, files, store, prepared, contents, reads=ContentReads() if keys is not None else None,
        config_targets=config_targets if config_targets is not None else {},
        cython_imports=cython_imports if cython_imports is not None else {},
    )
    table = registered()
    found: list[Diagnostic] = []
    config_name = _config_name(resolved)
    # One finding per failure: rules sharing a broken analysis re-raise the same exception.
    failures: dict[int, tuple[BaseException, list[str]]] = {}
    for code in sorted(resolved.project_codes):
        rule_class = table[code].rule
        try:
            rule = rule_class()  # type: ignore[call-arg]
            found.extend(rule.check_project(project, resolved.options[code]))  # type: ignore[union-attr]
        except Exception as error:  # noqa: BLE001 — a broken analysis is reported, the others still run
            failures.setdefault(id(error), (error, []))[1].append(f"{code} ({rule_class.name})")
    confirming: dict[str, Any] = {}
    for diagnostic, facts in pending:
        rule_class = table[diagnostic.code].rule
        try:
            rule = confirming.get(diagnostic.code) or confirming.setdefault(diagnostic.code, rule_class())
            if rule.confirm(project, diagnostic.path, facts):  # type: ignore[union-attr]
                found.append(diagnostic)
        except Exception as error:  # noqa: BLE001 — the finding stands, the failure is reported once
            found.append(diagnostic)
            failures.setdefault(id(error), (error, []))[1].append(f"{diagnostic.code} ({rule_class.name}) confirming a finding")
    for error, rules in failures.values():
        what = f"whole-project rule{'s' if len(rules) > 1 else ''} {', '.join(rules)}"
        found.append(internal_failure(config_name, what, error))
    program = project.memo.get("program")
    for path, failure in sorted(getattr(program, "scan_failures", {}).items()):
        found.append(
            Diagnostic(
                path=path, line=1, column=1, end_line=1, end_column=1, code="FX001",
                message=f"file left out of the whole-project rules ({failure} vs a nesting depth the summariser can walk)",
                hint="split the deeply nested expression; until then no whole-project rule sees this file",
            )
        )  # fmt: skip
    inputs = None
    if keys is not None and program is not None and not failures and project.reads is not None:
        inputs = _inputs_of(project, program, keys, previous or {}, store, prepared)
    # The program model refers back to the project (a cycle): break it so the summaries are freed
    # by reference counting, without a collection.
    project.memo.clear()
    return found, inputs


def _inputs_of(
    project: Any,
    program: Any,
    keys: dict[str, str],
    previous: dict[str, list[str]],
    store: cache_module.Cache | None,
    prepared: dict[str, Any],
) -> dict[str, Any] | None:
    """What ``_reused_findings`` compares against next run; None when a summary is not at hand."""
    from foxaudit.program.model import summary_digest

    reads = sorted(project.reads.paths)
    roots = program.source_roots
    summaries: dict[str, list[str]] = {}
    with project.summarising():
        for relative, key in keys.items():
            module = program.by_path.get(relative)
            read = module.summary.body_digest if module is not None else ""
            known = previous.get(relative)
            if known is not None and known[0] == key:
                # The same bytes: the same index and body (recorded with the body's digest once
                # an analysis read it, this run or an earlier one).
                digest = known[1] if BODY_READ in known[1] or not read else f"{known[1]}{BODY_READ}{read}"
                summaries[relative] = [key, digest]
                continue
            source = program.sources.get(relative)
            digest = ABSENT if source is None else summary_digest(source, roots, prepared.get(relative), store)
            if digest is None:
                return None
            summaries[relative] = [key, f"{digest}{BODY_READ}{read}" if read else digest]
    return {"files": summaries, "reads": reads}


def _config_name(resolved: Resolved) -> str:
    config = resolved.settings.config_path
    if config is None:
        return "pyproject.toml"
    try:
        return Path(config).relative_to(resolved.settings.root).as_posix()
    except ValueError:
        return Path(config).as_posix()
