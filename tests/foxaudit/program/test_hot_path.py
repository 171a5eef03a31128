"""Invariant 3 on the `hotpath` fixture: roots, call graph, transfer sites and their classes."""

from __future__ import annotations

import pytest
from program_support import findings, line_of

from foxaudit.program.hotpath import COLD_PATH, OK_PINNED, VIOLATION


@pytest.fixture
def root(materialize):
    return materialize("hotpath")


@pytest.fixture
def hot(root, analyze):
    return analyze(root)


def _site(hot, path: str, line: int):
    found = [s for s in hot.hot.sites if s.site.path == path and s.site.span.line == line]
    assert found, f"no transfer site at {path}:{line}; sites: {[(s.site.where, s.kind) for s in hot.hot.sites]}"
    return found[0]


def test_roots_from_aliased_decorator_configured_name_and_captures(hot) -> None:
    labels = {root.key: root.label for root in hot.hot.roots}
    assert "hp.step:Step.run" in labels  # `from hp.markers import hot_path as hot`; `@hot`
    assert "hp.loop:Loop.configured_root" in labels
    assert "hp.graphs:captured_step" in labels  # passed to a helper that captures its argument
    assert any("capturing" in region for region in hot.hot.captured_regions.values())  # helper context manager


def test_violations_carry_the_call_chain(root, hot) -> None:
    item = _site(hot, "hp/util.py", line_of(root, "hp/util.py", "x.item()"))
    assert item.status == VIOLATION and item.kind == ".item()"
    assert item.chain == ("hp.step:Step.run", "hp.util:item_helper")
    assert "hp.util:helper" in hot.hot.reached  # through the aliased import
    twin = _site(hot, "hp/util.py", line_of(root, "hp/util.py", "x.numpy()"))
    assert twin.status == COLD_PATH and "CPU twin" in twin.reason
    sync = _site(hot, "hp/util.py", line_of(root, "hp/util.py", "synchronize"))
    assert sync.status == VIOLATION and sync.chain == ("hp.step:Step.run", "hp.util:sync_helper")
    cpu = _site(hot, "hp/step.py", line_of(root, "hp/step.py", "x.cpu()"))
    assert cpu.status == VIOLATION and cpu.chain == ("hp.step:Step.run", "hp.step:Step.inner")
    configured = _site(hot, "hp/loop.py", line_of(root, "hp/loop.py", "float(value)"))
    assert configured.status == VIOLATION and configured.kind == "float(tensor)"


def test_capture_contexts_entered_in_helpers(root, hot) -> None:
    numpy = _site(hot, "hp/graphs.py", line_of(root, "hp/graphs.py", "x.numpy()"))
    assert numpy.status == VIOLATION  # body() called inside `with capturing(graph):`
    tolist = _site(hot, "hp/graphs.py", line_of(root, "hp/graphs.py", "counter.tolist()"))
    assert tolist.status == VIOLATION  # captured_step given to capture_callable
    inside = _site(hot, "hp/graphs.py", line_of(root, "hp/graphs.py", "inside = array.get()"))
    assert inside.status == VIOLATION and inside.kind == "CuPy .get()"
    after = _site(hot, "hp/graphs.py", line_of(root, "hp/graphs.py", "after = array.get()"))
    assert after.status == COLD_PATH
    manual = _site(hot, "hp/graphs.py", line_of(root, "hp/graphs.py", "value = loss.item()"))
    assert manual.status == VIOLATION  # CUDAGraph.capture_begin() / capture_end()


def test_pinned_cold_and_non_transfers(root, hot) -> None:
    pinned = _site(hot, "hp/bus.py", line_of(root, "hp/bus.py", "self.host.item()"))
    assert pinned.status == OK_PINNED and "pinned" in pinned.reason
    cold = _site(hot, "hp/step.py", line_of(root, "hp/step.py", "x.tolist()"))
    assert cold.status == COLD_PATH
    lines = {(s.site.path, s.site.span.line) for s in hot.hot.sites}
    assert ("hp/step.py", line_of(root, "hp/step.py", "self.cache.get")) not in lines  # dict.get
    assert ("hp/graphs.py", line_of(root, "hp/graphs.py", 'table.get("x")')) not in lines
    assert ("hp/graphs.py", line_of(root, "hp/graphs.py", 'print("text only")')) not in lines
    printed = _site(hot, "hp/graphs.py", line_of(root, "hp/graphs.py", "print(tensor)"))
    assert printed.kind == "print(tensor)" and printed.status == COLD_PATH
    moves = [s.kind for s in hot.hot.sites if s.site.path == "hp/graphs.py" and s.site.span.line == line_of(root, "hp/graphs.py", 'to("cpu")')]
    assert moves == ['.to("cpu")', '.to("cpu")']  # positional and device= keyword


