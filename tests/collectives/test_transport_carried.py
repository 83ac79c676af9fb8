"""Issue 30 item 6: the transport NCCL's INFO lines show a run used is recorded beside the one
it asked for. A CPU (gloo) run makes no NCCL lines and no GPU is here, so a recorded NCCL INFO
log stands in for NCCL, and only for NCCL: a sitecustomize module on the ranks' PYTHONPATH writes it,
in each rank process, to the file NCCL_DEBUG_FILE names (%h and %p expanded as NCCL's debug.cc
does), which is what NCCL itself does in a rank. Everything after that is the compute side's own
path, as a GPU run takes it: the supervisor reads each rank's file when the ranks end, the rank
files carry it, node 0 merges every rank's into the records, the store keeps it. The real GPU
check is tests/gpu/collectives_check.sh."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import FIXTURES, wirewise_json

LOGS = FIXTURES / "nccl-info"
RANK_LOGS = {0: LOGS / "2node-16gpu-p2p-ipc-read-net-socket-nccl-issue-952.txt", 1: LOGS / "h800-4gpu-shm-nccl-issue-1609.txt"}

SITECUSTOMIZE = """
import os, socket, sys
if os.environ.get("RANK") in {ranks!r} and os.environ.get("NCCL_DEBUG") == "INFO":
    text = open({logs!r}[os.environ["RANK"]]).read()
    if os.environ.get("NCCL_DEBUG_FILE"):
        path = (os.environ["NCCL_DEBUG_FILE"].replace("%h", socket.gethostname().split(".")[0])
                .replace("%p", str(os.getpid())))
        with open(path, "w") as fh:
            fh.write(text)
    else:  # NCCL without a file prints to stdout
        sys.stdout.write(text)
        sys.stdout.flush()
"""


def _stand_in_for_nccl(tmp_path: Path) -> str:
    folder = tmp_path / "fake_nccl"
    folder.mkdir()
    logs = {str(rank): str(path) for rank, path in RANK_LOGS.items()}
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(ranks=set(logs), logs=logs))
    return str(folder)


@pytest.mark.parametrize("user", ["nothing", "a file", "INFO"])
def test_each_ranks_nccl_info_file_becomes_the_records_transport(tmp_path, db_url, user):
    """Into the run folder where the user set nothing; into the user's own NCCL_DEBUG_FILE (with
    %h.%p) where set; into the rank's own log where the user set NCCL_DEBUG alone."""
    debug_file = "nccl.%h.%p.log" if user == "a file" else None
    env = {"WIREWISE_RUNS": str(tmp_path / "runs"), "PYTHONPATH": _stand_in_for_nccl(tmp_path),
           "NCCL_DEBUG_FILE": str(tmp_path / debug_file) if debug_file else None,
           "NCCL_DEBUG": None if user == "nothing" else "INFO"}
    rows = wirewise_json("bench", "collectives", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce",
                         "-b", "1K", "-e", "1K", "--iters", "2", "--warmup", "1", "--db", db_url, env=env)
    assert {row["transport_carried"] for row in rows} == {"P2P/IPC+SHM+NET/Socket"}
    assert {row["transport"] for row in rows} == {"default"}  # what was asked stays beside it

    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow

    with Store(db_url).session() as session:
        stored = session.scalars(select(ResultRow)).all()
    assert {row.transport_carried for row in stored} == {"P2P/IPC+SHM+NET/Socket"}
    assert stored[0].extra["nccl"]["connections"] == {"P2P/IPC": 14, "SHM": 12, "NET/Socket": 2}
    # wirewise's own setting is not the run's environment; the user's is
    assert (stored[0].env.get("NCCL_DEBUG_FILE"), stored[0].env.get("NCCL_DEBUG")) == (env["NCCL_DEBUG_FILE"], env["NCCL_DEBUG"])
    [run_dir] = {path.parent for path in (tmp_path / "runs").rglob("rank0.json")}
    # the rank's own output stays free of NCCL's lines unless the user sent them there
    assert ("NCCL INFO" in (run_dir / "rank0.log").read_text()) == (user == "INFO")
    if user == "nothing":
        assert (run_dir / "nccl-rank1.log").read_text() == RANK_LOGS[1].read_text()
    elif user == "a file":
        assert len(list(tmp_path.glob("nccl.*.log"))) == 2


def test_a_gloo_run_without_nccl_lines_records_none(tmp_path, db_url):
    rows = wirewise_json("bench", "collectives", "--backend", "gloo", "--nproc", "2", "--ops", "all_reduce",
                         "-b", "1K", "-e", "1K", "--iters", "2", "--warmup", "1", "--db", db_url,
                         env={"WIREWISE_RUNS": str(tmp_path / "runs")})
    assert {row["transport_carried"] for row in rows} == {None}
