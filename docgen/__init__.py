"""Generators of the reference docs (docs/metrics.md, docs/results.md): tools around the product, never imported by it."""