def test_cuda_host_copies_with_direction(root, hot) -> None:
    kinds = {(s.site.span.line, s.kind) for s in hot.hot.sites if s.site.path == "cuda/host.cu"}
    assert (line_of(root, "cuda/host.cu", "cudaMemcpyDeviceToHost"), "cudaMemcpy DeviceToHost") in kinds
    assert (line_of(root, "cuda/host.cu", "cuMemcpyDtoH"), "cuMemcpyDtoH DeviceToHost") in kinds
    assert not any("DeviceToDevice" in kind for _, kind in kinds)


def test_recursion_terminates_and_unresolved_calls_are_reported(root, hot) -> None:
    assert "hp.step:Step.recurse" in hot.hot.reached
    unresolved = findings(hot, "FX302")
    assert [(d.path, d.line) for d in unresolved] == [("hp/step.py", line_of(root, "hp/step.py", "thing.process_later"))]


def test_fx301_and_unmatched_root(hot) -> None:
    violations = [d for d in findings(hot, "FX301") if d.path != "hp/precision.py"]
    assert len(violations) == 8  # item, synchronize, cpu, float, numpy, tolist, CuPy get, manual capture
    assert all("reachable: " in d.message for d in violations)
    assert any("hp.step:Step.run → hp.util:item_helper" in d.message for d in violations)
    unmatched = findings(hot, "FX303")
    assert len(unmatched) == 1 and "no_such_method" in unmatched[0].message


def test_cuda_host_function_named_as_root_is_hot(root, analyze) -> None:
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(
        '"hp.loop:Loop.no_such_method"', '"cuda/host.cu::copy_back"'))
    analysis = analyze(root)
    copy = _site(analysis, "cuda/host.cu", line_of(root, "cuda/host.cu", "cudaMemcpyDeviceToHost"))
    assert copy.status == VIOLATION
    driver = _site(analysis, "cuda/host.cu", line_of(root, "cuda/host.cu", "cuMemcpyDtoH"))
    assert driver.status == COLD_PATH
    assert findings(analysis, "FX303") == []


def test_cuda_root_walks_its_callees_and_blocking_syncs_are_syncs(root, analyze) -> None:
    host = "cuda/host.cu"
    cold = {s.kind: s.status for s in analyze(root).hot.sites if s.site.path == host and "Synchronize" in s.kind}
    assert cold == {"cudaEventSynchronize": COLD_PATH, "cudaStreamSynchronize": COLD_PATH, "cudaDeviceSynchronize": COLD_PATH}
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(
        '"hp.loop:Loop.no_such_method"', '"cuda/host.cu::train_step", "cuda/host.cu::launch_only"'))
    analysis = analyze(root)
    event = _site(analysis, host, line_of(root, host, "cudaEventSynchronize"))
    assert event.status == VIOLATION and event.chain == ("cuda/host.cu::train_step",)
    assert _site(analysis, host, line_of(root, host, "cudaStreamSynchronize")).status == VIOLATION
    copy = _site(analysis, host, line_of(root, host, "cudaMemcpyDeviceToHost"))
    assert copy.status == VIOLATION  # train_step → report → copy_back
    assert copy.chain == ("cuda/host.cu::train_step", "cuda/host.cu::report", "cuda/host.cu::copy_back")
    assert _site(analysis, host, line_of(root, host, "cudaDeviceSynchronize")).status == COLD_PATH
    assert [s.site.span.line for s in analysis.hot.sites if s.site.path == host and s.kind == "cudaDeviceSynchronize"] == [
        line_of(root, host, "cudaDeviceSynchronize")
    ]  # the one under #if 0 is not compiled
    messages = [d.message for d in findings(analysis, "FX301") if d.path == host]
    assert len(messages) == 3 and "cuda/host.cu::train_step → cuda/host.cu::report → cuda/host.cu::copy_back" in messages[0]
    hints = [d.hint for d in findings(analysis, "FX301") if d.path == host]
    assert "cudaMemcpyAsync" in hints[0] and "cudaStreamWaitEvent" in hints[1]
    assert not any("ISV" in d.hint for d in findings(analysis, "FX301"))  # the user's code, not Foxhunt's
    assert findings(analysis, "FX303") == []  # launch_only exists: a root without transfers matches


PRECISION = "hp/precision.py"


