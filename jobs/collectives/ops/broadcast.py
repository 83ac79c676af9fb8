"""broadcast from rank 0: every rank ends with rank 0's buffer."""

from __future__ import annotations

import torch.distributed as dist

from wirewise.jobs.collectives.ops.base import Collective

ROOT = 0


class Broadcast(Collective):
    name = "broadcast"
    root = ROOT
    forms = (True,)  # torch.distributed.broadcast sends and receives in one tensor

    def busbw_factor(self, world_size):
        return 1.0  # nccl-tests: a pipelined broadcast moves the whole buffer over every link once

    def buffers(self, count, rank, values, in_place):
        buffer = values.filled(rank, count) if rank == ROOT else values.unset(count)
        return buffer, buffer

    def expected(self, count, rank, values):
        return values.of_rank(ROOT, count)

    def __call__(self, send, recv):
        dist.broadcast(recv, src=ROOT)


OP = Broadcast()
