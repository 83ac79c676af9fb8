"""The end of every per-size comparison under tests/gpu: the table, its copy, the verdict."""

from __future__ import annotations

import sys


def report(lines: list[str], problems: list[str], markdown: str | None) -> int:
    """Print the table (and write it to `markdown`), each problem as FAILED on stderr; the exit status."""
    print("\n".join(lines))
    if markdown:
        with open(markdown, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0
