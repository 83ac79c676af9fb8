"""Comments, docstrings and the docs name only what exists (issue 21 item 9).

Read are the comments and docstrings of the Python files and the comments of the shell scripts
under contract/, orchestrator/, jobs/, db/, tests/ and docs/examples/, and all of README.md and
docs/*.md. What reads as a name in the code is looked up from the source, importing nothing:

- a repository path (`orchestrator/campaign/plan.py`, `tests/slurm/multinode.sh`, `store/topology.py:83`,
  `tests/test_architecture.py::test_only_the_store_writes_sql`, `jobs/train/strategies/`): a file or folder of the
  repository, whole, from the citing file's folder, or as the tail of a longer path (`results/filters.py`);
  a cited line is within the file, a cited test is defined in it. Paths that start elsewhere
  (`run/accelerate.yaml`, `FOLDER/spec.yaml`, submitit's `core/core.py`) are what the code
  writes or another project holds, and are not looked up;
- a bare file name (`conftest.py`, here): a file beside the citing one (anywhere, from README.md
  and docs/);
- in a package's docstring, the list of its parts (lines `- `name`: ...`): each a module of the
  package or a name it defines;
- a dotted name under `wirewise` (`wirewise.orchestrator.store.results.select_rows`): a module,
  then a name defined or imported at module level of it (followed to where it is defined), then a
  class's own attribute; or one of the entry-point groups contract/registry.py names;
- a backticked `module.name` whose first parts are a module of the repository (`errors.first_error`,
  `store.results.select_rows`): the same, but after a one-part module (`params.transport`, which may
  be a field path of a record) the last name need only be one the code uses somewhere;
- a command line (`wirewise topo save --node N`, in a code span or a fenced block, behind a path,
  `srun` or a prompt; a span that starts with a command's name, `fleet drain --apply`): each
  command, sub-command and option is one the typer app has (read from the app itself); a usage
  line's `[--a X | --b Y]` alternatives each;
- a health rule: `rules.NAME`, a drain reason `wirewise:NAME:...`, the first column of a table
  headed `check` or `rule`: one of the rules file's (wirewise.orchestrator.health.rules.RuleSet);
- any backticked name-with-hyphens (`busbw-below-baseline`, `nvlink-domain`): one the code, the
  tests or the shipped rules spell, or the start of a repository file's name (a fixture);
- an environment variable `WIREWISE_*`: one wirewise.settings declares, or one the test services,
  benchmarks or Makefile read (theirs, named where they are used);
- a link to a section of a document (`[rules](fleet.md#rules)`): one of its headings.

Commands, rules, names and variables are read in the code's messages too (its strings, not a
test's): a message that tells its reader to run a command names one that exists.
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


# -- what the CLI, the rules and the settings name -----------------------------------------------

@cache
def cli():
    """The `wirewise` command as click builds it from the typer app (typer vendors click: its
    groups are told by their `commands`)."""
    import typer

    from wirewise.orchestrator.cli.main import app

    return typer.main.get_command(app)


def options_of(command) -> dict[str, bool]:
    """'--out' -> whether it takes a value, for each option of a click command (and --help); of
    a group, its own and every option of a command under it (`bench --gpus`, `fleet ... --apply`
    say an option of its commands)."""
    found = {option: False for option in ("--help", "-h")}
    for param in command.params:
        for option in (*param.opts, *param.secondary_opts):
            if option.startswith("-"):
                found[option] = not (getattr(param, "is_flag", False) or getattr(param, "count", False))
    for sub in getattr(command, "commands", {}).values():
        found = {**options_of(sub), **found}
    return found


PROGRAM = re.compile(r"(?:^|(?<=[\s;&|($]))(?:[\w./~-]*bin/)?wirewise(?=\s|$)")  # as a command line's word
SHELL_ENDS = {";", "&&", "||", "|", ">", ">>", "2>", "<", "&", "2>&1", "$(", ")"}
OPTION = re.compile(r"--?[A-Za-z][\w-]*")
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def command_path(words: list[str]):
    """(the click command `wirewise WORDS...` names, its path of names, where its arguments
    start, the word that names nothing or None). A group is followed into the sub-command named;
    a word that is no name (`CMD`, `...`, `SPEC`) ends the path where it is."""
    command, path, at = cli(), ["wirewise"], 0
    while at < len(words) and hasattr(command, "commands"):
        word = words[at].strip("[](),.:;\"'")
        if word in command.commands:
            command, at = command.commands[word], at + 1
            path.append(word)
            continue
        return command, path, at, word if re.fullmatch(r"[a-z][a-z0-9-]*", word) else None
    return command, path, at, None


def command_problems(words: list[str], long_only: bool = False) -> list[str]:
    """What does not exist of `wirewise WORDS...`: 'wirewise topo shw', 'wirewise doctor
    --from-file'. Options are looked up until the line's end, a shell separator, a comment or
    `--`; after the first argument of a command that passes the rest on (`launch`, `run`: not
    interspersed), the words are its script's. Inside brackets `|` separates alternatives, and
    an escaped one in a table cell is one."""
    command, path, at, unknown = command_path(words)
    if unknown:
        return [f"{' '.join(path)} {unknown}"]
    options = options_of(command)
    passes_on = not command.context_settings.get("allow_interspersed_args", True)
    wrong, depth, value_next = [], 0, False
    for raw in words[at:]:
        if depth == 0 and (raw in SHELL_ENDS or raw.startswith("#") or raw == "--"):
            break
        depth += len(raw) - len(raw.lstrip("[("))
        word = raw.strip("[](),.;:\"'").split("=")[0]
        if OPTION.fullmatch(word) and not (long_only and not word.startswith("--")):
            if word not in options:
                wrong.append(f"{' '.join(path)} {word}")
            value_next = options.get(word, False) and "=" not in raw
        elif word in ("|", "\\|", "..."):
            pass
        elif value_next:
            value_next = False
        elif passes_on and depth == 0 and word:
            break
        depth = max(0, depth - raw.count("]") - raw.count(")"))
    return wrong


def command_lines(line: str, fenced: bool) -> list[tuple[list[str], bool]]:
    """(the words after `wirewise`, whether only its long options are checked) of each command
    line in one line of text: the whole line in a fenced block, else each code span. Outside
    fences, a span that starts with a top-level command's name and names a long option is read
    as a command too (`fleet drain --apply`), and one that starts with a sub-command of the
    group the line last named as `wirewise GROUP ...` as that group's (`wirewise campaign status
    NAME` / `resume [--include-oom]`)."""
    texts = [line] if fenced else [m.group(1).replace("\\|", " | ") for m in SPAN.finditer(line)]
    found, group = [], None
    for text in texts:
        starts = list(PROGRAM.finditer(text))
        found += [(text[m.end():].split(), False) for m in starts]
        words = text.split()
        if starts and not fenced:
            named = command_path(text[starts[-1].end():].split())[1][1:2]
            group = named[0] if named and hasattr(cli().commands[named[0]], "commands") else None
        elif fenced or not words:
            continue
        elif group and words[0] in cli().commands[group].commands:
            found.append(([group, *words], False))
        elif words[0] in cli().commands and any(w.lstrip("[").startswith("--") for w in words):
            found.append((words, True))
    return found


@cache
def rule_names() -> frozenset[str]:
    """The health rules, as the rules file names them."""
    from wirewise.orchestrator.health.rules import RuleSet

    return frozenset(field.alias for field in RuleSet.model_fields.values())


RULE_CITED = re.compile(r"\brules\.([a-z][a-z0-9]*(?:-[a-z0-9]+)+)|\bwirewise:([a-z][a-z0-9]*(?:-[a-z0-9]+)+):")
HYPHENATED = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
VARIABLE = re.compile(r"\bWIREWISE_[A-Z0-9_]+")
HEADED = re.compile(r"^\|\s*(check|rule)s?\s*\|", re.I)  # a table whose first column names rules


@cache
def spelled(root: Path = ROOT) -> frozenset[str]:
    """Every hyphenated name the code, the tests, the shipped rules and the Makefile spell (in
    their text: strings, keys, command lines), and every start of a repository file's name
    ('h100-sxm-8gpu-nvswitch' of a fixture); this module's planted names are not among them."""
    here = Path(__file__).resolve()
    words = set()
    for folder in (*PACKAGES, "tests"):
        for path in (root / folder).rglob("*"):
            if path.suffix in (".py", ".sh", ".yaml", ".mako", ".toml") and path.resolve() != here and not SKIP & set(path.parts):
                words |= set(HYPHENATED.findall(path.read_text()))
    words |= set(HYPHENATED.findall((root / "Makefile").read_text()))
    names = {rel.rpartition("/")[2] for rel in repository(root)[0]}
    words |= {name[:cut] for name in names for cut in range(len(name)) if name[cut] in "-._"}
    return frozenset(words)


@cache
def variables(root: Path = ROOT) -> frozenset[str]:
    """WIREWISE_ variables: those wirewise.settings declares, and the test services', benchmarks'
    and Makefile's own (named where they are read); not this module's planted ones."""
    from wirewise.settings import ENVIRONMENT

    here = Path(__file__).resolve()
    harness = [p for p in (root / "tests").rglob("*") if p.suffix in (".py", ".sh") and p.resolve() != here]
    found = {v.name for v in ENVIRONMENT}
    for path in [*harness, root / "Makefile"]:
        found |= set(VARIABLE.findall(path.read_text()))
    return frozenset(found)


LINKED_SECTION = re.compile(r"\]\(([^)#\s]*)#([^)\s]+)\)")  # [text](fleet.md#rules), [text](#a-section)


def anchors(markdown: str) -> set[str]:
    """The anchors of a document's headings, as GitHub makes them: lower case, punctuation
    but hyphens dropped, spaces as hyphens (fenced blocks' comments are no headings)."""
    found, fenced = set(), False
    for line in markdown.splitlines():
        fenced = fenced != line.startswith("```")
        if not fenced and (heading := re.match(r"#+ (.*)", line)):
            found.add(re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-"))
    return found


def stated_wrong(line: str, fenced: bool, rules_table: bool) -> list[str]:
    """The commands, options, rules, hyphenated names and variables one line of text names that
    do not exist (`fenced`: the line is a shell line, of a fenced block or a docstring's example;
    `rules_table`: a row of a table whose first column names rules)."""
    wrong = [w for words, long_only in command_lines(line, fenced) for w in command_problems(words, long_only)]
    wrong += [name for pair in RULE_CITED.findall(line) for name in pair if name and name not in rule_names()]
    if rules_table and not line.startswith("|-") and line.count("|") > 2:
        wrong += [n for n in re.findall(r"`([^`]+)`", line.split("|")[1]) if n not in rule_names()]
    if not fenced:
        wrong += [m.group(1) for m in SPAN.finditer(line) if HYPHENATED.fullmatch(m.group(1))
                  and m.group(1) not in spelled() and m.group(1) not in rule_names()]
    wrong += [name for name in VARIABLE.findall(line) if name not in variables()]
    return list(dict.fromkeys(wrong))


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


def message_texts(text: str) -> list[tuple[int, str]]:
    """(line, text) of each line of the strings of Python source that are not docstrings (messages,
    help), an f-string's fields as X: where a message tells its reader to run a command."""
    tree = parsed(text)
    docstrings = {id(body[0].value) for node in ast.walk(tree) if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and (body := node.body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)}
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            string = "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | parts:
            string = node.value
        else:
            continue
        found += [(node.lineno + i, line) for i, line in enumerate(string.splitlines())]
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
    to the root) that names nothing: what it states (commands, rules, variables), then its paths
    and modules."""
    known = modules(root)
    package = next((m for m, p in known.items() if p == root / citing and p.name == "__init__.py"), None)
    wrong = stated(text, citing, root)
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


def stated(text: str, citing: str, root: Path = ROOT) -> list[str]:
    """'citing:line: name' for each command, option, rule, hyphenated name or variable the file
    states that does not exist: in a document, its lines (shell lines in fenced blocks, tables of
    rules) and the sections its links name (`fleet.md#rules`); in code, its comments and
    docstrings (an indented `wirewise CMD` line a shell line), and the code's messages (not a
    test's: its strings are its planted names)."""
    wrong, fenced, table = [], False, False
    for line, words in TEXTS[Path(citing).suffix](text):
        if citing.endswith(".md"):
            if words.lstrip().startswith("```"):
                fenced = not fenced
                continue
            table = HEADED.match(words) is not None or table and words.startswith("|")
            wrong += [f"{citing}:{line}: {name}" for name in stated_wrong(words, fenced, table)]
            for target, anchor in LINKED_SECTION.findall(words):
                linked = (root / citing).parent / target if target else None
                if linked is not None and not linked.is_file():
                    continue  # a file that is not there is the paths' check
                if anchor not in anchors(linked.read_text() if linked else text):
                    wrong.append(f"{citing}:{line}: {target}#{anchor}")
        else:
            example = words.split()[:2]
            shell = words.startswith(" ") and len(example) == 2 and example[0] == "wirewise" and example[1] in cli().commands
            wrong += [f"{citing}:{line}: {name}" for name in stated_wrong(words, shell, False)]
    if citing.endswith(".py") and not citing.startswith("tests/"):
        wrong += [f"{citing}:{line}: {name}" for line, words in message_texts(text) for name in stated_wrong(words, False, False)]
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
        "X = 1  # gone.py, `naming.gone_too` and `wirewise.orchestrator.store.results.select_rows.x`\n"
        "def f():\n"
        '    """As `placement.history` does, see results/filters.py:100000 and `errors.first_error`."""\n'
    )
    at = "orchestrator/placement/__init__.py"
    assert broken(module, at) == [
        f"{at}:1: wirewise.orchestrator.placement.search.no_such_function",
        f"{at}:4: gone_part",
        f"{at}:6: orchestrator/campaign/gone.py",
        f"{at}:6: tests/test_architecture.py::test_nothing_here",
        f"{at}:8: gone.py",
        f"{at}:8: wirewise.orchestrator.store.results.select_rows.x",
        f"{at}:8: naming.gone_too",
        f"{at}:10: results/filters.py:100000",
    ]
    document = "See `contract/gone.py`, [the plan](docs/gone.md), `wirewise.jobs.supervise.run_task` and `plan.py`.\n"
    assert broken(document, "docs/planted.md") == ["docs/planted.md:1: contract/gone.py", "docs/planted.md:1: docs/gone.md"]


