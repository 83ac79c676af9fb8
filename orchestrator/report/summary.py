"""The report's summary: what was measured, then the findings in sentences with their numbers,
each computed from the rows `wirewise results --json` prints for the same filters
(wirewise.orchestrator.report.aggregate: medians over repeats of one case on one fabric), so a
reader (and tests/report) can check every number against them.

The findings are the seed article's, where the data holds them (a finding the data cannot
support is left out, never guessed):
- bandwidth at the largest size measured, per wire and GPU count, against the wire's line rate
  per direction (busbw is defined to compare with it: nccl-tests' doc/PERFORMANCE.md) and
  against nccl-tests' figure for the same case where one was imported;
- the wire alone: the same GPUs with NVLink and with PCIe forced (the article: 10-11x);
- the cost of a bad placement: the same GPU count packed in one NVLink group and spread across
  groups (the article: about 9x at 4 GPUs on H200 NVL);
- the strategy each wire favours and by how much, and how much each strategy lost on a slower
  wire (the article: DDP loses least, FSDP most);
- peak memory per strategy against one GPU's memory, and runs that ran out of it;
- what `doctor` flags.

A line rate comes from the GPU model of the wiring the results ran on
(wirewise.topology.hardware: NVLink links x rate, PCIe by generation); where a fabric's nodes
disagree on it, or the GPU is unknown, the comparison is left out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from wirewise.case import CASE_FIELDS
from wirewise.orchestrator.report.figures import setting_text, shape_text, wire_of
from wirewise.units import GB, bytes_text

MOST = 6  # sentences a section says case by case; past that, a sentence per wire or model (the figures hold the rest)
STATS = ("_median", "_min", "_max", "_count", "_spread")
CLOSE = 0.05  # differences within this share are called even: the article saw a few percent between repeats


@dataclass(frozen=True)
class Num:
    """A number in a sentence: its value, how it is written, and where it comes from: a results
    row (its identity: workload, fabric, case, status) and metric, or a ratio of two Nums."""

    value: float
    text: str
    row: dict[str, Any] | None = None
    metric: str | None = None
    of: tuple[Num, Num] | None = None
    scale: float = 1.0  # value = the row's metric / scale (bytes shown in GB)

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"value": self.value, "text": self.text}
        if self.row is not None:
            found.update(row=self.row, metric=self.metric, scale=self.scale)
        if self.of is not None:
            found["of"] = [part.to_json() for part in self.of]
        return found


Sentence = list  # of str and Num


@dataclass
class Section:
    title: str
    sentences: list[Sentence] = field(default_factory=list)

    def text(self) -> list[str]:
        return ["".join(part.text if isinstance(part, Num) else part for part in sentence) for sentence in self.sentences]


def identity(row: dict[str, Any]) -> dict[str, Any]:
    """The fields that name a results row (workload, fabric, case, status), without its figures."""
    return {k: v for k, v in row.items() if k != "count" and not k.endswith(STATS)}


def metric(row: dict[str, Any], name: str, text: str, scale: float = 1.0) -> Num:
    """`name`'s median in `row` / `scale`, written with `text` (a format)."""
    value = row[f"{name}_median"] / scale
    return Num(value, text.format(value), identity(row), f"{name}_median", scale=scale)


def bandwidth(row: dict[str, Any]) -> Num:
    """busbw in GB/s: one decimal, three digits below 10 GB/s (CPU ranks, PCIe's small sizes)."""
    return metric(row, "busbw_gbs", "{:,.1f} GB/s" if row["busbw_gbs_median"] >= 10 else "{:.3g} GB/s")


def _ahead(best: Num, other: Num) -> str:
    """'5.0% ahead of', or '2.08x' for a lead a percentage would make hard to read."""
    lead = best.value / other.value
    return f"{lead - 1:.1%} ahead of" if lead < 1.5 else f"{lead:.2f}x that of"


def ratio(a: Num, b: Num, text: str = "{:.1f}x") -> Num:
    return Num(a.value / b.value, text.format(a.value / b.value), of=(a, b))


