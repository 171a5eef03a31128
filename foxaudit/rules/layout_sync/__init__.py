"""Invariant 5 (one layout): whole-program rules FX502 and up."""
