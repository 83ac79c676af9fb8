"""all_to_all: rank r sends its chunk j to rank j and receives chunk r of every rank."""

from __future__ import annotations

import torch
import torch.distributed as dist

from wirewise.jobs.collectives.ops.base import Collective


class AllToAll(Collective):
    name = "all_to_all"
    chunked = True  # count = elements per peer, as nccl-tests' alltoall_perf prints it
    forms = (False,)  # NCCL has no in-place all-to-all: a peer's chunk would be overwritten before it is sent

    def busbw_factor(self, world_size):
        return (world_size - 1) / world_size

    def buffers(self, count, rank, values, in_place):
        total = count * values.world_size
        return values.filled(rank, total), values.unset(total)

    def expected(self, count, rank, values):
        return torch.cat([values.of_rank(r, count, start=rank * count) for r in range(values.world_size)])

    def __call__(self, send, recv):
        dist.all_to_all_single(recv, send)


OP = AllToAll()
