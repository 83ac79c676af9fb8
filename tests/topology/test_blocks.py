"""The block topology wirewise writes for Slurm (wirewise.orchestrator.slurm.blocks) and the
NVLink domain a node's GPUs place it in (wirewise.topology.fabric), on the kinds of fabric that
machines report (../shared/REFERENCE.md, "Rack-scale NVLink"). The real cluster loads the
files in tests/slurm/test_blocks.py."""

from __future__ import annotations

import pytest
import yaml

from wirewise.errors import UserError
from wirewise.jobenv import hostlist, hostnames
from wirewise.orchestrator.slurm.blocks import blocks_from, plan_blocks, topology_conf, topology_yaml
from wirewise.topology.fabric import ZERO_UUID, domain_of

GB200 = "1c9d4f7e-0b2a-4d6e-9f3a-5b8c7d6e4f21"
GB300 = "8a3e2b1c-7d4f-4e5a-b6c9-0d1e2f3a4b5c"


def fabric(uuid=GB200, clique=2, state="completed", status=0, health=0) -> dict:
    return {"cluster_uuid": uuid, "clique_id": clique, "state": state, "status": status, "health_mask": health}


@pytest.mark.parametrize(("gpus", "domain"), [
    ([fabric()] * 4, (GB200, 2)),  # a GB200 tray
    ([fabric(GB300, 32766)] * 4, (GB300, 32766)),  # GB300: the sentinel clique, keyed with the UUID
    ([fabric(health=1)] + [fabric()] * 3, (GB200, 2)),  # degraded bandwidth: a health matter, same place
    ([fabric(ZERO_UUID, 0)] * 8, None),  # single-node HGX H100/B200: Completed / Success, all-zero UUID
    ([fabric(state="in progress")] + [fabric()] * 3, None),
    ([fabric(status=45)] * 4, None),  # completed with a failed status (Insufficient Resources)
    ([fabric(), fabric(clique=3)], None),  # GPUs that disagree
    ([None, None], None),  # PCIe cards: no fabric
    ([], None),
])
def test_the_domain_of_a_nodes_gpus(gpus, domain) -> None:
    assert domain_of(gpus) == domain


def rack(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:02d}" for i in range(1, n + 1)]


def test_two_racks_and_nodes_outside_any_domain() -> None:
    domains = {**{n: (GB200, 2) for n in rack("r1n", 18)}, **{n: (GB300, 32766) for n in rack("r2n", 16)},
               "hgx1": None, "login-gpu": None}
    plan = plan_blocks(domains)
    assert [(b.name, len(b.nodes)) for b in plan.blocks] == [
        ("nvl-1c9d4f7e-2", 18), ("nvl-8a3e2b1c-32766", 16), ("hgx1", 1), ("login-gpu", 1)]
    assert plan.sizes == (16, 32, 64)  # the smallest rack, doubled up to all four blocks
    conf = topology_conf(plan)
    assert "BlockName=nvl-1c9d4f7e-2 Nodes=r1n[01-18]\n" in conf and "BlockName=hgx1 Nodes=hgx1\n" in conf
    assert conf.endswith("BlockSizes=16,32,64\n")
    assert blocks_from(conf) == {b.name: list(b.nodes) for b in plan.blocks}  # the lines as scontrol echoes them
    [topology] = yaml.safe_load(topology_yaml(plan))
    assert list(topology) == ["topology", "cluster_default", "block"] and topology["cluster_default"] is True
    assert topology["block"]["block_sizes"] == [16, 32, 64]
    assert [(b["block"], hostnames(b["nodes"])) for b in topology["block"]["blocks"]] == [
        (b.name, list(b.nodes)) for b in plan.blocks]


def test_a_domain_stored_on_one_node_is_a_block_but_not_the_base() -> None:
    plan = plan_blocks({"a1": (GB200, 2), "a2": (GB200, 2), "b1": (GB300, 1)})
    assert [list(b.nodes) for b in plan.blocks] == [["a1", "a2"], ["b1"]] and plan.sizes == (2, 4)


def test_uuids_alike_in_their_first_digits_keep_their_whole_uuid() -> None:
    twin = GB200[:9] + "ffff" + GB200[13:]
    plan = plan_blocks({"a": (GB200, 2), "b": (twin, 2)})
    assert {b.name for b in plan.blocks} == {f"nvl-{GB200}-2", f"nvl-{twin}-2"}


def test_no_multi_node_domain_is_said_not_written() -> None:
    with pytest.raises(UserError, match="none of the 2 stored node"):
        plan_blocks({"hgx1": None, "hgx2": None})
    with pytest.raises(UserError, match="no node is stored"):
        plan_blocks({})


@pytest.mark.parametrize("names", [["gpu01", "gpu02", "gpu04", "cpu7"], ["n9", "n10", "n11"], ["a", "b-1.x"], ["n1", "n01"]])
def test_hostlist_folds_what_hostnames_expands(names) -> None:
    assert sorted(hostnames(hostlist(names))) == sorted(names)
    assert hostlist(["n9", "n10", "n11"]) == "n9,n[10-11]" and hostlist(["gpu02", "gpu01"]) == "gpu[01-02]"