def test_transfer_forms_on_values_known_to_be_tensors(root, hot) -> None:
    """Each form is reported where the value is known to be a tensor, with the kind that names it."""
    expected = {
        "x.isnan().any()": "`if` on a tensor",  # inside Net.forward, reached through self.net(obs)
        "float(total)": "float(tensor)",
        "int(losses)": "int(tensor)",
        "bool(losses)": "bool(tensor)",
        "if losses:": "`if` on a tensor",
        "while total.any()": "`while` on a tensor",
        "torch.Tensor.item(total)": "torch.Tensor.item(tensor)",
        "bound = reader()": ".item() (bound as `reader`)",
        "np.asarray(losses)": "numpy.asarray(tensor)",
        "np.array(total)": "numpy.array(tensor)",
        "losses.to(CPU)": '.to("cpu")',
        "torch.nonzero(losses)": "torch.nonzero (data-dependent shape)",
        "losses[mask]\n": "boolean-mask index (data-dependent shape)",
        "losses[losses < 1]": "boolean-mask index (data-dependent shape)",
        "print(total)": "print(tensor)",
        "either.item()": ".item()",
    }
    text = (root / PRECISION).read_text()
    lines = {needle: text[: text.index(needle)].count("\n") + 1 for needle in expected}
    found = {(s.site.span.line, s.kind): s for s in hot.hot.sites if s.site.path == PRECISION}
    assert sorted(found) == sorted((lines[needle], kind) for needle, kind in expected.items())
    assert all(site.status == VIOLATION for site in found.values())
    forward = found[(lines["x.isnan().any()"], "`if` on a tensor")]
    assert forward.chain == ("hp.precision:Agent.act", "hp.precision:Net.forward")


def test_look_alikes_of_transfers_are_silent(root, hot) -> None:
    """NumPy values, a plain class's synchronize(), masked writes, unknown types: no site at all."""
    lines = {s.site.span.line for s in hot.hot.sites if s.site.path == PRECISION}
    for needle in ("steps.item()", "mean.item()", "self.timer.synchronize()", "losses[mask] = 0.0",
                   "float(self.anything)", "float(q)", "if obs is None", '"cpu" if obs.dim()'):
        assert line_of(root, PRECISION, needle) not in lines, needle
    assert "hp.precision:Timer.synchronize" in hot.hot.reached  # walked into as a call instead


def test_calling_a_module_instance_walks_into_forward(hot) -> None:
    reached = hot.hot.reached
    assert reached["hp.precision:Net.forward"][0] == "hp.precision:Agent.act"  # self.net(obs)
    assert reached["hp.precision:Net.act"][0] == "hp.precision:Agent.act"  # self.net.act(obs)
    program = hot.program
    module = program.by_path[PRECISION]
    call = next(c for c in module.summary.calls if c.func == "self" and c.scope == "Net.act")
    assert program.resolve_call(module, call).targets == ("hp.precision:Net.forward",)  # self(x)
    assert not [u for u in hot.hot.unresolved if u.site.path == PRECISION and u.text in ("self", "self.net")]


def test_with_nothing_hot_the_rules_find_no_sites_and_the_audit_still_lists_them(tmp_path, analyze, monkeypatch) -> None:
    import foxaudit.program.hotpath as hotpath

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "cold"\n[tool.foxaudit.program]\nentry-points = ["cold.*"]\n')
    (tmp_path / "cold").mkdir()
    (tmp_path / "cold" / "__init__.py").write_text("")
    (tmp_path / "cold" / "read.py").write_text("import torch\n\n\ndef total(x: torch.Tensor) -> float:\n    return x.sum().item()\n")
    searches: list[int] = []
    real = hotpath._transfer_sites

    def counted(*args, **kwargs):
        searches.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hotpath, "_transfer_sites", counted)
    analysis = analyze(tmp_path)
    assert findings(analysis, "FX301") == []
    assert searches == []  # no root, no capture: no site can be a violation
    (site,) = analysis.hot.sites  # the audit's table still has every site
    assert (site.kind, site.status, site.site.where) == (".item()", COLD_PATH, "cold/read.py:5")
    assert searches == [1]


def test_the_violations_read_from_the_hot_modules_alone_are_those_of_every_site(root, analyze) -> None:
    # The rules ask for the violations first: only the modules something hot is in are read
    # (flashinfer: 17 s of body scans for sites that could never be violations). Asked on a fresh
    # analysis, before the sites, they must equal the violations among every classified site.
    first = analyze(root).hot
    violations = [(s.site.where, s.kind, s.chain) for s in first.violations]
    assert violations and "sites" not in first.__dict__  # answered without classifying every site
    every = analyze(root).hot
    assert violations == [(s.site.where, s.kind, s.chain) for s in every.sites if s.status == VIOLATION]
