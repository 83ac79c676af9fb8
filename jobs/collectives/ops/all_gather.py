"""all_gather: every rank ends with all ranks' chunks, in rank order."""

from __future__ import annotations

import torch
import torch.distributed as dist

from wirewise.jobs.collectives.ops.base import Collective


class AllGather(Collective):
    name = "all_gather"
    chunked = True
    forms = (False, True)

    def busbw_factor(self, world_size):
        return (world_size - 1) / world_size

    def buffers(self, count, rank, values, in_place):
        recv = values.unset(count * values.world_size)
        if not in_place:
            return values.filled(rank, count), recv
        send = recv[rank * count : (rank + 1) * count]  # NCCL's in place: the input is my chunk of the output
        send.copy_(values.of_rank(rank, count))
        return send, recv

    def expected(self, count, rank, values):
        return torch.cat([values.of_rank(r, count) for r in range(values.world_size)])

    def __call__(self, send, recv):
        dist.all_gather_into_tensor(recv, send)


OP = AllGather()
