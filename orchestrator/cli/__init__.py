"""The `wirewise` command line: parsing and printing only; the work lives in the stages.

These modules leave out `from __future__ import annotations`: typer reads every command's
annotations at each start, and strings would have to be evaluated first (800 of them: 9 ms
of `wirewise results` on an empty store, median of 15 runs on 2 cores).
"""
