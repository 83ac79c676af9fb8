"""all_reduce (sum): every rank ends with the sum of all ranks' buffers."""

from __future__ import annotations

import os

import torch.distributed as dist

from wirewise.jobs.collectives.ops.base import Collective


class AllReduce(Collective):
    name = "all_reduce"
    redop = "sum"
    forms = (True,)  # torch.distributed.all_reduce has no out-of-place form

    def busbw_factor(self, world_size):
        # nccl-tests: 2(n-1)/n for ring/tree; it switches to (n-1)/(n+1) when NCCL_ALGO names
        # exactly NVLS or NVLSTree (the switch does the reduction), so we do the same.
        if os.environ.get("NCCL_ALGO") in ("NVLS", "NVLSTree", "NVLSTREE"):
            return (world_size - 1) / (world_size + 1)
        return 2 * (world_size - 1) / world_size

    def buffers(self, count, rank, values, in_place):
        buffer = values.filled(rank, count)
        return buffer, buffer

    def expected(self, count, rank, values):
        return values.sum_over_ranks(count)

    def __call__(self, send, recv):
        dist.all_reduce(recv, op=dist.ReduceOp.SUM)


OP = AllReduce()
