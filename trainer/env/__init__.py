"""trainer.env — the trading environment: accounting reference and the vectorised env."""

from trainer.env.accounting import backtest_targets
from trainer.env.vector_env import VectorEnv

__all__ = ["VectorEnv", "backtest_targets"]
