"""Reading a YAML file people wrote (a campaign spec, a rules file): yaml.safe_load, and each
way it can fail as one line that names the file (and the line, for bad YAML)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wirewise.errors import UserError


def read_yaml(path: str | Path, what: str) -> Any:
    """The document in `path`; `what` names it in the message when it cannot be read."""
    import yaml

    path = Path(path)
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UserError(f"cannot read {what} {str(path)!r}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where else ""
        raise UserError(f"{path}: not valid YAML{line}: {getattr(exc, 'problem', exc)}") from None