def planted(text: str, *swaps: tuple[str, str]) -> str:
    for old, new in swaps:
        assert old in text, f"the document no longer says {old!r}: plant elsewhere"
        text = text.replace(old, new, 1)
    return text


def test_a_document_stating_what_does_not_exist_is_found() -> None:
    """Copies of the real documents with wrong names planted in each form the check reads: a
    command, a sub-command and options (a usage table's cell, a usage block with alternatives,
    a shell line behind a comment, a bare span, a sub-command beside its group's), a rule (in a table of rules, as `rules.X`, in a
    drain reason, as a hyphenated name), a variable, a docstring's example, a message; nothing
    else of them is reported."""
    readme = planted((ROOT / "README.md").read_text(),
                     ("`wirewise doctor [--node N]", "`wirewise doctor [--from-file F] [--node N]"),
                     ("wirewise topo save -f topo.txt", "wirewise topo sav -f topo.txt"),
                     ("(or `WIREWISE_DB`, or", "(or `WIREWISE_DATABASE`, or"),
                     ("`forget [--remove-results]`", "`forget [--purge]`"))
    fleet = planted((ROOT / "docs" / "fleet.md").read_text(),
                    ("[--mode quick|all] [--op all_reduce]", "[--mode quick|all] [--ops all_reduce]"),
                    ("| `rules.tokens-below-baseline` |", "| `rules.tokens-below-range` |"),
                    ("(`wirewise:transport-off-nvlink:all_reduce", "(`wirewise:transport-via-shm:all_reduce"),
                    ("a second `fleet drain --apply` meanwhile", "a second `fleet drain --yes` meanwhile"),
                    ("(`transport_carried`, [results.md](results.md))", "(`transport_carried`, [results.md](results.md#the-transport))"))
    results = planted((ROOT / "docs" / "results.md").read_text(),
                      ("| `busbw-below-baseline` |", "| `busbw-below-range` |"),
                      ("`pair-below-fleet` is judged", "`pair-below-fleets` is judged"))
    module = ('"""Started as:\n\n    wirewise launch --gpu 2 -- train.py --lr 1e-4\n\nwirewise never drains on its own."""\n'
              'def load(node):\n    raise UserError(f"no wiring of {node}: store it with `wirewise topo save --from-files F`")\n')

    def expected(text: str, citing: str, *found: tuple[str, str]) -> list[str]:
        """'citing:line: name' for each (text on the line, name reported), in the order of lines."""
        at = {name: next(i for i, line in enumerate(text.splitlines(), 1) if needle in line) for needle, name in found}
        return [f"{citing}:{line}: {name}" for name, line in sorted(at.items(), key=lambda item: item[1])]

    assert broken(readme, "README.md") == expected(
        readme, "README.md", ("--from-file F] [--node N]", "wirewise doctor --from-file"),
        ("topo sav ", "wirewise topo sav"), ("WIREWISE_DATABASE", "WIREWISE_DATABASE"),
        ("`forget [--purge]`", "wirewise campaign forget --purge"))
    assert broken(fleet, "docs/fleet.md") == expected(
        fleet, "docs/fleet.md", ("[--ops all_reduce]", "wirewise fleet pairs --ops"), ("tokens-below-range", "tokens-below-range"),
        ("transport-via-shm", "transport-via-shm"), ("fleet drain --yes", "wirewise fleet drain --yes"),
        ("results.md#the-transport", "results.md#the-transport"))
    assert broken(results, "docs/results.md") == expected(
        results, "docs/results.md", ("busbw-below-range", "busbw-below-range"), ("pair-below-fleets", "pair-below-fleets"))
    assert broken(module, "orchestrator/planted.py") == ["orchestrator/planted.py:3: wirewise launch --gpu",
                                                         "orchestrator/planted.py:7: wirewise topo save --from-files"]


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
