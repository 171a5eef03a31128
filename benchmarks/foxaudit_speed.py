"""Time foxaudit against ruff (FIX rules), vulture and pylint on one real tree, in one run.

    python3 benchmarks/foxaudit_speed.py --tree /tmp/pandas-src
    python3 benchmarks/foxaudit_speed.py --tree /tmp/pandas-src --skip vulture --skip pylint --repeat 3
    python3 benchmarks/foxaudit_speed.py --tree /tmp/pandas-src --foxaudit-root /tmp/main-export  # main's foxaudit

With ``--repeat N`` every measurement runs N times, interleaved (ruff, then foxaudit cold, warm,
one changed, ..., then the next round), and the table gives each row's median wall time and
median CPU time, with the load average seen during the rows: on a shared machine the medians of
interleaved runs are the fair comparison, and the load says how shared it was.

foxaudit is timed four ways on the same tree: cold (fresh cache directory), warm (nothing
changed), after one file changed (a comment appended to one module: its whole-program summary
stays the same) and after one summary changed (a statement added at the top of the same module,
moving every line below it); the module is restored afterwards.
"per-file" runs every per-file rule (``--no-project``); "full" adds the whole-project analyses
(issue 14's targets are on "full"), and with warm caches is also timed on five files named on the
command line (what pre-commit runs). Two last rows check one generated 5 MB module and one generated
ctypes-bindings module and a class of 3,000 placeholder methods with every rule. Peers run with their
caches off (ruff ``--no-cache``; vulture and pylint have none). Bytecode is allowed for foxaudit's modules (as in an installed copy) even where
PYTHONDONTWRITEBYTECODE is set, and ``compileall`` writes them first. pylint is slow enough that it runs on a subset (``--pylint-subset``); its time is
also extrapolated to the whole tree by file count. Each tool runs as a subprocess, so Python
start-up is included, as a user would see it.

Getting the tree: pandas 2.2.3's sdist (``pip download --no-deps --no-binary :all:
pandas==2.2.3 -d /tmp/pd``; on machines where pip cannot prepare the sdist's metadata it still
leaves the tarball under /tmp/pip-unpack-*), unpacked with
``mkdir /tmp/pandas-src && tar xzf pandas-2.2.3.tar.gz -C /tmp/pandas-src --strip-components=1``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE_SUFFIXES = (".py", ".pyi", ".cu", ".cuh")


# The one-minute load averages seen at the start of each ``timed`` call.
LOADS: list[float] = []


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall-clock seconds of one subprocess run, and its last output line (with the CPU seconds
    it and its children used: on a shared machine wall time also counts other users' load)."""
    LOADS.append(os.getloadavg()[0])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = (result.stdout.strip() or result.stderr.strip()).splitlines()
    tail = lines[-1] if lines else f"(exit {result.returncode})"
    return elapsed, f"[cpu {cpu:.2f} s] {tail}"


def cpu_of(tail: str) -> float:
    """The CPU seconds ``timed`` put at the start of an output line."""
    return float(tail.removeprefix("[cpu ").split(" ", 1)[0])


def count_files(tree: Path, subset: str | None = None) -> int:
    base = tree / subset if subset else tree
    return sum(1 for path in base.rglob("*") if path.suffix in SOURCE_SUFFIXES and path.is_file())


def one_changed_file(tree: Path) -> Path:
    """A mid-sized module to touch (deterministic: the first by name among the 200–400 line ones)."""
    candidates = sorted(p for p in tree.rglob("*.py") if 200 <= p.read_bytes().count(b"\n") <= 400)
    return candidates[0] if candidates else min(tree.rglob("*.py"))


