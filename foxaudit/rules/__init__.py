"""Rules: one module per rule, grouped by invariant; codes registered in ``registry.py``."""
