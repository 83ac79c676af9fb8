"""Every row says which wirewise made it, also when wirewise runs from a source checkout (as the
GPU scripts run it) rather than from an installed distribution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

SOURCE_VERSION = "9.9.9+from-source"  # a version no installed distribution carries


def test_versions_are_recorded_when_running_from_a_source_checkout(tmp_path):
    """tests/gpu/common.sh lays the checkout out as the `wirewise` package through links; here its
    __init__.py is swapped for a copy with another version, so a version read from the installed
    distribution's metadata (this venv's editable install says 0.2.x) cannot pass: the rows must
    carry the version of the source that ran, on every rank."""
    script = f"""
        source tests/gpu/common.sh
        rm "$source_tree/wirewise/__init__.py"
        sed 's/^__version__ = .*/__version__ = "{SOURCE_VERSION}"/' contract/__init__.py > "$source_tree/wirewise/__init__.py"
        python3 -c 'import wirewise.jobs.worker, sys; print(wirewise.__file__, file=sys.stderr)'
        WIREWISE_RUNS={tmp_path}/runs "${{wirewise[@]}}" bench collectives --backend gloo --nproc 2 --ops all_reduce \
            -b 1K -e 2K --iters 1 --warmup 0 --db sqlite:///{tmp_path}/w.db --json
    """
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    imported_from = Path(next(line for line in proc.stderr.splitlines() if line.endswith("__init__.py")))
    assert imported_from.name == "__init__.py" and not imported_from.is_relative_to(ROOT)  # the linked tree, not the venv
    rows = json.loads(proc.stdout)
    assert len(rows) == 2
    with_versions = _stored_versions(tmp_path / "w.db")
    assert with_versions == [SOURCE_VERSION, SOURCE_VERSION]


def _stored_versions(db: Path) -> list[str | None]:
    from sqlalchemy import select

    from wirewise.orchestrator.store import Store
    from wirewise.orchestrator.store.orm import ResultRow

    with Store(f"sqlite:///{db}").session() as session:
        return [v["wirewise"] for v in session.scalars(select(ResultRow.versions))]
