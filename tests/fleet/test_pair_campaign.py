"""The campaign `fleet pairs` (and a pair finding's repeat) records its tests in: its folder is
claimed as every campaign's is (wirewise.orchestrator.campaign.lifecycle.record_campaign). In
process and without a cluster: nothing here submits, the nodes are as Slurm would list them
(the pair tests themselves run on the multi-node cluster, test_cluster.py)."""

from __future__ import annotations

import pytest

from wirewise.errors import UserError
from wirewise.orchestrator.executor.core import Node, Scope
from wirewise.orchestrator.fleet.pairs import PairTest, _PairCampaign
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.campaigns import list_campaigns

NODES = [Node("wwn1", 0), Node("wwn2", 0)]
GLOO = PairTest(backend="gloo")


def start(store: Store, name: str) -> _PairCampaign:
    return _PairCampaign.start(store, Scope(), NODES, GLOO, name, "slurm")


def test_a_folder_that_is_not_empty_is_refused_and_nothing_recorded(tmp_path, monkeypatch, db_url):
    """The user's files there (or another campaign's) were written over before; now refused,
    as `campaign submit` refuses it, and the campaign's record goes again."""
    monkeypatch.setenv("WIREWISE_RUNS", str(tmp_path / "runs"))
    folder = tmp_path / "runs" / "campaigns" / "pairs-taken"
    folder.mkdir(parents=True)
    (folder / "spec.yaml").write_text("the user's own\n")
    store = Store(db_url)
    with pytest.raises(UserError, match=r"campaign folder .*pairs-taken is not empty: .*give target.folder a new or empty"):
        start(store, "pairs-taken")
    assert [p.name for p in folder.iterdir()] == ["spec.yaml"] and (folder / "spec.yaml").read_text() == "the user's own\n"
    assert list_campaigns(store) == []


def test_an_empty_folder_is_taken_and_given_back_empty(tmp_path, monkeypatch, db_url):
    """A first round the executor refuses forgets the campaign: a folder made for it goes, an
    empty one that was there stays, empty, as it was."""
    monkeypatch.setenv("WIREWISE_RUNS", str(tmp_path / "runs"))
    folder = tmp_path / "runs" / "campaigns" / "pairs-empty"
    folder.mkdir(parents=True)
    store = Store(db_url)
    campaign = start(store, "pairs-empty")
    assert sorted(p.name for p in folder.iterdir()) == ["outcomes", "plan.json", "spec.yaml"]
    assert [c["name"] for c in list_campaigns(store)] == ["pairs-empty"]
    campaign._forget()
    assert folder.is_dir() and list(folder.iterdir()) == [] and list_campaigns(store) == []
    made = start(store, "pairs-made")
    made._forget()
    assert not made.root.exists()
