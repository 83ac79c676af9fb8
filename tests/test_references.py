"""Comments, docstrings and the docs name only what exists (issue 21 item 9).

Read are the comments and docstrings of the Python files and the comments of the shell scripts
under contract/, orchestrator/, jobs/, db/, tests/ and docs/examples/, and all of README.md and
docs/*.md. What reads as a name in the code is looked up from the source, importing nothing:

- a repository path (`orchestrator/campaign/plan.py`, `tests/slurm/multinode.sh`, `store/topology.py:83`,
  `tests/test_architecture.py::test_only_the_store_writes_sql`, `jobs/train/strategies/`): a file or folder of the
  repository, whole, from the citing file's folder, or as the tail of a longer path (`report/query.py`);
  a cited line is within the file, a cited test is defined in it. Paths that start elsewhere
  (`run/accelerate.yaml`, `FOLDER/spec.yaml`, submitit's `core/core.py`) are what the code
  writes or another project holds, and are not looked up;
- a bare file name (`conftest.py`, here): a file beside the citing one (anywhere, from README.md
  and docs/);
- in a package's docstring, the list of its parts (lines `- `name`: ...`): each a module of the
  package or a name it defines;
- a dotted name under `wirewise` (`wirewise.orchestrator.store.results.result_rows`): a module,
  then a name defined or imported at module level of it (followed to where it is defined), then a
  class's own attribute; or one of the entry-point groups contract/registry.py names;
- a backticked `module.name` whose first parts are a module of the repository (`errors.first_error`,
  `store.results.result_rows`): the same, but after a one-part module (`params.transport`, which may
  be a field path of a record) the last name need only be one the code uses somewhere.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = {"contract": "wirewise", "orchestrator": "wirewise.orchestrator", "jobs": "wirewise.jobs",
            "db": "wirewise.db", "templates": "wirewise.templates"}
TOP = (*PACKAGES, "tests", "docs")
CITING = ("contract", "orchestrator", "jobs", "db", "tests", "docs/examples")
SKIP = {".git", ".venv", "__pycache__", "node_modules"}
NOT_OURS = {"train.py"}  # the user's training script in examples (`srun python train.py`)
CODE_FILES = "py|sh|md"
DATA_FILES = "toml|ini|mako|yaml|yml|json|txt|cfg|conf"
# Folders then a file, or folders ending in '/', or a bare code file; not inside something longer
# (an absolute path, a URL, `~/x`, `$X/x`, `<x>/y`); with a cited test (`::name`) or line (`:12`).
PATH = re.compile(rf"(?<![\w./~$<>{{}}@:\\-])((?:[\w-]+/)+(?:[\w.-]+\.(?:{CODE_FILES}|{DATA_FILES})\b|(?![\w.-]))"
                  rf"|[\w-]+\.(?:py|sh)\b)(?:::(\w+)|:(\d+)\b)?")
DOTTED = re.compile(r"(?<![\w./-])wirewise(?:\.[A-Za-z_]\w*)+")
SHORT = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`")
FILE_NAME = re.compile(rf".*\.(?:{CODE_FILES}|{DATA_FILES}|db|log|csv|html|png|svg|whl|gz)")
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]+")  # RUN_DIR, FOLDER, TASK: a path the code makes
PARTS = re.compile(r"^\s*[-*] `([A-Za-z_]\w*)`:")  # a package docstring's list of its parts


# -- what exists ---------------------------------------------------------------------------------

@cache
def repository(root: Path = ROOT) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(files, folders, tails): paths relative to the root, and every tail of them ('a/b/c' ->
    'b/c', 'c'), without the VCS, virtual environment and caches."""
    files, folders = set(), set()
    stack = [root]
    while stack:
        for entry in stack.pop().iterdir():
            if entry.name in SKIP or entry.name.endswith(".egg-info"):
                continue
            rel = entry.relative_to(root).as_posix()
            if entry.is_dir():
                folders.add(rel)
                stack.append(entry)
            else:
                files.add(rel)
    tails = {path.split("/", i)[-1] for path in files | folders for i in range(path.count("/") + 1)}
    return frozenset(files), frozenset(folders), frozenset(tails)


@cache
def modules(root: Path = ROOT) -> dict[str, Path]:
    """'wirewise.orchestrator.store.results' -> its file (a package -> its __init__.py)."""
    found = {}
    for folder, package in PACKAGES.items():
        for path in (root / folder).rglob("*.py"):
            parts = [p for p in path.relative_to(root / folder).with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


@cache
def parsed(text: str) -> ast.Module:
    return ast.parse(text)


@cache
def tree_of(path: Path) -> ast.Module:
    return parsed(path.read_text())


@cache
def identifiers(root: Path = ROOT) -> frozenset[str]:
    """Every word of the repository's Python code: the names it defines and uses, its attributes,
    arguments, keywords and the keys of its dictionaries (a field path's last name is one)."""
    return frozenset(w for path in modules(root).values() for w in re.findall(r"[A-Za-z_]\w*", path.read_text()))


def _top_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A body's statements, with those under its if/try blocks (optional imports, fallbacks)."""
    out = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            out += _top_statements(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_statements(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])
    return out


def defined_names(body: list[ast.stmt], module: str, is_package: bool) -> dict[str, ast.AST | str]:
    """name -> its def or class node (or the assignment), or 'source.module:name' for an import."""
    names: dict[str, ast.AST | str] = {}
    for node in _top_statements(body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.partition(".")[0]] = f"{alias.name if alias.asname else alias.name.partition('.')[0]}:"
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                anchor = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}:{alias.name}"
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update({n.id: node for n in ast.walk(target) if isinstance(n, ast.Name)})
    return names


