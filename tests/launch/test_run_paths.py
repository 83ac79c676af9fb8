"""wirewise.runs names every folder under the runs root and every file of a run folder: the
layout operators' scripts and earlier folders read (docs/campaigns.md, docs/configuration.md),
written out here so that a change of a name fails. A real run's files: tests/campaign/test_local.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wirewise.runs import RunPaths, RunsRoot, SurveyPaths, utc_stamp


def test_folders_under_the_runs_root():
    root = RunsRoot(Path("/runs"))
    assert root.campaign("c1") == Path("/runs/campaigns/c1")
    assert root.fleet_check("wirewise-retest-n1-x") == Path("/runs/fleet/wirewise-retest-n1-x")
    assert root.live_check("n") == Path("/runs/fleet/n-live")
    assert root.jobs() == Path("/runs/jobs")
    run = root.new_run("launch-42")
    assert run.parent == Path("/runs") and re.fullmatch(r"\d{8}T\d{6}\d{6}Z-launch-42", run.name)
    for label in ("a/b", "x\0"):
        with pytest.raises(ValueError):
            root.new_run(label)


def test_a_run_folders_files():
    paths = RunPaths(Path("/r"))
    assert [p.name for p in (paths.spec, paths.result, paths.progress)] == ["spec.json", "result.json", "progress.jsonl"]
    assert [paths.result_numbered(n).name for n in (1, 2, 3)] == ["result.json", "result-2.json", "result-3.json"]
    assert (paths.rank_log(3).name, paths.rank_outcome(3).name) == ("rank3.log", "rank3.json")
    assert (paths.node_beat(1).name, paths.nccl_debug(5).name) == ("node1.json", "nccl-rank5.log")


def test_a_surveys_folder(tmp_path):
    survey = SurveyPaths.new(tmp_path)
    assert survey.folder.parent == tmp_path and re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", survey.folder.name)
    assert survey.answer("gpu-01") == survey.folder / "nodes" / "gpu-01.json"
    assert survey.submitit == survey.folder / "submitit"


def test_stamps():
    assert re.fullmatch(r"\d{8}-\d{6}", utc_stamp())
    assert re.fullmatch(r"\d{14}", utc_stamp("digits"))
    assert re.fullmatch(r"\d{8}T\d{12}Z", utc_stamp("run"))
