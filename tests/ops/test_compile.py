"""Every cuda/*.cu compiles (NVRTC, no GPU needed): CI catches a kernel that does not build."""

from __future__ import annotations

import pytest

from trainer.ops import loader

KERNELS = sorted(p.stem for p in loader.CUDA_DIR.glob("*.cu"))


def _nvrtc_available() -> bool:
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
    except (ImportError, RuntimeError, OSError):  # CuPy or the NVRTC library missing
        return False
    return True


@pytest.mark.skipif(not _nvrtc_available(), reason="needs cupy with NVRTC (pip install nvidia-cuda-nvrtc-cu13)")
@pytest.mark.parametrize("op", KERNELS)
def test_kernel_compiles_to_ptx(op: str):
    ptx = loader.compile_to_ptx(op)
    assert ".entry " in ptx  # at least one kernel
    assert "atom." not in ptx  # deterministic reductions: no atomics


def test_kernel_list_is_not_empty():
    assert {"env_step", "rng_uniform"} <= set(KERNELS)


def test_sources_carry_line_directives():
    source = loader.kernel_source("env_step")
    first, second = source.splitlines()[:2]
    assert first.startswith("// cuda headers sha256 ")
    assert second.startswith('#line 1 "') and second.endswith('cuda/env_step.cu"')


def test_unknown_op_names_the_known_kernels():
    with pytest.raises(FileNotFoundError, match=r"no kernel source for op 'nope'.*env_step.*hint"):
        loader.kernel_source("nope")


@pytest.mark.skipif(not _nvrtc_available(), reason="needs cupy with NVRTC")
def test_compile_error_points_at_the_real_file(tmp_path, monkeypatch):
    (tmp_path / "broken.cu").write_text('extern "C" __global__ void broken() {\n  int x = ;\n}\n')
    monkeypatch.setattr(loader, "CUDA_DIR", tmp_path)
    with pytest.raises(RuntimeError, match=r"kernel broken does not compile") as info:
        loader.compile_to_ptx("broken")
    assert f"{tmp_path.as_posix()}/broken.cu(2)" in str(info.value)


def test_kernel_source_changes_when_an_included_header_changes(tmp_path, monkeypatch):
    # CuPy's kernel cache keys on the source text, not on #included files: the loader must fold the
    # headers into the source, or a regenerated layout.cuh would reuse stale compiled kernels.
    from trainer.ops import loader

    (tmp_path / "generated").mkdir()
    (tmp_path / "op.cu").write_text('#include "generated/layout.cuh"\n', encoding="utf-8")
    header = tmp_path / "generated" / "layout.cuh"
    header.write_text("#define PS_CASH 1\n", encoding="utf-8")
    monkeypatch.setattr(loader, "CUDA_DIR", tmp_path)
    before = loader.kernel_source("op")
    header.write_text("#define PS_CASH 2\n", encoding="utf-8")
    after = loader.kernel_source("op")
    assert before != after
    assert after.splitlines()[1].startswith("#line 1 ")  # compiler errors still name the real file and line
