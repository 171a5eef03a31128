"""Small helpers shared by several per-file rules: option coercion, path globs, node names."""
