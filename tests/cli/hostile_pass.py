"""A hostile and careless pass over the surfaces of issue 22 and those added since (issue 29:
baselines, launch's environment and script, `wirewise.advice()` from Python, place on a plain
`nvidia-smi topo -m`, campaign status without its folder, collect of JSON lines): the installed
`wirewise` console script (or, for the API, the venv's python calling `wirewise.advice`) run as a
process, each input in its own folder with its own copy of a SQLite database, under `prlimit
--as` (an unbounded expansion fails instead of eating the machine) and a timeout (a hang does not
hold). Not collected by pytest (no test_ prefix):

    .venv/bin/python tests/cli/hostile_pass.py [--json] [--only SURFACE] [--jobs N]

Each input expects one class:
- refused: exit 2, exactly one stderr line starting `wirewise: error:` (notes and warnings
  aside), no traceback, and nothing half-written: the database's rows and the case folder's
  files are as they were;
- accepted: exit 0 or 1, no traceback, valid JSON on stdout where --json is given (no NaN or
  Infinity), every time in it ISO 8601 with its zone;
- not judged (`doctor --health-check` and `--prolog` run as slurmd runs them: a bare
  environment, the case folder as slurmd's working folder): exit 0 (slurmd drains a node for
  any other), `"judged": false` and nothing drained, a `not judged` note, no database created,
  nothing changed, no temporary folder left in TMPDIR;
- spared (the same commands with inputs they may judge or not): exit 0, nothing drained,
  nothing left in TMPDIR.
The API's inputs run a small driver that prints an AdviceError as the CLI prints an error (one
line, exit 2): any other exception is a traceback, which does not hold.
For every input: no planted file from an injection attempt appears, no job script handed to the
stand-in `sbatch` holds an injected line, no Slurm command is on PATH (except the stand-in
sbatch for `run`), and the process ends within its timeout.
Prints one line per input that did not hold, then `tried N, held M` per surface and in total.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
WIREWISE = str(Path(sys.executable).with_name("wirewise"))
FIXTURES = REPO / "tests" / "fixtures"
TOPO = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads-named.txt"
NCCL_LOG = FIXTURES / "nccl-tests" / "nccl-all_reduce-h100-sxm-1node-8gpu-nccltests-2.17.8.txt"
MEMORY = 2 * 1024**3  # bytes of address space each command may take
SLURM = re.compile(r"^(s(batch|run|info|queue|acct|control|cancel|alloc|stat|prio|share|report|acctmgr|diag|trigger|view|"
                   r"bcast|attach|crontab|h5util|ackd|lurmd|lurmctld|lurmdbd|lurmstepd))$")
ERROR, ASIDE = "wirewise: error: ", ("wirewise: note: ", "wirewise: warning: ")
NOT_JUDGED = 3  # doctor's exit status where no rule could compare a node (docs/contracts.md)
FILE = "@"  # an argument "@name" is the case folder's file `name`


@dataclass
class Case:
    surface: str
    args: list[str]
    expect: str  # "refused" or "accepted"
    files: dict = field(default_factory=dict)  # name -> bytes | str | ("fifo",) | ("dir",) | ("link", target)
    base: str = "full"  # "full" (results and a finished campaign), "empty" (a migrated, empty database) or "none"
    campaign: bool = False  # copy the campaign folder into the case folder
    sbatch: bool = False  # the stand-in sbatch first on PATH
    slurm: bool = False  # a stand-in sinfo first on PATH: partition gpu of nodes n1 and n2, both idle
    bare: dict | None = None  # the whole environment, as slurmd gives it (TMPDIR added: the case folder's tmp)
    stdin: bytes | None = None
    timeout: float = 40
    check: Callable | None = None  # (proc, folder) -> problem or None
    prepare: Callable | None = None  # (folder) -> None, after the files
    note: str = ""
    env: dict = field(default_factory=dict)  # added to the command's environment ("{d}" is the case folder)
    api: bool = False  # args[0] is the keyword arguments of wirewise.advice (a Python expression)

    @property
    def label(self) -> str:
        text = " ".join(self.args)
        if self.note:
            text = f"{self.note}: {text}"
        return text if len(text) <= 160 else text[:100] + " ... " + text[-50:]


# -- the folder every command runs in ----------------------------------------------------------
def system_path(root: Path) -> str:
    """A bin folder with /usr/bin's commands less Slurm's, so no Slurm is reachable."""
    sysbin = root / "sysbin"
    sysbin.mkdir()
    for name in os.listdir("/usr/bin"):
        if not SLURM.match(name):
            (sysbin / name).symlink_to(Path("/usr/bin") / name)
    fake = root / "fakebin"
    fake.mkdir()
    (fake / "sbatch").write_text('#!/bin/sh\nfor a; do last="$a"; done\ncp "$last" "$CAPTURE/script-$$.sh"\n'
                                 'echo "Submitted batch job 4242"\n')
    (fake / "srun").write_text("#!/bin/sh\nexit 0\n")
    (fake / "scontrol").write_text("#!/bin/sh\necho 'MaxArraySize            = 1001'\n")
    for tool in fake.iterdir():
        tool.chmod(0o755)
    fleet = root / "slurmbin"
    fleet.mkdir()
    nodes = " ".join(f"'{n}|gpu*|idle|gpu:h200:8(S:0-1)|nvl|root(0)|2026-12-01T10:00:00|none'" for n in ("n1", "n2"))
    (fleet / "sinfo").write_text('#!/bin/sh\npart=""\nwhile [ $# -gt 0 ]; do [ "$1" = -p ] && part="$2"; shift; done\n'
                                 f'for line in {nodes}; do\n'
                                 '  case ",$part," in ",,"|*",gpu,"*) echo "$line";; esac\ndone\n')
    (fleet / "sinfo").chmod(0o755)
    return str(sysbin)


def environment(root: Path, folder: Path, sbatch: bool, slurm: bool = False, bare: dict | None = None) -> dict:
    if bare is not None:  # HOME of its own: the default database is the user's, and this machine's root may have one
        return {**bare, "TMPDIR": str(folder / "tmp"), "HOME": str(folder / "home")}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIREWISE_", "SLURM_"))}
    bins = [str(Path(WIREWISE).parent), str(root / "sysbin")]
    if sbatch:
        bins.insert(0, str(root / "fakebin"))
    if slurm:
        bins.insert(0, str(root / "slurmbin"))
    env.update(PATH=os.pathsep.join(bins), WIREWISE_RUNS=str(folder / "runs"), CAPTURE=str(folder / "captured"),
               WIREWISE_DB=f"sqlite:///{folder / 'wirewise.db'}", MARK=str(folder / "PWNED"), PYTHONDONTWRITEBYTECODE="1",
               XDG_DATA_HOME=str(folder / "xdg-data"), XDG_CONFIG_HOME=str(folder / "xdg-config"),
               WIREWISE_SITE_CONFIG=str(folder / "site-config.toml"))  # never the real user's or site's
    return env


# What a script does: call wirewise.advice, print what it got, and an AdviceError as the CLI
# prints an error. Anything else it raises is a traceback.
API_DRIVER = """
import json, math, os, sys
from pathlib import Path
import wirewise
kwargs = eval(sys.argv[1], {"inf": math.inf, "nan": math.nan, "Path": Path, "environ": dict(os.environ)})
try:
    found = wirewise.advice(**kwargs)
except wirewise.AdviceError as exc:
    sys.stderr.write(f"wirewise: error: {exc}\\n")
    sys.exit(2)
