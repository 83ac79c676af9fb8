"""The seams the code is built on, checked from the source: who may import whom, SQL in the
store alone, one name in site-packages, and a control plane that starts without torch.

Parts: the contract (`wirewise.*` from contract/), the compute side (`wirewise.jobs`), the
control plane (`wirewise.orchestrator`, its CLI apart) and the migrations (`wirewise.db`).
Allowed: contract <- jobs, contract <- orchestrator <- cli; the control plane starts a local
run through the one entry point `wirewise.jobs.supervise`; db <-> store through public names.
Two edges run the other way, on purpose, each from one contract module to one control-plane
module and only inside a function (FRONT_DOOR): the `wirewise` package's front door for training
scripts (`wirewise.advice`, computed by the control plane) resolves `wirewise.orchestrator.api`
inside its module `__getattr__`, and `wirewise.collect` (how a job stores its own record) calls
`wirewise collect`'s code when called; `import wirewise` loads nothing of the orchestrator and
no other contract module depends on it; both are checked to stay that narrow and that lazy.
No module runs wirewise's own CLI as a process: a seam crossed by a command line is one no
import check can see.
"""

from __future__ import annotations

import ast
import itertools
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

FOLDERS = {"contract": "wirewise", "orchestrator": "wirewise.orchestrator", "jobs": "wirewise.jobs", "db": "wirewise.db"}
# (importer part, imported part) -> the modules of the imported part it may use
ALLOWED = {
    ("contract", "contract"): None,
    ("jobs", "contract"): None,
    ("jobs", "jobs"): None,
    ("orchestrator", "contract"): None,
    ("orchestrator", "orchestrator"): None,
    ("orchestrator", "jobs"): {"wirewise.jobs.supervise"},
    ("orchestrator", "db"): {"wirewise.db"},
    ("cli", "contract"): None,
    ("cli", "orchestrator"): None,
    ("cli", "cli"): None,
    # the store's case columns: a migration that adds a case field fills it by the store's own code
    ("db", "orchestrator"): {"wirewise.orchestrator.store.schema", "wirewise.orchestrator.store.engine",
                             "wirewise.orchestrator.store.cases"},
    # a migration that puts stored figures on the record's meaning reads it from the record (0011: MFU's
    # basis), and one that adds a case field from the case's definition (0015: an older baseline's scope)
    ("db", "contract"): {"wirewise.record", "wirewise.case"},
    ("db", "db"): None,
}
# (importer module, imported module): the two doors above, allowed inside functions only.
FRONT_DOOR = {("wirewise", "wirewise.orchestrator.api"), ("wirewise.collect", "wirewise.orchestrator.record.collect")}


def part_of(module: str) -> str:
    if module.startswith(("wirewise.orchestrator.cli", "wirewise.orchestrator.__main__")):
        return "cli"
    for part in ("orchestrator", "jobs", "db", "templates"):
        if module == f"wirewise.{part}" or module.startswith(f"wirewise.{part}."):
            return part
    return "contract"


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def imports_of(module: str, path: Path, top_level_only: bool = False, only_wirewise: bool = True) -> set[str]:
    """Every wirewise module the file of `module` imports (every module, with only_wirewise=False),
    at module level or inside functions (or, with `top_level_only`, when the module itself is
    imported); a relative import (`from . import x`, `from ..store import y`) as the absolute
    name it stands for."""
    names = set()
    tree = ast.parse(path.read_text())
    for node in (tree.body if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node.module, node.level, module, path.name == "__init__.py")
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in names if not only_wirewise or name == "wirewise" or name.startswith("wirewise.")}


