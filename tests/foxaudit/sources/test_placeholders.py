"""``placeholder_body_in``: FX902 and the whole-program scanner share one answer per function."""

from __future__ import annotations

from foxaudit.program import pyscan
from foxaudit.sources import placeholders
from foxaudit.sources.base import SourceFile

TEXT = (
    "def stub():\n    pass\n\n\n"
    "def documented():\n    '''Only a docstring.'''\n\n\n"
    "def works(x):\n    return x + 1\n\n\n"
    "class C:\n    def m(self):\n        raise NotImplementedError\n"
)


def _functions(source: SourceFile) -> list:
    found, stack = [], [source.tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            found.append(node)
        stack.extend(node.children)
    return found


def test_the_memo_answers_as_placeholder_body_does() -> None:
    source = SourceFile.from_text("m.py", TEXT)
    for function in _functions(source):
        assert placeholders.placeholder_body_in(source, function) == placeholders.placeholder_body(function)
    assert len(source.placeholders) == 4
    assert placeholders.DOCSTRING in source.placeholders.values() and None in source.placeholders.values()


def test_each_function_is_judged_once_per_file(monkeypatch) -> None:
    source = SourceFile.from_text("m.py", TEXT)
    calls: list[int] = []
    original = placeholders.placeholder_body
    monkeypatch.setattr(placeholders, "placeholder_body", lambda function: calls.append(function.id) or original(function))
    first = [placeholders.placeholder_body_in(source, function) for function in _functions(source)]
    pyscan.scan_python(source, "m", False)  # the scanner asks again, of the same tree
    assert [placeholders.placeholder_body_in(source, function) for function in _functions(source)] == first
    assert sorted(calls) == sorted({*calls}) and len(calls) == 4
