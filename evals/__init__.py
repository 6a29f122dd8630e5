"""Measure what survives pruning: loaders, metrics, baselines, runner and reports.

Run it as `catp eval --data ../shared/evals-data --ratios 1/6 --out evals-report/`
or `python -m evals ...`; see docs/evals.md.
"""
