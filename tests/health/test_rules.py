"""The rules file validated completely when it is read: whatever a file sets, `load_rules` either
refuses it in one line naming the file and the field, or returns rules every later step takes
(the prolog's collective, the watchdogs' timers, a repeat's campaign). The issue's three files
passed `doctor --rules` and then crashed `doctor --prolog` on every node, which drained them."""

from __future__ import annotations

import math
import threading

import pytest
import yaml

from wirewise.errors import UserError
from wirewise.limits import MAX_REPEATS
from wirewise.orchestrator.health.rules import DEFAULTS, Rules, load_rules
from tests.conftest import wirewise

# every kind of value a careless or hostile file holds where one field is meant
HOSTILE = [None, True, False, "yes", "", "x", [], [1], {}, {"a": 1}, -1, 0, 0.5, 1.5, 3, 2**63, 10**30, float("inf"),
           -float("inf"), float("nan"), "1e400", "512M", "1.5", "nan"]


def leaves(doc: dict, path: tuple = ()) -> list[tuple]:
    found = []
    for key, value in doc.items():
        found += leaves(value, path + (key,)) if isinstance(value, dict) else [path + (key,)]
    return found


def setting(path: tuple, value) -> dict:
    doc: dict = {}
    node = doc
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return doc


def usable(rules: Rules) -> None:
    """What the later steps do with the rules, done: each raises where a value would fail them."""
    def numbers(value):
        if isinstance(value, dict):
            for item in value.values():
                yield from numbers(item)
        elif isinstance(value, float):
            yield value

    assert all(math.isfinite(x) for x in numbers(rules.model_dump()))
    params = rules.prolog.params()  # what the prolog builds
    assert params.sizes and rules.prolog.min_bytes <= rules.prolog.max_bytes
    for limit in (rules.health_check.time_limit_s, rules.prolog.time_limit_s):  # the watchdogs' timers
        assert 0 < limit < threading.TIMEOUT_MAX
    assert 1 <= rules.repeats <= MAX_REPEATS  # a repeat's campaign axes.repeats
    assert isinstance(rules.include_cpu, bool) and all(isinstance(getattr(rules.rules, name).enabled, bool)
                                                       for name in type(rules.rules).model_fields)


def test_every_field_with_every_kind_of_value_is_refused_in_one_line_or_usable(tmp_path):
    defaults = yaml.safe_load(DEFAULTS.read_text())
    file = tmp_path / "rules.yaml"
    problems, refused = [], 0
    for path in leaves(defaults):
        for value in HOSTILE:
            file.write_text(yaml.safe_dump(setting(path, value)))
            try:
                rules = load_rules(file)
            except UserError as exc:
                refused += 1
                message = str(exc)
                if "\n" in message or not message.startswith(f"{file}: "):
                    problems.append(f"{'.'.join(path)}={value!r}: not one line naming the file: {message!r}")
                continue
            except Exception as exc:  # noqa: BLE001 - what the test is about
                problems.append(f"{'.'.join(path)}={value!r}: {type(exc).__name__}: {exc}")
                continue
            try:
                usable(rules)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{'.'.join(path)}={value!r} accepted, then fails: {type(exc).__name__}: {exc}")
    assert not problems, "\n".join(problems)
    assert refused > len(leaves(defaults)) * len(HOSTILE) // 2


@pytest.mark.parametrize("prolog, said", [
    ({"min_bytes": "512M"}, "prolog: min_bytes 512M is above max_bytes 256M"),
    ({"iters": 1000000000000}, "prolog.iters: Input should be less than or equal to 1000"),
    ({"time_limit_s": float("inf")}, "prolog.time_limit_s: Input should be a finite number"),
    ({"iters": 1000, "max_bytes": "1G"}, "prolog: 1003 iterations of 64M-1G move"),  # each fine, together past the limit
    ({"time_limit_s": 1}, "prolog.time_limit_s: Input should be greater than or equal to 5"),
])
def test_doctor_rules_refuses_what_would_fail_the_prolog(tmp_path, prolog, said):
    file = tmp_path / "rules.yaml"
    file.write_text(yaml.safe_dump({"prolog": prolog}))
    done = wirewise("doctor", "--rules", str(file), "--db", f"sqlite:///{tmp_path / 'w.db'}")
    assert done.returncode == 2 and done.stderr.startswith(f"wirewise: error: {file}: {said}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_defaults_and_a_file_that_sets_nothing_load():
    usable(load_rules(None))
    assert load_rules(DEFAULTS) == load_rules(None).model_copy(update={"source": str(DEFAULTS)})
