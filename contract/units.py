"""Units, one home each; bytes_text is the one writer of a byte count, for every reader.

Message sizes as people write them: '1M', '512K', '1G' in, '1G' out (binary units, as
nccl-tests' -b/-e read them). No pydantic: `wirewise results --bytes 1G` parses without
building models. The bounds on an input's bytes (wirewise.limits) are binary too, written in
prose as IEC units ("1 GiB"), the way file sizes are usually stated.

Memory in GB: 10^9 bytes, as GPU datasheets count ("H100 80 GB", "H200 141 GB") and as the
memory accounting the estimate follows does (Mistral-7B ddp ~87 GB). Every memory figure and
limit wirewise takes or prints is in it: `estimate`/`place --gpu-mem-gb`, `bench train
--memory-limit-gb`, the report's peak memory, the calibration's measured peaks. A GiB is 7.4%
more: `--memory-limit-gb 80` in GiB would be 85.9 GB, past the 80 GB card it stands for.
"""

from __future__ import annotations

import re

KIB, MIB, GIB = 1024, 1024**2, 1024**3  # binary units: message sizes, bounds
GB = 10**9  # bytes in a GB of memory (see above)
_UNITS = {"": 1, "K": KIB, "M": MIB, "G": GIB}
_BINARY = (("G", GIB), ("M", MIB), ("K", KIB))
_DECIMAL = (("GB", GB), ("MB", 10**6), ("kB", 10**3))
BYTE_FORMS = ("size", "bound", "memory", "GB")
_SIZE = re.compile(r"^\s*(\d+)(?:\.(\d*))?\s*([KMG]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str | int, most: int | None = None) -> int:
    """'64', '512K', '1M', '1.5G' -> bytes (binary units, as nccl-tests' -b/-e read them), at
    most `most` (default: the largest integer the database stores). Computed in integers, so
    400 digits are "too large", not a float overflow."""
    if most is None:
        from wirewise.limits import MAX_INT  # here: wirewise.limits writes its bounds with bytes_text

        most = MAX_INT
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


def bytes_text(n: int | float, form: str = "size") -> str:
    """A byte count as wirewise writes it, in the form its reader needs:

    "size"    a message size, as nccl-tests' -b/-e and parse_size read it back: 1G, 512K, 64B;
              a size that is no whole binary unit, 1.5K (rounded to a tenth of a KiB)
    "bound"   a bound on an input's bytes, in prose: 1 GiB, 64 KiB, 1000 bytes
    "memory"  memory in powers of ten (GB above): 80.00 GB, 512.00 MB, 12.00 kB, 12 B
    "GB"      memory as a number of GB, for a column headed GB: 80.00

    A binary form takes the largest unit that divides the count exactly, so that the text reads
    back as the same count."""
    if form == "memory":
        unit, scale = next(((unit, scale) for unit, scale in _DECIMAL if n >= scale), ("B", 1))
        return f"{n / scale:.2f} {unit}" if scale > 1 else f"{n} B"
    if form == "GB":
        return f"{n / GB:.2f}"
    whole = next(((unit, scale) for unit, scale in _BINARY if n >= scale and n % scale == 0), None)
    if form == "bound":
        return f"{n // whole[1]} {whole[0]}iB" if whole else f"{n} bytes"
    if form == "size":
        if whole:
            return f"{n // whole[1]}{whole[0]}"
        return f"{n}B" if n < KIB else f"{n / KIB:.1f}K"
    raise ValueError(f"no byte form {form!r} (the forms are {', '.join(BYTE_FORMS)})")


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
