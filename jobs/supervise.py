"""The one entry point of every workload: start this node's ranks, watch them, write the result.

Called the same way from every caller:
- the local commands (`wirewise bench ...`): `run_task(spec, run_dir)` in-process;
- a submitit task on Slurm: the same function, pickled (a multi-node campaign task: one per node);
- a multi-node Slurm step: `srun --ntasks-per-node=1 python -P -m wirewise.jobs.supervise RUN_DIR` (one
  supervisor per node).

Across nodes, each supervisor reads its node rank and the step's hosts from the environment
(wirewise.jobenv: SLURM_NODEID, SLURM_STEP_NODELIST expanded by submitit's own hostlist code),
without running a Slurm command; the first host is the master address. The supervisors watch each
other through the run folder (wirewise.jobs.peers), so a failure on any node ends the task on
every node within FAILURE_GRACE_S, and a lost node within PEER_SILENCE_S (wirewise.jobs.peers).

Each rank is a `python -P -m wirewise.jobs.worker` process in its own session, so a failed or hung run
is ended whole (process group kill) within the timeout and leaves no orphans. Ranks write
rank files; node 0's supervisor turns every node's into result records in one atomic
`result.json`, whose records name every node. Each node's exit status (main) says how the
task ended as that node saw it: 0 only when it succeeded.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from wirewise.atomic import write_json_atomic
from wirewise.clock import utcnow
from wirewise.jobenv import read_job_env
from wirewise.runs import RunPaths
from wirewise.task import TaskSpec
from wirewise.jobs.nccl_debug import debug_env, lines_of, read_debug_file
from wirewise.jobs.peers import Peers
from wirewise.jobs.records import build_records, gpu_pinning, node_topology, result_document

FAILURE_GRACE_S = 5.0  # after one rank fails, the others get this long to write their own files
POLL_S = 0.1

ProgressFn = Callable[[int, int, str], None]
RowFn = Callable[[dict[str, Any]], None]  # a row rank 0 has just measured, as its workload returns it


class StopRequests:
    """SIGINT (Ctrl-C) and SIGTERM (scancel) while a task runs: each only notes the request,
    and the supervisor, polling, stops the ranks and writes the `cancelled` result. Nothing
    is raised, so a second Ctrl-C a moment later cannot cut the clean-up or the result file short.

    SIGTERM cooperates with whoever handled it before (submitit logs and bypasses it, and
    decides on preemption and timeout from its own USR2 handler, which is left alone): their
    handler still runs. Outside the main thread no handler can be set; KeyboardInterrupt
    is then caught by the supervisor as before."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: str | None = None  # the first signal's name
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequests:
        if _in_main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._note)
        return self

    def __exit__(self, *_exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _note(self, sig: int, frame) -> None:
        self.received = self.received or signal.Signals(sig).name
        previous = self._previous.get(sig)
        if sig == signal.SIGTERM and callable(previous):
            previous(sig, frame)


@dataclass(frozen=True)
class Layout:
    node_rank: int
    nnodes: int
    master_addr: str
    master_port: int
    hosts: tuple[str, ...] = ()  # the step's nodes in node-rank order (multi-node only)

    @classmethod
    def detect(cls, spec: TaskSpec) -> Layout:
        if spec.nnodes == 1:
            return cls(0, 1, "127.0.0.1", _free_port())
        job = read_job_env()
        if not job.nodes:
            raise RuntimeError(f"{spec.nnodes} nodes requested but not inside a Slurm step (run it under srun)")
        hosts = tuple(job.nodes)
        if len(hosts) != spec.nnodes:
            raise RuntimeError(f"Slurm gave {len(hosts)} nodes ({','.join(hosts)}), the task asks for {spec.nnodes}")
        return cls(job.node_index, spec.nnodes, hosts[0], job.step_port, hosts)

    def node_of(self, rank: int, nproc_per_node: int) -> str | None:
        """The host a rank runs on (None on one node, where it goes without saying)."""
        return self.hosts[rank // nproc_per_node] if self.hosts else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """Runs in the child before exec: if the supervisor dies (even by SIGKILL), so does the rank."""
    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def _absolute_only(search_path: str) -> str:
    """A PYTHONPATH without its relative entries ('', '.', 'lib'): they name the folder the
    user runs wirewise from, whose files must not stand in for wirewise's code (see -P below)."""
    return os.pathsep.join(entry for entry in search_path.split(os.pathsep) if os.path.isabs(entry))


def _rank_env(spec: TaskSpec, layout: Layout, local_rank: int, run_dir: Path) -> dict[str, str]:
    env = {**os.environ, **spec.env}
    if "PYTHONPATH" in env:
        env["PYTHONPATH"] = _absolute_only(env["PYTHONPATH"])
    rank = layout.node_rank * spec.nproc_per_node + local_rank
    env.update(
        RANK=str(rank),
        WORLD_SIZE=str(spec.world_size),
        LOCAL_RANK=str(local_rank),
        LOCAL_WORLD_SIZE=str(spec.nproc_per_node),
        GROUP_RANK=str(layout.node_rank),
        MASTER_ADDR=layout.master_addr,
        MASTER_PORT=str(layout.master_port),
        PYTHONUNBUFFERED="1",
    )
    env.update(debug_env(env, run_dir, rank))
    env.update(gpu_pinning(spec))
    if not spec.gpus:
        # Two ranks on two cores must not each start a thread per core.
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // spec.nproc_per_node)))
    return env


class RankGroup:
    """This node's rank processes, each in its own session so a kill takes its children too."""

    def __init__(self, spec: TaskSpec, layout: Layout, run_dir: Path) -> None:
        self.procs: dict[int, subprocess.Popen] = {}
        self.stopped_by_us: set[int] = set()  # ranks still running when kill() began
        self.stopped_for: str | None = None  # a peer node's failure or loss that stopped these ranks
        self.first_rank = layout.node_rank * spec.nproc_per_node
        self.nccl_logs: dict[int, Path] = {}  # each rank's NCCL INFO file (wirewise.jobs.nccl_debug)
        self.started = time.time()
        paths = RunPaths(run_dir)
        for local_rank in range(spec.nproc_per_node):
            rank = self.first_rank + local_rank
            log = open(paths.rank_log(rank), "wb")
            env = _rank_env(spec, layout, local_rank, run_dir)
            self.procs[rank] = subprocess.Popen(
                # -P: the folder a user runs wirewise from is not on the ranks' import path, so
                # a stray jobs/ or wirewise/ there cannot stand in for wirewise's own code.
                [sys.executable, "-P", "-m", "wirewise.jobs.worker", str(run_dir)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
            self.nccl_logs[rank] = lines_of(env, paths.rank_log(rank), self.procs[rank].pid)
            log.close()

    def exit_codes(self) -> dict[int, int | None]:
        return {rank: proc.poll() for rank, proc in self.procs.items()}

    def kill(self) -> None:
        """SIGTERM the process groups, SIGKILL whatever is left a moment later, reap all."""
        self.stopped_by_us = {rank for rank, proc in self.procs.items() if proc.poll() is None}
        for sig, wait_s in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            for proc in self.procs.values():
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and any(p.poll() is None for p in self.procs.values()):
                time.sleep(POLL_S)
        for proc in self.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # children a rank left behind (its group outlives it)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()


class ProgressReader:
    """Follows rank 0's progress.jsonl and forwards new events: each to `on_progress`, the row
    an event carries (a sweep's size just measured) to `on_row`."""

    def __init__(self, path: Path, on_progress: ProgressFn | None, on_row: RowFn | None = None) -> None:
        self.path, self.on_progress, self.on_row, self.offset = path, on_progress, on_row, 0

    def poll(self) -> None:
        if (self.on_progress is None and self.on_row is None) or not self.path.exists():
            return
        with open(self.path) as fh:
            fh.seek(self.offset)
            for line in fh:
                if not line.endswith("\n"):
                    break  # half-written line: read it next time
                self.offset += len(line)
                event = json.loads(line)
                if self.on_progress is not None:
                    self.on_progress(event["done"], event["total"], event.get("label", ""))
                if self.on_row is not None and "row" in event:
                    self.on_row(event["row"])


def _supervise(group: RankGroup, timeout_s: float, progress: ProgressReader, stop: StopRequests,
               peers: Peers | None = None) -> str | None:
    """Wait for the ranks. Returns None when all exited 0, else 'failed', 'timeout' or 'cancelled'.
    A peer node that failed or was lost counts as a failure here (group.stopped_for says which)."""
    deadline = time.monotonic() + timeout_s
    failed_at: float | None = None
    try:
        while True:
            if stop.received:
                return "cancelled"
            progress.poll()
            codes = group.exit_codes()
            if all(code == 0 for code in codes.values()):
                return None
            if all(code is not None for code in codes.values()):
                return "failed"
            if failed_at is None and any(code not in (None, 0) for code in codes.values()):
                failed_at = time.monotonic()
            if failed_at is None and peers is not None:
                group.stopped_for = peers.problem()
                if group.stopped_for:
                    failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() - failed_at > FAILURE_GRACE_S:
                return "failed"
            if time.monotonic() > deadline:
                return "timeout"
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        return "cancelled"
    finally:
        progress.poll()
        group.kill()


def _read_rank_files(run_dir: Path, ranks) -> dict[int, dict[str, Any]]:
    files = {}
    for rank in ranks:
        path = RunPaths(run_dir).rank_outcome(rank)
        if path.exists():
            files[rank] = json.loads(path.read_text())
    return files


def _log_tail(run_dir: Path, rank: int, lines: int = 15) -> str:
    path = RunPaths(run_dir).rank_log(rank)
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class Ended:
    """How ranks ended: one node's (its RankGroup), or every node's (node 0 merges them)."""

    how: str | None  # None: every rank exited 0; else failed, timeout or cancelled
    codes: dict[int, int | None]  # exit code per rank (negative: the signal)
    stopped: set[int]  # ranks still running when their supervisor stopped them
    files: dict[int, dict[str, Any]]  # the rank files written
    stopped_for: str | None = None  # the peer node's failure or loss that stopped them
    lost: list[str] = field(default_factory=list)  # why the nodes that said nothing are lost

    @classmethod
    def of_group(cls, how: str | None, group: RankGroup, run_dir: Path) -> Ended:
        """This node's ranks as they ended; each rank file gains what its NCCL INFO file says the
        wire carried (`wire`), so that node 0 reads every node's."""
        files = _read_rank_files(run_dir, group.procs)
        for rank, outcome in files.items():
            outcome["wire"] = read_debug_file(group.nccl_logs[rank], group.started)
        return cls(how, group.exit_codes(), group.stopped_by_us, files, group.stopped_for)

    def report(self) -> dict[str, Any]:
        """What a node tells node 0 at its end (wirewise.jobs.peers)."""
        return {"how": self.how, "codes": self.codes, "stopped": sorted(self.stopped),
                "stopped_for": self.stopped_for, "ranks": self.files}

    @classmethod
    def merged(cls, own: Ended, peers: dict[int, dict[str, Any] | None], missing) -> Ended:
        """Every node's view in one. How the task ended is how the nodes that ended on their
        own did (a node stopped for a peer only followed it); a lost node (`missing(k)` says
        why) is a failure, a peer still running when the step was stopped (None) was cancelled."""
        ends, lost, cut_short = [own], [], False
        for k, report in sorted(peers.items()):
            if report is None:
                why = missing(k)
                lost += [why] if why else []
                cut_short = cut_short or not why
                continue
            ends.append(cls(report["how"], {int(r): c for r, c in report["codes"].items()}, set(report["stopped"]),
                            {int(r): f for r, f in report["ranks"].items()}, report.get("stopped_for")))
        causes = {e.how for e in ends if e.how is not None and not e.stopped_for} | ({"cancelled"} if cut_short else set())
        if lost or "failed" in causes or (not causes and any(e.how for e in ends)):
            how = "failed"
        else:
            how = "timeout" if "timeout" in causes else ("cancelled" if causes else None)
        return cls(how, {r: c for e in ends for r, c in e.codes.items()}, {r for e in ends for r in e.stopped},
                   {r: f for e in ends for r, f in e.files.items()},
                   next((e.stopped_for for e in ends if e.stopped_for), None), lost)


def _outcome(ended: Ended, run_dir: Path, spec: TaskSpec, stop: StopRequests, layout: Layout) -> tuple[str, str | None]:
    """(status, error) for the whole task from how the ranks ended and what they wrote."""
    if ended.how is None:
        return "ok", None
    timeout_s = spec.timeout_s

    def rank_name(rank: int) -> str:
        host = layout.node_of(rank, spec.nproc_per_node)
        return f"rank {rank} on {host}" if host else f"rank {rank}"

    reported = {rank: f for rank, f in ended.files.items() if f.get("status") not in (None, "ok")}
    if ended.how in ("timeout", "cancelled") and not reported:
        running = [r for r, code in ended.codes.items() if code is None or code < 0]
        what = f"timed out after {timeout_s:g} s" if ended.how == "timeout" else f"cancelled ({stop.received or 'interrupted'})"
        return ended.how, f"{what}; ranks still running: {running}"
    # Ranks that died without a word (killed by a signal, or the interpreter itself failed)
    # before their supervisor stopped anything, and nodes lost: the likely cause of what the
    # others report.
    silent = [
        (r, c) for r, c in sorted(ended.codes.items())
        if c not in (None, 0) and r not in ended.files and r not in ended.stopped
    ]
    causes = [_ended_with(rank_name(r), c) for r, c in silent] + ended.lost
    if reported:
        status = "oom" if any(f["status"] == "oom" for f in reported.values()) else "failed"
        rank, first = next((r, f) for r, f in sorted(reported.items()) if f["status"] == status)
        error = f"{rank_name(rank)}: {first.get('error')}"
        if status == "failed" and causes:
            error = f"{causes[0]}; then {error}"
        return status, error
    if silent:
        rank = silent[0][0]
        return "failed", f"{causes[0]}\n{_log_tail(run_dir, rank)}".strip()
    if causes:
        return "failed", causes[0]
    if ended.stopped_for:
        return "failed", f"stopped: {ended.stopped_for}"
    rank, code = next((r, c) for r, c in sorted(ended.codes.items()) if c not in (None, 0))
    return "failed", f"{_ended_with(rank_name(rank), code)}\n{_log_tail(run_dir, rank)}".strip()


def _ended_with(rank: str, code: int) -> str:
    return f"{rank} ended with {f'signal {-code}' if code < 0 else f'exit code {code}'}"


def run_task(spec: TaskSpec, run_dir: str | Path, on_progress: ProgressFn | None = None,
             on_row: RowFn | None = None) -> Path:
    """Run this node's share of the task. Returns the file that says how it ended ("status"):
    the task's result file on node 0 (and on a single node), this node's own report elsewhere.
    `on_row` gets each row as rank 0 measures it (the result file has them all at the end)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with StopRequests() as stop:  # from the start: a Ctrl-C at any point still leaves a result file
        started = utcnow()
        layout = Layout.detect(spec)
        paths = RunPaths(run_dir)
        if not paths.spec.exists():  # multi-node: the first node to get here writes it
            write_json_atomic(paths.spec, spec.model_dump(mode="json"))
        peers = Peers(run_dir, layout.node_rank, layout.nnodes, layout.hosts) if layout.nnodes > 1 else None
        topo, topo_error = node_topology(spec)
        from wirewise.topology import node_name

        node = node_name(topo, spec.node if layout.node_rank == 0 else None)
        fingerprint = topo.fingerprint if topo else None
        if peers is not None:
            peers.describe(node=node, fingerprint=fingerprint)
        group = RankGroup(spec, layout, run_dir)
        how = _supervise(group, spec.timeout_s, ProgressReader(paths.progress, on_progress, on_row), stop, peers)
        ended = Ended.of_group(how, group, run_dir)
        nodes, wirings = [(node, fingerprint)], []
        if peers is not None:
            status, error = _outcome(ended, run_dir, spec, stop, layout)
            peers.end({"status": status, "error": error, "topology": topo.model_dump(mode="json") if topo else None,
                       **ended.report()})
            if layout.node_rank != 0:
                return peers.path
            ended, others, wirings = _gather(peers, ended, spec, started, stop)
            nodes += others
        status, error = _outcome(ended, run_dir, spec, stop, layout)
        result_path = paths.result
        records = build_records(spec, ended.files, status, error, topo, topo_error, nodes, started,
                                utcnow())
        # CPU ranks did not use the wiring: node_topology gave none, and none is stored as what they ran on.
        write_json_atomic(result_path, result_document(status, topo, records, node_topologies=wirings))
    return result_path


def _gather(peers: Peers, own: Ended, spec: TaskSpec, started: datetime, stop: StopRequests):
    """Node 0, its ranks done: every node's end merged into one, the other nodes' (name,
    fingerprint) in node-rank order, and their wirings. The others end within the task's
    timeout and their clean-up, or fall silent; a SIGTERM (the job ended) cuts the wait short."""
    left = spec.timeout_s - (utcnow() - started).total_seconds()
    reports = peers.wait_for_ends(max(left, 0) + FAILURE_GRACE_S + 10, lambda: stop.received is not None)
    others = [(r["node"], r.get("fingerprint")) if r else (peers.name(k), None) for k, r in sorted(reports.items())]
    wirings = [{"node": r["node"], "topology": r["topology"]} for r in reports.values() if r and r.get("topology")]
    return Ended.merged(own, reports, peers.missing), others, wirings


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def main(argv: list[str]) -> int:
    """`python -P -m wirewise.jobs.supervise RUN_DIR`: the multi-node Slurm step (RUN_DIR/spec.json on shared storage)."""
    run_dir = Path(argv[1])
    spec = TaskSpec.model_validate_json(RunPaths(run_dir).spec.read_text())
    path = run_task(spec, run_dir)
    return 0 if json.loads(path.read_text())["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
