#!/usr/bin/env python3
"""Check the order of events of the maintenance scenario from what the lab recorded.

Reads the controller's sinfo samples (``<epoch>|<node>|<state>|<reason>``, one line per node per second),
the health gate's reports (gate-<run>.json, the run id is the gate's start, UTC) and prints JSON:
- ``min_in_service``: the fewest nodes in service (idle, mixed, allocated, completing) in any sample;
- ``samples``: how many samples were read;
- ``gated_before_resumed``: per node whose gate PASSed after its change, whether the gate started after the
  node was marked ``gpufleet:maint,...,applied`` and before the node was next seen in service;
- ``seen_applied``: the nodes seen with the ``applied`` step.
"""

import calendar
import json
import pathlib
import sys
import time

IN_SERVICE = ("idle", "mixed", "allocated", "completing")


def main(sample_path, reports_dir):
    samples = {}
    for line in pathlib.Path(sample_path).read_text().splitlines():
        parts = line.split("|", 3)
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        epoch, node, state = int(parts[0]), parts[1].strip(), parts[2].strip().lower()
        reason = parts[3].strip() if len(parts) > 3 else ""
        samples.setdefault(epoch, {})[node] = (state, reason)
    counts = [sum(1 for s, _r in nodes.values() if s.rstrip("*~#$@^-!%") in IN_SERVICE)
              for _t, nodes in sorted(samples.items())]
    gates = []
    for path in sorted(pathlib.Path(reports_dir).glob("gate-*.json")):
        report = json.loads(path.read_text())
        start = calendar.timegm(time.strptime(report["run_id"], "%Y%m%dT%H%M%S"))
        for node, verdict in (report.get("nodes") or {}).items():
            gates.append((start, node, (verdict or {}).get("verdict")))
    applied = {}
    for t, nodes in sorted(samples.items()):
        for node, (_s, reason) in nodes.items():
            if "gpufleet:maint" in reason and "applied" in reason:
                applied.setdefault(node, []).append(t)
    order = {}
    for node, times in sorted(applied.items()):
        first, last = times[0], times[-1]
        back = next((t for t, nodes in sorted(samples.items())
                     if t > last and node in nodes and nodes[node][0].rstrip("*~#$@^-!%") in IN_SERVICE), None)
        passes = [g for g, n, v in gates if n == node and v == "PASS" and g >= first - 1]
        order[node] = {"applied_at": first, "in_service_at": back,
                       "gate_started_at": passes[0] if passes else None,
                       "ok": back is not None and bool(passes) and passes[0] <= back}
    print(json.dumps({"samples": len(counts), "min_in_service": min(counts) if counts else None,
                      "seen_applied": sorted(applied), "gated_before_resumed": order}, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
