"""Whole-repository models: import graph, kernel linkage, call graph, layout model."""
