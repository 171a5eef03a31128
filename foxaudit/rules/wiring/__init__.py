"""Invariant 2 (wire it up): whole-program rules FX2xx."""
