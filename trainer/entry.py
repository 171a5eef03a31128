"""The `trainer` console script: says which extra to install instead of a traceback when the
distribution was installed without the trainer's dependencies (`pip install foxhunt` is
foxaudit alone; the trainer needs `pip install "foxhunt[trainer]"`)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

# What `import trainer.cli` needs; the rest of the `trainer` extra is imported by the commands.
REQUIRED = ("numpy", "torch", "pandas")


def missing_dependencies() -> list[str]:
    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]


def main(argv: Sequence[str] | None = None) -> int:
    missing = missing_dependencies()
    if missing:
        print(
            f"trainer: its dependencies are not installed (got no {', '.join(missing)} vs the `trainer` extra)"
            ' — hint: python3 -m pip install "foxhunt[trainer]" (in a checkout: -e ".[dev]", which includes it)',
            file=sys.stderr,
        )
        return 2
    from trainer.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
