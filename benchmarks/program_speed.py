"""Time foxaudit's whole-program pass (every ProjectRule) on a repository: cold and warm.

    python3 benchmarks/program_speed.py [ROOT] [--repeat N]

* cold — no program cache: every file is scanned (tree-sitter), then every analysis runs;
* warm, summaries cached — a file changed somewhere: summaries come from the content-keyed
  cache, the analyses run again;
* `foxaudit check`, warm — nothing changed: the engine's project-pass cache answers (the
  whole-program pass adds only the cache lookup), compared with a run without project rules.

Each number is the minimum of N runs (the machine is shared; the minimum is the least noisy).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from foxaudit.config import load_settings
from foxaudit.engine.discovery import discover
from foxaudit.engine.project import build_project
from foxaudit.engine.resolve import resolve
from foxaudit.rules.registry import project_rules


def whole_program_pass(root: Path) -> float:
    settings = load_settings(None, root)
    resolved = resolve(settings)
    project = build_project(resolved, discover(settings))
    start = time.perf_counter()
    for rule_class in project_rules():
        rule = rule_class()
        list(rule.check_project(project, resolved.options[rule_class.code]))
    return time.perf_counter() - start


def check_time(root: Path, cache_dir: str, *extra: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "foxaudit", "check", "--cache-dir", cache_dir, *extra],
        cwd=root, capture_output=True, check=False,
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default=".", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = args.root.resolve()
    files = len(discover(load_settings(None, root)))
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as cache_dir:
        os.environ["FOXAUDIT_CACHE_DIR"] = cache_dir
        for _ in range(args.repeat):
            for name in ("program.pickle", "program-headers.json"):  # summaries and generator results
                (Path(cache_dir) / name).unlink(missing_ok=True)
            cold.append(whole_program_pass(root))
            warm.append(whole_program_pass(root))
    with tempfile.TemporaryDirectory() as cache_dir:
        check_time(root, cache_dir)
        full = min(check_time(root, cache_dir) for _ in range(args.repeat))
        without = min(check_time(root, cache_dir, "--ignore", "FX1,FX2,FX3,FX5,FX7") for _ in range(args.repeat))
        with_all = min(check_time(root, cache_dir) for _ in range(args.repeat))
    print(f"{root.name}: {files} files, {len(project_rules())} whole-program rules, min of {args.repeat}")
    print(f"whole-program pass, cold (no cache):           {min(cold):.3f} s")
    print(f"whole-program pass, summaries cached:          {min(warm):.3f} s")
    print(f"foxaudit check warm, all rules:                {min(full, with_all):.3f} s")
    print(f"foxaudit check warm, without project rules:    {without:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