def absolute(name: str | None, level: int, module: str, is_package: bool) -> str:
    """The module `from <level dots><name> import ...` names, written in `module`: level 1 is the
    importer's own package (a package's __init__ is its own package), each further dot one up."""
    if level == 0:
        return name or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    anchor = package[: len(package) - (level - 1)]
    return ".".join(anchor + ([name] if name else []))


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """'wirewise.topology.Topology' -> 'wirewise.topology' (the longest known module prefix)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def test_no_part_imports_what_it_must_not() -> None:
    known = modules()
    wrong = []
    for module, path in sorted(known.items()):
        for name in imports_of(module, path):
            target = resolve(name, known)
            if target is None or target == "wirewise" and part_of(module) != "contract" and name == "wirewise":
                continue
            key = (part_of(module), part_of(target))
            if (module, target) in FRONT_DOOR:
                continue
            if key not in ALLOWED or (ALLOWED[key] is not None and target not in ALLOWED[key]):
                wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_the_front_door_is_lazy_and_the_only_way_back() -> None:
    """`wirewise.advice` and `wirewise.collect` reach the control plane only when asked for:
    importing them, or the job recorder that stores through the second, loads nothing of the
    orchestrator, and no other contract module imports it."""
    known = modules()
    for module, target in FRONT_DOOR:
        assert target in {resolve(name, known) for name in imports_of(module, known[module])}, f"{module} no longer imports {target}"
        eager = {resolve(name, known) for name in imports_of(module, known[module], top_level_only=True)}
        assert target not in eager, f"{module} imports {target} when it is imported"
    doors = sorted({module for module, _ in FRONT_DOOR} | {"wirewise.jobs.history"})
    code = f"import sys; import {', '.join(doors)}; print(sorted(m for m in sys.modules if m.startswith('wirewise.orchestrator')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


STORE = "wirewise.orchestrator.store"
SQL_MODULES = ("sqlalchemy", f"{STORE}.schema", f"{STORE}.orm")  # the SQL and the tables it is written on


def sql_outside_the_store(files: dict[str, Path]) -> list[str]:
    """'module imports name' for each module outside the store and the migrations that imports
    SQLAlchemy or the store's tables: everything else calls the store's functions."""
    wrong = []
    for module, path in sorted(files.items()):
        if module == STORE or module.startswith((f"{STORE}.", "wirewise.db")):
            continue
        for name in sorted(imports_of(module, path, only_wirewise=False)):
            if any(name == sql or name.startswith(f"{sql}.") for sql in SQL_MODULES):
                wrong.append(f"{module} imports {name}")
    return wrong


def test_only_the_store_writes_sql() -> None:
    assert sql_outside_the_store(modules()) == []


def test_sql_planted_outside_the_store_is_found(tmp_path: Path) -> None:
    """The check of the test above sees an import inside a function, and one of the tables."""
    planted = tmp_path / "planted.py"
    planted.write_text("def nodes(store):\n    from sqlalchemy import select\n    from wirewise.orchestrator.store.schema import NODES\n"
                       "    from ..store.orm import Result\n")
    found = sql_outside_the_store({"wirewise.orchestrator.report.planted": planted, f"{STORE}.planted": planted})
    assert found == ["wirewise.orchestrator.report.planted imports sqlalchemy",
                     "wirewise.orchestrator.report.planted imports sqlalchemy.select",
                     "wirewise.orchestrator.report.planted imports wirewise.orchestrator.store.orm",
                     "wirewise.orchestrator.report.planted imports wirewise.orchestrator.store.orm.Result",
                     "wirewise.orchestrator.report.planted imports wirewise.orchestrator.store.schema",
                     "wirewise.orchestrator.report.planted imports wirewise.orchestrator.store.schema.NODES"]


def test_a_relative_import_is_read_as_the_module_it_names(tmp_path: Path) -> None:
    """`from . import x` in a module is its package's x, in a package's __init__ the package's
    own; each further dot goes one package up."""
    planted = tmp_path / "__init__.py"
    planted.write_text("from . import wiring\nfrom .search import best\nfrom ..store import results\nfrom ...errors import UserError\n")
    assert imports_of("wirewise.orchestrator.placement", planted) == {
        "wirewise.orchestrator.placement", "wirewise.orchestrator.placement.wiring",
        "wirewise.orchestrator.placement.search", "wirewise.orchestrator.placement.search.best",
        "wirewise.orchestrator.store", "wirewise.orchestrator.store.results",
        "wirewise.errors", "wirewise.errors.UserError"}
    module = tmp_path / "history.py"
    module.write_text("def f():\n    from . import wiring\n    from ..store.results import select_rows\n")
    assert imports_of("wirewise.orchestrator.placement.history", module) == {
        "wirewise.orchestrator.placement", "wirewise.orchestrator.placement.wiring",
        "wirewise.orchestrator.store.results", "wirewise.orchestrator.store.results.select_rows"}


def test_no_import_cycle_between_parts() -> None:
    """The graph of parts, without the allowed db <-> store pair and the front door, has no cycle."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for module, path in known.items():
        for name in imports_of(module, path):
            target = resolve(name, known)
            if (module, target) in FRONT_DOOR:
                continue
            if target and part_of(target) != part_of(module) and part_of(module) != "db":
                edges.setdefault(part_of(module), set()).add(part_of(target))

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in edges.get(start, ()))

    cycles = [part for part in edges if reaches(part, part, set())]
    assert not cycles, f"import cycle through {cycles}: {edges}"