print(json.dumps({"strategy": found.strategy, "gpus": found.gpus, "processes": found.num_processes}))
"""


def run_process(args: list[str], cwd: Path, env: dict, stdin: bytes | None, timeout: float, api: bool = False):
    """(returncode or 'timeout', stdout, stderr): the process group is killed past the timeout."""
    program = [sys.executable, "-c", API_DRIVER] if api else [WIREWISE]
    cmd = ["/usr/bin/prlimit", f"--as={MEMORY}", "--", *program, *args]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = "timeout"
    try:  # a child left running (a local campaign's runner) is the case's too
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def make_files(folder: Path, files: dict) -> None:
    for name, body in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, tuple):
            kind = body[0]
            if kind == "fifo":
                os.mkfifo(path)
            elif kind == "dir":
                path.mkdir()
            elif kind == "link":
                path.symlink_to(body[1])
            elif kind == "sparse":
                with open(path, "wb") as fh:
                    fh.truncate(body[1])
        else:
            path.write_bytes(body.encode() if isinstance(body, str) else body)


def db_state(db: Path) -> str:
    """A hash of every row of every table (empty string where there is no database)."""
    if not db.exists():
        return ""
    digest = hashlib.sha256()
    with sqlite3.connect(db) as conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            rows = sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{table}"'))
            digest.update(f"{table}:{len(rows)}:".encode() + "\n".join(rows).encode())
    return digest.hexdigest()


def folder_state(folder: Path) -> set:
    """Every file and folder under the case folder (no link followed), with sizes and times."""
    seen = set()
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            rel = str(path.relative_to(folder))
            if rel.startswith(("wirewise.db", "captured", "tmp")):
                continue
            st = path.lstat()
            seen.add((rel, st.st_mode >> 12, st.st_size if name in files else 0, st.st_mtime_ns if name in files else 0))
    return seen


def strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def judge(case: Case, code, out: str, err: str, folder: Path, before: tuple) -> str | None:
    """What did not hold, or None."""
    if code == "timeout":
        return f"did not end within {case.timeout:g} s"
    if "Traceback" in out + err:
        return f"exit {code}, a traceback: {last_lines(err or out)}"
    if (folder / "PWNED").exists() or Path("/tmp/PWNED").exists():
        return f"exit {code}, a planted file appeared"
    for script in (folder / "captured").glob("*.sh"):
        for line in script.read_text(errors="replace").splitlines():
            if "PWNED" in line or "--wrap" in line:
                return f"exit {code}, the job script holds an injected line: {line!r}"
    if code not in (0, 1, 2) and not (case.args[:1] == ["doctor"] and code == NOT_JUDGED):
        return f"exit {code} (killed or crashed): {last_lines(err)}"
    if case.expect in ("not judged", "spared"):
        return judge_on_node(case, code, out, err, folder, before)
    if case.expect == "refused":
        lines = [line for line in err.strip().splitlines() if not line.startswith(ASIDE)]
        if code != 2:
            return f"exit {code}, not 2: {last_lines(err or out)}"
        if len(lines) != 1 or not lines[0].startswith(ERROR):
            return f"exit 2 but stderr is not one error line: {last_lines(err, 3)}"
        after = (db_state(folder / "wirewise.db"), folder_state(folder))
        if after[0] != before[0]:
            return f"refused ({lines[0][:120]}) but the database changed"
        if after[1] != before[1]:
            changed = sorted({entry[0] for entry in after[1] ^ before[1]})[:4]
            return f"refused ({lines[0][:120]}) but the folder changed: {changed}"
    else:
        if code == 2:
            return f"refused, expected accepted: {last_lines(err)}"
        if "--json" in case.args or case.api:
            try:
                doc = strict_json(out)
            except ValueError as exc:
                return f"exit {code}, --json output is not JSON ({exc}): {out[:120]!r}"
            zoneless = [t for t in times_in(doc) if not zoned(t)]
            if zoneless:
                return f"exit {code}, a time without its zone in the JSON: {zoneless[0]!r}"
    if case.check:
        return case.check(code, out, err, folder)
    return None


TIME_LIKE = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}")


def times_in(doc) -> list[str]:
    if isinstance(doc, dict):
        return [t for value in doc.values() for t in times_in(value)]
    if isinstance(doc, list):
        return [t for value in doc for t in times_in(value)]
    return [doc] if isinstance(doc, str) and TIME_LIKE.match(doc) else []


def zoned(text: str) -> bool:
    """ISO 8601 with its zone (docs/contracts.md): a T between date and time, and an offset."""
    from datetime import datetime

    try:
        return "T" in text and datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


def judge_on_node(case: Case, code, out: str, err: str, folder: Path, before: tuple) -> str | None:
    """What slurmd must get from `doctor --health-check` and `--prolog`: exit 0 unless the node
    was drained for a fault (nothing can be drained here: no Slurm), nothing left behind."""
    if code != 0:
        return f"exit {code}: slurmd drains the node: {last_lines(err or out)}"
    left = sorted(p.name for p in (folder / "tmp").iterdir())
    if left:
        return f"left in TMPDIR: {left[:3]}"
    try:
        outcome = strict_json(out) if "--json" in case.args else None
    except ValueError as exc:
        return f"--json output is not JSON ({exc}): {out[:120]!r}"
    if outcome is not None and outcome.get("drained"):
        return "drained, with no Slurm to drain it"
    if case.expect == "not judged":
        if outcome is not None and outcome.get("judged") is not False:
            return f"judged the node: {out[:160]!r}"
        if "not judged: " not in err:
            return f"no `not judged` note on stderr: {last_lines(err, 2)}"
        after = (db_state(folder / "wirewise.db"), folder_state(folder))
        if after != before:
            return "not judged, but the database or the folder changed"
    return None


def last_lines(text: str, n: int = 1) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])[:300] or "(nothing on stderr)"


# -- the base states, built once ----------------------------------------------------------------
def collective(**fields) -> dict:
    return {"workload": "collective", "op": "all_reduce", "bytes": 1024, "count": 256, "gpu_count": 2, "gpus": [0, 1],
            "node": "n1", "fingerprint": "f" * 64, "fabric": "nvlink-groups", "time_us": 10.0, "algbw_gbs": 1.0,
            "busbw_gbs": 1.0, "started_at": "2026-01-02T03:04:05+00:00", **fields}


def train(**fields) -> dict:
    return {"workload": "train", "model": "tiny-mistral", "strategy": "ddp", "gpu_count": 2, "gpus": [0, 1], "node": "n1",
            "fingerprint": "f" * 64, "fabric": "nvlink-groups", "world_size": 2, "micro_batch": 2, "seq_len": 128,
            "step_time_s": 0.5, "samples_per_s": 8.0, "tokens_per_s": 1024.0, "mfu": None,
            "started_at": "2026-01-02T03:04:05+00:00", **fields}


def results_doc(*records, topology=None) -> str:
    return json.dumps({"records": list(records), "topology": topology})


SEED = [collective(campaign="ca"), collective(campaign="ca", bytes=2048, count=512), collective(campaign="cb", node="n2"),
        collective(campaign="cb", node="n2", bytes=2048, count=512), collective(node="=cmd|' /C calc'!A0"),
        train(campaign="ca"), train(campaign="cb", node="n2", tokens_per_s=None), train(strategy="fsdp", status="oom"),
        collective(node="[/]", busbw_gbs=0.01)]

CAMPAIGN = {"name": "hp-c", "workloads": [{"collectives": {"ops": ["all_reduce"], "min_bytes": "1K", "max_bytes": "1K",
                                                           "iters": 1, "warmup": 0}}],
            "axes": {"gpus": [2], "repeats": 1}, "target": {"executor": "local", "timeout_s": 120}}


def build_bases(root: Path) -> None:
    env = environment(root, root / "empty", False)
    for name in ("empty", "full"):
        (root / name).mkdir()
    db = f"sqlite:///{root / 'empty' / 'wirewise.db'}"
    must(run_process(["db", "upgrade", "--db", db], root / "empty", env, None, 120))
    full = root / "full"
    env = environment(root, full, False)
    db = f"sqlite:///{full / 'wirewise.db'}"
    (full / "seed").mkdir()
    (full / "seed" / "result.json").write_text(results_doc(*SEED))
    import yaml
    (full / "seed" / "spec.yaml").write_text(yaml.safe_dump(CAMPAIGN))
    must(run_process(["collect", str(full / "seed" / "result.json"), "--db", db], full, env, None, 120))
    must(run_process(["import", "nccl-tests", str(NCCL_LOG), "--db", db], full, env, None, 120))
    must(run_process(["topo", "save", "--from-file", str(TOPO), "--node", "n1", "--db", db], full, env, None, 120))
    must(run_process(["campaign", "submit", str(full / "seed" / "spec.yaml"), "--db", db], full, env, None, 300))
    shutil.rmtree(full / "seed")


def must(result) -> None:
    code, out, err = result
    if code != 0:
        raise SystemExit(f"setting up the base state failed (exit {code}):\n{out}\n{err}")


def prepare_folder(root: Path, case: Case, folder: Path) -> None:
    base = root / case.base
    folder.mkdir()
    (folder / "captured").mkdir()
    (folder / "tmp").mkdir()
    if case.base != "none":
        with sqlite3.connect(base / "wirewise.db") as source, sqlite3.connect(folder / "wirewise.db") as copy:
            source.backup(copy)
    if case.campaign:
        shutil.copytree(base / "runs", folder / "runs", symlinks=True)
        with sqlite3.connect(folder / "wirewise.db") as conn:
            conn.execute("UPDATE campaigns SET folder = replace(folder, ?, ?)", (str(base), str(folder)))
    make_files(folder, case.files)
    if case.prepare:
        case.prepare(folder)


def substitute(arg: str, folder: Path) -> str:
    arg = arg.replace("{d}", str(folder)).replace("{mark}", str(folder / "PWNED"))
    arg = arg.replace("{topo}", str(TOPO)).replace("{nccl}", str(NCCL_LOG))
    return str(folder / arg[1:]) if arg.startswith(FILE) else arg


def run_case(root: Path, index: int, case: Case) -> tuple[Case, str | None, float]:
    try:
        return try_case(root, index, case)
    except Exception as exc:  # an input the pass itself cannot set up counts as not held, and is said
        return case, f"the pass could not run it: {exc!r}", 0.0


def try_case(root: Path, index: int, case: Case) -> tuple[Case, str | None, float]:
    folder = root / "cases" / f"{index:04d}"
    prepare_folder(root, case, folder)
    args = [substitute(a, folder) for a in case.args]
    env = environment(root, folder, case.sbatch, case.slurm,
                      None if case.bare is None else {k: substitute(v, folder) for k, v in case.bare.items()})
    env.update({name: substitute(value, folder) for name, value in case.env.items()})
    before = (db_state(folder / "wirewise.db"), folder_state(folder))
    start = time.monotonic()
    code, out, err = run_process(args, folder, env, case.stdin, case.timeout, case.api)
    took = time.monotonic() - start
    try:
        problem = judge(case, code, out, err, folder, before)
    except Exception as exc:  # the judge itself must not end the pass
        problem = f"judging failed: {exc!r}"
    shutil.rmtree(folder, ignore_errors=True)
    return case, problem, took


# -- the inputs -----------------------------------------------------------------------------------
def cases() -> list[Case]:
    import yaml

    out: list[Case] = []

    def R(surface, *args, **kw):
        out.append(Case(surface, list(args), "refused", **kw))

    def A(surface, *args, **kw):
        out.append(Case(surface, list(args), "accepted", **kw))

    def spec(doc) -> str:
        return doc if isinstance(doc, (str, bytes)) else yaml.safe_dump(doc)

    def with_(path: str, value, doc=None):
        doc = json.loads(json.dumps(doc or {**CAMPAIGN, "name": "hp-new"}))
        keys = path.split(".")
        node = doc
        for key in keys[:-1]:
            node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
        node[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value
        return doc

    # ---- campaign plan: specs as files
    S = "campaign plan"
    plan = lambda body, *extra, expect=R, **kw: expect(S, "campaign", "plan", "@spec.yaml", *extra, "--json",
                                                       files={"spec.yaml": spec(body)}, **kw)
    plan(with_("name", "hp-new"), expect=A)
    plan(with_("name", "hp-new"), "--topology-file", "{topo}", expect=A)
    for body in ["name: [", "name: hp\n\tworkloads: []", "a: b: c", "", "null", "- a\n- b", "just a string", "{",
                 "name: hp\nname: hp2\n", "%YAML 9.9\n---\nname: x", "? [a]\n: b", "*undefined_alias"]:
        plan(body, note="bad YAML")
    plan(b"\xff\xfe\x00n\x00a\x00m\x00e", note="non-UTF-8")
    plan(b"name: \x80\x81\x82", note="non-UTF-8")
    plan("name: a\x00b", note="NUL")
    plan("\ufeff" + spec(with_("name", "hp-bom")), expect=A, note="BOM")
    plan("[" * 5000 + "]" * 5000, note="deep list")
    plan("a: " + "{a: " * 200 + "1" + "}" * 200, note="deep map")
    plan("name: x\nworkloads:\n" + "".join("  " * i + "- \n" for i in range(1, 300)), note="deep block")
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                                                    for p, c in zip("abcdefgh", "bcdefghi"))
    plan(bomb, note="alias bomb")
    plan("!!python/object/apply:os.system ['touch $MARK']", note="python tag")
    plan("name: !!python/name:os.system x", note="python tag")
    plan(spec(with_("name", "hp-x")) + "\n" + "# " + "x" * (2 * 1024**2), note="2 MiB spec")
    for path, value in [("axes.repeats", 10**23), ("axes.repeats", -1), ("axes.repeats", 0), ("axes.repeats", 1.5),
                        ("axes.repeats", ".inf"), ("axes.repeats", float("nan")), ("axes.repeats", True),
                        ("axes.repeats", 10001), ("axes.gpus", [10**20]), ("axes.gpus", [-2]), ("axes.gpus", [0]),
                        ("axes.gpus", []), ("axes.gpus", "2"), ("axes.gpus", [2] * 200000),
                        ("axes.placement", [[0, 0]]), ("axes.placement", [[5000]]), ("axes.placement", [[-1]]),
                        ("axes.placement", ["sideways"]), ("axes.transport", ["carrier-pigeon"]),
                        ("name", "../x"), ("name", ""), ("name", "a b"), ("name", "ñame"), ("name", "$(touch $MARK)"),
                        ("name", "x" * 500), ("name", "-rf"), ("name", "a\nb"), ("name", 12),
                        ("workloads", []), ("workloads", [{}]), ("workloads", "all"),
                        ("workloads.0.collectives.ops", ["bogus"]), ("workloads.0.collectives.ops", []),
                        ("workloads.0.collectives.min_bytes", "1Q"), ("workloads.0.collectives.min_bytes", "-1K"),
                        ("workloads.0.collectives.max_bytes", "99999999999999999999G"),
                        ("workloads.0.collectives.max_bytes", 10**30), ("workloads.0.collectives.step_factor", 1),
                        ("workloads.0.collectives.step_factor", 0), ("workloads.0.collectives.iters", 10**20),
                        ("workloads.0.collectives.iters", -1), ("workloads.0.collectives.dtype", "float128"),
                        ("workloads.0.train", {"models": ["tiny-mistral"], "strategies": ["ddp"]}),
                        ("target.timeout_s", ".inf"), ("target.timeout_s", -1), ("target.timeout_s", 10**12),
                        ("target.time", "99999999999999999999"), ("target.time", "-5"), ("target.time", "1:2:3:4:5"),
                        ("target.executor", "bogus"), ("target.partition", "gpu\n#SBATCH --wrap=touch PWNED"),
                        ("target.folder", "%j"), ("target.folder", "a\nb"), ("target.bogus", 1),
                        ("target.nodes", 10**9), ("target.nodes", 0), ("target.tasks_per_element", 10**12),
                        ("target.array_parallelism", -3), ("target.scope", "everything"), ("bogus", 1)]:
        plan(with_(path, value), note=f"{path}={str(value)[:30]}")
    plan(with_("workloads.0", {"train": {"models": ["../../etc/passwd"], "strategies": ["ddp"]}}))
    plan(with_("workloads.0", {"train": {"models": ["tiny-mistral"], "strategies": ["zero4"]}}))
    plan(with_("workloads.0", {"train": {"models": ["tiny-mistral"], "strategies": ["ddp"], "batch_size": 0}}))
    plan(with_("name", "hp-new"), "--gpus", "99999999999999999999")
    plan(with_("name", "hp-new"), "--gpus", "a")
    plan(with_("name", "hp-new"), "--gpus", "0")
    plan(with_("name", "hp-new"), "--gpus", "2,2", expect=A, note="each value once")
    plan(with_("name", "hp-new"), "--topology-file", "/dev/zero")
    plan(with_("name", "hp-new"), "--topology-file", "{d}")
    plan(with_("name", "hp-new"), "--topology-file", "@nope.txt")
    plan(with_("name", "hp-new"), "--name", "bad name")
    plan(with_("name", "hp-new"), "--name", "$(touch {mark})")
    plan(with_("name", "hp-new"), "--node", "nosuch")
    R(S, "campaign", "plan", "@nope.yaml")
    R(S, "campaign", "plan", "{d}")
    R(S, "campaign", "plan", "@fifo.yaml", files={"fifo.yaml": ("fifo",)}, timeout=20)
    R(S, "campaign", "plan", "@zero.yaml", files={"zero.yaml": ("link", "/dev/zero")}, timeout=20)
    R(S, "campaign", "plan", "/dev/zero", timeout=20)
    R(S, "campaign", "plan", "@big.yaml", files={"big.yaml": ("sparse", 3 * 1024**3)})
    R(S, "campaign", "plan", "@loop.yaml", files={"loop.yaml": ("link", "loop.yaml")})

    # ---- campaign submit (local only)
    S = "campaign submit"
    sub = lambda body, *extra, expect=R, **kw: expect(S, "campaign", "submit", "@spec.yaml", *extra,
                                                      files={"spec.yaml": spec(body), **kw.pop("files", {})}, **kw)
    sub(with_("name", "hp-d"), "--dry-run", "--json", expect=A)
    sub(with_("name", "hp-d"), "--dry-run", "--executor", "slurm", "--topology-file", "{topo}", "--json", expect=A)
    sub(CAMPAIGN, note="the name exists")
    sub(with_("name", "hp-n"), "--executor", "bogus")
    sub(with_("name", "hp-n"), "--executor", "slurm", "--topology-file", "{topo}", note="no sbatch")
    sub(with_("target.folder", "."), files={"mine.txt": "mine"}, note="folder not empty")
    sub(with_("target.folder", "{d}/a-file/c"), files={"a-file": "x"}, note="folder under a file")
    sub(with_("target.folder", "{d}/runs/campaigns/hp-c"), campaign=True, note="another campaign's folder")
    sub(with_("target.folder", "{d}/100%x"))
    sub(with_("target.folder", "/proc/wirewise-x"))
    sub(with_("axes.repeats", 10**23))
    sub(with_("name", "hp-n"), "--gpus", "99999999999999999999")
    sub(with_("name", "hp-n"), "--dry-run", "--executor", "slurm", "--node", "nosuch")
    sub(with_("target.partition", "a;touch $MARK"), "--dry-run", "--executor", "slurm", "--topology-file", "{topo}")
    sub(with_("target.nodelist", "gpu[01-99999999999]"), "--dry-run", "--executor", "slurm", "--topology-file", "{topo}")
    sub(with_("target.constraint", "a`touch $MARK`"), "--dry-run", "--executor", "slurm", "--topology-file", "{topo}")
    sub(with_("target.account", "$(touch $MARK)"), "--dry-run", "--executor", "slurm", "--topology-file", "{topo}")
    sub(with_("name", "hp-run"), "--json", expect=A, timeout=150, note="a real local run")

    # ---- campaign status/collect/resume/cancel/forget/list
    S = "campaign follow"
    for verb in ("status", "collect", "resume", "cancel", "forget"):
        for name in ("nosuch", "", "../hp-c", "hp-c' OR '1'='1", "%", "x" * 5000, "ñ"):
            R(S, "campaign", verb, name)
    A(S, "campaign", "list", "--json")
    A(S, "campaign", "status", "hp-c", "--json", campaign=True)
    A(S, "campaign", "status", "hp-c", "--nodes", "--json", campaign=True)
    A(S, "campaign", "collect", "hp-c", "--json", campaign=True)
    A(S, "campaign", "forget", "hp-c", "--json", campaign=True)
    A(S, "campaign", "forget", "hp-c", "--remove-results", "--json", campaign=True)
    A(S, "campaign", "resume", "hp-c", "--json", campaign=True, note="nothing to resume")
    A(S, "campaign", "cancel", "hp-c", "--json", campaign=True, note="nothing running")
    for interval in ("inf", "nan", "0", "-1", "1e9", "abc", "86401"):
        R(S, "campaign", "status", "hp-c", "--watch", "--interval", interval, campaign=True, timeout=20)
    A(S, "campaign", "resume", "hp-c", "--max-attempts", "99999999999999999999", "--json", campaign=True, note="no limit")
    for attempts in ("0", "-1", "x"):
        R(S, "campaign", "resume", "hp-c", "--max-attempts", attempts, campaign=True)
    folder = "runs/campaigns/hp-c"
    for verb in ("collect", "resume"):
        R(S, "campaign", verb, "hp-c", campaign=True, prepare=lambda d: shutil.rmtree(d / folder), note="folder deleted")
        R(S, "campaign", verb, "hp-c", campaign=True, prepare=lambda d: shutil.rmtree(d / folder / "tasks"),
          note="tasks/ deleted")
    # status shows what the store holds, and says the folder is gone (issue 29)
    for gone, note in ((folder, "folder deleted"), (f"{folder}/tasks", "tasks/ deleted"), (f"{folder}/plan.json", "plan.json deleted")):
        A(S, "campaign", "status", "hp-c", "--json", campaign=True, note=note, check=says_gone,
          prepare=lambda d, gone=gone: (shutil.rmtree if (d / gone).is_dir() else Path.unlink)(d / gone))
        R(S, "campaign", "status", "hp-c", "--watch", campaign=True, note=note, timeout=20,
          prepare=lambda d, gone=gone: (shutil.rmtree if (d / gone).is_dir() else Path.unlink)(d / gone))

    def plant_outcome(body):
        def prepare(d: Path) -> None:
            (task,) = list((d / folder / "tasks").iterdir())[:1]
            target = task / "outcome.json"
            target.unlink(missing_ok=True)
            make_files(task, {"outcome.json": body})
        return prepare

    for body, note in [("not json", "garbage"), ("[" * 100000 + "]" * 100000, "deep"), (("fifo",), "FIFO"),
                       (("link", "/dev/zero"), "/dev/zero"), (b"\xff\xfe", "non-UTF-8"), ('{"status": "[/]"}', "markup"),
                       ('{"status": NaN, "attempt": 1e999}', "NaN"), (("sparse", 10**6), "1 MB")]:
        for verb in ("collect", "status"):
            A(S, "campaign", verb, "hp-c", "--json", campaign=True, prepare=plant_outcome(body),
              note=f"outcome.json {note}", timeout=30)
        A(S, "campaign", "list", "--json", campaign=True, prepare=plant_outcome(body), note=f"outcome.json {note}")

    def plant_pid(text):
        def prepare(d: Path) -> None:
            (d / folder / "local.pid").write_text(text)
        return prepare

    for text in ("1", "-1", "0", "abc", "99999999999999999999", "", "\x00"):
        A(S, "campaign", "cancel", "hp-c", "--json", campaign=True, prepare=plant_pid(text), note=f"local.pid {text!r}")
    def plant_bystander(d: Path) -> None:
        bystander = subprocess.Popen(["sleep", "120"], start_new_session=True)
        (d / "bystander").write_text(str(bystander.pid))
        (d / folder / "local.pid").write_text(str(bystander.pid))

    def bystander_lives(code, out, err, d: Path) -> str | None:
        pid = int((d / "bystander").read_text())
        alive = os.waitpid(pid, os.WNOHANG) == (0, 0)
        if alive:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        if not alive:
            return "an unrelated process whose pid local.pid held was signalled"
        if '"running"' in out:
            return "an unrelated process is read as the campaign's run"
        return None

    for verb in ("cancel", "status"):
        A(S, "campaign", verb, "hp-c", "--json", campaign=True, prepare=plant_bystander, check=bystander_lives,
          note="local.pid of an unrelated process")

    # ---- place
    S = "place"
    p = lambda *a, expect=R, **kw: expect(S, "place", *a, **kw)
    p("-k", "2", "-f", "{topo}", "--json", expect=A)
    p("-k", "4", "-f", "{topo}", "--policy", "spread", "--json", expect=A)
    p("-k", "2", "-f", "{topo}", "--free", "4-7", "--json", expect=A)
    p("-k", "2", "-f", "{topo}", "-m", "tiny-mistral", "--json", expect=A)
    p("-k", "2", "--node", "n1", "--json", expect=A)
    for k in ("0", "-1", "99999999999999999999", "9", "x", "1e3", ""):
        p("-k", k, "-f", "{topo}")
    for free in ("0-99999999999", "a", "-1", "0-", "", "7-0", "0,,1", "0" * 5000, "1;touch {mark}", "0x1"):
        p("-k", "2", "-f", "{topo}", "--free", free)
    for policy in ("bogus", "0,0", "0,99", "0-99999999999", "", "[/]"):
        p("-k", "2", "-f", "{topo}", "--policy", policy)
    for topo, files in [("/dev/zero", {}), ("{d}", {}), ("@nope", {}), ("@fifo", {"fifo": ("fifo",)}),
                        ("@bin", {"bin": b"\xff\xfe\x00GPU0"}), ("@empty", {"empty": ""}),
                        ("@junk", {"junk": "GPU0 GPU1\nGPU0 X NV4\n"}), ("@huge", {"huge": "GPU0\tX\n" * 200000}),
                        ]:
        p("-k", "2", "-f", topo, files=files, timeout=60)
    # 300 GPUs, none named: placed by the wiring alone, without a figure (issue 29)
    p("-k", "2", "-f", "@wide", "--json", expect=A, timeout=60, files={"wide": "\t" + "\t".join(f"GPU{i}" for i in range(300)) + "\n" + "".join(
        f"GPU{i}\t" + "\t".join("X" if i == j else "NV1" for j in range(300)) + "\n" for i in range(300))})
    for opt, value in [("--gpu-mem-gb", "nan"), ("--gpu-mem-gb", "inf"), ("--gpu-mem-gb", "-1"), ("--gpu-mem-gb", "0"),
                       ("--seq-len", "0"), ("--seq-len", "-1"), ("--seq-len", "99999999999999999999"),
                       ("--batch-size", "0"), ("--batch-size", "99999999999999999999"), ("--accounting", "bogus"),
                       ("-m", "../../etc"), ("-m", "nosuch-model"), ("-m", "{d}"), ("--gpu-name", "[/]$(touch {mark})"),
                       ]:
        extra = ["-m", "tiny-mistral"] if opt in ("--seq-len", "--batch-size", "--accounting", "--gpu-mem-gb") else []
        p("-k", "2", "-f", "{topo}", *extra, opt, value)
    p("-k", "2", "-f", "{topo}", "--node", "nosuch", "--json", expect=A, note="the file gives the wiring")
    p("-k", "2", "--node", "nosuch")
    p("-k", "99999999999999999999", "--across-nodes")
    p("-k", "0", "--across-nodes")

    # model configs, shared by place and estimate
    configs = {
        "up.json": json.dumps({"model_type": "../../etc", "hidden_size": 64}),
        "short.json": json.dumps({"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2}),
        "deep.json": "[" * 100000 + "]" * 100000,
        "nan.json": '{"model_type": "mistral", "hidden_size": NaN, "num_hidden_layers": 2, "vocab_size": 10}',
        "inf.json": '{"model_type": "mistral", "hidden_size": 1e999, "num_hidden_layers": 2, "vocab_size": 10}',
        "huge.json": json.dumps({"model_type": "mistral", "hidden_size": 10**30, "num_hidden_layers": 10**30,
                                 "vocab_size": 10**30, "intermediate_size": 10**30}),
        "neg.json": json.dumps({"model_type": "mistral", "hidden_size": -64, "num_hidden_layers": 2, "vocab_size": 10}),
        "str.json": json.dumps({"model_type": "mistral", "hidden_size": "64", "num_hidden_layers": 2, "vocab_size": 10}),
        "list.json": "[1, 2]",
        "bin.json": b"\xff\xfe{}",
        "fifo.json": ("fifo",),
        "zero.json": ("link", "/dev/zero"),
        "big.json": ("sparse", 17 * 1024**2),
        "dir.json": ("dir",),
    }
    for name, body in configs.items():
        R("place", "place", "-k", "2", "-f", "{topo}", "-m", f"@{name}", files={name: body}, timeout=60, note="config")
        R("estimate", "estimate", "-k", "2", "-m", f"@{name}", files={name: body}, timeout=60, note="config")

    # ---- estimate
    S = "estimate"
    e = lambda *a, expect=R, **kw: expect(S, "estimate", *a, **kw)
    e("-m", "tiny-mistral", "-k", "2", "--json", expect=A)
    e("-m", "mistral-7b", "-k", "8", "--gpu-name", "NVIDIA H200", "--json", expect=A)
    e("-m", "tiny-mistral", "-k", "2", "-s", "zero3", "--gpu-mem-gb", "80", "--json", expect=A)
    for opt, value in [("-k", "0"), ("-k", "-1"), ("-k", "99999999999999999999"), ("-k", "65537"), ("-s", "zero4"),
                       ("-s", ""), ("--batch-size", "0"), ("--batch-size", "-1"), ("--batch-size", "99999999999999999999"),
                       ("--seq-len", "0"), ("--seq-len", "99999999999999999999"), ("--accounting", "x"),
                       ("--gpu-mem-gb", "nan"), ("--gpu-mem-gb", "inf"), ("--gpu-mem-gb", "-80"), ("--gpu-mem-gb", "1e400"),
                       ]:
        e("-m", "tiny-mistral", opt, value)
    for name in ("[/]", "NVIDIA Z9000"):  # a name whose memory is not known: the fit is not judged
        e("-m", "tiny-mistral", "--gpu-name", name, "--json", expect=A)
    for model in ("", "../../etc/passwd", "nosuch", "$(touch {mark})", "/dev/zero", "x" * 5000):
        e("-m", model, timeout=60)

    # ---- run (a stand-in sbatch that keeps the script; never a real Slurm)
    S = "run"
    r = lambda *a, expect=R, **kw: expect(S, "run", "--whole-node", "-k", "2", "-f", "{topo}", *a, sbatch=True, **kw)
    r("--node", "gpu01", "-p", "gpu", "--json", "--", "true", expect=A)
    r("--json", "--", "sh", "-c", "touch {mark}", expect=A, note="a shell command as a list, not run here")
    r("--json", "--", "$(touch {mark})", "`touch {mark}`", ";touch {mark}", expect=A)
    for opt, value in [("--node", "gpu01\ntouch {mark}\n#"), ("--node", "gpu01;touch {mark}"), ("--node", "$(touch {mark})"),
                       ("--node", "gpu[01-99999999999]"), ("--node", ""), ("--node", "-x"), ("--node", "a" * 5000),
                       ("--node", "gpü01"),
                       ("-p", "gpu\n#SBATCH --wrap=touch {mark}"), ("-p", "gpu --wrap=x"), ("-p", ""), ("-p", "a b"),
                       ("--folder", "jobs\ntouch {mark}"), ("--folder", "jobs-%j"), ("--folder", "{d}/f/x"),
                       ("--folder", ""), ("--folder", "/proc/ww"),
                       ("-t", "-5"), ("-t", "0"), ("-t", "99999999999999999999"), ("-t", "525601"),
                       ("-c", "-3"), ("-c", "0"), ("-c", "1000000000"),
                       ("--start-timeout", "nan"), ("--start-timeout", "inf"), ("--start-timeout", "-1"),
                       ("--gpu-name", "a\nb"), ("--gpu-mem-gb", "nan")]:
        files = {"f": "x"} if value == "{d}/f/x" else {}
        r(opt, value, "--", "true", files=files)
    R(S, "run", "-k", "0", "-f", "{topo}", "--", "true", sbatch=True)
    R(S, "run", "-k", "99999999999999999999", "-f", "{topo}", "--", "true", sbatch=True)
    R(S, "run", "-k", "9", "--whole-node", "-f", "{topo}", "--", "true", sbatch=True)
    R(S, "run", "--whole-node", "-k", "2", "-f", "{topo}", sbatch=True, note="no command")
    R(S, "run", "--whole-node", "-k", "2", "-f", "{topo}", "--", "true", note="no sbatch on PATH")
    R(S, "run", "--whole-node", "-k", "2", "-f", "/dev/zero", "--", "true", sbatch=True, timeout=20)

    # ---- launch --dry-run
    S = "launch"
    la = lambda *a, expect=R, **kw: expect(S, "launch", "--dry-run", *a, files={"train.py": "print(1)\n"}, **kw)
    la("--model", "tiny-mistral", "--cpu", "--gpus", "2", "--json", "--", "@train.py", expect=A)
    la("--params", "7e9", "--cpu", "--gpus", "2", "--json", "--", "@train.py", expect=A)
    for opt, value in [("--gpus", "0"), ("--gpus", "-1"), ("--gpus", "99999999999999999999"), ("--params", "nan"),
                       ("--params", "inf"), ("--params", "1e400"), ("--params", "-5"), ("--params", "seven"),
                       ("--strategy", "zero4"), ("--seq-len", "0"), ("--batch-size", "-1"), ("--gpu-mem-gb", "nan"),
                       ("--accounting", "x"), ("-f", "/dev/zero"), ("--model", "../../etc")]:
        model = [] if opt in ("--model", "--params") else ["--model", "tiny-mistral"]
        la("--cpu", *model, opt, value, "--", "@train.py")
    la("--model", "tiny-mistral", "--cpu", "--", "@nosuch.py")
    la("--model", "tiny-mistral", "--cpu", note="no script")
    la("--model", "tiny-mistral", "--params", "7e9", "--cpu", "--", "@train.py", note="both")

    # ---- results / compare / report
    S = "results"
    for since in ("999999999999d", "0001-01-01T00:00+01:00", "9999-12-31T23:59-01:00", "yesterday", "", "-5d", "5x",
                  "2026-13-01", "2026-02-30", "nan", "1e3d", "36601d", "inf d", "2026-01-01T25:00", "\x01"):
        R(S, "results", "--since", since)
    for size in ("99999999999999999999", "9" * 400, "-1", "1Q", "", "1.5.5K", "nanG", "infM", "1e30", "9223372036854775808"):
        R(S, "results", "--bytes", size)
    for opt, value in [("--gpus", "99999999999999999999"), ("--gpus", "-1"), ("--gpus", "x"), ("--status", "bogus"),
                       ("--workload", "bogus"), ("--op", "bogus"), ("--strategy", "zero4"), ("--placement", "sideways"),
                       ("--transport", "pigeon"), ("--source", "bogus"), ("--fabric", "bogus"), ("--fingerprint", "zz"),
                       ("--group-by", "bogus"), ("--group-by", ""),
                       ("--group-by", "node;drop table results"), ("--group-by", "__class__"), ("--group-by", "1=1"),
                       ("--campaign", ""), ("--campaign", "nosuch"), ("--fingerprint", "%"), ("--fingerprint", "f_")]:
        R(S, "results", opt, value)
    R(S, "results", "--csv", "--json")
    for opt, value in [("--node", "'; DROP TABLE results; --"), ("--node", "%"), ("--node", "_"), ("--node", "[/]"),
                       ("--model", "\x1b[31m"), ("--group-by", "node,node"),
                       ("--since", "0d"), ("--since", "2026-01-01T00:00+05:00"), ("--bytes", "1K"), ("--gpus", "0"),
                       ("--group-by", "node,campaign"), ("--status", "oom"), ("--include-cpu", None),
                       ("--op", "all_reduce"), ("--source", "nccl-tests")]:
        A(S, "results", opt, *([value] if value is not None else []), "--json")
    A(S, "results", "--csv", "--group-by", "node,campaign")
    A(S, "results", "--json", base="empty")

    S = "compare"
    for a, b in [("campaign:ca", "campaign:ca"), ("campaign:nosuch", "campaign:ca"), ("fabric:bogus", "campaign:ca"),
                 ("", "campaign:ca"), ("campaign:", "campaign:ca"), ("ca", "ca"), ("planet:x", "campaign:ca"),
                 ("campaign:ca", "campaign:" + "x" * 5000)]:
        R(S, "compare", a, b)
    R(S, "compare", "campaign:ca")
    R(S, "compare", "campaign:ca", "campaign:cb", "--since", "999999999999d")
    R(S, "compare", "campaign:ca", "campaign:cb", "--op", "bogus")
    R(S, "compare", "campaign:ca", "campaign:cb", "--workload", "bogus")
    R(S, "compare", "campaign:ca", "campaign:cb", "--source", "bogus")
    A(S, "compare", "campaign:ca", "campaign:cb", "--json")
    A(S, "compare", "node:n1", "node:n2", "--json")
    A(S, "compare", "ca", "cb", "--json")

    S = "report"
    for out_dir, files in [("", {}), ("/dev/null", {}), ("@file", {"file": "x"}), ("@taken", {"taken/index.html": ("dir",)}),
                           ("/proc/wirewise-report", {}), ("@" + "r" * 300, {}), ("@dangling", {"dangling": ("link", "nowhere/x")}),
                           ("@fifo", {"fifo": ("fifo",)})]:
        R(S, "report", "--out", out_dir, files=files, timeout=60)
    for opt, value in [("--since", "999999999999d"), ("--since", "9999-12-31T23:59-01:00"), ("--fabric", "bogus"),
                       ("--source", "bogus"), ("--fingerprint", "zz")]:
        R(S, "report", "--out", "@r", opt, value)
    A(S, "report", "--out", "@r", "--json", timeout=120)
    R(S, "report", "--out", "@r", "--campaign", "nosuch")
    A(S, "report", "--out", "@r", "--campaign", "ca", "--json", timeout=120)
    R(S, "report", "--out", "@r/deeper/still", note="its parent folder does not exist")

    # ---- doctor
    S = "doctor"
    A(S, "doctor", "--json")
    A(S, "doctor")
    A(S, "doctor", "--include-cpu", "--json")
    A(S, "doctor", "--json", base="empty")
    A(S, "doctor", "--node", "[/]", "--json")
    for node in ("nosuch", "'; DROP TABLE results; --", "%", ""):
        R(S, "doctor", "--node", node)
    R(S, "doctor", "--db", "sqlite:////dev/zero")

    # ---- collect
    S = "collect"
    c = lambda files, expect=R, path="@d", **kw: expect(S, "collect", path, "--json", files=files, timeout=60, **kw)
    doc = lambda *records: results_doc(*records)
    A(S, "collect", "@d/result.json", "--json", files={"d/result.json": doc(collective(node="new"))})
    A(S, "collect", "@d", "--json", files={"d/x/result.json": doc(collective(started_at="2026-01-01T12:00+05:00"))})
    A(S, "collect", "@d", "--json", files={"d/result.json": ("dir",)}, note="a folder named result.json")
    A(S, "collect", "@d", "--json", files={"d/a": ("link", "."), "d/b/result.json": doc(collective(node="z"))}, note="loop")
    for body, note in [(("fifo",), "FIFO"), (("link", "/dev/zero"), "/dev/zero"), ("[" * 100000 + "]" * 100000, "deep"),
                       ('{"records": ' + "[" * 150 + "]" * 150 + "}", "150 deep"), (b"\xff\xfe\x00", "non-UTF-8"),
                       ("", "empty"), ("null", "null"), ("[]", "list"), ("{}", "no records"), ('{"records": 5}', "records 5"),
                       (doc({"op": "all_reduce"}), "no workload"), (("sparse", 1024**3 + 1), "past 1 GiB"),
                       (doc(collective(bytes=10**30)), "bytes 10^30"), (doc(collective(count=2**63)), "count 2^63"),
                       (doc(collective(gpu_count=10**20)), "gpu_count 10^20"), (doc(collective(bytes=-1)), "bytes -1"),
                       (doc(collective(bytes=1.5)), "bytes 1.5"), (doc(collective(bytes="1K")), "bytes '1K'"),
                       (doc(collective(busbw_gbs=-1.0)), "busbw -1"),
                       ('{"records": [' + json.dumps(collective())[:-1] + ', "time_us": NaN}]}', "NaN"),
                       ('{"records": [' + json.dumps(collective())[:-1] + ', "busbw_gbs": Infinity}]}', "Infinity"),
                       ('{"records": [' + json.dumps(collective())[:-1] + ', "algbw_gbs": 1e999}]}', "1e999"),
                       (doc(collective(status="[/]")), "status markup"), (doc(collective(status="bogus")), "status"),
                       (doc(collective(started_at="garbage")), "time"), (doc(collective(started_at="99999-01-01")), "year"),
                       (doc(collective(node="a" * 100000)), "node 100k"), (doc(collective(gpus=[10**30])), "gpus"),
                       (doc(collective(peak_mem_bytes=[-5])), "peak"), (doc(collective(bogus_field=1)), "unknown field"),
                       (doc(collective(), {"bogus": 1}), "one bad of two"), (doc(collective(wrong=2**64)), "wrong 2^64"),
                       (doc(train(mfu=float("inf"))), "mfu inf")]:
        c({"d/result.json": body}, note=note)
    R(S, "collect", "@nope", "--json")
    R(S, "collect", "/dev/zero", "--json", timeout=20)
    R(S, "collect", "@fifo", "--json", files={"fifo": ("fifo",)}, timeout=20)
    R(S, "collect", "--json", note="no path")

    # ---- import nccl-tests
    S = "import nccl-tests"
    imp = lambda path, *extra, expect=R, **kw: expect(S, "import", "nccl-tests", path, *extra, "--json",
                                                      **{"timeout": 60, **kw})
    imp("{nccl}", expect=A)
    imp("{nccl}", "--node", "hx", "--ranks", "8", "--env", "NCCL_ALGO=Ring", expect=A)
    imp("@huge", expect=A, note="a size of 400 nines: that row skipped with a warning",
        files={"huge": NCCL_LOG.read_text().replace("33554432       4194304", "9" * 400 + "    4194304")})
    imp("@nan.log", expect=A, files={"nan.log": NCCL_LOG.read_text().replace("183.49", "nan", 1)}, note="a NaN row")
    for path, files, note in [("@fifo", {"fifo": ("fifo",)}, "FIFO"), ("@zero", {"zero": ("link", "/dev/zero")}, "/dev/zero"),
                              ("{d}", {}, "folder"), ("@bin", {"bin": b"\xff\xfe\x00\x01" * 100}, "binary"),
                              ("@empty", {"empty": ""}, "empty"), ("@deep", {"deep": "[" * 100000}, "deep JSON"),
                              ("@big", {"big": ("sparse", 1024**3 + 1)}, "past 1 GiB"), ("@nope", {}, "missing"),
                              ("/dev/zero", {}, "/dev/zero")]:
        imp(path, files=files, note=note)
    for opt, value in [("--ranks", "0"), ("--ranks", "-1"), ("--ranks", "99999999999999999999"), ("--op", "bogus"),
                       ("--transport", "pigeon"), ("--env", "NOEQUALS"), ("--env", "A=b\nc"), ("--env", "=x"),
                       ("--node", "a\nb"), ("--topology-file", "/dev/zero"), ("--node", "")]:
        imp("{nccl}", opt, value)

    # ---- import nccl-tests: logs as people have them (issue 29): encodings, several runs, options per run
    S = "import logs"
    log = NCCL_LOG.read_text()
    rccl = (FIXTURES / "nccl-tests" / "hisohara-rccl-tests-mi300x-mi355x-no-gpu-names-headed-excerpts-readme.md").read_text()
    per_run = (FIXTURES / "nccl-tests" / "eugenesiow-a40-a100-h100-per-run-env-p2p-disabled-readme.md").read_text()
    other = re.sub(r"Pid\s+(\d+)", lambda m: f"Pid {int(m.group(1)) + 7}", log.replace(" on ", " on other-"))
    lines, others = log.splitlines(), other.splitlines()
    rows = [i for i, line in enumerate(lines) if line.split()[:1] and line.split()[0].isdigit()]
    command = "CUDA_VISIBLE_DEVICES={} ./build/all_reduce_perf -b 1G -e 8G -f 2 -g {}\n"
    body = log[log.index("#       size"):]
    logs_ok = {
        "bom.log": b"\xef\xbb\xbf" + log.encode(), "ps.log": log.replace("\n", "\r\n").encode("utf-16"),
        "be.log": log.encode("utf-16-be"), "u32.log": log.encode("utf-32"), "cr.log": log.replace("\n", "\r"),
        "latin1.log": log.encode().replace(b"cnode3-002", "n\xf6de".encode("latin-1")),
        "nul.log": log.replace("# Using devices", "# Using\x00 devices\x00\x00"),
        "long-line.log": log.replace("# Using devices", "y" * (3 * 1024**2) + "\n# Using devices", 1),
        "no-newline.log": "z" * (3 * 1024**2) + "\n" + log, "boms-inside.log": log + "\ufeff" + log,
        "twice.log": log + log, "rccl.md": rccl, "per-run.md": per_run,
        "noise.log": log.replace("#       size", "h:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n" * 60000
                                 + "#       size", 1),
        "tagged.log": "".join(f"[1,0]<stdout>:{line}\n" for line in rccl.splitlines()[119:186]).replace(
            "-1    90115", "-1\n[1,0]<stdout>:    90115"),
        "uuid.log": command.format("GPU-5ec1ab7e,GPU-9a0bd61c", 2) + body,
        "bigindex.log": command.format("99999999999999999999999,1", 2) + body,
        "huge-g.log": "./build/all_reduce_perf -g 99999999999999999999 -t 99999\n" + body,
        "many-g.log": "./build/all_reduce_perf -g 9999999 -t 1\n" + body,
        "digits.log": log.replace("nThread 1", "nThread " + "9" * 5000).replace("Rank  0", "Rank " + "9" * 5000),
        "excerpts.log": "\n".join(lines[rows[0]: rows[4]]) + "\n\n" + "\n".join(lines[rows[0]: rows[3]]) + "\n",
    }
    for name, content in logs_ok.items():
        imp(f"@{name}", expect=A, files={name: content}, note=name, timeout=120)
    imp("@per-run.md", "--transport", "254:pcie", "--ranks", "241:4", "--ranks", "254:4", expect=A,
        files={"per-run.md": per_run}, note="per run")
    logs_bad = {
        "interleaved.log": "\n".join(x for pair in zip(lines, others) for x in pair),
        "blocks.log": "\n".join(lines[:rows[0]] + others[:rows[0]] + [x for i in rows for x in (lines[i], others[i])]),
        "bom-only.log": b"\xef\xbb\xbf", "utf16-garbage.log": b"\xff\xfe" + bytes(range(256)) * 40,
        "utf16-odd.log": b"\xff\xfe" + "no rows here\n".encode("utf-16-le") + b"\x00",
        "only-commands.log": command.format("0,1", 2) * 100,
    }
    for name, content in logs_bad.items():
        imp(f"@{name}", files={name: content}, note=name)
    for opt, value in [("--op", "99999:all_reduce"), ("--op", "0:all_reduce"), ("--op", ":all_reduce"), ("--op", "x:all_reduce"),
                       ("--op", "1:bogus"), ("--op", "9" * 5000 + ":all_reduce"), ("--ranks", "1:0"),
                       ("--ranks", "1:99999999999999999999"), ("--ranks", "1:" + "9" * 5000), ("--transport", "1:pigeon"),
                       ("--transport", "1:"), ("--op", "1:all_gather")]:
        imp("{nccl}", opt, value, note=f"{opt} {value[:20]}")
    imp("{nccl}", "--op", "all_reduce", "--op", "all_gather", note="two ops for every run")
    imp("@per-run.md", "--transport", "default", files={"per-run.md": per_run}, note="default against P2P off")
    imp("@per-run.md", "--transport", "129:default", files={"per-run.md": per_run}, note="default against P2P off")
    imp("@per-run.md", "--env", "NCCL_P2P_DISABLE=0", files={"per-run.md": per_run}, note="--env against the log")
    sxm = (FIXTURES / "topo" / "synthetic-h200-sxm-8gpu-nvswitch.txt").read_text()
    mp = "\n".join(line for line in sxm.splitlines() if not line.strip().startswith("NV#")).replace("NV18", "NODE")
    imp("{nccl}", "--topology-file", "@mp.txt", files={"mp.txt": mp}, note="topo -mp")
    R(S, "topo", "save", "--from-file", "@mp.txt", "--node", "hx", files={"mp.txt": mp}, note="topo -mp")
    R(S, "topo", "show", "--from-file", "@mp.txt", files={"mp.txt": mp}, note="topo -mp")

    # ---- topo show / save --from-file
    S = "topo"
    for path, files, note in [("/dev/zero", {}, ""), ("@fifo", {"fifo": ("fifo",)}, ""), ("{d}", {}, ""), ("@e", {"e": ""}, "empty"),
                              ("@g", {"g": "hello world\n"}, "garbage"), ("@b", {"b": b"\xff\xfe\xfa"}, "non-UTF-8"),
                              ("@big", {"big": ("sparse", 2 * 1024**2)}, "2 MiB"), ("@nope", {}, "missing"),
                              ("@z", {"z": ("link", "/dev/zero")}, "")]:
        R(S, "topo", "show", "--from-file", path, files=files, timeout=20, note=note)
        R(S, "topo", "save", "--from-file", path, "--node", "hx", files=files, timeout=20, note=note)
    R(S, "topo", "show", "--from-file", "-", stdin=b"\x00" * 5000, note="stdin")
    R(S, "topo", "show", "--from-file", "-", stdin=b"", note="empty stdin")
    A(S, "topo", "show", "--from-file", "{topo}", "--json")
    A(S, "topo", "show", "--from-file", "-", "--json", stdin=TOPO.read_bytes())
    A(S, "topo", "save", "--from-file", "{topo}", "--node", "hx", "--json")
    A(S, "topo", "list", "--json")
    for node in ("a\nb", "", "../x", "$(touch {mark})", "x" * 5000, "[/]", "-rf"):
        R(S, "topo", "save", "--from-file", "{topo}", "--node", node)
        R(S, "topo", "slurm", "--from-file", "{topo}", "--node", node)

    # ---- topo survey and fleet pairs, no Slurm on PATH: one line
    S = "survey/pairs"
    for extra in ([], ["-p", "gpu"], ["-p", "gpu\n#SBATCH"], ["-w", "gpu[01-99999999999]"], ["-C", "a;touch {mark}"],
                  ["-t", "0"], ["--wait", "nan"], ["-w", ""]):
        R(S, "topo", "survey", *extra, timeout=30)
    for extra in ([], ["-p", "gpu"], ["-w", "gpu[01-99999999999]"], ["--bytes", "99999999999999999999"], ["--mode", "bogus"],
                  ["--op", "bogus"], ["--tolerance", "nan"], ["--gpus", "0"], ["--name", "bad name"], ["-n", "0"],
                  ["--timeout", "-1"], ["--backend", "mpi"]):
        R(S, "fleet", "pairs", *extra, timeout=30)

    # ---- db info and --db values
    S = "db"
    A(S, "db", "info", "--json")
    R(S, "db", "info", "--json", "--db", "sqlite:///{d}/fresh.db", note="no such database: a read creates none")
    A(S, "db", "info", "--db", "", "--json", note="empty: the default, as an empty WIREWISE_DB")
    for url in ("bogus://", "sqlite:///{d}/no/such/dir/x.db", "sqlite:////dev/zero", "sqlite:///{d}",
                "mysql://x@localhost/db", "sqlite:///@garbage", "postgresql+psycopg://nobody@127.0.0.1:1/x",
                "sqlite:///{d}/garbage.db/x.db", "not a url at all", "sqlite://", "sqlite:///{d}/fifo.db"):
        R(S, "db", "info", "--db", url.replace("@garbage", "{d}/garbage.db"),
          files={"garbage.db": "this is not a database" * 100, "ro": ("dir",), "fifo.db": ("fifo",)},
          prepare=lambda d: (d / "ro").chmod(0o500), timeout=30)
    R(S, "results", "--db", "bogus://")
    R(S, "campaign", "list", "--db", "sqlite:////dev/zero")
    out += issue_29_cases()
    out += health_loop_cases()
    return [case for case in out if case is not None]


def health_loop_cases() -> list[Case]:
    """Issue 29's surfaces where wirewise acts on a cluster: the health check and the prolog as
    slurmd runs them (exit 0 unless the node is at fault), and fleet status, drain, retest and
    resume (a stand-in sinfo lists partition gpu: n1, n2)."""
    import yaml

    out: list[Case] = []
    slurmd = {"SLURMD_NODENAME": "n1"}
    job = {**slurmd, "SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,1"}
    bad_rules = {
        "min_bytes above max_bytes": "prolog: {min_bytes: 512M}\n", "iters 10^12": "prolog: {iters: 1000000000000}\n",
        "time_limit_s .inf": "prolog: {time_limit_s: .inf}\n", "time_limit_s .nan": "health_check: {time_limit_s: .nan}\n",
        "time_limit_s 0": "health_check: {time_limit_s: 0}\n", "too much work": "prolog: {iters: 1000, max_bytes: 1G}\n",
        "repeats yes": "repeats: yes\n", "sigmas .inf": "rules: {busbw-below-baseline: {sigmas: .inf}}\n",
        "max_share nan": "guardrails: {max_share: .nan}\n", "max_per_hour 10^30": "guardrails: {max_per_hour: " + "9" * 30 + "}\n",
        "op bogus": "prolog: {op: bogus}\n", "backend mpi": "prolog: {backend: mpi}\n", "min_bytes 1.5": "prolog: {min_bytes: 1.5}\n",
        "min_bytes list": "prolog: {min_bytes: [1]}\n", "unknown key": "prolg: {}\n", "a list": "- a\n- b\n",
        "bad YAML": "prolog: [\n", "non-UTF-8": b"prolog: \x80\x81", "python tag": "!!python/object/apply:os.system ['touch x']\n",
        "alias bomb": "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(f"{c}: &{c} [*{q},*{q},*{q},*{q},*{q},*{q},*{q},*{q},*{q}]\n"
                                                         for q, c in zip("abcdefgh", "bcdefghi")),
        "deep": "a: " + "{a: " * 200 + "1" + "}" * 200 + "\n", "rules null": "rules: null\n", "2 MiB": "# " + "x" * 2 * 1024**2,
    }
    rules_paths = {"missing": "@nope.yaml", "folder": "{d}", "/dev/zero": "/dev/zero", "FIFO": "@fifo.yaml"}
    dbs = ["sqlite:////nonexistent/wirewise.db", "sqlite:///{d}/missing.db", "sqlite:////dev/zero", "sqlite:///{d}",
           "sqlite:///{d}/garbage.db", "sqlite:///{d}/fifo.db", "sqlite://", "sqlite:///:memory:", "bogus://",
           "mysql://x@localhost/db", "postgresql+psycopg://nobody@127.0.0.1:1/x", "not a url", "sqlite:///{d}/no/such/x.db"]
    side = {"garbage.db": "this is not a database" * 100, "fifo.db": ("fifo",), "fifo.yaml": ("fifo",)}

    S = "health check"
    for mode, env in (("--health-check", slurmd), ("--prolog", job)):
        S = "health check" if mode == "--health-check" else "prolog"
        on = lambda *args, expect="not judged", **kw: out.append(Case(S, ["doctor", mode, *args, "--json"], expect,
                                                                       bare=kw.pop("bare", env), timeout=kw.pop("timeout", 60), **kw))
        on(base="none", note="no database configured")
        for db in dbs:
            on("--db", db, base="none", files=side)
        for name, body in bad_rules.items():
            on("--db", "sqlite:///{d}/wirewise.db", "--rules", "@rules.yaml", files={"rules.yaml": body}, note=name)
        for name, path in rules_paths.items():
            on("--db", "sqlite:///{d}/wirewise.db", "--rules", path, files=side, timeout=30, note=name)
        on("--dbb", "x", note="a misspelt option in the wrapper")
        on("--report-only" if mode == "--prolog" else "--prolog", note="contradicting options")
        on("--db", "sqlite:///{d}/wirewise.db", "--rules", "@rules.yaml", files={"rules.yaml": "prolog: {time_limit_s: 6}\n"},
           expect="spared", note="a short time limit")
        for node in ("", "a\nb", "$(touch {mark})", "x" * 5000, "[/]", "-rf"):
            on("--db", "sqlite:///{d}/wirewise.db", "--node", node, expect="spared",
               **({} if mode == "--health-check" else {"bare": {**job, "SLURM_JOB_GPUS": ""}}))
        for name, value in (("SLURMD_NODENAME", ""), ("SLURMD_NODENAME", "a b"), ("SLURMD_NODENAME", "$(touch {mark})"),
                            ("WIREWISE_DB", "bogus://"), ("WIREWISE_DB_WAIT_S", "nan"), ("WIREWISE_DB_WAIT_S", "-1")):
            on("--db", "sqlite:///{d}/wirewise.db", bare={**env, name: value, "SLURM_JOB_GPUS": ""}, expect="spared",
               note=f"{name}={value}")
    S = "prolog"
    for gpus in ("", "abc", "0-99999999999", "-1", "0,,1", "0" * 5000, "0", "1-0", "0,0"):
        out.append(Case(S, ["doctor", "--prolog", "--db", "sqlite:///{d}/wirewise.db", "--json"], "spared",
                        bare={**job, "SLURM_JOB_GPUS": gpus}, timeout=60, note=f"SLURM_JOB_GPUS={gpus[:20]}"))

    S = "fleet actions"
    fleet = lambda *args, expect="refused", **kw: out.append(Case(S, ["fleet", *args], expect, slurm=True, timeout=60, **kw))
    for verb in ("status", "drain", "retest", "resume"):
        for partition in ("debgu", "gpu,debgu", "GPU", "$(touch {mark})", "a\nb", "-x", "x" * 5000):
            fleet(verb, "--partition", partition)
        for node in ("nosuch", "n1,n2", "a\nb", ""):
            fleet(verb, "--node", node)
        fleet(verb, "--partition", "gpu", "--json", expect="accepted")
        out.append(Case(S, ["fleet", verb], "refused", timeout=60, note="no Slurm here"))
    for verb in ("drain", "retest"):
        for timeout in ("nan", "inf", "-inf", "1e300", "1e400", "0", "29.9", "-5", "abc", "", "31536001"):
            fleet(verb, "--apply", "--timeout", timeout)
        for timeout in ("30", "31536000"):
            fleet(verb, "--apply", "--timeout", timeout, "--json", expect="accepted")
        for name in ("min_bytes above max_bytes", "iters 10^12", "time_limit_s .inf", "bad YAML", "alias bomb"):
            fleet(verb, "--apply", "--rules", "@rules.yaml", files={"rules.yaml": bad_rules[name]}, note=name)
    for beyond in ("-1", "abc", "1e30", "99999999999999999999"):
        fleet("drain", "--apply", "--beyond-guardrails", beyond)
    fleet("drain", "--apply", "--json", expect="accepted")
    fleet("resume", "--apply", "--json", expect="accepted")
    fleet("status", "--json", expect="accepted", base="empty")
    return out


def says_gone(code, out, err, d: Path) -> str | None:
    shown = json.loads(out)
    if "note" not in shown or "wirewise: note: " not in err:
        return "the stored statuses are shown without saying the folder is gone"
    return None


# -- issue 29: baselines, launch's environment and script, the API, place/status/collect -----------
from wirewise.orchestrator.health.baseline import VERSION as BASELINES_VERSION  # noqa: E402 - the files this wirewise reads

BASELINE = {"fingerprint": "f" * 64, "workload": "collective", "metric": "busbw_gbs", "median": 10.0, "scaled_mad": 1.0,
            "results": 4, "nodes": 2, "sources": {"wirewise": 4},
            "case": {"source": "wirewise", "op": "all_reduce", "dtype": "float32", "redop": "sum", "root": None,
                     "bytes": 1024, "in_place": False, "cuda_graph": False, "transport": "default", "device": "gpu",
                     "ranks": 2, "node_count": 1, "ranks_per_node": 2, "geometry": "packed", "scope": "node"}}


def baselines_doc(*entries, **top) -> str:
    return json.dumps({"format": "wirewise-baselines", "version": BASELINES_VERSION, "baselines": list(entries), **top})


def baseline(**changes) -> dict:
    found = json.loads(json.dumps(BASELINE))
    for name, value in changes.items():
        (found["case"] if name in found["case"] else found)[name] = value
    return found


def strict_file(name: str):
    """A check: the case folder's file `name` is strict JSON (no NaN, no Infinity)."""
    def check(code, out, err, d: Path) -> str | None:
        try:
            strict_json((d / name).read_text())
        except (OSError, ValueError) as exc:
            return f"{name} is not strict JSON: {exc}"
        return None
    return check


