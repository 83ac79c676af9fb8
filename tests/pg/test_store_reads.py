"""The store's read path on SQLite and on the real PostgreSQL: the same stored files give one
answer through every read (store/read.py writes each query once for both; JSON, booleans and
timestamps come back from SQLite as text and integers, from psycopg decoded)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from tests.conftest import wirewise, wirewise_json
from tests.report.conftest import import_log
from tests.topology.common import NVL_QUADS, TOPO
from tests.topology.renumber import renumber_text

pytestmark = pytest.mark.postgres
A100_HGX = TOPO / "a100-sxm-4gpu-hgx-nv4-polaris-2nic-mangled-header.txt"


@pytest.fixture(scope="module")
def urls(pg_server, tmp_path_factory) -> Iterator[list[str]]:
    """A SQLite file and a PostgreSQL database holding the same: two H100 nodes' nccl-tests logs
    with their wiring, a quad node saved twice (the second time renumbered) and an HGX node.
    Built once for the module: the tests only read, but the campaign test's own rows."""
    tmp_path = tmp_path_factory.mktemp("store-reads")
    sqlite_url, pg_url = f"sqlite:///{tmp_path / 'wirewise.db'}", pg_server.create_database()
    renumbered = tmp_path / "renumbered.txt"
    renumbered.write_text(renumber_text(NVL_QUADS.read_text(), [7, 3, 5, 1, 6, 2, 4, 0]))
    for url in (sqlite_url, pg_url):
        for node, factor in (("h100-a", 1.0), ("h100-b", 0.99)):
            import_log(tmp_path, url, node, factor)
        for topology, node in ((NVL_QUADS, "quad-a"), (renumbered, "quad-a"), (A100_HGX, "hgx")):
            wirewise("topo", "save", "--from-file", str(topology), "--node", node, "--db", url, check=True)
    yield [sqlite_url, pg_url]
    pg_server.drop_database(pg_url.rsplit("/", 1)[1])


def _without_times(value):
    """The answer without the moments it was stored at (they differ between the two stores)."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k not in ("first_seen", "last_seen", "created_at")}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def _answer(args: tuple[str, ...], url: str):
    """The command's JSON; doctor may also answer 3 (two nodes: too few results to judge)."""
    if args[0] != "doctor":
        return wirewise_json(*args, "--db", url)
    proc = wirewise(*args, "--db", url, "--json")
    assert proc.returncode in (0, 1, 3), proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("args", [
    ("topo", "list"),
    # its wiring and measured history (stored without GPU names: place asks for the model)
    ("place", "--node", "h100-a", "--gpus", "8", "--free", "0-7", "--gpu-name", "NVIDIA H100 80GB HBM3"),
    ("place", "--node", "quad-a", "--gpus", "4", "--gpu-name", "NVIDIA H200 NVL"),  # the renumbered quads, in the node's own numbering
    ("doctor", "--node", "h100-b"),
    ("compare", "node:h100-a", "node:h100-b"),
    ("results", "--fabric", "nvlink-all", "--group-by", "node,bytes,placement,in_place"),
])
def test_every_read_gives_one_answer_on_both(urls, args):
    sqlite_answer, pg_answer = (_answer(args, url) for url in urls)
    assert _without_times(sqlite_answer) == _without_times(pg_answer) not in ([], {})
    if args[:3] == ("place", "--node", "h100-a"):
        assert (pg_answer["basis"], pg_answer["results"]) == ("measured", 2)  # 2 nodes at 16 GiB, one case: out of place


def test_a_prefix_shared_by_several_fingerprints_is_refused_on_both(urls):
    for url in urls:
        proc = wirewise("results", "--fingerprint", "", "--db", url)
        assert proc.returncode == 2 and proc.stderr.count(", ") == 2 and "is ambiguous" in proc.stderr


def test_topology_reads_decode_json_flags_and_times(urls):
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.topology import list_topologies, load_topology, node_names, node_wirings

    for url in urls:
        store = Store(url)
        [hgx] = node_wirings(store, nodes=["hgx"])
        assert (hgx.fabric, hgx.gpu_count, hgx.switched, hgx.groups) == ("nvlink-all-to-all", 4, None, [[0, 1, 2, 3]])
        assert hgx.last_seen >= hgx.first_seen and hgx.details["nics"]["names"] == ["mlx5_0", "mlx5_1"]
        assert [w.node for w in node_wirings(store, fingerprints=[hgx.fingerprint])] == ["hgx"]
        assert node_names(store) == {"h100-a", "h100-b", "quad-a", "hgx"} == {row["node"] for row in list_topologies(store)}
        assert load_topology(store, fingerprint=hgx.fingerprint[:10]).fingerprint == hgx.fingerprint
        [quad] = node_wirings(store, nodes=["quad-a"])  # saved twice, one wiring: one row, the last numbering
        assert quad.groups == [[0, 2, 4, 6], [1, 3, 5, 7]] and load_topology(store, node="quad-a").links == quad.links


def test_campaign_reads_and_writes(urls):
    """Campaigns and tasks through the store's functions: one story on both databases."""
    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.campaigns import (
        campaign_info, campaign_tasks, create_campaign, list_campaigns, record_task, set_statuses, set_submitted,
    )

    def task(key: str):
        spec = SimpleNamespace(task_id=key, workload="collective", params={"ops": ["all_reduce"]}, gpus=[0, 1], hosts=())
        return SimpleNamespace(spec=spec, placement="packed", transport="default", repeat=0)

    answers = []
    for url in urls:
        store = Store(url)
        create_campaign(store, "c1", {"name": "c1"}, "/runs/c1", "slurm", [task("t1"), task("t2")])
        set_submitted(store, {"t1": (0, "77_0"), "t2": (1, None)})
        set_statuses(store, {"t1": "ok"}, {"t2": 2})
        bench = SimpleNamespace(task_id="b1", workload="train", params={}, gpus=[], node="n", labels={})
        record_task(store, bench, "ok")
        record_task(store, bench, "failed")
        info = campaign_info(store, "c1")
        assert (info.folder, info.executor, info.spec) == ("/runs/c1", "slurm", {"name": "c1"})
        answers.append((campaign_tasks(store, "c1"), _without_times(list_campaigns(store))))
        with store.read() as db:
            assert db.rows("SELECT status, attempts FROM tasks WHERE key = 'b1'") == [("failed", 2)]
    assert answers[0] == answers[1]
    tasks, campaigns = answers[0]
    assert [(t.task_id, t.status, t.attempts, t.bundle, t.element) for t in tasks] == [
        ("t1", "ok", 1, 0, "77_0"), ("t2", "pending", 2, 1, None)]
    assert campaigns == [{"name": "c1", "executor": "slurm", "folder": "/runs/c1", "tasks": 2, "counts": {"ok": 1, "pending": 1}}]
