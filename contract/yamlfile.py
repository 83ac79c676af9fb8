"""Reading a YAML file people wrote (a campaign spec, a rules file): bounded, safe, and each way
it can fail as one line that names the file (and the line, for bad YAML).

Bounded (wirewise.limits): a regular file of at most MAX_SPEC_BYTES, UTF-8, nested at most
MAX_NESTING levels (deeper YAML exhausts the parser's recursion)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wirewise.errors import UserError
from wirewise.limits import MAX_SPEC_BYTES, TOO_DEEP, cannot_read, read_bounded, too_deep


def read_yaml(path: str | Path, what: str) -> Any:
    """The document in `path`; `what` names it in the message when it cannot be read."""
    import yaml

    path = Path(path)
    deep = f"{path}: {TOO_DEEP}"
    try:
        text = read_bounded(path, MAX_SPEC_BYTES).decode("utf-8")
        # libyaml's parser where PyYAML has it (4x faster on a long spec), safe either way
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except OSError as exc:
        raise cannot_read(what, path, exc) from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}); save the {what} as UTF-8") from None
    except RecursionError:
        raise UserError(deep) from None
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", "")):  # libyaml stops at its own depth, past ours
            raise UserError(deep) from None
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where else ""
        raise UserError(f"{path}: not valid YAML{line}: {getattr(exc, 'problem', exc)}") from None
    nested = too_deep(doc)
    if nested:
        raise UserError(f"{path}: {nested}")
    return doc
