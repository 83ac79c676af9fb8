"""Sizes as people write them: '1M', '512K', '1G' in, '1G' out (binary units, as nccl-tests'
-b/-e read them). No pydantic: `wirewise results --bytes 1G` parses without building models.
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([KMG]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """'64', '512K', '1M', '1.5G' -> bytes (binary units, as nccl-tests' -b/-e read them)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = _SIZE.match(str(text))
        if not match:
            raise ValueError("give bytes with an optional K, M or G suffix, e.g. 64K, 1M, 1G")
        value = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    if value < 1:
        raise ValueError("must be at least 1 byte")
    return value


def human_bytes(n: int) -> str:
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B" if n < 1024 else f"{n / 1024:.1f}K"
