"""Time `foxaudit check` with the whole-program rules: cold, warm and one file changed, side by side.

    python3 benchmarks/program_speed.py [TREE ...] [--repeat N] [--compare-with REV]

Each TREE (default: this repository, and pandas' source at /tmp/pandas-src when it is there)
is copied to a temporary directory, so a file can be edited there. Every foxaudit version under
test is a snapshot of its `foxaudit` package (the working tree's, and REV's from `git archive`
with --compare-with), run as `python -P -m foxaudit` with only that snapshot on the path: other
edits to the checkout during the run change nothing, and a tree that holds its own `foxaudit`
(this repository) does not shadow it. Cases, each with its own cache directory:

* cold — empty cache: every file analysed and summarised, every whole-program analysis;
* warm — nothing changed: the engine's snapshot and project-pass entries answer;
* one changed — a comment appended to one file (a different one each run): that file is
  analysed and summarised again, the whole-program analyses run again;
* the same three without the whole-program rules (`--ignore FX1,FX2,FX3,FX5,FX7`), so the
  difference is what the whole-program pass costs.

Numbers are medians of N runs (the machine is shared; the median is robust to a noisy run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT_RULES = "FX1,FX2,FX3,FX5,FX7"
IGNORED = shutil.ignore_patterns(".git", ".foxaudit_cache", "__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache")
# One file per tree that each "one changed" run edits (appending a comment changes its hash).
# On this repository it is foxaudit's CLI: an edit under trainer/ also re-runs the generated
# header's check command (a subprocess that imports torch, ~1 s), which is not the analyses' cost.
EDITED = ("pandas/core/frame.py", "foxaudit/cli.py")


def snapshot(version: str, into: Path) -> Path:
    """A copy of foxaudit at ``version`` ('working' or a git revision) under ``into``."""
    into.mkdir(parents=True)
    if version == "working":
        shutil.copytree(REPO / "foxaudit", into / "foxaudit", ignore=IGNORED)
    else:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", version, "foxaudit"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run_check(tree: Path, version: Path, cache: Path, *extra: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(version), "FOXAUDIT_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-P", "-m", "foxaudit", "check", "--cache-dir", str(cache), *extra],
        cwd=tree, env=env, capture_output=True, check=False,
    )  # fmt: skip
    return time.perf_counter() - start


def measure(tree: Path, version: Path, work: Path, repeat: int, extra: tuple[str, ...]) -> dict[str, float]:
    edited = next((tree / name for name in EDITED if (tree / name).is_file()), None)
    cold, warm, changed = [], [], []
    for number in range(repeat):
        cache = work / f"cache-{number}"
        shutil.rmtree(cache, ignore_errors=True)
        cold.append(run_check(tree, version, cache, *extra))
        warm.append(run_check(tree, version, cache, *extra))
        if edited is not None:
            original = edited.read_bytes()
            edited.write_bytes(original + f"\n# benchmark edit {number}\n".encode())
            try:
                changed.append(run_check(tree, version, cache, *extra))
            finally:
                edited.write_bytes(original)
        shutil.rmtree(cache, ignore_errors=True)
    return {"cold": statistics.median(cold), "warm": statistics.median(warm), "one changed": statistics.median(changed) if changed else float("nan")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compare-with", metavar="REV", help="also time foxaudit as of this git revision")
    args = parser.parse_args()
    trees = args.trees or [REPO] + [path for path in (Path("/tmp/pandas-src"),) if path.is_dir()]
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        versions = {"now": snapshot("working", work / "v-now")}
        if args.compare_with:
            versions[args.compare_with] = snapshot(args.compare_with, work / "v-before")
        print(f"median of {args.repeat} runs; {os.cpu_count()} CPUs; times in seconds for the whole `foxaudit check`")
        header = f"{'tree':<12} {'version':<10} {'rules':<12} {'cold':>7} {'warm':>7} {'1 changed':>10}"
        print(header)
        for source in trees:
            tree = work / "trees" / source.resolve().name
            shutil.copytree(source, tree, ignore=IGNORED)
            for label, version in versions.items():
                for rules, extra in (("all", ()), ("per-file", ("--ignore", PROJECT_RULES))):
                    times = measure(tree, version, work, args.repeat, extra)
                    print(
                        f"{source.resolve().name:<12} {label:<10} {rules:<12} "
                        f"{times['cold']:7.2f} {times['warm']:7.2f} {times['one changed']:10.2f}",
                        flush=True,
                    )
            shutil.rmtree(tree)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