def test_every_package_is_installed_under_wirewise() -> None:
    """pyproject lists every package folder (a new stage folder must be added there), and only
    under the one `wirewise` name."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {"templates": "wirewise.templates", **FOLDERS}
    present = set()
    for folder, package in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            present.add(".".join([package, *rel.parts]))
    assert present == listed
    assert all(name == "wirewise" or name.startswith("wirewise.") for name in listed)


def test_bare_names_do_not_import_outside_the_repository(tmp_path: Path) -> None:
    code = (
        "import importlib.util as u, sys\n"
        "print([n for n in ('jobs', 'db', 'templates', 'orchestrator', 'contract') if u.find_spec(n)])\n"
        "import wirewise.orchestrator.cli.main, wirewise.jobs.supervise\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_control_plane_imports_no_torch(tmp_path: Path) -> None:
    """Every control-plane and contract module imports without torch, deepspeed or transformers."""
    names = [m for m in modules() if part_of(m) in ("contract", "orchestrator", "cli") and not m.endswith("__main__")]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in ('torch', 'deepspeed', 'transformers', 'accelerate') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("registry_name", ["OPS", "STRATEGIES", "WORKLOADS"])
def test_registry_names_resolve_to_code(registry_name: str) -> None:
    """Every name in the registry points at a module and attribute that exist (checked from
    source, without importing torch)."""
    from wirewise import registry

    known = modules()
    for name, ref in getattr(registry, registry_name).items():
        ref = getattr(ref, "impl", ref)  # a strategy's descriptor names its code
        module, _, attribute = ref.partition(":")
        assert module in known, f"{name}: no module {module}"
        tree = ast.parse(known[module].read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        assert attribute in defined, f"{name}: {module} defines no {attribute}"


def _source_of(*folders: str) -> dict[Path, str]:
    return {path: path.read_text() for folder in folders for path in (ROOT / folder).rglob("*.py")}


def test_nvml_is_asked_through_one_module() -> None:
    """contract/nvml.py is the only importer of pynvml (its quirks are handled there once)."""
    importers = []
    for path, text in _source_of("contract", "orchestrator", "jobs").items():
        for node in ast.walk(ast.parse(text)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module] if isinstance(node, ast.ImportFrom) else []
            if "pynvml" in names:
                importers.append(str(path.relative_to(ROOT)))
    assert importers == ["contract/nvml.py"]


SCHEDULER_VARIABLES = {"SLURMD_NODENAME", "CUDA_VISIBLE_DEVICES", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"}


def test_the_schedulers_environment_is_read_in_one_place() -> None:
    """Slurm's variables, CUDA_VISIBLE_DEVICES and the launchers' rank variables are read by
    contract/jobenv.py alone (env.get("X"), env["X"], "X" in env); setting them is free."""
    def scheduler(node) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and (
            node.value.startswith("SLURM_") or node.value in SCHEDULER_VARIABLES)

    readers = []
    for path, text in _source_of("contract", "orchestrator", "jobs").items():
        if path == ROOT / "contract" / "jobenv.py":
            continue
        for node in ast.walk(ast.parse(text)):
            read = (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and scheduler(node.slice)
                    or isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get", "getenv") and node.args and scheduler(node.args[0])
                    or isinstance(node, ast.Compare) and scheduler(node.left)
                    and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops))
            if read:
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not readers, readers


SLURM_COMMANDS = frozenset({"sacct", "squeue", "sinfo", "scontrol", "scancel", "sbatch", "srun", "salloc", "sattach",
                            "sstat", "sreport", "sshare", "sprio", "sdiag", "strigger", "sacctmgr"})


def slurm_commands_named(path: Path) -> list[str]:
    """'path:line: command' for each string of the file that starts with a Slurm command, in
    any form: quoted either way, an element of an argument list, the start of a command line
    or of an f-string's text, with or without a folder ('/usr/bin/sacct'). Docstrings and the
    messages of raised exceptions ('srun not found: ...') name a command without running it."""
    tree = ast.parse(path.read_text())
    said = {id(node) for node in ast.walk(tree) if isinstance(node, ast.Raise)
            for node in ast.walk(node) if isinstance(node, ast.Constant)}
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            said.add(id(body[0].value))
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    named = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in said:
            words = node.value.split(maxsplit=1)
            if words and words[0].rpartition("/")[2] in SLURM_COMMANDS:
                named.append((node.lineno, f"{where}:{node.lineno}: {words[0].rpartition('/')[2]}"))
    return [text for _, text in sorted(named)]


def test_the_control_plane_reaches_slurm_only_through_its_folder() -> None:
    """No Slurm command is named outside orchestrator/slurm/ (its one runner, one error path and
    one timeout); sbatch goes through submitit, and the compute side (jobs/) is not the control plane."""
    named = [found for path in sorted(_source_of("contract", "orchestrator"))
             if path.parent != ROOT / "orchestrator" / "slurm" for found in slurm_commands_named(path)]
    assert not named, named


def test_a_slurm_command_in_any_string_form_is_found(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""Asks sinfo, as the module docstring may say."""\n'
        "import subprocess\n"
        "def nodes(job, folder):\n"
        "    subprocess.run(['scontrol', 'show', 'job', job])\n"
        "    subprocess.run(f'squeue -j {job}', shell=True)\n"
        '    subprocess.run(f"{folder}/sacct -j {job}", shell=True)\n'
        "    subprocess.run(('/usr/bin/scancel', job))\n"
        "    subprocess.run('sinfo -h -o %N'.split())\n"
        "    raise RuntimeError('srun not found: a message naming it')\n"
    )
    assert slurm_commands_named(planted) == ["planted.py:4: scontrol", "planted.py:5: squeue", "planted.py:6: sacct",
                                             "planted.py:7: scancel", "planted.py:8: sinfo"]


