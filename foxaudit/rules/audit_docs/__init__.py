"""Invariant 7 (audited components): generated audit docs, FX7xx."""
