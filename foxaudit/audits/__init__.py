"""Generators of docs/audits/*.md."""
