"""What a survey job runs on its node (submitit pickles it): probe this node's wiring (NVML,
else `nvidia-smi topo -m`) and write it, or why it could not, to FOLDER/NODE.json. The
survey's submitting process stores it; nothing here touches the database."""

from __future__ import annotations

from pathlib import Path

from wirewise.atomic import write_json_atomic


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
        write_json_atomic(Path(folder) / f"{node}.json", answer)
        return "error" if "error" in answer else "ok"