def share(a: Num, b: Num) -> Num:
    return Num(a.value / b.value, f"{a.value / b.value:.0%}", of=(a, b))


# -- the wiring's line rates --------------------------------------------------------------
@dataclass(frozen=True)
class Rates:
    """What a fabric's GPUs can send per direction: NVLink per GPU (links x rate) and between
    the members of a group of k (from the link matrix), PCIe; None where unknown."""

    gpu_model: str
    nvlink: float | None
    pcie: float
    groups: list[list[int]] | None
    links: list[list[str]] | None

    def limit(self, case: dict[str, Any]) -> tuple[Num, str] | None:
        """The line rate a case's traffic ran over, and its name; None where it cannot be told
        (CPU ranks, across nodes, a ranks count no NVLink group holds)."""
        if case.get("device") == "cpu" or (case.get("node_count") or 1) > 1 or not case.get("ranks"):
            return None
        pcie = Num(self.pcie, f"{self.pcie:g} GB/s")
        if case.get("transport") == "pcie" or case.get("fabric") == "pcie" or case.get("geometry") == "spread":
            return pcie, f"the PCIe line rate ({self.gpu_model})"
        if self.nvlink is None or case.get("fabric") not in ("nvlink-all-to-all", "nvlink-groups"):
            return None
        rate = self._group_rate(case["ranks"])
        if rate is None:
            return None
        return Num(rate, f"{rate:g} GB/s"), f"the NVLink line rate ({self.gpu_model}, per GPU and direction)"

    def _group_rate(self, k: int) -> float | None:
        """The least NVLink GB/s a GPU has to the other k-1 of the first group holding k GPUs,
        capped by its links (NVSwitch: every GPU's full NVLink)."""
        group = next((g for g in self.groups or [] if len(g) >= k), None)
        if group is None or not self.links:
            return None
        members = group[:k]
        per_link = self.nvlink / max(1, self._links_per_gpu())
        rates = [min(self.nvlink, sum(_nvlinks(self.links[a][b]) for b in members if b != a) * per_link) for a in members]
        return min(rates) if rates else None

    def _links_per_gpu(self) -> int:
        from wirewise.topology import hardware

        return hardware.nvlink_budget(self.gpu_model)


def _nvlinks(label: str) -> int:
    found = re.fullmatch(r"NV(\d+)", label or "")
    return int(found.group(1)) if found else 0


def fabric_rates(wirings: list[dict[str, Any]]) -> dict[str, Rates]:
    """Per fabric, the rates of its nodes' GPUs where they all agree (one GPU model, one link
    matrix); a fabric whose nodes differ gets none."""
    from wirewise.topology import hardware

    by_fabric: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for wiring in wirings:
        by_fabric[wiring["fabric"]].append(wiring)
    rates = {}
    for fabric, mine in by_fabric.items():
        models = {w["gpu_model"] for w in mine}
        matrices = {str(w["links"]) for w in mine}
        if len(models) != 1 or len(matrices) != 1 or None in models or hardware.family(next(iter(models))) is None:
            continue
        model, first = next(iter(models)), mine[0]
        facts = hardware.family(model)
        nvlink = facts.nvlink_links * facts.nvlink_gbs_per_link if facts.nvlink_links else None
        rates[fabric] = Rates(hardware.normalize_model(model), nvlink, hardware.pcie_gbs(model), first["groups"], first["links"])
    return rates


# -- the sections -------------------------------------------------------------------------
def summarize(rows: list[dict[str, Any]], wirings: list[dict[str, Any]], span, gpu_memory_gb: dict[str, float],
              doctor: dict[str, Any] | None) -> list[Section]:
    """The summary's sections, each with its sentences; a section without one is left out."""
    rates = fabric_rates(wirings)
    collective = [r for r in rows if r["workload"] == "collective" and r["status"] == "ok" and r.get("busbw_gbs_median")]
    train = [r for r in rows if r["workload"] == "train"]
    sections = [
        Section("What was measured", measured(rows, wirings, span)),
        Section("Bandwidth at large messages", _shortest(large_messages(collective, rates), large_messages_by_wire(collective))),
        Section("What the wire and the placement cost", _shortest(wire_costs(collective), wire_costs(collective, by_wire=True))),
        Section("The strategy each wire favours", _shortest(favoured(train), favoured_tally(train))),
        Section("Memory per strategy", _shortest(memory(train, gpu_memory_gb, span), memory_by_model(train, gpu_memory_gb))),
        Section("What doctor flags", doctor_sentences(doctor, span)),
    ]
    return [section for section in sections if section.sentences]


