"""The `wirewise` command line: parsing and printing only; the work lives in the stages.

These modules leave out `from __future__ import annotations`: typer reads every command's
annotations at each start, and strings would have to be evaluated first (800 of them, 10 ms
of every command; tests/benchmarks/bench_results.py).
"""