def still(kind: str, name: str):
    """A check: the case folder's `name` is still a `kind` (fifo, char), not a file renamed over it."""
    import stat as stat_module

    def check(code, out, err, d: Path) -> str | None:
        mode = (d / name).lstat().st_mode
        ok = stat_module.S_ISFIFO(mode) if kind == "fifo" else stat_module.S_ISCHR(mode)
        return None if ok else f"{name} is no longer a {kind}: it was replaced"
    return check


def plant_bad_baseline(d: Path) -> None:
    """A row an older wirewise stored unchecked: the case's GPUs as a list."""
    with sqlite3.connect(d / "wirewise.db") as conn:
        conn.execute(
            'INSERT INTO baselines (fingerprint, workload, case_key, "case", metric, median, scaled_mad, results, nodes, '
            "sources, origin, imported_at) VALUES (?, 'collective', 'old', ?, 'busbw_gbs', 5.0, 1.0, 4, 2, '{}', "
            "'old.json', '2026-01-01 00:00:00.000000')",
            ("f" * 64, json.dumps({**BASELINE["case"], "gpus": [0, 1]})))


def make_null(d: Path) -> None:
    if os.geteuid() == 0:  # a null device of the case's own, never the system's /dev/null
        os.mknod(d / "null", 0o020666, os.makedev(1, 3))
    else:
        (d / "null").symlink_to("/dev/null")


