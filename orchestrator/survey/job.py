"""What a survey job runs on its node (submitit pickles it): probe this node's wiring (NVML,
else `nvidia-smi topo -m`) and write it, or why it could not, to the survey folder's
answer for the node (wirewise.runs.SurveyPaths: FOLDER/nodes/NODE.json). The
survey's submitting process stores it; nothing here touches the database."""

from __future__ import annotations

from pathlib import Path

from wirewise.atomic import write_json_atomic
from wirewise.runs import SurveyPaths


class SurveyJob:
    def __call__(self, folder: str, node: str) -> str:
        from wirewise.errors import UserError
        from wirewise.topology import read_topology
        from wirewise.topology.probe import short_hostname

        answer: dict = {"node": node, "hostname": short_hostname()}
        try:
            answer["topology"] = read_topology(None).model_dump(mode="json")
        except UserError as exc:
            answer["error"] = f"no wiring probed on {answer['hostname']}: {exc}"
        write_json_atomic(SurveyPaths(Path(folder)).answer(node), answer)
        return "error" if "error" in answer else "ok"
