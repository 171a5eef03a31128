"""The trainer imports and trains with torch + numpy alone (the GPU machine has nothing else).

A subprocess marks the optional packages as unimportable (``sys.modules[name] = None`` makes
``import name`` raise), imports the training stack and the CLI, builds a TrainStep on a tiny
synthetic market and runs one step on the CPU.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = ("pandas", "pyarrow", "databento_dbn", "matplotlib", "rich", "safetensors", "gym_anytrading")

SCRIPT = textwrap.dedent(
    """
    import importlib
    import pkgutil
    import sys

    for name in {optional!r}:
        sys.modules[name] = None  # `import name` now raises ImportError

    import torch

    import trainer.ops
    for module in pkgutil.iter_modules(trainer.ops.__path__):
        importlib.import_module(f"trainer.ops.{{module.name}}")
    import trainer.cli
    import trainer.model.network
    import trainer.train.loop
    from trainer.config import TrainConfig
    from trainer.data.synthetic import make_signal_market
    from trainer.layout import FEATURE_STRIDE
    from trainer.train.graph import StepRunner
    from trainer.train.grad_diag import epoch_grad_norms
    from trainer.train.step import MarketWindow, TrainerState, TrainStep

    market = make_signal_market(200, seed=1)
    close = torch.tensor(market.close, dtype=torch.float32)
    features = torch.zeros(len(market), FEATURE_STRIDE)
    features[:, 0] = torch.tensor(market.log_returns, dtype=torch.float32) * 100.0
    window = 4
    config = TrainConfig().replace(
        env={{"n_envs": 4, "episode_length": 32}},
        model={{"window": window, "scan_channels": 8, "scan_state": 4, "hidden": 16, "head_hidden": 8,
                "n_atoms": 11, "iqn_embedding": 8}},
        loss={{"n_step": 2, "iqn_tau_samples": 2, "iqn_target_samples": 2}},
        replay={{"capacity": 64, "batch_size": 8, "learning_starts": 8}},
        run={{"steps": 1, "epoch_steps": 1, "device": "cpu"}},
    )
    state = TrainerState(
        config, MarketWindow(close=close[window:], spread=torch.zeros(len(close) - window), features=features,
                             offset=window), torch.device("cpu"),
    )
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 2):
        step.collect()
    before = state.online.trunk[0].weight.detach().clone()
    StepRunner(step, use_graph=True).run(1)
    assert not torch.equal(before, state.online.trunk[0].weight), "the step did not learn"
    assert "c51" in epoch_grad_norms(step, 0.0)
    for name in {optional!r}:
        assert sys.modules[name] is None, f"{{name}} was replaced by a real import"
    print("minimal-import-ok")
    """
).format(optional=OPTIONAL)


def test_trainer_imports_and_steps_without_optional_packages():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "minimal-import-ok" in result.stdout


def test_blocked_package_really_fails_to_import():
    """The blocking mechanism itself works (otherwise the test above proves nothing)."""
    code = "import sys; sys.modules['pandas'] = None\ntry:\n    import pandas\nexcept ImportError:\n    print('blocked')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.strip() == "blocked"