def _front_door(tree: ast.Module) -> set[str]:
    """The names a module `__getattr__` answers for: the strings the module holds."""
    if not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        return set()
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def names_something(module: str, attributes: list[str], known: dict[str, Path], hops: int = 0) -> bool:
    """Whether `module.a.b` names something: a submodule, a name defined or imported at module
    level (an import followed to the module that defines it), or a class's own attribute. What
    is imported from outside the repository is not ours to check."""
    if not attributes:
        return True
    first, rest = attributes[0], attributes[1:]
    if f"{module}.{first}" in known:
        return names_something(f"{module}.{first}", rest, known, hops)
    if module not in known:
        return hops > 0 and not module.startswith("wirewise")
    if hops > 8:
        return False
    tree = tree_of(known[module])
    names = defined_names(tree.body, module, known[module].name == "__init__.py")
    if first not in names:
        return not rest and first in _front_door(tree)
    found = names[first]
    if isinstance(found, str):
        source, _, name = found.partition(":")
        return names_something(source, [name, *rest] if name else rest, known, hops + 1)
    if not rest:
        return True
    if isinstance(found, ast.ClassDef):
        # an attribute of the class itself, or one its bases may give (not followed further)
        return rest[0] in defined_names(found.body, module, False) or bool(found.bases)
    return False


@cache
def entry_point_groups(root: Path = ROOT) -> frozenset[str]:
    """The plug-in groups the registry reads ('wirewise.strategies'): names, not modules."""
    return frozenset(re.findall(r"\"(wirewise\.\w+)\"", (root / "contract" / "registry.py").read_text()))


def dotted_exists(name: str, known: dict[str, Path], root: Path = ROOT) -> bool:
    if name in entry_point_groups(root):
        return True
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        if ".".join(parts[:cut]) in known:
            return names_something(".".join(parts[:cut]), parts[cut:], known)
    return False


def short_exists(name: str, known: dict[str, Path], root: Path = ROOT) -> bool | None:
    """For `a.b.c`: None when no module of the repository ends in `a`; else whether one of them
    (or a longer `a.b` one) names the rest; after a one-part module the last name may also be one
    the code uses anywhere (`params.transport`, `job.state`: a field, an attribute)."""
    parts = name.split(".")
    if FILE_NAME.fullmatch(name):
        return None
    for cut in range(len(parts) - 1, 0, -1):
        tail = ".".join(parts[:cut])
        candidates = [m for m in known if m.endswith(f".{tail}")]
        if candidates:
            if any(names_something(m, parts[cut:], known) for m in candidates):
                return True
            return cut == 1 and parts[-1] in identifiers(root)
    return None


def path_exists(path: str, citing: str, root: Path = ROOT) -> bool | None:
    """None for a path that is not the repository's (see the module docstring); else whether it is."""
    files, folders, tails = repository(root)
    name = path.rstrip("/")
    parts = name.split("/")
    here = citing.rpartition("/")[0]
    if "/" not in path:  # a bare file name: beside the citing file; from the documents, anywhere
        if name in NOT_OURS:
            return None
        if citing.endswith(".md"):
            return name in tails
        return (f"{here}/{name}" if here else name) in files
    if any(PLACEHOLDER.fullmatch(p) for p in parts[:-1]):
        return None
    data_file = re.search(rf"\.(?:{DATA_FILES})$", name) is not None
    if parts[0] not in TOP and (data_file or len(parts) == 1):
        return None
    if parts[0] not in TOP and parts[0] not in {f.rpartition("/")[2] for f in folders}:
        return None
    while True:
        candidate = f"{here}/{name}" if here else name
        if candidate in files or candidate in folders:
            return True
        if not here:
            break
        here = here.rpartition("/")[0]
    return name in tails


def file_for(path: str, root: Path = ROOT) -> Path:
    files, _, _ = repository(root)
    return root / next(f for f in sorted(files) if f == path or f.endswith(f"/{path}"))


def defines(path: Path, name: str) -> bool:
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name
               for n in ast.walk(tree_of(path)))


# -- where names are cited -----------------------------------------------------------------------

