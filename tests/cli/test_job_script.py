"""What reaches the batch script submitit writes: `wirewise run` and `campaign submit` as
processes, with a stand-in `sbatch` first on PATH that keeps a copy of every script it is
given (and `srun`, `scontrol` for submitit's and MaxArraySize's sake). A newline in `--node`
used to become a shell line of the script (`touch /tmp/PWNED` ran on the compute node), one in
`-p` an extra #SBATCH directive, `-t -5` a `--time=-5`; now each is one line and exit 2, and
no script is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import wirewise
from tests.topology.common import NVL_QUADS_NAMED as NVL_QUADS  # place asks for the GPU model a file does not name

SBATCH = """#!/bin/sh
cp "$1" "$CAPTURE/$(basename "$1")"
echo "Submitted batch job 4242"
"""


@pytest.fixture
def capture(tmp_path: Path) -> tuple[Path, dict]:
    """(the folder sbatch copies scripts to, the environment that puts the stand-ins first)."""
    bin_dir, scripts = tmp_path / "bin", tmp_path / "scripts"
    bin_dir.mkdir()
    scripts.mkdir()
    for name, body in {"sbatch": SBATCH, "srun": "#!/bin/sh\nexit 0\n",
                       "scontrol": "#!/bin/sh\necho 'MaxArraySize            = 1001'\n"}.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return scripts, {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CAPTURE": str(scripts)}


def run(tmp_path: Path, env: dict, *options: str):
    return wirewise("run", "--whole-node", "-k", "2", "-f", str(NVL_QUADS), "--db", f"sqlite:///{tmp_path}/w.db",
                    *options, "--", "true", cwd=tmp_path, env=env)


def test_sound_options_reach_the_script(tmp_path, capture) -> None:
    """The stand-in works: sound values arrive as one #SBATCH line each."""
    scripts, env = capture
    proc = run(tmp_path, env, "--node", "gpu01", "-p", "gpu", "-t", "5", "-c", "4", "--folder", str(tmp_path / "jobs"))
    assert proc.returncode == 0, proc.stderr
    (script,) = [p.read_text() for p in scripts.iterdir()]
    for line in ("#SBATCH --nodelist=gpu01", "#SBATCH --partition=gpu", "#SBATCH --time=5", "#SBATCH --cpus-per-task=4",
                 f"#SBATCH --output={tmp_path}/jobs/%j_0_log.out"):
        assert line in script.splitlines(), script


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--node", "gpu01\ntouch /tmp/PWNED\n#"], "--node 'gpu01\\ntouch /tmp/PWNED\\n#': not a Slurm host name"),
        (["-p", "gpu\n#SBATCH --wrap=touch PWNED"], "-p/--partition 'gpu\\n#SBATCH --wrap=touch PWNED': not a Slurm name"),
        (["--folder", "jobs\ntouch PWNED"], "jobs\\ntouch PWNED': not a plain path"),
        (["--folder", "jobs-%j"], "jobs-%j': not a plain path (letters, digits, / . _ - ~ + @ = , and spaces; "
                                  "Slurm expands '%' in log paths)"),
        (["-t", "-5"], "-t/--time -5: give a whole number from 1 to 525,600 (minutes;"),
        (["-t", "99999999"], "-t/--time 99999999: give a whole number from 1 to 525,600"),
        (["-c", "-3"], "-c/--cpus-per-task -3: give a whole number from 1 to 65,533"),
    ],
)
def test_hostile_options_never_reach_a_script(tmp_path, capture, options, message) -> None:
    scripts, env = capture
    proc = run(tmp_path, env, *options)
    assert proc.returncode == 2 and proc.stderr.startswith("wirewise: error: ") and message in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert not list(scripts.iterdir()) and not (tmp_path / "w.db").exists()


def test_a_campaign_folder_slurm_would_expand_is_refused_before_recording(tmp_path, capture) -> None:
    """The folder comes from target.folder or from WIREWISE_RUNS: both are held to the same set."""
    scripts, env = capture
    spec = tmp_path / "spec.yaml"
    doc = {"name": "pct", "workloads": [{"collectives": {"ops": ["all_reduce"], "min_bytes": "1K", "max_bytes": "1K"}}],
           "target": {"executor": "slurm", "partition": "gpu"}}
    spec.write_text(yaml.safe_dump(doc))
    args = ("campaign", "submit", str(spec), "--topology-file", str(NVL_QUADS), "--db", f"sqlite:///{tmp_path}/w.db")
    proc = wirewise(*args, cwd=tmp_path, env={**env, "WIREWISE_RUNS": str(tmp_path / "runs-%A")})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "the campaign folder (target.folder, or under WIREWISE_RUNS)" in proc.stderr and "runs-%A" in proc.stderr
    assert wirewise("campaign", "list", "--db", f"sqlite:///{tmp_path}/w.db", "--json", env=env).stdout.strip() == "[]"
    spec.write_text(yaml.safe_dump({**doc, "target": {**doc["target"], "folder": str(tmp_path / "c-%j")}}))
    proc = wirewise(*args, cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "target.folder:" in proc.stderr and "Slurm expands '%'" in proc.stderr
    assert not list(scripts.iterdir())
