"""Invariant 3 (hot-path purity): whole-program rules FX3xx."""
