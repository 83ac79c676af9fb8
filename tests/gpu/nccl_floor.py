"""NCCL called straight from the host, without torch: the floor under wirewise's figures.

    python3 tests/gpu/nccl_floor.py --gpus 0,1 -b 8 -e 1G [--json OUT]

One process drives every GPU (nccl-tests' -g N: one thread, ncclGroupStart/End around the
ranks' calls) through CuPy's NCCL binding, with nccl-tests' protocol: per op, size and form
5 eager warm-up calls, then 20 calls timed with CUDA events, eagerly and captured once into
a CUDA graph (replayed once untimed, then timed): the same sizes, forms and definitions as
`wirewise bench collectives` (count per rank rounded to 16-byte lines for the chunked ops).
This is a reference, not nccl-tests: it shows what torch.distributed's eager call adds on
top of a bare ncclAllReduce. Exit status 2 when CuPy or its NCCL binding is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass

FORMS = {"all_reduce": (True,), "all_gather": (False, True), "reduce_scatter": (False, True)}
ELEMENT = 4  # float32
LINE = 16


@dataclass
class Row:
    op: str
    bytes: int
    in_place: bool
    eager_us: float
    graph_us: float


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", default="0")
    parser.add_argument("-b", type=int, default=8)
    parser.add_argument("-e", type=int, default=1 << 30)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    try:
        import cupy
        from cupy.cuda import nccl

        if not nccl.available:
            raise ImportError("cupy.cuda.nccl is not available")
    except ImportError as exc:
        print(f"nccl_floor: {exc}", file=sys.stderr)
        return 2
    bench = Bench(cupy, nccl, [int(g) for g in args.gpus.split(",")], args.iters, args.warmup)
    rows = [row for op in FORMS for size in sizes(args.b, args.e) for row in bench.measure(op, size)]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([asdict(r) for r in rows], fh, indent=1)
    for r in rows:
        print(f"{r.op:>15} {'in ' if r.in_place else 'out'} {r.bytes:>11} eager {r.eager_us:9.2f} us  graph {r.graph_us:9.2f} us")
    return 0


def sizes(low: int, high: int) -> list[int]:
    found, size = [], low
    while size <= high:
        found.append(size)
        size *= 2
    return found


class Bench:
    def __init__(self, cupy, nccl, gpus: list[int], iters: int, warmup: int) -> None:
        self.cp, self.nccl, self.gpus, self.iters, self.warmup = cupy, nccl, gpus, iters, warmup
        self.comms = nccl.NcclCommunicator.initAll(gpus)
        self.streams = []
        for gpu in gpus:
            with cupy.cuda.Device(gpu):
                self.streams.append(cupy.cuda.Stream(non_blocking=True))

    def measure(self, op: str, size: int) -> list[Row]:
        n = len(self.gpus)
        count = size // ELEMENT if op == "all_reduce" else (size // ELEMENT // n) & -(LINE // ELEMENT)
        if count == 0:
            return []
        nbytes = count * ELEMENT * (1 if op == "all_reduce" else n)
        rows = []
        for in_place in FORMS[op]:
            calls = self._calls(op, count, in_place)
            for _ in range(self.warmup):
                calls()
            eager = self._timed(lambda: [calls() for _ in range(self.iters)])
            graphs = self._captured(calls)
            self._replay(graphs)  # untimed: the first launch uploads the graph
            graph = self._timed(lambda: self._replay(graphs))
            rows.append(Row(op, nbytes, in_place, eager / self.iters * 1e6, graph / self.iters * 1e6))
        return rows

    def _calls(self, op: str, count: int, in_place: bool):
        """One collective on every GPU, in one NCCL group (nccl-tests -g N)."""
        n, cp, nccl = len(self.gpus), self.cp, self.nccl
        buffers = []
        for gpu in self.gpus:
            with cp.cuda.Device(gpu):
                big = cp.ones(count * (1 if op == "all_reduce" else n), dtype=cp.float32)
                small = cp.ones(count, dtype=cp.float32)  # out of place: memory of its own
                buffers.append((big, small))

        def call() -> None:
            nccl.groupStart()
            for rank, (comm, stream, (big, small)) in enumerate(zip(self.comms, self.streams, buffers)):
                with cp.cuda.Device(self.gpus[rank]):
                    self._one(op, comm, stream, big, small, count, rank, in_place)
            nccl.groupEnd()

        return call

    def _one(self, op, comm, stream, big, small, count, rank, in_place) -> None:
        nccl, s = self.nccl, stream.ptr
        chunk = big[rank * count : (rank + 1) * count] if op != "all_reduce" else big
        if op == "all_reduce":
            comm.allReduce(big.data.ptr, big.data.ptr, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s)
        elif op == "all_gather":
            send = chunk if in_place else small
            comm.allGather(send.data.ptr, big.data.ptr, count, nccl.NCCL_FLOAT32, s)
        else:
            recv = chunk if in_place else small
            comm.reduceScatter(big.data.ptr, recv.data.ptr, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, s)

    def _captured(self, calls):
        thread_local = self.cp.cuda.runtime.streamCaptureModeThreadLocal
        for gpu, stream in zip(self.gpus, self.streams):
            with self.cp.cuda.Device(gpu):
                stream.begin_capture(mode=thread_local)
        for _ in range(self.iters):
            calls()
        graphs = []
        for gpu, stream in zip(self.gpus, self.streams):
            with self.cp.cuda.Device(gpu):
                graphs.append(stream.end_capture())
        return graphs

    def _replay(self, graphs) -> None:
        for gpu, stream, graph in zip(self.gpus, self.streams, graphs):
            with self.cp.cuda.Device(gpu):
                graph.launch(stream)

    def _timed(self, run) -> float:
        """Seconds on GPU 0's clock (its stream) for what `run` enqueues on every GPU."""
        cp = self.cp
        for gpu, stream in zip(self.gpus, self.streams):
            with cp.cuda.Device(gpu):
                stream.synchronize()
        with cp.cuda.Device(self.gpus[0]):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(self.streams[0])
        run()
        with cp.cuda.Device(self.gpus[0]):
            end.record(self.streams[0])
            end.synchronize()
            return cp.cuda.get_elapsed_time(start, end) / 1e3


if __name__ == "__main__":
    sys.exit(main())
