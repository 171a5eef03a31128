"""`trainer validate`: seeds × folds sweeps on Ray or a local process pool, reports, metric bands."""
