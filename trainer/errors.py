"""The user-error base class shared by every trainer layer.

It sits below ``trainer.layout`` (it imports nothing from the trainer), so any layer may raise it
and ``trainer.cli`` can catch it in one place: a user mistake (bad data, bad config, bad
checkpoint) becomes one clean line and exit status 2, never a traceback.
"""

from __future__ import annotations

import errno


class UserError(Exception):
    """A mistake the user can fix, rendered as ``<what> (<got> vs <expected>) — hint: <hint>``.

    ``got``/``expected`` are optional: some failures (an empty file) have nothing to compare.
    The pieces stay available as attributes so callers and tests can check them separately.
    """

    def __init__(self, what: str, *, got: object = None, expected: object = None, hint: str = "") -> None:
        self.what = what
        self.got = got
        self.expected = expected
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        text = self.what
        if self.got is not None or self.expected is not None:
            text += f" ({self.got} vs {self.expected})"
        if self.hint:
            text += f" — hint: {self.hint}"
        return text


class LayoutMismatchError(UserError, RuntimeError):
    """Saved state (a checkpoint, an ISV) made with another ``trainer/layout.py``: retrain required.

    A user error like any other (one line, exit status 2), raised with its full message. It lives
    here, not beside the ISV, so the command line can catch it without importing torch.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


# What an OSError's errno says the user must provide, and the hint that gets them there.
_OS_ERROR_HELP = {
    errno.EACCES: ("permission to use it", "fix its permissions or choose another path"),
    errno.EPERM: ("permission to use it", "fix its permissions or choose another path"),
    errno.EROFS: ("a writable file system", "the file system is mounted read-only; choose a path on another one"),
    errno.ENOSPC: ("free disk space", "free space on that disk or choose a path on another one"),
    errno.EDQUOT: ("free disk quota", "free space within your quota or choose a path on another disk"),
    errno.ENOENT: ("an existing path", "check the path"),
    errno.ENOTDIR: ("a directory", "a file is in the way of the path; check it"),
    errno.EISDIR: ("a file", "a directory is in the way of the path; check it"),
}


def os_error_help(error: OSError) -> tuple[str, str]:
    """(what the user must provide, the hint) for an OSError, by its errno."""
    return _OS_ERROR_HELP.get(error.errno or -1, ("a usable path", "check the path, its permissions and the free space"))


def os_error_text(error: OSError) -> str:
    """One line for an OSError on a user's path: which path, what the system said, what to do."""
    path = error.filename if error.filename is not None else "a file"
    if error.filename2 is not None:
        path = f"{path} → {error.filename2}"
    expected, hint = os_error_help(error)
    return UserError(f"file system error on {path}", got=error.strerror or str(error), expected=expected, hint=hint).render()