CLI_PROGRAMS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
# calls that start a process from a list of words, and those that take a command line as one string
PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output", "create_subprocess_exec", "execv", "execve",
                 "execvp", "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnl", "spawnlp"}
SHELL_CALLS = {"system", "popen", "getoutput", "getstatusoutput", "create_subprocess_shell", "split", *PROCESS_CALLS}


def cli_commands() -> set[str]:
    import typer.main

    from wirewise.orchestrator.cli.main import app

    return set(typer.main.get_command(app).commands)


def runs_the_cli(words: list[str | None], commands: set[str], started: bool) -> bool:
    """A command line runs wirewise's own CLI: it runs `-m` a CLI module or a package whose
    __main__ is one, or its program is a console script of pyproject (`wirewise`, by any path)
    and it is `started` by a process call or names a wirewise command next."""
    if any(flag == "-m" and module and "cli" in (part_of(module), part_of(f"{module}.__main__"))
           for flag, module in zip(words, words[1:])):
        return True
    program = bool(words and words[0] and Path(words[0]).name in CLI_PROGRAMS)
    return program and (started or len(words) > 1 and words[1] in commands)


def _name(call: ast.Call) -> str | None:
    return getattr(call.func, "attr", getattr(call.func, "id", None))


def _word(node) -> str | None:
    """A command line's word as the source states it: a string, or `shutil.which("wirewise")`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Call) and _name(node) == "which" and node.args:
        return _word(node.args[0])
    return None


def _shell_words(node) -> list[str | None]:
    """The words of a command line given as one string (an f-string up to its first value)."""
    if isinstance(node, ast.JoinedStr):
        text = "".join(str(part.value) for part in itertools.takewhile(lambda part: isinstance(part, ast.Constant), node.values))
    else:
        text = _word(node) or ""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def cli_runs(files: dict[str, Path]) -> list[str]:
    """'module:line' for each command line in `files` that runs wirewise's own CLI: a list or
    tuple of words (an argv, wherever it is built: a process call's argument, a constant), an
    exec's words, and a string handed to a shell or to shlex."""
    commands = cli_commands()
    found = set()
    for name, path in sorted(files.items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.List | ast.Tuple):
                runs = runs_the_cli([_word(element) for element in node.elts], commands, started=False)
            elif isinstance(node, ast.Call) and _name(node) in SHELL_CALLS and node.args:
                first = node.args[0]
                words = [_word(element) for element in first.elts] if isinstance(first, ast.List | ast.Tuple) else _shell_words(first)
                runs = (runs_the_cli(words, commands, started=True)
                        or runs_the_cli([_word(arg) for arg in node.args[1:]], commands, started=True))  # os.execlp(p, *argv)
            else:
                continue
            if runs:
                found.add((name, node.lineno))
    return [f"{name}:{line}" for name, line in sorted(found)]


def test_no_module_runs_wirewises_own_cli() -> None:
    """The seams are crossed by imports the checks above see (a job stores its record through
    wirewise.collect), never by running `wirewise` or `python -m wirewise.orchestrator`."""
    assert cli_runs(modules()) == []


def test_a_planted_run_of_the_cli_is_found(tmp_path: Path) -> None:
    """Every form the check above reads, and what it must leave alone (the compute side's own
    entry points, a message that tells a person to run a command)."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import os, shutil, subprocess, sys\n"
        "COLLECT = [sys.executable, '-P', '-m', 'wirewise.orchestrator', 'collect']\n"  # 2
        "def run(path):\n"
        "    subprocess.run((\"wirewise\", 'collect', path))\n"  # 4
        "    subprocess.run([shutil.which('wirewise'), 'doctor'])\n"  # 5
        "    os.system('/usr/local/bin/wirewise results --json')\n"  # 6
        "    subprocess.run(f'wirewise collect {path}', shell=True)\n"  # 7
        "    subprocess.Popen([sys.executable, '-m', 'wirewise.orchestrator.cli.main', 'results'])\n"  # 8
        "    os.execlp('wirewise', 'wirewise', 'doctor')\n"  # 9
        "    subprocess.run([sys.executable, '-P', '-m', 'wirewise.jobs.worker', path])\n"
        "    subprocess.run([sys.executable, '-m', 'accelerate.commands.launch', 'train.py'])\n"
        "    print(f'later: wirewise collect {path}')\n"
        "    return ('wirewise', 'nccl-tests', 'job'), ['wirewise', 'results']\n"  # 13
    )
    assert cli_runs({"planted": planted}) == [f"planted:{line}" for line in (2, 4, 5, 6, 7, 8, 9, 13)]


def test_executor_names_are_compared_only_inside_the_executors() -> None:
    """`executor == "slurm"` anywhere else would be a branch a new executor has to find."""
    from wirewise.orchestrator.executor import EXECUTORS

    found = []
    for path, text in _source_of("contract", "orchestrator").items():
        if path.parent == ROOT / "orchestrator" / "executor":
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare):
                constants = [n.value for side in (node.left, *node.comparators) for n in ast.walk(side) if isinstance(n, ast.Constant)]
                if any(value in EXECUTORS for value in constants):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def executors_named_by_text(files: dict[Path, str]) -> list[str]:
    """'file:line' where code names an executor by its text ("slurm") where it says which executor
    runs something: `"executor": ...` in a dict, `executor=...`, executor_named(...) or
    check_name(...), an `executor` parameter's or field's default. executor.LOCAL and SLURM name them."""
    from wirewise.orchestrator.executor import EXECUTORS

    def text(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in EXECUTORS

    found = []
    for path, source in files.items():
        for node in ast.walk(ast.parse(source)):
            named = []
            if isinstance(node, ast.Dict):
                named = [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "executor"]
            elif isinstance(node, ast.Call):
                named = [kw.value for kw in node.keywords if kw.arg == "executor"]
                named += node.args[:1] if getattr(node.func, "attr", getattr(node.func, "id", None)) in ("executor_named", "check_name") else []
            elif isinstance(node, ast.FunctionDef):
                args = [*node.args.posonlyargs, *node.args.args]
                named = [d for a, d in zip(args[len(args) - len(node.args.defaults):], node.args.defaults) if a.arg == "executor"]
                named += [d for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if a.arg == "executor" and d]
            elif isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "executor":
                named = [node.value] if node.value else []
            if any(text(value) for value in named):
                found.append((str(path), node.lineno))
    return [f"{path}:{line}" for path, line in sorted(found)]


def test_executors_are_named_by_their_declared_names() -> None:
    files = {path.relative_to(ROOT): text for path, text in _source_of("contract", "orchestrator", "jobs").items()
             if path.parent != ROOT / "orchestrator" / "executor"}
    assert executors_named_by_text(files) == []


def test_an_executor_named_by_its_text_is_found() -> None:
    planted = (
        "def survey(store, executor: str = 'slurm'):\n"  # 1
        "    target = {'executor': 'slurm', 'nodelist': 'gpu01'}\n"  # 2
        "    submit(spec, executor='local')\n"  # 3
        "    return executor_named('slurm'), {'transport': 'local'}, target['executor'] == SLURM\n"  # 4
        "class Target:\n"
        "    executor: str = 'local'\n"  # 6
    )
    assert executors_named_by_text({Path("planted.py"): planted}) == [f"planted.py:{n}" for n in (1, 2, 3, 4, 6)]


def _holds_extra(node) -> bool:
    """An expression that is a record's `extra`: `extra`, `x.extra`, `x["extra"]`,
    `x.get("extra")`, `_extra(x)`, or `extra or {}`."""
    if isinstance(node, ast.BoolOp):
        return any(_holds_extra(value) for value in node.values)
    if isinstance(node, ast.Call):
        name = getattr(node.func, "attr", getattr(node.func, "id", None))
        return name == "_extra" or name == "get" and bool(node.args) and _constant(node.args[0]) == "extra"
    return (isinstance(node, ast.Name) and node.id == "extra" or isinstance(node, ast.Attribute) and node.attr == "extra"
            or isinstance(node, ast.Subscript) and _constant(node.slice) == "extra")


def _constant(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def extra_keys_read(tree: ast.AST) -> list[tuple[str, int]]:
    """(key, line) of each key read from a record's `extra`: `.get("key")`, `["key"]`, `"key" in`,
    and SQL's json_text("extra", "key")."""
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr == "get" and _holds_extra(node.func.value):
                key = _constant(node.args[0])
            elif node.func.attr == "json_text" and _constant(node.args[0]) == "extra" and len(node.args) > 1:
                key = _constant(node.args[1])
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _holds_extra(node.value):
            key = _constant(node.slice)
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) \
                and any(_holds_extra(side) for side in node.comparators):
            key = _constant(node.left)
        if key:
            found.append((key, node.lineno))
    return found


