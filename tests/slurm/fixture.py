"""pytest plugin: a real one-node Slurm cluster (tests/slurm/cluster.sh) with accounting and fake GPUs.

Fixture:
    slurm_cluster (session): starts the cluster (a no-op when it already runs), points SLURM_CONF
        at it for the whole session (sbatch, sacct and submitit find it), yields a SlurmCluster.
        At session end the last pytest session using it (an xdist worker, say) stops it if a test
        session started it; WIREWISE_KEEP_SERVICES=1 keeps it running (the next start is ~0.2 s).

When the cluster cannot start (not root, apt fails, a daemon dies), the fixture fails with the
script's message if CI is set and skips with it otherwise.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from tests.services import SharedUse, start_service

SCRIPT = Path(__file__).resolve().with_name("cluster.sh")
DEFAULT_DIR = "/tmp/wirewise-slurm"
DEFAULT_GRES_HEADER = "# wirewise-slurm default"  # first line of cluster.sh's own gres.conf


def fake_gres(text: str, dev_dir: str | Path, node: str | None = None, keep_cores: bool = False) -> str:
    """Turn a real gres.conf (e.g. from `wirewise topo slurm`) into one the test cluster can run.

    - `File=/dev/nvidiaN` (and ranges such as `/dev/nvidia[0-3]`) point at the fake devices in
      dev_dir (`dev_dir/nvidiaN`, character devices 195:N; cluster.sh creates missing ones);
      /dev/nvidiactl, /dev/nvidia-uvm and other paths are left alone.
    - `AutoDetect=` becomes `off` (added when absent): there is no NVML on the test machine.
    - `NodeName=` becomes `node` when given, so the lines apply to the test node.
    - `Cores=` / `CPUs=` are dropped unless keep_cores: a real node's core numbers need not exist on
      the test node (2 sockets x 8 cores), and slurmd rejects GRES bound to cores it lacks.
    Links=, Type= and everything else are kept.
    """
    dev = str(dev_dir).rstrip("/")
    out = re.sub(r"/dev/nvidia(?=\d|\[)", lambda _m: f"{dev}/nvidia", text)
    out = re.sub(r"(?i)\bAutoDetect=\S*", "AutoDetect=off", out)
    if not re.search(r"(?im)^\s*AutoDetect=", out):
        out = "AutoDetect=off\n" + out
    if node is not None:
        out = re.sub(r"(?i)\bNodeName=\S+", lambda _m: f"NodeName={node}", out)
    if not keep_cores:
        out = re.sub(r"(?i)[ \t]+(?:Cores|CPUs)=\S+", "", out)
    return out


def cancel_jobs_under(folder: Path) -> None:
    """scancel the jobs whose working folder is under `folder`: a failed test must not leave its
    whole-node jobs holding the nodes (nor a requeued one waiting for them)."""
    jobs = subprocess.run(["squeue", "-h", "-o", "%i %Z"], capture_output=True, text=True).stdout.splitlines()
    mine = [line.split()[0] for line in jobs if len(line.split()) == 2 and line.split()[1].startswith(str(folder))]
    if mine:
        subprocess.run(["scancel", *mine], check=False)


def sbatch(*args: str, **run: object) -> str:
    """`sbatch --parsable ARGS`: the job id; a refusal fails the test with sbatch's words."""
    out = subprocess.run(["sbatch", "--parsable", *args], capture_output=True, text=True, timeout=60, **run)
    assert out.returncode == 0, f"sbatch {shlex.join(args)}: {out.stderr.strip()}"
    return out.stdout.strip().split(";")[0]


def sbatch_to_end(args: list[str], timeout_s: float, **run: object) -> tuple[str, int]:
    """sbatch ARGS, then wait for the job's end: (job id, exit status: the batch script's, 1
    when a signal ended it, as sbatch --wait says it). Not `sbatch --wait`: its _job_wait
    (Slurm's src/sbatch/sbatch.c) asks after 2, 10, 42, 74 s (each sleep x4 up to 32 s while
    under MinJobAge/2, 300 s here), so a job done in 15 s is seen done at 42 s; this asks
    scontrol every 0.2 s. Ended is what the Slurm executor calls ended (neither waiting nor going)."""
    from wirewise.orchestrator.executor.core import PENDING, RUNNING
    from wirewise.orchestrator.executor.slurm import _neutral

    job_id = sbatch(*args, **run)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        shown = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True).stdout
        fields = dict(item.split("=", 1) for item in shown.split() if "=" in item)
        if "JobState" in fields and _neutral(fields["JobState"]) not in (PENDING, RUNNING):
            status, signal = fields.get("ExitCode", "1:0").split(":")
            return job_id, int(status) if signal == "0" else 1
        time.sleep(0.2)
    subprocess.run(["scancel", job_id], check=False)
    raise AssertionError(f"job {job_id} ({shlex.join(args)}) did not end within {timeout_s:.0f} s")


def sacct_rows(job_id: str, fields: str = "JobID,State") -> list[list[str]]:
    out = subprocess.run(["sacct", "-n", "-P", "-j", job_id, "-o", fields], capture_output=True, text=True, check=True)
    return [line.split("|") for line in out.stdout.splitlines() if line]


