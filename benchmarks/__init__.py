"""catp benchmarks: `python -m benchmarks` runs the pruning benchmarks (see benchmarks/__main__.py)."""