def undeclared_extra_reads(readers: dict[str, str], writers: dict[str, str]) -> list[str]:
    """'file:line key' for each key of `extra` the readers' source reads that the writers' source
    names (a string or a keyword anywhere in it: the other side may write it) and
    wirewise.record.Extra does not declare. A key only the reader's side names is its own."""
    from wirewise.record import Extra

    named = {n.value if isinstance(n, ast.Constant) else n.arg for text in writers.values() for n in ast.walk(ast.parse(text))
             if isinstance(n, ast.keyword) or _constant(n)}
    return [f"{path}:{line} {key}" for path, text in sorted(readers.items())
            for key, line in sorted(extra_keys_read(ast.parse(text)))
            if key in named and key not in Extra.__optional_keys__]


def test_every_extra_key_read_across_the_seam_is_declared() -> None:
    """The control plane (and the contract's own readers) read of a record's `extra` only keys
    wirewise.record.Extra declares, where the compute side may write them; and the other way."""
    def source(*folders: str) -> dict[str, str]:
        return {str(path.relative_to(ROOT)): text for path, text in _source_of(*folders).items()}

    control, compute = source("contract", "orchestrator"), source("jobs")
    assert undeclared_extra_reads(control, compute) == []
    assert undeclared_extra_reads(compute, control) == []


