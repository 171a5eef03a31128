"""Invariant 9, no deferred work: marker comments (FX901) and stub bodies (FX902)."""
