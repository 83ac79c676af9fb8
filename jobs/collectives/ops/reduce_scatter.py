"""reduce_scatter (sum): rank r ends with chunk r of the sum of all ranks' buffers."""

from __future__ import annotations

import torch.distributed as dist

from wirewise.jobs.collectives.ops.base import Collective


class ReduceScatter(Collective):
    name = "reduce_scatter"
    redop = "sum"
    chunked = True
    forms = (False, True)

    def busbw_factor(self, world_size):
        return (world_size - 1) / world_size

    def buffers(self, count, rank, values, in_place):
        send = values.filled(rank, count * values.world_size)
        if in_place:
            return send, send[rank * count : (rank + 1) * count]  # NCCL's in place: the output is my chunk of the input
        return send, values.unset(count)

    def expected(self, count, rank, values):
        return values.sum_over_ranks(count, start=rank * count)

    def __call__(self, send, recv):
        dist.reduce_scatter_tensor(recv, send, op=dist.ReduceOp.SUM)


OP = ReduceScatter()
