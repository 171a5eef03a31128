"""Plain git hooks for repositories without the pre-commit framework.

The scripts below are the one source of truth: ``foxaudit install-hooks`` writes them into the
repository's hooks directory (``git rev-parse --git-path hooks``, so worktrees and
``core.hooksPath`` work), and this repository keeps a copy under ``hooks/`` for people who want
to read or copy them by hand (``python -m foxaudit.hooks --write`` regenerates it; a test fails
when it is stale). Both hooks use ``.foxaudit-baseline.json`` at the repository root when it
exists, so a repository with old findings fails only on new ones.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from foxaudit.files import write_text_atomic

_PREAMBLE = """\
#!/bin/sh
# {purpose}
# Installed by `foxaudit install-hooks` (source: foxaudit/hooks.py); skip once with --no-verify.
# FOXAUDIT overrides the command (default: `foxaudit`, else `python3 -m foxaudit`).
set -eu
if [ -n "${{FOXAUDIT:-}}" ]; then :
elif command -v foxaudit >/dev/null 2>&1; then FOXAUDIT=foxaudit
else FOXAUDIT="python3 -m foxaudit"
fi
cd "$(git rev-parse --show-toplevel)"
BASELINE=""
if [ -f .foxaudit-baseline.json ]; then BASELINE="--baseline .foxaudit-baseline.json"; fi
"""

HOOKS: dict[str, str] = {
    "pre-commit": _PREAMBLE.format(
        purpose="foxaudit pre-commit hook: the per-file rules on the staged Python and CUDA files "
        "(as they are in the working tree).")
    + """\
staged=$(mktemp)
trap 'rm -f "$staged"' EXIT
git diff --cached --name-only --diff-filter=ACMR -z -- '*.py' '*.pyi' '*.cu' '*.cuh' > "$staged"
if [ ! -s "$staged" ]; then exit 0; fi
# shellcheck disable=SC2086 # FOXAUDIT and BASELINE are word lists on purpose
xargs -0 $FOXAUDIT check --no-project $BASELINE -- < "$staged"
""",
    "pre-push": _PREAMBLE.format(
        purpose="foxaudit pre-push hook: every rule on the whole repository, then (where docs/audits/ "
        "exists) `foxaudit history` on the pushed commits.")
    + """\
# shellcheck disable=SC2086 # FOXAUDIT and BASELINE are word lists on purpose
$FOXAUDIT check $BASELINE
if [ ! -d docs/audits ]; then exit 0; fi
zero=0000000000000000000000000000000000000000
while read -r local_ref local_sha remote_ref remote_sha; do
    if [ "$local_sha" = "$zero" ] || [ "$remote_sha" = "$zero" ]; then
        continue  # a deleted branch, or a new one (no remote commit to compare with)
    fi
    $FOXAUDIT history "$remote_sha..$local_sha"
done
""",
}


class HookError(Exception):
    """Installing the hooks failed; the message is in the house format."""


def hooks_directory(start: Path) -> Path:
    try:
        completed = subprocess.run(["git", "rev-parse", "--git-path", "hooks"], cwd=start, capture_output=True,
                                   text=True, check=False)
    except FileNotFoundError:
        raise HookError("git is not installed (got no `git` command vs git on PATH) — hint: install git") from None
    if completed.returncode != 0:
        raise HookError(f"not a git repository (got {str(start)!r} vs a directory inside a git work tree)"
                        " — hint: run `foxaudit install-hooks` from inside the repository")
    return (start / completed.stdout.strip()).resolve()


def install_hooks(start: Path, *, force: bool = False) -> list[Path]:
    """Write every hook into the repository's hooks directory; returns the paths written.

    An existing hook that is not foxaudit's is kept unless ``force`` (then it is moved to
    ``<hook>.foxaudit-backup``)."""
    directory = hooks_directory(start)
    directory.mkdir(parents=True, exist_ok=True)
    conflicts = [name for name, text in HOOKS.items()
                 if (directory / name).exists() and not _is_ours(directory / name) and not force]
    if conflicts:
        raise HookError(f"a hook is already installed (got {', '.join(conflicts)} in {directory} vs none)"
                        " — hint: rerun with --force to replace it (it is kept as <hook>.foxaudit-backup),"
                        " or call foxaudit from it yourself")
    written = []
    for name, text in HOOKS.items():
        target = directory / name
        if target.exists() and not _is_ours(target):
            os.replace(target, directory / f"{name}.foxaudit-backup")
        write_text_atomic(target, text, mode=0o755)
        written.append(target)
    return written


def _is_ours(path: Path) -> bool:
    try:
        return "foxaudit install-hooks" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def command_install_hooks(start: Path, *, force: bool) -> int:
    try:
        written = install_hooks(start, force=force)
    except HookError as error:
        print(f"foxaudit: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"installed {path}")
    return 0


def write_copies(root: Path) -> list[Path]:
    """Refresh this repository's readable copies under ``hooks/``; returns the stale ones rewritten."""
    stale = []
    for name, text in HOOKS.items():
        target = root / "hooks" / name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(exist_ok=True)
            write_text_atomic(target, text, mode=0o755)
            stale.append(target)
        elif not target.stat().st_mode & stat.S_IXUSR:
            target.chmod(0o755)
    return stale


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        print("usage: python -m foxaudit.hooks --write (refreshes hooks/ from foxaudit/hooks.py)", file=sys.stderr)
        raise SystemExit(2)
    for path in write_copies(Path.cwd()):
        print(f"wrote {path}")
