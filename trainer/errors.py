"""The user-error base class shared by every trainer layer.

It sits below ``trainer.layout`` (it imports nothing from the trainer), so any layer may raise it
and ``trainer.cli`` can catch it in one place: a user mistake (bad data, bad config, bad
checkpoint) becomes one clean line and exit status 2, never a traceback.
"""

from __future__ import annotations


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
