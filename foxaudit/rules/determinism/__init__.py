"""Invariant 4, deterministic reductions: no atomics in kernels (FX401)."""
