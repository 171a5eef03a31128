"""FX001 on real CUDA code: how many .cu/.cuh files the CUDA grammar cannot fully parse.

Usage: python benchmarks/cuda_parse_coverage.py REPO_DIR [REPO_DIR ...]
Prints one markdown row per repository: CUDA files, files with FX001 (parse regions that failed
after preprocessing and normalisation), and the files themselves. Run it with PYTHONPATH at two
checkouts to compare versions (docs/foxaudit-foreign.md has the table).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from foxaudit.engine import check_source


def main(roots: list[str]) -> int:
    print("| repository | CUDA files | files with FX001 | seconds |")
    print("|---|---:|---:|---:|")
    for root in map(Path, roots):
        files = sorted(path for path in root.rglob("*") if path.suffix in (".cu", ".cuh") and path.is_file()
                       and ".git" not in path.parts)
        started = time.perf_counter()
        failing = []
        for path in files:
            relative = path.relative_to(root).as_posix()
            if check_source(relative, path.read_bytes(), select=["FX001"]):
                failing.append(relative)
        elapsed = time.perf_counter() - started
        print(f"| {root.name} | {len(files)} | {len(failing)} | {elapsed:.1f} |")
        for relative in failing:
            print(f"|   `{relative}` | | | |", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