def test_an_undeclared_extra_key_read_across_the_seam_is_found() -> None:
    compute = "def row(run):\n    return {'extra': {'strategy_impl': run.name, 'precision': run.precision}}\n"
    control = (
        "def shown(record, row, d):\n"
        "    extra = record.extra or {}\n"
        "    return (extra.get('strategy_impl'), record.extra['precision'], (row.get('extra') or {}).get('strategy_impl'),\n"  # 3
        "            'strategy_impl' in extra, _extra(row)['identified_by'], d.json_text('extra', 'strategy_impl'))\n"  # 4
    )
    assert undeclared_extra_reads({"planted.py": control}, {"jobs.py": compute}) == [
        "planted.py:3 strategy_impl", "planted.py:3 strategy_impl", "planted.py:4 strategy_impl", "planted.py:4 strategy_impl"]


# The private names of dependencies the code uses, each because the dependency has no public one.
PRIVATE_BUT_NEEDED = {
    # a callback at the end of autograd's backward, before the reducers DDP, FSDP and DeepSpeed
    # queue there: torch has no public hook for it (those libraries use this one)
    "jobs/train/loop.py: torch.autograd.Variable._execution_engine",
    # typer 0.28 vendors click as typer._click and names its UsageError and NoArgsIsHelpError
    # nowhere else; older typers use click's (cli/main.py reads either)
    "orchestrator/cli/main.py: typer._click.exceptions",
    # the completion script and classes: typer's own `--install-completion` code, not exported
    "orchestrator/cli/completion.py: typer._completion_shared.get_completion_script",
    "orchestrator/cli/completion.py: typer._completion_classes.completion_init",
}


