"""Units, one home each.

Message sizes as people write them: '1M', '512K', '1G' in, '1G' out (binary units, as
nccl-tests' -b/-e read them). No pydantic: `wirewise results --bytes 1G` parses without
building models.

Memory in GB: 10^9 bytes, as GPU datasheets count ("H100 80 GB", "H200 141 GB") and as the
memory accounting the estimate follows does (Mistral-7B ddp ~87 GB). Every memory figure and
limit wirewise takes or prints is in it: `estimate`/`place --gpu-mem-gb`, `bench train
--memory-limit-gb`, the report's peak memory, the calibration's measured peaks. A GiB is 7.4%
more: `--memory-limit-gb 80` in GiB would be 85.9 GB, past the 80 GB card it stands for.
"""

from __future__ import annotations

import re

from wirewise.limits import MAX_INT

GB = 10**9  # bytes in a GB of memory (see above)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE = re.compile(r"^\s*(\d+)(?:\.(\d*))?\s*([KMG]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str | int, most: int = MAX_INT) -> int:
    """'64', '512K', '1M', '1.5G' -> bytes (binary units, as nccl-tests' -b/-e read them), at
    most `most` (default: the largest integer the database stores). Computed in integers, so
    400 digits are "too large", not a float overflow."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = _SIZE.match(str(text))
        if not match:
            raise ValueError("give bytes with an optional K, M or G suffix, e.g. 64K, 1M, 1G")
        whole, fraction, unit = match.group(1), (match.group(2) or "")[:30], match.group(3).upper()
        if len(whole.lstrip("0")) > len(str(most)):
            raise ValueError(f"at most {most} bytes")
        scale = _UNITS[unit]
        value = int(whole) * scale + (int(fraction) * scale // 10 ** len(fraction) if fraction else 0)
    if value < 1:
        raise ValueError("must be at least 1 byte")
    if value > most:
        raise ValueError(f"at most {most} bytes")
    return value


def human_bytes(n: int) -> str:
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B" if n < 1024 else f"{n / 1024:.1f}K"


def gb_bytes(gb: float) -> int:
    """A memory figure in GB as bytes."""
    return int(gb * GB)


def in_gb(nbytes: float, digits: int = 2) -> float:
    """Bytes of memory in GB, rounded to `digits`."""
    return round(nbytes / GB, digits)


def gbs_text(value: float | None) -> str:
    """A pair test's busbw (or the fleet's figure) as the verdict's readers print it: three
    digits, or "failed" for a test that measured nothing (None)."""
    return "failed" if value is None else f"{value:.3g} GB/s"