def _shortest(each: list[Sentence], condensed: list[Sentence]) -> list[Sentence]:
    """The sentences case by case where they are few; else the condensed ones (a history of many
    wires, GPU counts and settings still reads in a minute)."""
    return each if len(each) <= MOST else condensed


def _spread(nums: list[Num]) -> Sentence:
    """The least and the most of some numbers, as 'A' or 'A to B'."""
    low, high = min(nums, key=lambda n: n.value), max(nums, key=lambda n: n.value)
    return [low] if low.text == high.text else [low, " to ", high]


def measured(rows: list[dict[str, Any]], wirings: list[dict[str, Any]], span) -> list[Sentence]:
    total = sum(span.sources.values())
    sources = ", ".join(f"{count:,} {_source_text(source)}" for source, count in sorted(span.sources.items()))
    when = ""
    if span.first and span.last:
        first, last = span.first.strftime("%Y-%m-%d"), span.last.strftime("%Y-%m-%d")
        when = f" on {first}" if first == last else f" from {first} to {last}"
    nodes = _names(span.nodes, "node")
    sentence = [f"{total:,} results ({sources}) from {nodes}{when}"]
    if span.campaigns:
        sentence.append(f", in {_names(span.campaigns, 'campaign')}")
    sentences = [[*sentence, "."]]
    fabrics = defaultdict(set)
    for wiring in wirings:
        fabrics[(wiring["fabric"], wiring["gpu_model"] or "GPU model unknown", len(wiring["links"] or []),
                 {True: "NVSwitch", False: "no NVSwitch", None: "NVSwitch unknown"}[wiring["switched"]])].add(wiring["node"])
    if fabrics:
        sentences.append(["Wirings: " + "; ".join(f"{fabric} ({gpus} x {model}, {switched}) on {_names(sorted(nodes), 'node')}"
                                                 for (fabric, model, gpus, switched), nodes in sorted(fabrics.items())) + "."])
    shapes = sorted({shape_text(r) + (" of CPU (gloo)" if r.get("device") == "cpu" else "") for r in rows if r.get("ranks")})
    ops = sorted({r["op"] for r in rows if r["workload"] == "collective" and r["op"]})  # a run stopped before its first op has none
    models = sorted({r["model"] for r in rows if r["workload"] == "train" and r["model"]})
    what = []
    if ops:
        sizes = [r["bytes"] for r in rows if r["workload"] == "collective" and r.get("bytes")]
        what.append(f"collectives ({', '.join(ops)}; {bytes_text(min(sizes))} to {bytes_text(max(sizes))})" if sizes else
                    f"collectives ({', '.join(ops)})")
    if models:
        strategies = sorted({r["strategy"] for r in rows if r["workload"] == "train" and r["strategy"]})
        what.append(f"training ({', '.join(models)}; {', '.join(strategies)})")
    if what:
        sentences.append([f"Measured: {' and '.join(what)}, on {', '.join(shapes)}."])
    return sentences


def _source_text(source: str) -> str:
    return {"wirewise": "measured by wirewise", "nccl-tests": "imported from nccl-tests", "job": "reported by training jobs"}.get(source, source)


def _names(names: list[str], what: str, most: int = 6) -> str:
    if not names:
        return f"no named {what}"
    shown = ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
    return f"{len(names)} {what}{'s' if len(names) != 1 else ''} ({shown})"


_PLACE = ("fabric", "transport", "geometry", "device", "node_count", "ranks_per_node", "ranks")
_FORM = ("dtype", "cuda_graph", "redop", "root")


