"""all_gather: every rank ends with all ranks' chunks, in rank order."""

from __future__ import annotations

import torch
import torch.distributed as dist

from wirewise.jobs.collectives.ops.base import Collective


class AllGather(Collective):
    name = "all_gather"
    chunked = True

    def busbw_factor(self, world_size):
        return (world_size - 1) / world_size

    def buffers(self, count, rank, values):
        return values.filled(rank, count), values.unset(count * values.world_size)

    def expected(self, count, rank, values):
        return torch.cat([values.of_rank(r, count) for r in range(values.world_size)])

    def __call__(self, send, recv):
        dist.all_gather_into_tensor(recv, send)


OP = AllGather()
