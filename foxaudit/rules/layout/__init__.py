"""Invariant 5, one layout, fail fast: no layout migration functions (FX501)."""