def wait_sacct(job_id: str, state: str, timeout: float = 15, row: str | None = None) -> list[list[str]]:
    """sacct lags the job's end by a second or two: poll until the job's own row (or `row`, a
    step: JOB.0) has `state`; the job's rows (JobID, State, AllocTRES)."""
    row = row or job_id
    deadline = time.monotonic() + timeout
    while True:
        rows = sacct_rows(job_id, "JobID,State,AllocTRES")
        if any(r[0] == row and r[1] == state for r in rows):
            return rows
        if time.monotonic() > deadline:
            raise AssertionError(f"sacct never showed {row} {state}: {rows}")
        time.sleep(0.2)


def parse_exports(text: str) -> dict[str, str]:
    """`export K=V` lines (values quoted by printf %q) -> dict."""
    env = {}
    for line in text.splitlines():
        parts = shlex.split(line)
        if len(parts) == 2 and parts[0] == "export" and "=" in parts[1]:
            key, value = parts[1].split("=", 1)
            env[key] = value
    return env


@dataclass
class SlurmCluster:
    """The running test cluster. Jobs go to `partition`; `gpu_devices` are the fake GPUs of the
    default gres.conf (dev_dir/nvidia0..7)."""

    state_dir: Path
    partition: str
    node: str
    conf: Path  # slurm.conf, also in env["SLURM_CONF"]
    dev_dir: Path
    gpu_devices: list[Path]
    env: dict[str, str] = field(default_factory=dict)  # what `cluster.sh env` exports
    script: Path = SCRIPT
    users: SharedUse | None = field(default=None, repr=False)

    def used_by_other_sessions(self) -> bool:
        """Another pytest session uses this cluster now: do not stop it or change its GRES."""
        return self.users is not None and self.users.others()

    def run_script(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        """Run cluster.sh with this cluster's state folder; returns the finished process."""
        env = {**os.environ, "WIREWISE_SLURM_DIR": str(self.state_dir)}
        return subprocess.run(
            [str(self.script), *args], env=env, capture_output=True, text=True, timeout=timeout
        )

    def _start(self, command: str, gres_conf: str | Path | None) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            args = [command]
            if gres_conf is not None:
                if isinstance(gres_conf, Path):
                    path = gres_conf
                else:
                    path = Path(tmp) / "gres.conf"
                    path.write_text(gres_conf)
                args += ["--gres-conf", str(path)]
            proc = self.run_script(*args)
        if proc.returncode != 0:
            raise RuntimeError(f"cluster.sh {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")

    def use_gres(self, gres_conf: str | Path | None = None) -> None:
        """Run with this gres.conf (text, or a Path to a file); None: the default 8 fake GPUs.
        slurmctld and slurmd restart only when it differs from the current one; returns once
        the node is usable again. Feed real gres.conf text through `fake_gres` first."""
        self._start("start", gres_conf)

    def restart(self, gres_conf: str | Path | None = None) -> None:
        """Restart slurmctld and slurmd (with gres_conf, as in use_gres) and wait for the node."""
        self._start("restart", gres_conf)

    @contextlib.contextmanager
    def gres(self, gres_conf: str | Path) -> Iterator[SlurmCluster]:
        """`with cluster.gres(text):` runs the block with that gres.conf, then restores the default."""
        self.use_gres(gres_conf)
        try:
            yield self
        finally:
            self.use_gres(None)

    def fake_gres(self, text: str, keep_cores: bool = False) -> str:
        """fake_gres() for this cluster: its fake devices and its node name."""
        return fake_gres(text, self.dev_dir, node=self.node, keep_cores=keep_cores)

    def gres_conf(self) -> str:
        """The gres.conf the cluster runs with now."""
        return (self.state_dir / "etc" / "gres.conf").read_text()


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    state_dir = Path(os.environ.get("WIREWISE_SLURM_DIR", DEFAULT_DIR))
    env = {**os.environ, "WIREWISE_SLURM_DIR": str(state_dir)}
    _, users = start_service("Slurm test cluster", SCRIPT, env, state_dir)
    exports = parse_exports(
        subprocess.run([str(SCRIPT), "env"], env=env, capture_output=True, text=True, check=True).stdout
    )
    state_dir = Path(exports["WIREWISE_SLURM_DIR"])  # absolute, as the script resolved it
    dev_dir = Path(exports["WIREWISE_SLURM_DEV"])
    cluster = SlurmCluster(
        state_dir=state_dir,
        partition=exports["WIREWISE_SLURM_PARTITION"],
        node=exports["WIREWISE_SLURM_NODE"],
        conf=Path(exports["SLURM_CONF"]),
        dev_dir=dev_dir,
        # The default gres.conf (what `start` without --gres-conf runs) names one device a line.
        gpu_devices=[Path(f) for f in re.findall(r"File=(\S+)", (state_dir / "etc" / "gres.conf").read_text())],
        env=exports,
        users=users,
    )
    with pytest.MonkeyPatch.context() as mp:
        for key, value in exports.items():
            mp.setenv(key, value)
        yield cluster
    # The last session out stops it, or leaves the default gres.conf for whoever runs next.
    users.leave(stop=lambda: cluster.run_script("stop", timeout=120), tidy=lambda: _default_gres(cluster))


def _default_gres(cluster: SlurmCluster) -> None:
    if not cluster.gres_conf().startswith(DEFAULT_GRES_HEADER):
        cluster.use_gres(None)