def private_names_of_dependencies(files: dict[str, str]) -> list[str]:
    """'file: name' for each private name (one leading underscore) of a third-party package the
    source imports or reads: `from submitit.slurm.slurm import _parse_node_list`, `from typer._click
    import ...`, `PartialState._shared_state` where PartialState came from accelerate."""
    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    found = set()
    for path, text in files.items():
        tree = ast.parse(text)
        bound: dict[str, str] = {}  # a name in this file -> the third-party name it is
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported = [(alias.asname or alias.name, f"{node.module}.{alias.name}") for alias in node.names]
            elif isinstance(node, ast.Import):  # `import a.b` binds a; `import a.b as c` binds c to a.b
                imported = [(alias.asname or alias.name.partition(".")[0], alias.name) for alias in node.names]
            else:
                continue
            for local, name in imported:
                if _third_party(name):
                    bound[local] = local if name.startswith(f"{local}.") else name
                    if any(private(part) for part in name.split(".")):
                        found.add(f"{path}: {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private(node.attr):
                chain = [node.attr]
                base = node.value
                while isinstance(base, ast.Attribute):
                    chain.insert(0, base.attr)
                    base = base.value
                if isinstance(base, ast.Name) and base.id in bound:
                    found.add(f"{path}: {'.'.join([bound[base.id], *chain])}")
    return sorted(found)


def _third_party(name: str) -> bool:
    top = name.partition(".")[0]
    return top != "wirewise" and top not in sys.stdlib_module_names


def test_no_private_api_of_a_dependency() -> None:
    """A private name may change in any release of its package: the code uses public ones, but for
    PRIVATE_BUT_NEEDED, each with the reason no public one does the job."""
    files = {str(path.relative_to(ROOT)): text for path, text in _source_of("contract", "orchestrator", "jobs", "db").items()}
    assert set(private_names_of_dependencies(files)) == PRIVATE_BUT_NEEDED


def test_a_private_api_of_a_dependency_is_found() -> None:
    planted = (
        "import sys, torch.autograd as ag\n"
        "from submitit.slurm.slurm import SlurmParseException, _parse_node_list\n"
        "from typer._click import exceptions\n"
        "def engine():\n"
        "    from accelerate.state import PartialState, is_initialized\n"
        "    import accelerate._private\n"
        "    return PartialState._shared_state, ag._functions, sys._getframe(), is_initialized(), PartialState.__dict__\n"
    )
    assert private_names_of_dependencies({"planted.py": planted}) == [
        "planted.py: accelerate._private", "planted.py: accelerate.state.PartialState._shared_state",
        "planted.py: submitit.slurm.slurm._parse_node_list", "planted.py: torch.autograd._functions",
        "planted.py: typer._click.exceptions"]


# The orchestrator's folders in the order they build on each other (README, "How it works"):
# a folder imports only folders of an earlier stage.
STAGES = (
    ("store", "slurm"),
    ("executor", "placement", "record"),
    ("results",),
    ("advise", "bench", "report"),
    ("survey",),
    ("campaign",),
    ("health",),
    ("fleet",),
    ("decide",),
    ("launch", "run"),
    ("api",),
    ("cli",),
    ("__main__",),
)
STAGE_OF = {folder: rank for rank, folders in enumerate(STAGES) for folder in folders}


def stage_of(module: str) -> str | None:
    """'wirewise.orchestrator.placement.wiring' -> 'placement'; None outside the orchestrator."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "orchestrator" else None


def out_of_order(files: dict[str, Path], known: dict[str, Path]) -> list[str]:
    """'module imports target' for each import of an orchestrator folder by one of the same or
    an earlier stage, and each folder missing from STAGES."""
    wrong = []
    for module, path in sorted(files.items()):
        here = stage_of(module)
        if here is None:
            continue
        if here not in STAGE_OF:
            wrong.append(f"{module}: its folder {here!r} has no stage in STAGES")
            continue
        for target in sorted({resolve(name, known) for name in imports_of(module, path)} - {None}):
            there = stage_of(target)
            if there and there != here and STAGE_OF.get(there, len(STAGES)) >= STAGE_OF[here]:
                wrong.append(f"{module} imports {target}")
    return wrong


def test_each_orchestrator_folder_imports_only_earlier_stages() -> None:
    known = modules()
    assert out_of_order(known, known) == []


def test_an_import_against_the_stage_order_is_found(tmp_path: Path) -> None:
    """The check above sees a planted import of a later stage, inside a function too."""
    known = modules()
    planted = tmp_path / "planted.py"
    planted.write_text("def choose():\n    from wirewise.orchestrator.campaign.plan import plan_campaign\n"
                       "    from ..health import judge\n")
    found = out_of_order({"wirewise.orchestrator.placement.planted": planted}, known)
    assert found == ["wirewise.orchestrator.placement.planted imports wirewise.orchestrator.campaign.plan",
                     "wirewise.orchestrator.placement.planted imports wirewise.orchestrator.health",
                     "wirewise.orchestrator.placement.planted imports wirewise.orchestrator.health.judge"]