def python_texts(text: str) -> list[tuple[int, str]]:
    """(line, text) of each comment and docstring line of Python source."""
    found = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
             if tok.type == tokenize.COMMENT]
    stack: list[ast.AST] = [parsed(text)]
    while stack:  # statements only: a docstring is the first statement of a module, class or def
        node = stack.pop()
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found += [(first.lineno + i, line) for i, line in enumerate(first.value.value.splitlines())]
        for field in ("body", "orelse", "finalbody", "handlers"):
            stack += [n for n in getattr(node, field, None) or [] if isinstance(n, ast.stmt | ast.excepthandler)]
    return sorted(found)


def shell_texts(text: str) -> list[tuple[int, str]]:
    return [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith("#") and not line.startswith("#!")]


def markdown_texts(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.splitlines(), 1))


TEXTS = {".py": python_texts, ".sh": shell_texts, ".md": markdown_texts}


def citing_files(root: Path = ROOT) -> list[Path]:
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    for folder in CITING:
        files += sorted(p for p in (root / folder).rglob("*") if p.suffix in (".py", ".sh")
                        and not SKIP & set(p.relative_to(root).parts))
    return files


def broken(text: str, citing: str, root: Path = ROOT) -> list[str]:
    """'citing:line: name' for each name cited in one file's text (the file at `citing`, relative
    to the root) that names nothing."""
    known = modules(root)
    package = next((m for m, p in known.items() if p == root / citing and p.name == "__init__.py"), None)
    wrong = []
    for line, words in TEXTS[Path(citing).suffix](text):
        names: list[tuple[str, bool | None]] = []
        for match in PATH.finditer(words):
            path, test, number = match.groups()
            ok = path_exists(path, citing, root)
            if ok and test:
                ok = defines(file_for(path, root), test)
            elif ok and number and not path.endswith("/"):
                ok = int(number) <= len(file_for(path, root).read_text().splitlines())
            names.append((match.group(0), ok))
        names += [(m.group(0), dotted_exists(m.group(0), known, root)) for m in DOTTED.finditer(words)]
        names += [(m.group(1), short_exists(m.group(1), known, root)) for m in SHORT.finditer(words)
                  if not m.group(1).startswith("wirewise.")]
        if package and (part := PARTS.match(words)):
            names.append((part.group(1), names_something(package, [part.group(1)], known)))
        wrong += [f"{citing}:{line}: {name}" for name, ok in names if ok is False]
    return wrong


# -- the tests -----------------------------------------------------------------------------------

def test_every_cited_name_exists() -> None:
    wrong = [w for path in citing_files() for w in broken(path.read_text(), path.relative_to(ROOT).as_posix())]
    assert not wrong, "names that point to nothing:\n" + "\n".join(wrong)


def test_a_comment_citing_a_missing_name_is_found() -> None:
    """The check above can fail: names of what is gone are reported, in comments and docstrings
    of a module (read as if it were orchestrator/placement/__init__.py) and in a document, beside
    names of what exists."""
    module = (
        '"""Built on `wirewise.orchestrator.placement.search.no_such_function` and search.py.\n\n'
        "- `history`: measured history;\n- `gone_part`: a module that was folded away.\n"
        '"""\n'
        "# orchestrator/campaign/gone.py and tests/test_architecture.py::test_nothing_here, not\n"
        "# wirewise.orchestrator.campaign.plan or tests/slurm/multinode.sh or `wirewise.topology.Topology`\n"
        "X = 1  # gone.py, `naming.gone_too` and `wirewise.orchestrator.store.results.result_rows.x`\n"
        "def f():\n"
        '    """As `placement.history` does, see report/query.py:100000 and `errors.first_error`."""\n'
    )
    at = "orchestrator/placement/__init__.py"
    assert broken(module, at) == [
        f"{at}:1: wirewise.orchestrator.placement.search.no_such_function",
        f"{at}:4: gone_part",
        f"{at}:6: orchestrator/campaign/gone.py",
        f"{at}:6: tests/test_architecture.py::test_nothing_here",
        f"{at}:8: gone.py",
        f"{at}:8: wirewise.orchestrator.store.results.result_rows.x",
        f"{at}:8: naming.gone_too",
        f"{at}:10: report/query.py:100000",
    ]
    document = "See `contract/gone.py`, [the plan](docs/gone.md), `wirewise.jobs.launch.run_task` and `plan.py`.\n"
    assert broken(document, "docs/planted.md") == ["docs/planted.md:1: contract/gone.py", "docs/planted.md:1: docs/gone.md"]


def unreachable(tree: ast.Module) -> list[int]:
    """Lines of statements that follow a return, raise, continue or break in the same block."""
    lines = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                lines += [after.lineno for before, after in zip(body, body[1:])
                          if isinstance(before, ast.Return | ast.Raise | ast.Continue | ast.Break)]
    return lines


def test_no_code_follows_a_return() -> None:
    """Dead code of the simplest kind (issue 21 named `console().print(table)` after a `return`)."""
    assert unreachable(parsed("def f():\n    return 1\n    print(1)\n")) == [3]
    found = [f"{path.relative_to(ROOT)}:{line}" for path in modules().values() for line in unreachable(tree_of(path))]
    assert not found, found
