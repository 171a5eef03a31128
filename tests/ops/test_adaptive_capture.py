"""The adaptive kernels inside a captured CUDA graph: no host sync, and replays advance like eager."""

from __future__ import annotations

import pytest
import torch
from adaptive_support import assert_close

from trainer.isv import Isv
from trainer.layout import (
    N_BRANCHES,
    PS_DSR_A,
    PS_DSR_B,
    PS_KELLY_WIN_SUM,
    PS_KELLY_WINS,
    PS_STRIDE,
)
from trainer.ops.adaptive_machinery import AdaptiveMachinery


def _inputs(device: str):
    generator = torch.Generator().manual_seed(5)
    ps = torch.zeros(300, PS_STRIDE)
    ps[:, PS_DSR_A] = torch.randn(300, generator=generator) * 1e-3
    ps[:, PS_DSR_B] = ps[:, PS_DSR_A] ** 2 + 1e-5
    ps[:, PS_KELLY_WINS] = 6.0
    ps[:, PS_KELLY_WIN_SUM] = 0.06
    td_targets = torch.randn(64, N_BRANCHES, generator=generator) * 0.5 + 0.1  # [B, D]
    return ps.to(device), (td_targets.to(device), torch.tensor(1.5, device=device))


def test_cpu_machinery_runs_the_references_in_order():
    isv = Isv("cpu")
    machinery = AdaptiveMachinery(isv, 300)
    ps, update = _inputs("cpu")
    machinery.begin_epoch(0, 4)
    assert isv.read("KELLY_CAP") == pytest.approx(machinery.params.kelly.cap_floor)  # the prior alone: no edge yet
    machinery.record_trades(ps)
    machinery.after_update(ps, *update)
    assert isv.read("EPOCH_INDEX") == 0.0 and isv.read("TOTAL_EPOCHS") == 4.0
    assert isv.read("GRAD_NORM_EMA") == 1.5
    assert isv.read("KELLY_CAP") > 0.0
    assert len(isv.read("ATOM_CENTRE")) == N_BRANCHES
    machinery.begin_epoch(3, 4)  # the schedules' last epoch
    at_end = (isv.read("TRAINING_PROGRESS"), isv.read("EPSILON"), isv.read("TAU"))
    assert at_end[0] == 1.0
    machinery.begin_epoch(9, 4)  # past the schedules' span (schedule.horizon_steps): held at the end values
    assert (isv.read("TRAINING_PROGRESS"), isv.read("EPSILON"), isv.read("TAU")) == at_end
    assert isv.read("EPOCH_INDEX") == 9.0
    with pytest.raises(ValueError, match=r"epoch index out of range \(-1 of 4 vs epoch ≥ 0"):
        machinery.begin_epoch(-1, 4)


@pytest.mark.gpu
def test_captured_adaptive_update_replays_like_eager_without_host_sync():
    eager_isv, graph_isv = Isv("cuda"), Isv("cuda")
    eager, graphed = AdaptiveMachinery(eager_isv, 300), AdaptiveMachinery(graph_isv, 300)
    ps, update = _inputs("cuda")
    for machinery in (eager, graphed):
        machinery.record_trades(ps)
        machinery.begin_epoch(1, 5)
    eager.after_update(ps, *update)  # warm-up: compiles and allocates outside any capture
    graphed.after_update(ps, *update)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        graphed.after_update(ps, *update)
    torch.cuda.current_stream().wait_stream(side)
    eager.after_update(ps, *update)
    with torch.cuda.graph(graph):
        graphed.after_update(ps, *update)
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(5):
            graph.replay()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for _ in range(5):
        eager.after_update(ps, *update)
    torch.cuda.synchronize()
    assert_close("ISV after 5 replays vs 5 eager updates", graph_isv.host, eager_isv.host, atol=1e-6, rtol=1e-5)
