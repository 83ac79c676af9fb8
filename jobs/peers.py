"""The supervisors of one multi-node task, one per node, and what they tell each other.

They share the task's run folder (shared storage, as the campaign folder is), and each keeps
one file there, `node<K>.json`: who it is (host, fingerprint), a beat a thread bumps every
HEARTBEAT_S from start to end (through a slow probe and the ranks' clean-up too), and at its
end how its ranks ended, with their rank files and the node's wiring. The wiring is written
that once: the beat rewrites the file every second, and only node 0 reads the wiring, from
the end report (an 8-GPU H200 NVL node's is 4.1 kB of JSON; the beat file without it 0.14 kB).
Each supervisor reads the others' files as it polls its own ranks:

- a peer that ended badly (a rank failed, out of memory, timed out) is a reason to stop: the
  ranks here get FAILURE_GRACE_S to fail on their own (their collective lost its peer; their
  own error is the better record), then they are stopped;
- a peer whose beat has not moved for PEER_SILENCE_S (PEER_START_S before its file first
  appears: imports on a busy shared file system are slow) is lost, its node gone: the same.

So no node waits out the task's timeout for a peer that died, and node 0, the one that writes
the result, reads every rank's file from the peers' ends, or says which node was lost.

The files are rewritten in place, not renamed: an NFS client opening a file sees its latest
contents (close-to-open consistency), where a rename can hide behind its cached directory
entries for a minute. A reader may catch a half-written file; it only counts as a change
(the peer is alive) and is read whole at the next poll.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from wirewise.runs import RunPaths

HEARTBEAT_S = 1.0
# 20 missed beats: far longer than a loaded node stalls a sleeping supervisor, far shorter
# than the default task timeout (600 s).
PEER_SILENCE_S = 20.0
PEER_START_S = 60.0
STOP_WAIT_S = 1.0  # after a SIGTERM, for peers to end before node 0 writes what it knows
STOPPED_SILENCE_S = 3.0  # then: 3 missed beats make a peer lost rather than stopped with the step


class Peers:
    """This node's file, and what the other nodes' files said when last read."""

    def __init__(self, run_dir: Path, node_rank: int, nnodes: int, hosts: tuple[str, ...]) -> None:
        self.run_dir, self.node_rank, self.hosts = run_dir, node_rank, hosts
        self.path = RunPaths(run_dir).node_beat(node_rank)
        self.info: dict[str, Any] = {"node_rank": node_rank, "node": hosts[node_rank], "state": "running"}
        self.beats = 0
        self.last_read = 0.0
        now = time.monotonic()
        self.others = [k for k in range(nnodes) if k != node_rank]
        self.seen: dict[int, tuple[str | None, float]] = {k: (None, now) for k in self.others}  # text, when it changed
        self.ended: dict[int, dict[str, Any]] = {}
        self.stopped = False  # this step was stopped (SIGTERM) while node 0 waited for the others
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._write()
        self._beating = threading.Thread(target=self._beat, name="wirewise-peers", daemon=True)
        self._beating.start()

    def describe(self, **info: Any) -> None:
        """What the others learn about this node with every beat: `info` (name, fingerprint).
        Its wiring goes once, in its end report (end(report) with "topology")."""
        self._write(info)

    def end(self, report: dict[str, Any]) -> None:
        """This node's last word: how its ranks ended ("status", "error"), their files, and
        its wiring ("topology")."""
        self._stop.set()
        self._beating.join()
        self._write({**report, "state": "ended"})

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.beats += 1
            self._write()

    def problem(self) -> str | None:
        """Why this node should stop its ranks: a peer that ended badly or was lost; None if none."""
        if time.monotonic() - self.last_read >= HEARTBEAT_S:
            self.read()
        for k in self.others:
            report = self.ended.get(k)
            if report is not None and report.get("status") != "ok":
                return f"node {k} ({self.name(k)}) ended {report.get('status')}: {report.get('error')}"
            if self.lost(k):
                return self.missing(k)
        return None

    def wait_for_ends(self, limit_s: float, stopping) -> dict[int, dict[str, Any] | None]:
        """Every peer's end report; None for a peer that was lost, had not ended by limit_s, or
        had not ended when `stopping()` turned true (Slurm ends a job whose node failed, after
        SlurmdTimeout, with SIGTERM and KillWait seconds later SIGKILL: the result must be
        written by then). What became of those: `missing(k)`."""
        deadline = time.monotonic() + limit_s
        stopped_at = None
        while True:
            self.read()
            if all(k in self.ended or self.lost(k) for k in self.others) or time.monotonic() > deadline:
                break
            if stopped_at is None and stopping():
                stopped_at = time.monotonic()
            if stopped_at is not None and time.monotonic() - stopped_at > STOP_WAIT_S:
                self.stopped = True
                break
            time.sleep(HEARTBEAT_S / 4)
        return {k: self.ended.get(k) for k in self.others}

    def lost(self, k: int) -> bool:
        """No word from the peer for PEER_SILENCE_S (PEER_START_S before its first); once this
        step is being stopped, for STOPPED_SILENCE_S (a peer that still beats is being stopped too)."""
        text, changed = self.seen[k]
        limit = STOPPED_SILENCE_S if self.stopped else PEER_SILENCE_S if text is not None else PEER_START_S
        return k not in self.ended and time.monotonic() - changed > limit

    def missing(self, k: int) -> str | None:
        """Why a peer that did not end is lost; None: it was still running when this step was stopped."""
        if not self.lost(k):
            return None
        text, changed = self.seen[k]
        if text is None:
            return f"node {k} ({self.name(k)}) lost: its supervisor never started"
        return f"node {k} ({self.name(k)}) lost: no word from its supervisor for {time.monotonic() - changed:.0f} s"

    def name(self, k: int) -> str:
        return self.hosts[k] if k < len(self.hosts) else f"node {k}"

    def read(self) -> None:
        self.last_read = time.monotonic()
        for k in self.others:
            if k in self.ended:
                continue
            try:
                text = RunPaths(self.run_dir).node_beat(k).read_text()
            except OSError:
                continue
            if text != self.seen[k][0]:
                self.seen[k] = (text, time.monotonic())
            try:
                doc = json.loads(text)
            except ValueError:
                continue  # caught mid-write
            if doc.get("state") == "ended":
                self.ended[k] = doc

    def _write(self, update: dict[str, Any] | None = None) -> None:
        with self._lock:  # the beat thread writes too
            self.info.update(update or {})
            text = json.dumps({**self.info, "beat": self.beats}, default=str)
            with open(self.path, "w", encoding="utf-8") as fh:
                fh.write(text)
