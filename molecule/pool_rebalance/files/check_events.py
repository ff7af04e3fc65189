#!/usr/bin/env python3
"""Check the order of events of the rolling maintenance (pool_rebalance's verify_maint.yml) from what the lab recorded.

Reads the controller's sinfo samples (``<before>|<after>|<node>|<state>|<reason>``, one line per node per
sample; ``before`` and ``after`` are the epoch times, with fractions, taken just before and just after the
sample's sinfo, so the state it shows held at some moment between the two), the health gate's reports
(gate-<run>.json, the run id is the gate's start in UTC, cut to the second) and prints JSON:
- ``min_in_service``: the fewest nodes in service (idle, mixed, allocated, completing) in any sample;
- ``samples``: how many samples were read;
- ``gated_before_resumed``: per node seen ``applied``, whether a gate that PASSed it started after the node
  was marked ``gpufleet:maint,...,applied`` and before the node was next seen in service;
- ``seen_applied``: the nodes seen with the ``applied`` step.

The order is checked against the samples that bracket each step, not against a fixed slack, so a loaded
machine, whose samples come seconds apart, does not make a right order look wrong: the mark came after
the last sample still lacking it was taken (no earlier than that sample's ``before``), and the node was
back in service before the first sample showing it so had ended (no later than that sample's ``after``).
A gate that started outside that window, by more than the second its run id is cut to, is out of order.
"""

import calendar
import json
import pathlib
import sys
import time

IN_SERVICE = ("idle", "mixed", "allocated", "completing")


def in_service(state):
    return state.rstrip("*~#$@^-!%") in IN_SERVICE


def read_samples(sample_path):
    """Samples in the order taken: [(before, after, {node: (state, reason)})]."""
    samples = {}
    for line in pathlib.Path(sample_path).read_text().splitlines():
        parts = line.split("|", 4)
        if len(parts) < 4:
            continue
        try:
            before, after = float(parts[0]), float(parts[1])
        except ValueError:
            continue
        node, state = parts[2].strip(), parts[3].strip().lower()
        reason = parts[4].strip() if len(parts) > 4 else ""
        samples.setdefault((before, after), {})[node] = (state, reason)
    return [(before, after, nodes) for (before, after), nodes in sorted(samples.items())]


def read_gates(reports_dir):
    """Gate verdicts: [(start, node, verdict)], start the epoch second the gate's run id names."""
    gates = []
    for path in sorted(pathlib.Path(reports_dir).glob("gate-*.json")):
        report = json.loads(path.read_text())
        start = calendar.timegm(time.strptime(report["run_id"], "%Y%m%dT%H%M%S"))
        for node, verdict in (report.get("nodes") or {}).items():
            gates.append((start, node, (verdict or {}).get("verdict")))
    return gates


def is_applied(reason):
    return "gpufleet:maint" in reason and "applied" in reason


def gate_order(samples, gates, node):
    """Whether a PASS gate of the node started after its applied mark and before it was back in service."""
    seen = [(before, after, nodes[node]) for before, after, nodes in samples if node in nodes]
    applied = [i for i, (_b, _a, (_s, reason)) in enumerate(seen) if is_applied(reason)]
    first, last = applied[0], applied[-1]
    # The mark was set after this sample's sinfo read the node without it, so after its before-time.
    lacking = seen[first - 1][0] if first > 0 else None
    # The node was in service when this sample's sinfo read it, so before its after-time.
    back = next((after for _b, after, (state, _r) in seen[last + 1:] if in_service(state)), None)
    # The run id cuts the gate's start to the second: the gate started in [g, g + 1).
    passes = sorted(g for g, n, v in gates if n == node and v == "PASS"
                    and (lacking is None or g + 1 > lacking) and (back is None or g < back))
    return {"applied_after": lacking, "in_service_before": back,
            "gate_started_at": passes[0] if passes else None,
            "ok": lacking is not None and back is not None and bool(passes)}


def main(sample_path, reports_dir):
    samples = read_samples(sample_path)
    gates = read_gates(reports_dir)
    counts = [sum(1 for state, _r in nodes.values() if in_service(state)) for _b, _a, nodes in samples]
    applied = sorted({node for _b, _a, nodes in samples for node, (_s, reason) in nodes.items() if is_applied(reason)})
    order = {node: gate_order(samples, gates, node) for node in applied}
    print(json.dumps({"samples": len(samples), "min_in_service": min(counts) if counts else None,
                      "seen_applied": applied, "gated_before_resumed": order}, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