def issue_29_cases() -> list[Case]:
    out: list[Case] = []

    def r(*a, **kw):
        out.append(Case(*a[:1], list(a[1:]), "refused", **kw))

    def a(*args, **kw):
        out.append(Case(*args[:1], list(args[1:]), "accepted", **kw))

    # ---- baseline import: the whole file checked before anything is stored
    S = "baseline import"
    imp = lambda body, expect=r, **kw: expect(S, "baseline", "import", "@b.json", "--json", files={"b.json": body}, **kw)
    imp(baselines_doc(BASELINE), expect=a)
    imp(baselines_doc(BASELINE), expect=a, base="empty")
    imp("\ufeff" + baselines_doc(BASELINE), expect=a, note="BOM")
    imp(baselines_doc(BASELINE).encode("utf-16"), expect=a, note="UTF-16")
    for changes, note in [({"results": 2**63}, "results 2^63"), ({"results": 2**31}, "results 2^31"),
                          ({"results": 10**400}, "results 10^400"), ({"nodes": 0}, "nodes 0"), ({"results": -1}, "results -1"),
                          ({"results": 4.5}, "results 4.5"), ({"results": "4"}, "results '4'"), ({"results": True}, "results true"),
                          ({"results": None}, "results null"), ({"gpus": [0, 1]}, "gpus list"), ({"gpus": "2"}, "gpus text"),
                          ({"gpus": 10**30}, "gpus 10^30"), ({"bytes": 1.5}, "bytes 1.5"), ({"bytes": "1K"}, "bytes '1K'"),
                          ({"bytes": 2**64}, "bytes 2^64"), ({"in_place": "no"}, "in_place text"), ({"in_place": 2}, "in_place 2"),
                          ({"op": ["all_reduce"]}, "op list"), ({"op": "x" * 5000}, "op 5000 chars"), ({"op": {"a": 1}}, "op map"),
                          ({"dtype": 32}, "dtype number"), ({"device": 0}, "device number"), ({"median": "10"}, "median text"),
                          ({"median": 0}, "median 0"), ({"median": -1.0}, "median -1"), ({"median": 1e400}, "median 1e400"),
                          ({"scaled_mad": -0.5}, "scaled_mad negative"), ({"sources": {"wirewise": "4"}}, "source text"),
                          ({"sources": {"wirewise": 2**63}}, "source 2^63"), ({"sources": []}, "sources list"),
                          ({"sources": {"x" * 100: 1}}, "source name 100"), ({"metric": "tokens_per_s"}, "wrong metric"),
                          ({"workload": "bench"}, "workload"), ({"fingerprint": "F" * 64}, "fingerprint upper"),
                          ({"fingerprint": "../" * 20}, "fingerprint path"), ({"case": []}, "case list"), ({"case": {}}, "case empty"),
                          ({"colour": 1}, "unknown field")]:
        imp(baselines_doc(BASELINE, baseline(**changes)), note=note)
    for token in ("NaN", "Infinity", "-Infinity", "1e999"):
        imp(baselines_doc(BASELINE, baseline(scaled_mad=123.25)).replace("123.25", token), note=f"scaled_mad {token}")
        imp(baselines_doc(BASELINE, baseline(median=123.25)).replace("123.25", token), note=f"median {token}")
    for body, note in [("", "empty"), ("null", "null"), ("[]", "list"), ("{}", "no format"), ("[" * 100000, "deep"),
                       (baselines_doc(version=2), "version 2"), (baselines_doc(version="1"), "version text"),
                       (json.dumps({"format": "wirewise-baselines", "version": BASELINES_VERSION, "baselines": {}}), "baselines map"),
                       (json.dumps({"format": "wirewise-baselines", "version": BASELINES_VERSION}), "no baselines"),
                       (json.dumps({"format": "wirewise-baselines", "version": BASELINES_VERSION, "baselines": [None]}), "entry null"),
                       (json.dumps({"format": "wirewise-baselines", "version": BASELINES_VERSION, "baselines": [[1]]}), "entry list"),
                       (b"\xff\xfe\x00\x01" * 50, "binary"),
                       (("fifo",), "FIFO"), (("link", "/dev/zero"), "/dev/zero"), (("dir",), "folder"),
                       (("sparse", 1024**3 + 1), "past 1 GiB"), (("link", "nowhere"), "dangling link")]:
        imp(body, note=note, timeout=30)
    r(S, "baseline", "import", "@nope.json", note="missing")
    r(S, "baseline", "import", "/dev/zero", timeout=20)
    a(S, "baseline", "import", "-", "--json", stdin=baselines_doc(BASELINE).encode(), note="stdin")
    r(S, "baseline", "import", "-", stdin=b"", note="empty stdin")

    # ---- baseline export: strict JSON; never renamed over what is not a regular file
    S = "baseline export"
    ex = lambda *args, expect=r, **kw: expect(S, "baseline", "export", *args, **kw)
    ex("--out", "@e.json", "--json", expect=a, check=strict_file("e.json"))
    ex("--out", "@e.json", "--json", expect=a, prepare=plant_bad_baseline, check=strict_file("e.json"),
       note="a bad row stored before")
    ex("--out", "-", expect=a, prepare=plant_bad_baseline, note="stdout")
    ex("--out", "@null", "--json", expect=a, prepare=make_null, check=lambda *args: None if os.geteuid() else still("char", "null")(*args),
       note="a device")
    ex("--out", "@e.json", "--json", expect=a, files={"e.json": "old contents"}, check=strict_file("e.json"), note="replaced whole")
    ex("--out", "@link.json", "--json", expect=a, files={"real.json": "old", "link.json": ("link", "real.json")},
       check=lambda code, o, e, d: None if (d / "link.json").is_symlink() else "the link was replaced", note="a link")
    ex("--out", "@fifo", files={"fifo": ("fifo",)}, timeout=20, check=still("fifo", "fifo"), note="a FIFO nobody reads")
    ex("--out", "@dangling", files={"dangling": ("link", "nowhere/e.json")}, note="a link into a missing folder")
    ex("--out", "@d", files={"d": ("dir",)}, note="a folder")
    ex("--out", "{d}", note="the case folder")
    ex("--out", "", note="empty")
    ex("--out", "@no/such/e.json", note="its folder is missing")
    ex("--out", "@a-file/e.json", files={"a-file": "x"}, note="under a file")
    ex("--out", "-", "--json", note="stdout twice")
    ex("--out", "@e.json", "--fingerprint", "zz")
    ex("--out", "@e.json", "--fingerprint", "%")
    ex("--out", "@e.json", base="empty", note="nothing to export")
    ex("--out", "/proc/wirewise-export", timeout=20)

    # ---- launch: the script, and the scheduler's variables (one reader: wirewise.jobenv)
    S = "launch env"
    train = {"train.py": "print(1)\n"}
    la = lambda *args, expect=r, dry=True, **kw: expect(S, "launch", *(["--dry-run"] if dry else []), "--model", "tiny-mistral",
                                                        "--cpu", "--gpus", "2", *args, **{"files": train, **kw})
    def script_is(*tail):
        def check(code, o, e, d):
            got = json.loads(o)["node_command"][-len(tail):]
            return None if got == list(tail) else f"accelerate gets {got}, not {list(tail)}"
        return check
    la("--json", "--", "--debug", "a", expect=a, files={**train, "--debug": "print(1)\n"}, check=script_is("./--debug", "a"),
       note="a script named like an option")
    la("--json", "--", "-h", expect=a, files={**train, "-h": "print(1)\n"}, check=script_is("./-h"))
    la("--json", "--", "--config_file", "x", expect=a, files={**train, "--config_file": "print(1)\n"},
       check=script_is("./--config_file", "x"))
    for args, note in [(["--", "-m", "--debug"], "module named like an option"), (["--", "-m", ""], "empty module"),
                       (["--", "-m"], "no module"), (["--", "-m", "a b"], "module with a space"), (["--", ""], "empty script"),
                       (["--", "{d}"], "a folder"), (["--", "/dev/zero"], "a device"), (["--", "@fifo.py"], "a FIFO"),
                       (["--", "--debug"], "an option, no such file"), (["--", "@nope.py"], "missing")]:
        la(*args, note=note, files={**train, "fifo.py": ("fifo",)})
    bad_env = [({"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "n1", "SLURM_NODEID": v}, f"SLURM_NODEID={v!r}")
               for v in ("abc", "-1", "1.0", "99999999999999999999", "٣", " 0x1")]
    bad_env += [({"WORLD_SIZE": w, "LOCAL_WORLD_SIZE": l}, f"WORLD_SIZE={w!r} LOCAL_WORLD_SIZE={l!r}")
                for w, l in (("99999999999999999999", "1"), ("4", "2"), ("2", "8"), ("-4", "2"), ("4.0", "2"), ("4", "x"),
                             ("1e3", "1"), ("65537", "1"), ("٤", "1"))]
    bad_env += [({"SLURM_JOB_ID": j, "SLURM_JOB_NODELIST": "n1"}, f"SLURM_JOB_ID={j!r}")
                for j in ("x/../../../escaped", "..", ".", "1/2", "../../tmp/PWNED", "1\n2", "$(touch {mark})", "1" * 30, "٣")]
    bad_env += [({"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": n}, f"SLURM_JOB_NODELIST={n!r}")
                for n in ("gpu[01-99999999999]", "gpu[", "a,,b[")]
    for env, note in bad_env:
        la("--", "@train.py", env=env, note=note)
        la("--", "@train.py", env=env, note=note, dry=False)
    for env, note in [({"WORLD_SIZE": "", "LOCAL_WORLD_SIZE": ""}, "empty: unset"), ({"SLURM_JOB_ID": ""}, "empty job id"),
                      ({"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "0"}, "no ranks per node"),
                      ({"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}, "one machine's ranks")]:
        la("--json", "--", "@train.py", env=env, note=note, expect=a)

    # ---- wirewise.advice() from Python: one AdviceError (a ValueError), one line
    S = "advice()"
    base_env = 'dict(environ, WIREWISE_DB="sqlite:///{d}/none.db")'
    api = lambda kwargs, expect=r, **kw: expect(S, kwargs, api=True, **kw)
    api(f'dict(model="tiny-mistral", cpu=True, env={base_env})', expect=a)
    api(f'dict(params=7e9, cpu=True, env={base_env})', expect=a, note="7e9 as a float")
    api(f'dict(model=Path("tiny-mistral"), cpu=True, env={base_env})', expect=r, note="a registry name as a Path: no such file")
    for given in ('batch_size="4"', "batch_size=4.5", "batch_size=True", "batch_size=0", "batch_size=-1", "batch_size=10**30",
                  "batch_size=None", "batch_size=[4]", "params=inf", "params=nan", "params=-1", "params=0", "params=1e300",
                  'params="7e9"', "params=7.5", "params=10**40", "gpus=2.0", 'gpus="2"', "gpus=0", "gpus=-1", "gpus=10**20",
                  "seq_len=0", "seq_len=10**30", "seq_len=1.5", 'seq_len="2048"', "strategy=5", 'strategy="zero4"',
                  'strategy=""', 'strategy=["ddp"]', "gpu_mem_gb=nan", "gpu_mem_gb=inf", "gpu_mem_gb=-1", 'gpu_mem_gb="80"',
                  "gpu_mem_gb=True", "gpu_mem_gb=0", 'cpu="yes"', "cpu=1", 'accounting="x"', "accounting=None", "accounting=5",
                  "db=5", 'db="bogus://"', 'db="sqlite:////dev/zero"', 'topology_file="/dev/zero"', 'topology_file="{d}"',
                  "topology_file=5", 'topology_file="{d}/nope.txt"', "model=7", 'model=""', 'model="../../etc/passwd"',
                  'model=b"tiny-mistral"', 'model="nosuch"', 'model="/dev/zero"', 'model="x" * 5000'):
        model = "" if given.startswith(("model=", "params=")) else 'model="tiny-mistral", '
        api(f"dict({model}cpu=True, env={base_env}, {given})".replace("cpu=True, env", "env")
            if given.startswith("cpu=") else f"dict({model}cpu=True, env={base_env}, {given})", note=given[:40])
    for env in ('["SLURM_JOB_ID=1"]', '"SLURM_JOB_ID=1"', "5", '{"WORLD_SIZE": 4}', '{1: "a"}', '{"A": b"x"}',
                f'dict({base_env}, SLURM_NODEID="abc", SLURM_JOB_ID="7", SLURM_JOB_NODELIST="n1")',
                f'dict({base_env}, WORLD_SIZE="99999999999999999999", LOCAL_WORLD_SIZE="1")',
                f'dict({base_env}, SLURM_JOB_ID="x/../../../escaped", SLURM_JOB_NODELIST="n1")',
                ):
        api(f'dict(model="tiny-mistral", cpu=True, env={env})', note=f"env {env[:40]}")
    api(f'dict(model="tiny-mistral", cpu=True, env={base_env}, bogus=1)', expect=r, note="an unknown keyword")
    api(f'dict(model="tiny-mistral", cpu=True, env=dict({base_env}, CUDA_VISIBLE_DEVICES="99999999999999999999"))',
        expect=a, note="CPU ranks: no GPU named")
    api(f'dict(model="tiny-mistral", params=7e9, cpu=True, env={base_env})', note="both")
    api(f'dict(cpu=True, env={base_env})', note="neither")

    # ---- place on a plain `nvidia-smi topo -m` (no GPU names): placed, without a figure
    S = "place unnamed"
    plain = FIXTURES / "topo" / "synthetic-h200-nvl-8gpu-two-quads.txt"
    def no_figure(code, o, e, d):
        doc = json.loads(o)
        if doc["predicted_busbw_gbs"] is not None or not any("GPU model unknown" in x for x in doc["reasons"]):
            return "a figure without a GPU model, or no word on why there is none"
        return None
    for args in (["-k", "4"], ["-k", "2", "--policy", "spread"], ["-k", "8"], ["-k", "1"], ["-k", "4", "-m", "tiny-mistral"],
                 ["-k", "2", "--free", "4-7"]):
        a(S, "place", *args, "-f", str(plain), "--json", check=no_figure, base="empty")
    a(S, "place", "-k", "4", "-f", str(plain), "--gpu-name", "NVIDIA H200 NVL", "--json")
    a(S, "place", "-k", "4", "-f", str(plain), "--json", note="a stored node of the same wiring names them",
      check=lambda code, o, e, d: None if json.loads(o)["gpu_model_source"] == "stored node n1 (same wiring)" else "not from n1")
    r(S, "place", "-k", "4", "-f", str(plain), "--gpu-name", "")
    r(S, "place", "-k", "4", "-f", str(plain), "--gpu-name", " ")
    r(S, "place", "-k", "9", "-f", str(plain))
    a(S, "place", "-k", "4", "-f", "@topo.txt", "--json", files={"topo.txt": plain.read_text().replace("\n", "\r\n")},
      note="CRLF", check=no_figure, base="empty")

    # ---- collect: JSON lines of result records
    S = "collect lines"
    measured = FIXTURES / "measured-2xh200"
    a(S, "collect", str(measured / "wirewise-results.jsonl"), str(measured / "wirewise-collectives.jsonl"), "--json", timeout=90)
    line = json.dumps(collective(node="lines"))
    lines = lambda *rows: "\n".join(rows) + "\n"
    a(S, "collect", "@r.jsonl", "--json", files={"r.jsonl": lines(line)}, note="one line")
    a(S, "collect", "@r.jsonl", "--json", files={"r.jsonl": lines(line, "", "  ", json.dumps(collective(node="l2")))},
      note="blank lines between")
    a(S, "collect", "@r.jsonl", "--json", files={"r.jsonl": lines(line).replace("\n", "\r\n") + lines(json.dumps(collective(node="l3")))},
      note="CRLF")
    for body, note in [(lines(line, "{"), "a broken line"), (lines(line, "[]"), "a list line"), (lines(line, "null"), "null line"),
                       (lines(line, json.dumps(collective(bytes=-1))), "bytes -1"),
                       (lines(line, line[:-1] + ', "time_us": NaN}'), "NaN"), (lines(line, json.dumps(collective(count=2**63))), "2^63"),
                       (lines(line, json.dumps(collective(gpus=[10**30]))), "gpus 10^30"),
                       (lines(line, json.dumps({"records": [collective()]})), "a document as a line"),
                       (lines(line, json.dumps(collective(bogus=1))), "an unknown field"), (lines("1", "2"), "numbers"),
                       (lines(line, line).encode("utf-16"), "UTF-16"), (lines(line, "[" * 100000), "deep"),
                       ("\n\n\n", "blank lines only")]:
        r(S, "collect", "@r.jsonl", "--json", files={"r.jsonl": body}, note=note, timeout=60)
    return out


# -- the pass -------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the findings and figures as JSON")
    parser.add_argument("--only", help="only the inputs of these surfaces (comma-separated)")
    parser.add_argument("--jobs", type=int, default=3, help="commands at once (default 3)")
    options = parser.parse_args()
    chosen = [case for case in cases() if not options.only or case.surface in options.only.split(",")]
    root = Path(tempfile.mkdtemp(prefix="ww-hostile-"))
    try:
        system_path(root)
        (root / "cases").mkdir()
        build_bases(root)
        started = time.monotonic()
        with ThreadPoolExecutor(options.jobs) as pool:
            done = list(pool.map(lambda item: run_case(root, *item), enumerate(chosen)))
        wall = time.monotonic() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)
    figures: dict[str, dict] = {}
    failures = []
    for case, problem, took in done:
        tally = figures.setdefault(case.surface, {"tried": 0, "held": 0})
        tally["tried"] += 1
        if problem is None:
            tally["held"] += 1
        else:
            failures.append({"surface": case.surface, "input": case.label, "expected": case.expect, "happened": problem})
    total = {"tried": sum(t["tried"] for t in figures.values()), "held": sum(t["held"] for t in figures.values())}
    slowest = sorted(done, key=lambda item: -item[2])[:5]
    if options.json:
        print(json.dumps({"failures": failures, "surfaces": figures, "total": total, "wall_s": round(wall, 1)}, indent=2))
    else:
        for failure in failures:
            print(f"[{failure['surface']}] {failure['input']!r}: expected {failure['expected']}; {failure['happened']}")
        print()
        for surface, tally in figures.items():
            print(f"{surface:18} tried {tally['tried']:4}, held {tally['held']:4}")
        print(f"{'total':18} tried {total['tried']:4}, held {total['held']:4}  ({wall:.0f} s; slowest: "
              + ", ".join(f"{took:.1f} s {case.label[:40]!r}" for case, _, took in slowest) + ")")
    return 0 if total["tried"] == total["held"] else 1


if __name__ == "__main__":
    sys.exit(main())