def _at_largest(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """Per (wire and GPUs, op): the row of the largest size, out of place first, then eager,
    then the commonest dtype (one figure per op and wire, the one a reader compares)."""
    dtypes = defaultdict(int)
    for row in rows:
        dtypes[row["dtype"]] += 1
    best: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        key = (*(row[name] for name in _PLACE), row["op"])
        rank = (row["bytes"] or 0, not row["in_place"], not row["cuda_graph"], dtypes[row["dtype"]], str(row["dtype"]))
        if key not in best or rank > best[key][0]:
            best[key] = (rank, row)
    return {key: row for key, (_rank, row) in best.items()}


def _twin(row: dict[str, Any], rows_by_case: dict[tuple, dict[str, Any]], **changes: Any) -> dict[str, Any] | None:
    """The row of the same case and fabric with `changes` (another source, transport, geometry)."""
    want = {**row, **changes}
    return rows_by_case.get(tuple(want.get(name) for name in ("fabric", *CASE_FIELDS["collective"])))


def large_messages(rows: list[dict[str, Any]], rates: dict[str, Rates]) -> list[Sentence]:
    """A sentence per wire and GPU count: each op's busbw at its largest size, its share of the
    wire's line rate, and nccl-tests' figure for the same case with wirewise's share of it."""
    by_case = {tuple(r.get(name) for name in ("fabric", *CASE_FIELDS["collective"])): r for r in rows}
    own = [r for r in rows if r["source"] != "nccl-tests"] or rows  # imported logs alone: their figures
    picked = _at_largest(own)
    sentences = []
    for place in sorted({key[:-1] for key in picked}, key=lambda k: tuple(str(v) for v in k)):
        mine = [row for key, row in sorted(picked.items(), key=lambda item: str(item[0][-1])) if key[:-1] == place]
        case = dict(zip(_PLACE, place))
        limit = rates[case["fabric"]].limit(case) if case["fabric"] in rates else None
        sizes = sorted({bytes_text(row["bytes"]) for row in mine})
        sentence: Sentence = [f"{wire_of(case)}, {shape_text(case)}, at {' and '.join(sizes)}"]
        if limit is not None:
            sentence += [" against ", limit[0], f", {limit[1]}"]
        sentence.append(": ")
        for i, row in enumerate(mine):
            sentence += ["; " if i else "", f"{row['op']} ({_form(row)}{', nccl-tests' if row['source'] == 'nccl-tests' else ''}) ",
                         bandwidth(row)]
            notes: list = []
            if limit is not None:
                notes += [share(bandwidth(row), limit[0]), " of the line rate"]
            twin = _twin(row, by_case, source="nccl-tests") if row["source"] != "nccl-tests" else None
            if twin is not None:
                notes += ["; " if notes else "", "nccl-tests ", bandwidth(twin), ", wirewise at ", share(bandwidth(row), bandwidth(twin))]
            if notes:
                sentence += [" (", *notes, ")"]
        sentences.append([*sentence, "."])
    return sentences


def large_messages_by_wire(rows: list[dict[str, Any]]) -> list[Sentence]:
    """A sentence per wire: all_reduce's busbw at its largest size on each GPU count (another op
    where it ran none), and how close wirewise came to nccl-tests over every op and count."""
    by_case = {tuple(r.get(name) for name in ("fabric", *CASE_FIELDS["collective"])): r for r in rows}
    own = [r for r in rows if r["source"] != "nccl-tests"] or rows
    wires: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in _at_largest(own).values():
        wires[wire_of(row)].append(row)
    sentences = []
    for wire, mine in sorted(wires.items()):
        ops = {row["op"] for row in mine}
        op = "all_reduce" if "all_reduce" in ops else sorted(ops)[0]
        shown = sorted((row for row in mine if row["op"] == op), key=lambda row: row["ranks"] or 0)
        sentence: Sentence = [f"{wire}, {op} at its largest size: "]
        for i, row in enumerate(shown):
            sentence += [", " if i else "", bandwidth(row), f" on {shape_text(row)} ({bytes_text(row['bytes'])})"]
        twins = [share(bandwidth(row), bandwidth(twin)) for row in mine
                 if row["source"] != "nccl-tests" and (twin := _twin(row, by_case, source="nccl-tests")) is not None]
        if twins:
            sentence += ["; wirewise reached ", *_spread(twins), f" of nccl-tests over {len(twins)} cases"]
        sentences.append([*sentence, "."])
    return sentences


def _form(row: dict[str, Any]) -> str:
    return "in place" if row["in_place"] else "out of place"


def wire_costs(rows: list[dict[str, Any]], by_wire: bool = False) -> list[Sentence]:
    """NVLink against forced PCIe, and packed against spread, on the same case at its largest
    size: a sentence per wire and GPU count, each op's pair of figures and their ratio; `by_wire`:
    a sentence per wire, the least and the most the change cost over its ops and GPU counts."""
    by_case = {tuple(r.get(name) for name in ("fabric", *CASE_FIELDS["collective"])): r for r in rows}
    own = [r for r in rows if r["source"] != "nccl-tests"] or rows
    pairs: dict[tuple, list[tuple[dict, dict]]] = defaultdict(list)
    for key, row in sorted(_at_largest(own).items(), key=lambda item: str(item[0])):
        if row["transport"] == "default" and (pcie := _twin(row, by_case, transport="pcie")) is not None:
            pairs[("pcie", *key[:-1])].append((row, pcie))
        if row["geometry"] == "packed" and (spread := _twin(row, by_case, geometry="spread")) is not None:
            pairs[("spread", *key[:-1])].append((row, spread))
    if by_wire:
        return _costs_by_wire(pairs)
    sentences = []
    for key, found in sorted(pairs.items(), key=lambda item: str(item[0])):
        case = found[0][0]
        if key[0] == "pcie":
            sentence: Sentence = [f"Forcing PCIe on the same {shape_text(case)} of {wire_of(case)}: "]
        else:
            sentence = [f"{shape_text(case)} of {case['fabric']} packed in one NVLink group against spread across groups: "]
        ratios = []
        for i, (fast, slow) in enumerate(found):
            ratios.append(ratio(bandwidth(fast), bandwidth(slow)))
            sentence += ["; " if i else "", f"{fast['op']} at {bytes_text(fast['bytes'])} ", bandwidth(fast), " against ",
                         bandwidth(slow), " (", ratios[-1], ")"]
        low, high = min(r.value for r in ratios), max(r.value for r in ratios)
        span_text = f"{low:.1f}x" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}x"
        sentence.append(f": the wire alone is worth {span_text}." if key[0] == "pcie" else
                        f": a bad placement of the same GPU count costs {span_text}.")
        sentences.append(sentence)
    return sentences


