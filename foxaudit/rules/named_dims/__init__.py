"""Invariant 8, named dimensions: no raw indices into multi-field buffers (FX801)."""
