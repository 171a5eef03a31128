"""trainer.eval — judging a run: performance metrics (``trainer.eval.metrics``, empyrical's
conventions), the HEALTH_DIAG reader/writer, backtests and plots."""