def _costs_by_wire(pairs: dict[tuple, list[tuple[dict, dict]]]) -> list[Sentence]:
    wires: dict[tuple, list[tuple[dict, dict]]] = defaultdict(list)
    for key, found in pairs.items():
        wires[(key[0], wire_of(found[0][0]))] += found
    sentences = []
    for (kind, wire), found in sorted(wires.items()):
        ratios = [ratio(bandwidth(fast), bandwidth(slow)) for fast, slow in found]
        shapes = ", ".join(sorted({shape_text(fast) for fast, _slow in found}))
        what = "Forcing PCIe on" if kind == "pcie" else "Spreading a job across NVLink groups instead of packing it into one, on"
        sentences.append([f"{what} {wire} ({shapes}; {len(found)} cases at their largest size) cost ", *_spread(ratios), "."])
    return sentences


_SETTING = ("model", "precision", "engine", "compile", "micro_batch", "seq_len", "ranks", "node_count", "ranks_per_node", "source")
_WIRE = ("fabric", "transport", "geometry", "device")


def _throughput(rows: list[dict[str, Any]]) -> str:
    return "tokens_per_s" if any(r.get("tokens_per_s_median") for r in rows) else "samples_per_s"


def _setting(setting: dict[str, Any]) -> str:
    return f"{setting['model']} on {setting_text(setting)}"


