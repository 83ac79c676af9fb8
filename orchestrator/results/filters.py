"""Filters from the command line, checked and resolved.

The text of the options parsed (sizes, dates, choices) and prefixes made whole (fabric,
fingerprint), so a typo is an error and never an empty "no results match". What the Filters
then read is the store's one translation of them into SQL (wirewise.orchestrator.store.results),
the same for result rows (results.rows), aggregates, compare, report and doctor.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from wirewise.case import GEOMETRIES, PLACEMENTS, SCOPES
from wirewise.clock import as_utc, utcnow
from wirewise.errors import UserError
from wirewise.orchestrator.store import Store
from wirewise.orchestrator.store.results import (
    SOURCES, STATUSES, WORKLOADS, Filters, campaign_names, fingerprints_starting,
)
from wirewise.workloads import TRANSPORT_ENV

TRANSPORTS = tuple(TRANSPORT_ENV)  # what --transport of a bench sets, as recorded


def parse_filters(**options: Any) -> Filters:
    """Filters from command-line text: sizes ('1G'), dates ('2026-11-30', '7d'), counts and
    choices checked, so a typo is an error and never an empty "no results match"."""
    from wirewise.limits import MAX_INT, MAX_RANKS
    from wirewise.units import parse_size

    for name, choices in (("workload", WORKLOADS), ("source", SOURCES), ("status", STATUSES),
                          ("placement", PLACEMENTS), ("geometry", GEOMETRIES), ("scope", SCOPES), ("transport", TRANSPORTS), ("strategy", None)):
        if options.get(name) is not None and options[name] not in (choices or _strategies()):
            raise UserError(f"--{name} {options[name]!r}: choose one of {', '.join(choices or _strategies())}")
    if options.get("op") is not None:
        check_op(options["op"])
    if options.get("bytes") is not None:
        try:
            options["bytes"] = parse_size(options["bytes"], MAX_INT)
        except ValueError as exc:
            raise UserError(f"--bytes {options['bytes']!r}: {exc}") from None
    if options.get("gpus") is not None and not 0 <= options["gpus"] <= MAX_RANKS:
        raise UserError(f"--gpus {options['gpus']}: give a GPU count from 0 to {MAX_RANKS}")
    if options.get("since") is not None:
        options["since"] = parse_since(options["since"])
    options["campaigns"] = tuple(options.get("campaigns") or ())
    return Filters(**options)


def _strategies() -> tuple[str, ...]:
    """The strategies known here (built in and plug-ins): imported only for a --strategy filter,
    as the registry's import costs a query about 37 ms."""
    from wirewise.registry import STRATEGIES

    return tuple(STRATEGIES)


def check_op(op: str) -> None:
    """An op wirewise runs, or one nccl-tests measures (imported logs)."""
    from wirewise.registry import OPS

    if op in OPS:
        return
    from wirewise.orchestrator.record.nccl_tests import KNOWN_OPS

    if op not in KNOWN_OPS:
        raise UserError(f"--op {op!r}: choose one of {', '.join(sorted(set(OPS) | KNOWN_OPS))}")


_AGE = re.compile(r"^(\d{1,12})([dhm])$")
_MINUTES = {"d": 1440, "h": 60, "m": 1}


def parse_since(text: str, now: datetime | None = None, option: str = "--since") -> datetime:
    """'2026-11-30', '2026-11-30T12:00[+01:00]' or an age ('7d', '12h', '30m', up to
    MAX_AGE_DAYS), as UTC; `option` names the option in an error (--since, db prune's --before)."""
    from wirewise.limits import MAX_AGE_DAYS

    text = text.strip()
    age = _AGE.match(text)
    if age:
        minutes = int(age.group(1)) * _MINUTES[age.group(2)]
        if minutes > MAX_AGE_DAYS * 1440:
            raise UserError(f"{option} {text!r}: an age is at most {MAX_AGE_DAYS} days")
        return (now or utcnow()) - timedelta(minutes=minutes)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UserError(f"{option} {text!r}: give a date (2026-11-30), a time (2026-11-30T12:00) or an age (7d, 12h, 30m)") from None
    try:
        return as_utc(when)
    except ValueError:
        raise UserError(f"{option} {text!r}: out of range in UTC (years 1 to 9999)") from None


# -- resolving names -----------------------------------------------------------------
def resolve(store: Store, filters: Filters) -> Filters:
    """Prefixes made whole (fabric, fingerprint); unknown campaigns refused."""
    changes: dict[str, Any] = {}
    if filters.fabric is not None:
        from wirewise.topology.classify import FABRICS

        changes["fabric"] = unique_prefix("--fabric", filters.fabric, FABRICS)
    if filters.fingerprint is not None:
        changes["fingerprint"] = unique_prefix("--fingerprint", filters.fingerprint, fingerprints_starting(store, filters.fingerprint))
    known = campaign_names(store, filters.campaigns)
    missing = [name for name in filters.campaigns if name not in known]
    if missing:
        raise UserError(f"--campaign {missing[0]!r}: no results or campaign of that name (wirewise results --group-by campaign lists them)")
    return Filters(**{**asdict(filters), **changes})


def unique_prefix(option: str, prefix: str, known) -> str:
    """The one known value starting with `prefix`; a clear error for none or several."""
    matches = sorted({value for value in known if value.startswith(prefix)})
    if len(matches) == 1:
        return matches[0]
    if not matches:
        choices = f" (choose among {', '.join(sorted(set(known)))})" if known else ""
        raise UserError(f"{option} {prefix!r}: nothing stored starts with that{choices}")
    raise UserError(f"{option} {prefix!r} is ambiguous: {', '.join(_short(m) for m in matches[:6])}{' ...' if len(matches) > 6 else ''}")


def _short(value: str) -> str:
    """Fingerprints (64 hex digits) shortened in messages; other names whole."""
    return value[:16] if len(value) == 64 else value
