"""Input values whose collective results are known in advance, and the #wrong count.

Rank r holds v(r, j) = ((j + 3r) mod P) - A at global position j, with P = 2A + 1:
- small integers, so a sum over ranks is exact in the dtype (A shrinks as ranks grow,
  e.g. bfloat16 holds every integer up to 256 exactly); when even A = 1 cannot keep the
  sum exact, the check falls back to a tolerance of a few ulps per rank;
- different per rank and per position, so a chunk from the wrong rank or at the wrong
  offset is caught, not just a wrong sum;
- periodic, so a buffer of any size is a tiled P-element pattern: no index tensor as
  large as the buffer is ever built (a 1 GB sweep step stays a 1 GB allocation).
Outputs start as NaN, which equals nothing: a collective that leaves them untouched is wrong.
"""

from __future__ import annotations

import torch

# Largest integer magnitude below which every integer is exact in the dtype.
EXACT_INTEGER_LIMIT = {"float32": 2**24, "bfloat16": 2**8, "float16": 2**11}
MAX_AMPLITUDE = 8
RANK_STRIDE = 3  # rank r's pattern is rank 0's shifted by 3r positions


class Values:
    def __init__(self, world_size: int, dtype_name: str, device: torch.device) -> None:
        limit = EXACT_INTEGER_LIMIT[dtype_name]
        self.world_size = world_size
        self.amplitude = max(1, min(MAX_AMPLITUDE, limit // world_size))
        self.exact = world_size * self.amplitude <= limit  # every partial sum is then exact too
        self.period = 2 * self.amplitude + 1
        self.dtype = getattr(torch, dtype_name)
        self.device = device

    # -- buffers ----------------------------------------------------------
    def empty(self, length: int) -> torch.Tensor:
        return torch.empty(length, dtype=self.dtype, device=self.device)

    def unset(self, length: int) -> torch.Tensor:
        """An output buffer full of NaN (see the module docstring)."""
        return torch.full((length,), float("nan"), dtype=self.dtype, device=self.device)

    def filled(self, rank: int, length: int, start: int = 0) -> torch.Tensor:
        """A fresh buffer holding rank's values at positions start .. start+length-1."""
        buffer = self.empty(length)
        buffer.copy_(self.of_rank(rank, length, start))
        return buffer

    # -- values -----------------------------------------------------------
    def of_rank(self, rank: int, length: int, start: int = 0) -> torch.Tensor:
        return self._tile(self._residues(rank), start, length)

    def sum_over_ranks(self, length: int, start: int = 0) -> torch.Tensor:
        total = sum(self._residues(rank) for rank in range(self.world_size))
        return self._tile(total, start, length)

    def _residues(self, rank: int) -> torch.Tensor:
        """Rank's value at every position modulo P, as exact int64 (cast to the dtype last)."""
        k = torch.arange(self.period, dtype=torch.int64)
        return (k + RANK_STRIDE * rank) % self.period - self.amplitude

    def _tile(self, pattern: torch.Tensor, start: int, length: int) -> torch.Tensor:
        shift = start % self.period
        repeats = (shift + length) // self.period + 1
        small = pattern.to(self.dtype).to(self.device)
        return small.repeat(repeats)[shift : shift + length]

    # -- checking ---------------------------------------------------------
    def count_wrong(self, got: torch.Tensor, expected: torch.Tensor) -> int:
        """Elements that differ from the expected result (nccl-tests' #wrong on this rank)."""
        if self.exact:
            return int((got != expected).sum().item())
        rtol = torch.finfo(self.dtype).eps * self.world_size
        close = torch.isclose(got, expected, rtol=rtol, atol=rtol * self.amplitude)
        return int((~close).sum().item())
