"""What every collective descriptor says: sizes, bus-bandwidth factor, data, expected result, call.

Definitions follow NVIDIA's nccl-tests (src/<op>.cu and doc/PERFORMANCE.md):
- `bytes` is nccl-tests' size column: the whole buffer; for all_gather, reduce_scatter and
  all_to_all the whole gathered / scattered array, i.e. all ranks' chunks together;
- `count` is nccl-tests' count column: elements of the whole buffer for all_reduce and
  broadcast, elements of ONE rank's chunk for the chunked ops;
- chunked ops round a rank's chunk down to whole 16-byte lines, as nccl-tests does
  ((size / element / ranks) & -(16 / element)): a sweep step too small for that is empty;
- algbw = bytes / time; busbw = algbw x the op's factor at world size n.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from wirewise.jobs.collectives.data import Values

LINE_BYTES = 16


@dataclass(frozen=True)
class Geometry:
    count: int  # nccl-tests' count column
    nbytes: int  # nccl-tests' size column


class Collective(ABC):
    name: str
    redop = "none"  # nccl-tests' redop column
    root = -1  # nccl-tests' root column (-1: no root)
    in_place = False  # the op reads and writes one buffer (torch's all_reduce and broadcast do)
    chunked = False  # the buffer is one chunk per rank; count is per rank

    def geometry(self, size: int, world_size: int, element_bytes: int) -> Geometry:
        if self.chunked:
            per_rank = (size // element_bytes // world_size) & -(LINE_BYTES // element_bytes)
            return Geometry(per_rank, per_rank * world_size * element_bytes)
        count = size // element_bytes
        return Geometry(count, count * element_bytes)

    @abstractmethod
    def busbw_factor(self, world_size: int) -> float:
        """busbw / algbw: the share of the data each rank's link must carry."""

    @abstractmethod
    def buffers(self, count: int, rank: int, values: Values) -> tuple[torch.Tensor, torch.Tensor]:
        """(input, output) filled for this rank; the same tensor twice for in-place ops."""

    @abstractmethod
    def expected(self, count: int, rank: int, values: Values) -> torch.Tensor:
        """What this rank's output must hold after one call on `buffers`."""

    @abstractmethod
    def __call__(self, send: torch.Tensor, recv: torch.Tensor) -> None:
        """One collective call (synchronous from the stream's point of view)."""
