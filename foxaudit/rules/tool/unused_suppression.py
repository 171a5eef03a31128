"""FX003: a suppression that suppresses nothing."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.rules.base import Example, Rule
from foxaudit.sources.base import Language

CODE = "FX003"


class UnusedSuppression(Rule):
    """Reports a suppressed code that no finding on the covered lines needed.

    ## What it does
    After every rule has run on a file (and, for whole-project codes, after the project
    analyses), each code named in a ``foxaudit: ignore[...]`` comment that silenced no finding
    is reported, and so is a code that no rule owns (a typo). A code that exists but is
    disabled for the file (by ``select``, ``ignore`` or ``per-file-ignores``) is not reported:
    whether it would be needed cannot be known. The engine computes this rule itself; the class
    carries its documentation and examples.

    ## Why is this bad
    A stale suppression is a loaded gun: once the code it covered is gone, the comment sits
    there ready to hide the next, unrelated finding on that line.

    ## Example
    ```python
    count = len(items)  # foxaudit: ignore[FX801] -- was ps[3] before the refactor
    ```

    ## Use instead
    ```python
    count = len(items)
    ```

    ## Options
    None.
    """

    code: ClassVar[str] = CODE
    name: ClassVar[str] = "unused-suppression"
    summary: ClassVar[str] = "A suppression comment whose code silenced nothing (or names an unknown code)"
    invariant: ClassVar[int] = 0
    languages: ClassVar[frozenset[Language]] = frozenset({"python", "cuda"})
    VALID: ClassVar[list[Example]] = [
        Example("def f(:  # foxaudit: ignore[FX001] -- parser fixture\n    pass\n"),
        Example("# foxaudit: ignore[FX001] -- parser fixture, the next line is broken on purpose\ndef f(:\n    pass\n"),
    ]
    INVALID: ClassVar[list[Example]] = [
        Example("x = 1  # foxaudit: ignore[FX001] -- nothing to suppress here\n", expect=1),
        Example("x = 1  # foxaudit: ignore[FX999] -- no such code\n", expect=1),
        Example("int x = 0;  // foxaudit: ignore[FX001] -- nothing here\n", path="k.cu", expect=1),
    ]
