"""Option validation: a bad value raises ValueError in the house format, naming key and fix."""

from __future__ import annotations

import re

import pytest

from foxaudit.rules.deferred.deferred_work_marker import DeferredWorkMarkerOptions
from foxaudit.rules.deferred.stub_body import StubBodyOptions
from foxaudit.rules.determinism.atomic_in_kernel import (
    AllowEntry,
    AtomicInKernelOptions,
)
from foxaudit.rules.layout.banned_definition_name import BannedDefinitionNameOptions
from foxaudit.rules.named_dims.raw_index_into_named_buffer import (
    RawIndexIntoNamedBufferOptions,
)

# `<what failed> (<got> vs <expected>) — hint: <what to do>`
HOUSE_FORMAT = re.compile(r".+ \(got .+ vs .+\) — hint: .+")


@pytest.mark.parametrize(
    ("factory", "fragment"),
    [
        (lambda: AtomicInKernelOptions(allow=[{"function": "claim"}]), "needs a reason"),
        (lambda: AtomicInKernelOptions(allow=[{"function": "claim", "reason": "   "}]), "needs a reason"),
        (lambda: AtomicInKernelOptions(allow=[{"reason": "vendored"}]), "needs `function` or `path`"),
        (lambda: AtomicInKernelOptions(allow=[{"function": "k", "reason": "x", "why": "y"}]), "unknown key 'why'"),
        (lambda: AtomicInKernelOptions(allow=["claim"]), "expected a table"),
        (lambda: AtomicInKernelOptions(allow={"function": "k", "reason": "x"}), "expected a list of tables"),
        (lambda: AtomicInKernelOptions(allow=[{"function": 3, "reason": "x"}]), "expected a string"),
        (lambda: AtomicInKernelOptions(functions=[]), "the list is empty"),
        (lambda: DeferredWorkMarkerOptions(tags="TODO"), "expected a list of strings"),
        (lambda: DeferredWorkMarkerOptions(tags=["TO DO"]), "one alphanumeric word"),
        (lambda: DeferredWorkMarkerOptions(tags=[]), "the list is empty"),
        (lambda: DeferredWorkMarkerOptions(docstrings="yes"), "expected a boolean"),
        (lambda: StubBodyOptions(exempt_decorators=[""]), "non-empty string"),
        (lambda: StubBodyOptions(docstring_only=1), "expected a boolean"),
        (lambda: BannedDefinitionNameOptions(patterns=["^(migrate"]), "invalid regular expression"),
        (lambda: BannedDefinitionNameOptions(patterns=[]), "the list is empty"),
        (lambda: RawIndexIntoNamedBufferOptions(buffers=[]), "the list is empty"),
        (lambda: RawIndexIntoNamedBufferOptions(constants_from=["trainer/layout.txt"]), "C/CUDA header"),
        (lambda: RawIndexIntoNamedBufferOptions(constants_from=["/abs/layout.py"]), "repository-relative"),
        (lambda: RawIndexIntoNamedBufferOptions(prefixes={"ps": 3}), "non-empty string"),
        (lambda: RawIndexIntoNamedBufferOptions(constants={"PS_CASH": "3"}), "must be an integer"),
        (lambda: RawIndexIntoNamedBufferOptions(constants={"PS CASH": 3}), "must be an identifier"),
        (lambda: RawIndexIntoNamedBufferOptions(constants_module="trainer/layout"), "dotted Python module"),
        (lambda: RawIndexIntoNamedBufferOptions(require_layout="no"), "expected a boolean"),
    ],
)
def test_bad_option_raises_house_error(factory, fragment: str) -> None:
    with pytest.raises(ValueError) as raised:
        factory()
    message = str(raised.value)
    assert fragment in message
    assert message.startswith("[tool.foxaudit.rules.FX")
    assert HOUSE_FORMAT.fullmatch(message), message


def test_options_normalise_to_hashable_values() -> None:
    options = AtomicInKernelOptions(functions=["atomicAdd"], allow=[{"path": "third_party/**", "reason": "vendored"}])
    assert options.functions == ("atomicAdd",)
    assert options.allow == (AllowEntry(reason="vendored", path="third_party/**"),)
    assert options.allow[0].allows("anything", "third_party/cub/x.cuh")
    assert not options.allow[0].allows("anything", "cuda/x.cu")
    assert hash(DeferredWorkMarkerOptions(tags=["WIP"])) == hash(DeferredWorkMarkerOptions(tags=("WIP",)))


def test_fx801_dependencies_are_its_constant_files() -> None:
    from foxaudit.rules.named_dims.raw_index_into_named_buffer import (
        RawIndexIntoNamedBuffer,
    )

    options = RawIndexIntoNamedBufferOptions(constants_from=["pkg/layout.py", "include/layout.h"])
    assert RawIndexIntoNamedBuffer.dependencies(options) == ("pkg/layout.py", "include/layout.h")


def test_engine_reports_an_allow_entry_without_reason(tmp_path) -> None:
    """Through the real configuration loader: the error names the file, the table and the fix."""
    config_module = pytest.importorskip("foxaudit.config")
    resolve_module = pytest.importorskip("foxaudit.engine.resolve")
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.foxaudit.rules.FX401]\nallow = [{function = "claim"}]\n'
                      '[tool.foxaudit.rules.FX501]\npatterns = ["("]\n', encoding="utf-8")
    with pytest.raises(config_module.ConfigError) as raised:
        resolve_module.resolve(config_module.load_settings(config_file=config))
    text = str(raised.value)
    assert "FX401" in text and "needs a reason" in text and "reason =" in text
    assert "FX501" in text and "invalid regular expression" in text  # all errors at once