def favoured(rows: list[dict[str, Any]]) -> list[Sentence]:
    ok = [r for r in rows if r["status"] == "ok"]
    settings: dict[tuple, dict[tuple, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in ok:
        settings[tuple(row[name] for name in _SETTING)][tuple(row[name] for name in _WIRE)].append(row)
    sentences = []
    for key, wires in sorted(settings.items(), key=lambda item: str(item[0])):
        setting = dict(zip(_SETTING, key))
        name = _throughput([r for rows_ in wires.values() for r in rows_])
        unit = "tokens/s" if name == "tokens_per_s" else "samples/s"
        for wire_key, mine in sorted(wires.items(), key=lambda item: str(item[0])):
            ran = sorted((r for r in mine if r.get(f"{name}_median")), key=lambda r: -r[f"{name}_median"])
            if len(ran) < 2:
                continue
            best, runner = ran[0], ran[1]
            lead = ratio(metric(best, name, "{:,.0f}"), metric(runner, name, "{:,.0f}"), "{:.2f}x")
            full = {**setting, **dict(zip(_WIRE, wire_key))}
            sentence: Sentence = [f"On {wire_of(full)}, {_setting(full)}: {best['strategy']} is fastest at ",
                                  metric(best, name, "{:,.0f} " + unit),
                                  f", {_ahead(lead.of[0], lead.of[1])} {runner['strategy']} (", metric(runner, name, "{:,.0f}"), ")"]
            slowest = ran[-1]
            if slowest is not runner:
                behind = ratio(metric(best, name, "{:,.0f}"), metric(slowest, name, "{:,.0f}"), "{:.2f}x")
                sentence += [f", {_ahead(behind.of[0], behind.of[1])} {slowest['strategy']} (", metric(slowest, name, "{:,.0f}"), ")"]
            runs = min(r[f"{name}_count"] for r in ran)
            if round((lead.value - 1) * 100, 1) < CLOSE * 100:  # as written: 4.99% reads 5.0%, not under 5%
                sentence.append(f"; a lead under {CLOSE:.0%} is within what repeats differ by (the article saw a few percent)"
                                + ("; one run each" if runs < 2 else ""))
            elif runs < 2:
                sentence.append("; one run each")
            sentences.append([*sentence, "."])
        sentences += slowdowns(setting, wires, name)
    return sentences


def favoured_tally(rows: list[dict[str, Any]]) -> list[Sentence]:
    """A sentence per wire: how often each strategy was the fastest over the settings it ran, and
    the largest lead."""
    ok = [r for r in rows if r["status"] == "ok"]
    settings: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in ok:
        settings[tuple(row[name] for name in (*_SETTING, *_WIRE))].append(row)
    wins: dict[str, list[tuple[dict, dict, str]]] = defaultdict(list)
    for key, mine in settings.items():
        name = _throughput(mine)
        ran = sorted((r for r in mine if r.get(f"{name}_median")), key=lambda r: -r[f"{name}_median"])
        if len(ran) >= 2:
            wins[wire_of(ran[0])].append((ran[0], ran[1], name))
    sentences = []
    for wire, found in sorted(wins.items()):
        tally = defaultdict(int)
        for best, _runner, _name in found:
            tally[best["strategy"]] += 1
        counts = ", ".join(f"{strategy} in {n}" for strategy, n in sorted(tally.items(), key=lambda item: (-item[1], item[0])))
        best, runner, name = max(found, key=lambda f: f[0][f"{f[2]}_median"] / f[1][f"{f[2]}_median"])
        lead = ratio(metric(best, name, "{:,.0f}"), metric(runner, name, "{:,.0f}"), "{:.2f}x")
        sentences.append([f"On {wire}, over {len(found)} settings, the fastest strategy was {counts}; the largest lead: "
                          f"{best['strategy']} of {_setting(best)} at ", metric(best, name, "{:,.0f}"), f" against {runner['strategy']}'s ",
                          metric(runner, name, "{:,.0f}"), " (", lead, ")."])
    return sentences


def slowdowns(setting: dict[str, Any], wires: dict[tuple, list[dict[str, Any]]], name: str) -> list[Sentence]:
    """Where one setting ran on several wires: how much each strategy lost on the slowest wire
    against the fastest (the article: FSDP loses most on a slow wire, DDP least)."""
    speed = {wire: max(r[f"{name}_median"] for r in rows if r.get(f"{name}_median")) for wire, rows in wires.items()
             if any(r.get(f"{name}_median") for r in rows)}
    if len(speed) < 2:
        return []
    fast, slow = max(speed, key=speed.get), min(speed, key=speed.get)
    pairs = []
    for row in wires[fast]:
        other = next((r for r in wires[slow] if r["strategy"] == row["strategy"] and r.get(f"{name}_median")), None)
        if other is not None and row.get(f"{name}_median"):
            pairs.append((row["strategy"], ratio(metric(row, name, "{:,.0f}"), metric(other, name, "{:,.0f}"))))
    if len(pairs) < 2:
        return []
    pairs.sort(key=lambda pair: -pair[1].value)
    sentence: Sentence = [f"{_setting({**setting, **dict(zip(_WIRE, slow))})} on {wire_of({**setting, **dict(zip(_WIRE, slow))})} against "
                          f"{wire_of({**setting, **dict(zip(_WIRE, fast))})}: "]
    for i, (strategy, lost) in enumerate(pairs):
        sentence += [", " if i else "", f"{strategy} ", lost, " slower"]
    return [[*sentence, f"; {pairs[0][0]} loses most, {pairs[-1][0]} least."]]


def memory(rows: list[dict[str, Any]], gpu_memory_gb: dict[str, float], span) -> list[Sentence]:
    settings: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        settings[tuple(row[name] for name in (*_SETTING, *_WIRE))].append(row)
    sentences = []
    for key, mine in sorted(settings.items(), key=lambda item: (-len(item[1]), str(item[0]))):
        setting = dict(zip((*_SETTING, *_WIRE), key))
        card = gpu_memory_gb.get(setting["fabric"])
        ok = [r for r in mine if r["status"] == "ok" and r.get("peak_mem_bytes_median")]
        ok.sort(key=lambda r: -r["peak_mem_bytes_median"])
        sentence: Sentence = []
        if ok:
            sentence = [f"{_setting(setting)}, peak memory per rank: "]
            for i, row in enumerate(ok):
                peak = "{:.1f} GB" if row["peak_mem_bytes_median"] >= 10 * GB else "{:.3g} GB"
                sentence += [", " if i else "", f"{row['strategy']} ", metric(row, "peak_mem_bytes", peak, GB)]
            if card:
                most = ok[0]["peak_mem_bytes_median"] / GB
                sentence.append(f"; the most is {most / card:.0%} of one GPU's {card:g} GB")
            if len(ok) > 1:
                least = ok[-1]
                sentence.append(f"; {least['strategy']} holds {1 - least['peak_mem_bytes_median'] / ok[0]['peak_mem_bytes_median']:.0%} "
                                f"less than {ok[0]['strategy']}")
            sentence.append(".")
        for row in (r for r in mine if r["status"] != "ok"):
            cap = span.memory_caps.get((row["model"], row["strategy"], row["ranks"], row["status"]))
            limit = f"a cap of {cap:g} GB" if cap else f"one GPU's {card:g} GB" if card else "the GPU's memory"
            did = "ran out of memory" if row["status"] == "oom" else f"ended {row['status']}"
            sentence = [*sentence, " " if sentence else "",
                        f"{row['strategy']} of {_setting(setting)} {did} under {limit} ({row['count']} run"
                        f"{'s' if row['count'] != 1 else ''}); no throughput for it."]
        if sentence:
            sentences.append(sentence)
    return sentences


def memory_by_model(rows: list[dict[str, Any]], gpu_memory_gb: dict[str, float]) -> list[Sentence]:
    """A sentence per model: the least and the most peak memory per rank over its strategies and
    settings, against one GPU's memory, and how many runs ended without a result."""
    sentences = []
    for model in sorted({r["model"] for r in rows if r["model"]}):
        mine = [r for r in rows if r["model"] == model]
        ok = [r for r in mine if r["status"] == "ok" and r.get("peak_mem_bytes_median")]
        sentence: Sentence = [f"{model}: "]
        if ok:
            least = min(ok, key=lambda r: r["peak_mem_bytes_median"])
            most = max(ok, key=lambda r: r["peak_mem_bytes_median"])
            sentence += ["peak memory per rank from ", metric(least, "peak_mem_bytes", "{:.1f} GB", GB),
                         f" ({least['strategy']} on {setting_text(least)}, {wire_of(least)}) to ",
                         metric(most, "peak_mem_bytes", "{:.1f} GB", GB), f" ({most['strategy']} on {setting_text(most)}, {wire_of(most)})"]
            card = gpu_memory_gb.get(most["fabric"])
            if card:
                sentence.append(f", {most['peak_mem_bytes_median'] / GB / card:.0%} of one GPU's {card:g} GB")
        ended = defaultdict(int)
        for row in mine:
            if row["status"] != "ok":
                ended[row["status"]] += row["count"]
        if ended:
            sentence.append(("; " if ok else "") + f"{sum(ended.values())} runs ended without a result ("
                            + ", ".join(f"{n} {status}" for status, n in sorted(ended.items())) + ")")
        sentences.append([*sentence, "."])
    return sentences


def doctor_sentences(found: dict[str, Any] | None, span) -> list[Sentence]:
    """doctor's verdicts on the report's nodes: judged here (doctor on the history, nothing
    recorded), or as it last recorded them where the report did not run it (`stored`)."""
    if found is None:
        return []
    nodes = set(span.nodes)
    findings = [f for f in found["findings"] if f["node"] in nodes]
    verdicts = {node: said for node, said in found["verdicts"].items() if node in nodes}
    if not verdicts:
        return []
    stored = found.get("stored", False)
    who = "doctor's last run flagged" if stored else "doctor flags"
    sentences: list[Sentence] = []
    healthy = sorted(node for node, said in verdicts.items() if said == "healthy")
    if findings:
        flagged = sorted({f["node"] for f in findings})
        sentences.append([f"{who} {len(findings)} finding{'s' if len(findings) != 1 else ''} on {_names(flagged, 'node')}:"])
        if len(findings) <= MOST:
            sentences += [[f"{f['node']}: {f['check']}: {f['evidence']}."] for f in findings]
        else:  # by rule, the nodes each flags; `wirewise doctor` prints the evidence
            rules: dict[str, set] = defaultdict(set)
            for f in findings:
                rules[f["check"]].add(f["node"])
            sentences.append(["; ".join(f"{rule} on {', '.join(sorted(nodes))}" for rule, nodes in sorted(rules.items()))
                              + " (wirewise doctor --node NODE shows the evidence)."])
    elif healthy:
        sentences.append([f"{who} nothing on {_names(healthy, 'node')}: its rules compared "
                          f"{'it' if len(healthy) == 1 else 'them'} with its baselines and peers and none fired."])
    if stored:
        times = [found["checked_at"][node] for node in verdicts if node in found["checked_at"]]
        if times:
            sentences.append([f"Those are the verdicts doctor recorded, last on {max(times).strftime('%Y-%m-%d %H:%M UTC')}: over "
                              "this many results the report does not judge them again (wirewise doctor does)."])
        unchecked = sorted(node for node, said in verdicts.items() if said == "not checked")
        if unchecked:
            sentences.append([f"doctor has not checked {_names(unchecked, 'node')}: wirewise doctor judges them (over this many "
                              "results the report does not)."])
    unjudged = sorted(node for node, said in verdicts.items() if said == "not judged")
    if unjudged:
        sentences.append([f"doctor cannot judge {_names(unjudged, 'node')}: no baseline, same-wiring peers or repeats to "
                          "compare with (not the same as healthy)."])
    return sentences
