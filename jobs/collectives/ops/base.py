"""What every collective descriptor says: sizes, bus-bandwidth factor, data, expected result, call.

Definitions follow NVIDIA's nccl-tests (src/<op>.cu and doc/PERFORMANCE.md):
- `bytes` is nccl-tests' size column: the whole buffer; for all_gather, reduce_scatter and
  all_to_all the whole gathered / scattered array, i.e. all ranks' chunks together;
- `count` is nccl-tests' count column: elements of the whole buffer for all_reduce and
  broadcast, elements of ONE rank's chunk for the chunked ops;
- chunked ops round a rank's chunk down to whole 16-byte lines, as nccl-tests does
  ((size / element / ranks) & -(16 / element)): a sweep step too small for that is empty;
- algbw = bytes / time; busbw = algbw x the op's factor at world size n;
- out of place and in place as nccl-tests prints both: in place, the output and the input
  share memory the way NCCL defines it (all_gather: the input is this rank's chunk of the
  output; reduce_scatter: the output is this rank's chunk of the input). `forms` lists the
  ones torch.distributed has for the op (all_reduce and broadcast have only in place,
  all_to_all_single only out of place).
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
    forms: tuple[bool, ...] = (False,)  # in_place values torch has for this op, out of place first
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
    def buffers(self, count: int, rank: int, values: Values, in_place: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(input, output) filled for this rank in the given form (one of `forms`); in place,
        one shares the other's memory."""

    @abstractmethod
    def expected(self, count: int, rank: int, values: Values) -> torch.Tensor:
        """What this rank's output must hold after one call on `buffers`."""

    @abstractmethod
    def __call__(self, send: torch.Tensor, recv: torch.Tensor) -> None:
        """One collective call (synchronous from the stream's point of view)."""
