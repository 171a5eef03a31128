"""Invariant 1 (GPU drives, CPU reads): whole-program rules FX1xx."""