def time_foxaudit(tree: Path, label: str, extra: list[str], root: Path = REPO) -> list[tuple[str, float, str]]:
    """``root``: the checkout whose foxaudit is timed."""
    cache = Path(tempfile.mkdtemp(prefix="foxaudit-bench-"))
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # An installed foxaudit has bytecode; a machine with PYTHONDONTWRITEBYTECODE would recompile
    # every foxaudit module on every run. Allow bytecode (__pycache__ is gitignored) and write it
    # first (compileall), so "cold" means an empty result cache, not an uncompiled install.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-m", "foxaudit", "check", "--exit-zero", "--cache-dir", str(cache), *extra]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "foxaudit")], env=env, capture_output=True, check=False)
    rows = []
    try:
        seconds, tail = timed(command, tree, env)
        rows.append((f"foxaudit {label} cold", seconds, tail))
        seconds, tail = timed(command, tree, env)
        rows.append((f"foxaudit {label} warm", seconds, tail))
        target = one_changed_file(tree)
        original = target.read_bytes()
        try:
            # A comment appended: the file's whole-program summary stays as it was.
            target.write_bytes(original + b"\n# touched by benchmarks/foxaudit_speed.py\n")
            seconds, tail = timed(command, tree, env)
            rows.append((f"foxaudit {label} one file changed", seconds, tail))
            # A statement added at the top: a new name, and every line below it moves, so the
            # summary changes and the whole-project rules run again.
            target.write_bytes(b"touched_by_benchmark = 1\n" + original)
            seconds, tail = timed(command, tree, env)
            rows.append((f"foxaudit {label} one summary changed", seconds, tail))
        finally:
            target.write_bytes(original)
        # `foxaudit check FILES` (pre-commit) on a few files of the big tree, caches warm, run
        # from the root of the project those files are in (pre-commit runs from the repository's
        # root; an unpacked wheel's `pandas/pyproject.toml` makes `pandas/` that project, whose
        # module names differ from the tree's) after one whole run there settles the cache (the
        # restored file is one changed file more, or the first run of that project).
        chosen = sorted(tree.rglob("*.py"))[:: max(1, count_files(tree) // 5)][:5]
        project = _project_of(chosen[0], tree) if chosen else tree
        project = project if all(project in path.parents for path in chosen) else tree
        timed(command, project, env)
        few = [str(path.relative_to(project)) for path in chosen]
        seconds, tail = timed([*command, *few], project, env)
        rows.append((f"foxaudit {label} on {len(few)} files", seconds, tail))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return rows


def _project_of(path: Path, tree: Path) -> Path:
    """The nearest folder above ``path``, up to ``tree``, holding a pyproject.toml or .git (the root
    foxaudit takes for a path it is given); ``tree`` when none does."""
    for folder in path.parents:
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
        if folder == tree:
            break
    return tree


# Run argv[1:], then print its peak memory and the last line of its output.
PEAK_OF = (
    "import resource, subprocess, sys\n"
    "lines = subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout.strip().splitlines()\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
    "print(f'[peak {peak:.0f} MB] ' + (lines[-1] if lines else ''))\n"
)


def time_generated_module(megabytes: int = 5, foxaudit_root: Path = REPO) -> tuple[str, float, str]:
    """Every rule on one generated module of ``megabytes`` MB (a table of literals, as code
    generators write them), no cache; the peak memory of the run is in the output column."""
    root = Path(tempfile.mkdtemp(prefix="foxaudit-generated-"))
    try:
        (root / "pyproject.toml").write_text('[project]\nname = "generated"\nversion = "0"\n')
        rows = []
        size = 0
        number = 0
        while size < megabytes * 1_000_000:
            row = f"    ({number}, 'symbol_{number}', {number * 0.25!r}, {{'bid': {number}, 'ask': {number + 1}}}),\n"
            rows.append(row)
            size += len(row)
            number += 1
        (root / "table.py").write_text('"""Generated."""\n\nTABLE = [\n' + "".join(rows) + "]\n")
        env = {**os.environ, "PYTHONPATH": str(foxaudit_root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # Through a small parent of its own: ru_maxrss of children is the largest child so far,
        # so this run's peak is read where it is the only child.
        seconds, tail = timed([sys.executable, "-c", PEAK_OF, sys.executable, "-m", "foxaudit", "check", "--exit-zero", "--no-cache"], root, env)
        return f"foxaudit full, one {megabytes} MB generated module", seconds, tail
    finally:
        shutil.rmtree(root, ignore_errors=True)


def time_generated_bindings(functions: int = 3000, foxaudit_root: Path = REPO) -> tuple[str, float, str]:
    """Every rule on two generated modules of placeholders FX902 judges one by one: ctypes
    bindings, ``functions`` declarations with a ``...`` body under a decorator (tinygrad's autogen
    modules; no mypy directive, so every check of the rule runs for every one), and one class of
    as many methods whose body is ``pass``. No cache."""
    root = Path(tempfile.mkdtemp(prefix="foxaudit-bindings-"))
    try:
        (root / "pyproject.toml").write_text('[project]\nname = "bindings"\nversion = "0"\n')
        body = "".join(f"@dll.bind(None)\ndef symbol_{n}(handle: int) -> None: ...\n\n\n" for n in range(functions))
        (root / "bindings.py").write_text('"""Generated."""\nfrom support import dll\n\n\n' + body)
        methods = "".join(f"    def method_{n}(self, value):\n        pass\n\n" for n in range(functions))
        (root / "handlers.py").write_text('"""Generated."""\n\n\nclass Handlers:\n' + methods)
        env = {**os.environ, "PYTHONPATH": str(foxaudit_root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        seconds, tail = timed([sys.executable, "-m", "foxaudit", "check", "--exit-zero", "--no-cache"], root, env)
        return f"foxaudit full, generated placeholders ({functions} declarations, {functions} methods)", seconds, tail
    finally:
        shutil.rmtree(root, ignore_errors=True)


def one_round(tree: Path, args: argparse.Namespace, files: int) -> list[tuple[str, float, float, str]]:
    """Every measurement once: (label, wall seconds, CPU seconds, last output line)."""
    rows: list[tuple[str, float, float, str]] = []

    def add(label: str, seconds: float, tail: str) -> None:
        rows.append((label, seconds, cpu_of(tail), tail))

    if "ruff" not in args.skip and shutil.which("ruff"):
        # ruff first, beside the foxaudit rows it is compared with.
        add("ruff --select ALL", *timed(["ruff", "check", "--isolated", "--no-cache", "--select", "ALL", "--exit-zero", "--statistics", "."], tree))
        add("ruff --select FIX", *timed(["ruff", "check", "--isolated", "--no-cache", "--select", "FIX", "--exit-zero", "."], tree))
    if "full" not in args.skip:
        for label, seconds, tail in time_foxaudit(tree, "full", [], args.foxaudit_root):
            add(label, seconds, tail)
    if "per-file" not in args.skip:
        for label, seconds, tail in time_foxaudit(tree, "per-file", ["--no-project"], args.foxaudit_root):
            add(label, seconds, tail)
    if "generated" not in args.skip:
        add(*time_generated_module(foxaudit_root=args.foxaudit_root))
    if "bindings" not in args.skip:
        add(*time_generated_bindings(foxaudit_root=args.foxaudit_root))
    if "vulture" not in args.skip and shutil.which("vulture"):
        add("vulture", *timed(["vulture", "."], tree))
    subset_files = count_files(tree, args.pylint_subset)
    if "pylint" not in args.skip and shutil.which("pylint") and subset_files:
        seconds, tail = timed(["pylint", "-j", "1", "--exit-zero", "--score=n", args.pylint_subset], tree)
        add(f"pylint -j1 on {args.pylint_subset} ({subset_files} files)", seconds, tail)
        rows.append((f"pylint extrapolated to {files} files", seconds * files / subset_files, cpu_of(tail) * files / subset_files, "(linear in files)"))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path("/tmp/pandas-src"), help="source tree to check")
    parser.add_argument("--pylint-subset", default="pandas/core/arrays", help="directory (relative to the tree) pylint runs on")
    parser.add_argument("--skip", action="append", default=[], choices=("full", "per-file", "ruff", "vulture", "pylint", "generated", "bindings"), help="leave a measurement out")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every measurement, interleaved; the table gives medians")
    parser.add_argument("--foxaudit-root", type=Path, default=REPO, help="checkout whose foxaudit is timed (default: this one)")
    args = parser.parse_args()
    if not (args.foxaudit_root / "foxaudit" / "__init__.py").is_file():
        print(f"no foxaudit package under --foxaudit-root (got {args.foxaudit_root} vs a checkout with foxaudit/) — hint: export one with `git archive REV | tar -x -C DIR`")
        return 2
    args.foxaudit_root = args.foxaudit_root.resolve()
    tree = args.tree.resolve()
    if not tree.is_dir():
        print(f"tree not found (got {tree} vs a directory) — hint: see this script's docstring for how to get pandas' sdist")
        return 2
    if args.repeat < 1:
        print(f"bad --repeat (got {args.repeat} vs at least 1) — hint: give the number of rounds, e.g. --repeat 3")
        return 2
    files = count_files(tree)
    print(f"tree: {tree} ({files} source files), {os.cpu_count()} cores, python {sys.version.split()[0]}")

    rounds = []
    for number in range(args.repeat):
        rounds.append(one_round(tree, args, files))
        print(f"round {number + 1}/{args.repeat} done, load average {os.getloadavg()[0]:.1f}", flush=True)
    labels = [label for label, _, _, _ in rounds[0]]
    table = []
    for index, label in enumerate(labels):
        walls = [rows[index][1] for rows in rounds]
        cpus = [rows[index][2] for rows in rounds]
        table.append((label, statistics.median(walls), statistics.median(cpus), walls, rounds[-1][index][3]))

    reference = {label: (wall, cpu) for label, wall, cpu, _, _ in table}
    width = max(len(label) for label in labels)
    print(f"\nmedians of {args.repeat} interleaved round(s); load average (1 min) {min(LOADS):.1f}–{max(LOADS):.1f}, median {statistics.median(LOADS):.1f}")
    print(f"{'measurement':<{width}}  {'wall s':>7}  {'cpu s':>7}  {'walls':<24}  last line of output")
    for label, wall, cpu, walls, tail in table:
        each = ", ".join(f"{value:.2f}" for value in walls)
        print(f"{label:<{width}}  {wall:>7.2f}  {cpu:>7.2f}  {each:<24}  {tail[:80]}")
    if "foxaudit full cold" in reference and "ruff --select ALL" in reference:
        cold, ruff = reference["foxaudit full cold"], reference["ruff --select ALL"]
        print(f"\nfoxaudit full cold ÷ ruff ALL: {cold[0] / ruff[0]:.2f} × wall, {cold[1] / ruff[1]:.2f} × CPU (target ≤ 1.5 ×)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
