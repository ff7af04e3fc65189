"""Health gate report rows, pairing, verdicts and Slurm actions: pure functions the filters of
filter_plugins/gate_rows.py expose (verdict logic of each gate in gate.py).

A *row* is one gate's result on one node, the unit of the report and of the verdict::

    {"node": "gpu02", "gate": "nccl", "verdict": "FAIL", "figure": "5.50GB/s", "threshold": "98.00GB/s",
     "reason": "nccl: busbw 5.50 GB/s < 98.00 GB/s", "partner": None}

A figure and its threshold print with the same number of decimals, enough to show how they compare
(gate.fmt_figures).
"""

from __future__ import annotations

import re

from ansible.module_utils.gate import ERROR, FAIL, PASS, VERDICTS, blame, fmt_figures
from ansible.module_utils.iperf3 import AGREE_PCT, tcp_pair_verdict
from ansible.module_utils.node_reason import make_reason, parse_reason

# Reason kinds a gate may lift: a join's hold and an earlier gate's FAIL. A `move` is the pool executor's.
# maint: a node maintain.yml drained and changed returns to service only through a gate PASS.
ADMIT_KINDS = ("hold", "gate", "maint")


def _num(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _gbps(value, limit, unit):
    """The row's figure and threshold texts: ``("5.50GB/s", "98.00GB/s")`` (``""`` where not a number)."""
    shown, bound = fmt_figures(_num(value), _num(limit))
    return (f"{shown}{unit}" if shown else ""), (f"{bound}{unit}" if bound else "")


def gate_row(result, gate, node, partner=None, threshold=None):
    """One report row from a gate module's result (gpu_gate, rdma_gate, nccl_gate) or a TCP result.

    ``threshold`` (text) overrides the one read from the figures. A result without a verdict (the
    task did not run or crashed) is an ERROR: never a pass.
    """
    result = result or {}
    status = result.get("verdict")
    figures = result.get("figures") or {}
    if status not in VERDICTS:
        msg = str(result.get("msg") or "no verdict returned")[:120]
        return {"node": node, "gate": gate, "verdict": ERROR, "figure": "", "threshold": "",
                "reason": f"{gate}: {msg}", "partner": partner}
    figure = threshold_text = ""
    if gate.startswith("nccl"):
        figure, threshold_text = _gbps(figures.get("busbw_large_gbps"), figures.get("min_busbw_gbps"), "GB/s")
    elif gate.startswith("tcp"):
        figure, threshold_text = _gbps(figures.get("tcp_gbps"), figures.get("tcp_min_gbps"), "Gb/s")
        ends = figures.get("tcp_ends_gbps") or {}
        if ends:
            # Each end's own figure (the client's sent, the server's received); the figure is the lower.
            row_ends = {str(n): _gbps(v, figures.get("tcp_min_gbps"), "Gb/s")[0] for n, v in ends.items()}
            return {"node": node, "gate": gate, "verdict": status, "figure": figure,
                    "threshold": str(threshold_text if threshold is None else threshold),
                    "reason": result.get("reason") or "", "partner": partner, "ends": row_ends}
    elif gate == "gpu":
        if figures.get("gpu_count") is not None:
            figure = f"{figures['gpu_count']} GPUs"
    elif gate == "rdma":
        if figures.get("active") is not None:
            figure = f"{figures['active']} ports up"
        threshold_text = _gbps(None, figures.get("expected_rate_gbps"), "Gb/s")[1]
    return {"node": node, "gate": gate, "verdict": status, "figure": figure,
            "threshold": str(threshold_text if threshold is None else threshold),
            "reason": result.get("reason") or "", "partner": partner}


def gate_pass_results(results, gate, min_gbps=None, servers=None, agree_pct=AGREE_PCT):
    """One pass of a pairwise gate from a registered loop over pairs (``item`` is ``[a, b]``):
    ``[{"nodes", "verdict", "reason", "figure", "threshold"}]`` (TCP adds ``ends``, each node's own figure).

    TCP results are the iperf3 clients' command results (``item`` is ``[client, server]``) and ``servers``
    the servers' results in the same order (async_status of each one-off server); each pair is judged on
    both ends (``gate_tcp_result``), and a pair without its server's result is an ERROR. NCCL results are
    nccl_gate results."""
    out = []
    servers = list(servers or [])
    for i, res in enumerate(results or []):
        pair = [str(n) for n in res["item"]]
        if gate.startswith("tcp"):
            res = gate_tcp_result(res, servers[i] if i < len(servers) else None, min_gbps, pair, agree_pct)
        row = gate_row(res, gate, ",".join(pair))
        entry = {"nodes": pair, "verdict": row["verdict"], "reason": row["reason"],
                 "figure": row["figure"], "threshold": row["threshold"]}
        if row.get("ends"):
            entry["ends"] = row["ends"]
        out.append(entry)
    return out


def _report(result):
    """``(stdout, rc)`` of a registered command or async_status result; None where it gave no report (skipped,
    not finished, or absent)."""
    if not isinstance(result, dict) or result.get("skipped") or "stdout" not in result:
        return None
    if "finished" in result and not result.get("finished"):
        return None
    return (result.get("stdout"), result.get("rc"))


def gate_tcp_result(client, server, min_gbps, nodes, agree_pct=AGREE_PCT):
    """Verdict of one TCP pair test from both ends: ``client`` is the iperf3 client's command result (on
    ``nodes[0]``), ``server`` the one-off server's (on ``nodes[1]``, its async_status result), each with
    ``stdout`` (iperf3 ``--json``) and ``rc``. See ``iperf3.tcp_pair_verdict``: a missing or unparsable end,
    or ends that disagree, is an ERROR naming both nodes; the lower figure is judged against ``min_gbps``.
    """
    return tcp_pair_verdict(_report(client), _report(server), min_gbps, nodes, agree_pct)


def gate_pairs(nodes, partners=()):
    """First-pass pairs: sorted nodes two by two; an odd one out pairs with a known-good partner
    (a node outside the gated set, in service) or else with the first node. One node without any
    partner gets no pair (the caller reports it)."""
    nodes = sorted(dict.fromkeys(nodes))
    outside = [p for p in sorted(dict.fromkeys(partners or ())) if p not in nodes]
    pairs = [[nodes[i], nodes[i + 1]] for i in range(0, len(nodes) - 1, 2)]
    if len(nodes) % 2:
        last = nodes[-1]
        if outside:
            pairs.append([last, outside[0]])
        elif len(nodes) > 1:
            pairs.append([last, nodes[0]])
    return pairs


def gate_pair_rows(first_pass, second_pass, known_good, gate, nodes):
    """Rows for ``nodes`` from a pairwise gate's two passes.

    Each pass is a list of ``{"nodes": [a, b], "verdict", "reason", "figure", "threshold"}``. The node's
    verdict comes from blame(); its figure from the pair that decided it (a failed pair with the partner
    blame names, else the node's last pair). A node in ``nodes`` that no pair tested (no partner, or
    left out by an earlier gate) gets an ERROR row: a pairwise gate that did not run is not a pass.
    """
    per_node = blame(first_pass, second_pass or [], known_good)
    tests = list(first_pass) + list(second_pass or [])
    rows = []
    for node in nodes:
        decided = per_node.get(node)
        if decided is None:  # never paired (no partner, or held back by an earlier gate): not a pass
            rows.append({"node": node, "gate": gate, "verdict": ERROR, "figure": "", "threshold": "",
                         "reason": f"{gate}: not tested (no pair for this node)", "partner": None})
            continue
        mine = [t for t in tests if node in t["nodes"]]
        partner_named = re.search(r"(?:with known-good|with) (\S+)", decided["reason"] or "")
        pick = None
        if partner_named:
            pick = next((t for t in reversed(mine) if partner_named.group(1) in t["nodes"]), None)
        if pick is None and decided["verdict"] == PASS:
            pick = next((t for t in reversed(mine) if t["verdict"] == PASS), None)
        pick = pick or (mine[-1] if mine else {})
        partner = next((n for n in pick.get("nodes", []) if n != node), None)
        reason = decided["reason"]
        # The pair's own reason first: what failed, or why the test could not be judged (which end, which field).
        if pick.get("reason") and (decided["verdict"] == FAIL
                                   or (decided["verdict"] == ERROR and pick.get("verdict") == ERROR)):
            reason = f"{pick['reason']} ({reason})"
        row = {"node": node, "gate": gate, "verdict": decided["verdict"],
               "figure": pick.get("figure", ""), "threshold": pick.get("threshold", ""),
               "reason": reason, "partner": partner}
        if pick.get("ends"):
            row["ends"] = dict(pick["ends"])
        rows.append(row)
    return rows


def gate_verdict(rows):
    """A node's verdict from its rows: the first FAIL row, else the first ERROR row, else PASS.

    Fails closed: no rows at all (no gate ran) is an ERROR, and so is a row whose verdict is not one
    of PASS, FAIL, ERROR.
    """
    rows = list(rows or [])
    if not rows:
        return {"verdict": ERROR, "gate": "all", "figure": "", "threshold": "", "partner": None,
                "reason": "gate: no gate ran on this node", "node": None}
    for row in rows:
        if row.get("verdict") not in VERDICTS:
            return {**dict(row), "verdict": ERROR,
                    "reason": f"{row.get('gate', 'gate')}: unknown verdict {row.get('verdict')!r}"}
    for status in (FAIL, ERROR):
        hit = next((r for r in rows if r["verdict"] == status), None)
        if hit:
            return dict(hit)
    return {"verdict": PASS, "gate": "all", "figure": "", "threshold": "", "reason": "",
            "node": rows[0]["node"], "partner": None}


def gate_passing(nodes, hostvars, var):
    """The nodes whose rows so far (host variable ``var``, the gate's ``__health_gate_rows``) are all PASS (the ones
    that go on to the pairwise checks)."""
    return [n for n in nodes if all(r["verdict"] == PASS for r in (hostvars[n].get(var) or []))]


def gate_reason_detail(row):
    """The Slurm-reason detail for a FAIL row: the gate and the figure, e.g.
    ``nccl:busbw_5.5GB/s_below_98GB/s`` (node_reason cleans and bounds it)."""
    text = row.get("reason") or ""
    text = re.sub(r"^[a-z0-9_-]+:\s*", "", text, count=1)
    text = re.sub(r"\s+(GB/s|Gb/s|s)\b", r"\1", text)
    text = re.sub(r"\s*<\s*", "_below_", text)
    text = re.sub(r"\s*\(.*$", "", text)
    partner = f"_with_{row['partner']}" if row.get("partner") else ""
    return re.sub(r"\s+", "_", f"{row['gate']}:{text.strip()}{partner}")


def gate_adopt_drains(names, views, run_id, pool="slurm"):
    """Hand an admin's drain over to the gate, on the operator's explicit word (``gate_adopt_drains``, issue 37).

    Returns ``{"adopt": [{"node", "reason"}], "left": [{"node", "why"}], "errors": [message]}``. A node drained with
    a reason that is not the toolkit's, and running no job, gets the toolkit's hold reason (the admin's words kept in
    its detail), so a gate PASS admits it; one drained with the toolkit's reason, or in service, is left as it is
    (nothing to hand over). Errors, which change nothing anywhere: a name Slurm does not know, a node still running
    jobs (its work first), a name given twice or not a plain host name.
    """
    adopt, left, errors = [], [], []
    if not isinstance(names, (list, tuple)):
        return {"adopt": [], "left": [], "errors": [f"gate_adopt_drains must be a list of node names, got {names!r}"]}
    seen = set()
    for name in names:
        if not isinstance(name, str) or not name or name in seen:
            errors.append(f"gate_adopt_drains: {name!r} is not a node name, or is named twice")
            continue
        seen.add(name)
        view = (views or {}).get(name)
        if view is None:
            errors.append(f"gate_adopt_drains: {name} is not a node Slurm knows")
            continue
        ours = view.get("ours") if view.get("ours") is not None else parse_reason(view.get("reason"))
        if not view.get("drained"):
            left.append({"node": name, "why": "not drained: nothing to hand over"})
        elif ours is not None:
            left.append({"node": name, "why": f"held by the toolkit already ({view.get('reason')})"})
        elif view.get("busy"):
            errors.append(f"gate_adopt_drains: {name} still runs jobs under its admin's drain: hand it over once "
                          "they end")
        else:
            reason = make_reason("hold", f"adopted:{view.get('reason') or 'no_reason'}", run_id=run_id, target=pool)
            adopt.append({"node": name, "reason": reason})
    return {"adopt": adopt, "left": left, "errors": errors}


def _found_during_run(node, view, before):
    """True when the health check drained the node while the gate measured it: its reason is the health check's and
    not the one Slurm showed when the run started (the node was in service then, or held for another reason). The
    gate's PASS predates that fault. (The health check leaves alone a node drained or in a maintenance reservation,
    as the gate's own pair test puts it, so a reason the gate restores itself is the one it started with.)"""
    if before is None:
        return False
    ours = view.get("ours") if view.get("ours") is not None else parse_reason(view.get("reason"))
    if not ours or not str(ours.get("detail") or "").startswith("healthcheck:"):
        return False
    return (before.get(node) or {}).get("reason") != view.get("reason")


def gate_slurm_actions(verdicts, views, run_id, pool="slurm", before=None):
    """Slurm changes for the gated nodes: ``[{"node", "action": "drain"|"resume"|"keep", "reason"}]``.

    * FAIL: drain with ``gpufleet:gate,...,<gate>:<figure>`` unless an admin's drain is there (never
      touched) or the node already carries that gate reason (a re-run changes nothing);
    * PASS: resume only a node drained with a ``hold``, ``gate`` or ``maint`` reason of ours for this pool;
    * ERROR: nothing (not blamed, not admitted: a held node stays held with its reason).
    * PASS on a node the health check drained during the run (``before``: Slurm's view when the run started): kept
      drained, said with ``keep`` (the fault came after the measurements; issue 37).
    Nodes that Slurm does not know are left out.
    """
    actions = []
    for node in sorted(verdicts):
        row, view = verdicts[node], (views or {}).get(node)
        if view is None:
            continue
        ours = view.get("ours") if view.get("ours") is not None else parse_reason(view.get("reason"))
        drained = bool(view.get("drained"))
        if row["verdict"] == FAIL:
            if drained and ours is None:
                continue
            detail = gate_reason_detail(row)
            reason = make_reason("gate", detail, run_id=run_id, target=pool)
            wanted = parse_reason(reason)["detail"]
            if drained and ours and ours["kind"] == "gate" and ours["detail"] == wanted:
                continue
            actions.append({"node": node, "action": "drain", "reason": reason})
        elif (row["verdict"] == PASS and drained and ours and ours["kind"] in ADMIT_KINDS
              and ours.get("target") in (None, pool)):
            if _found_during_run(node, view, before):
                actions.append({"node": node, "action": "keep", "reason": view.get("reason") or ""})
            else:
                actions.append({"node": node, "action": "resume", "reason": ""})
    return actions


def _figure_cell(row):
    """The table's figure: the row's, and where a pair was judged on both ends each end's own figure."""
    figure = row.get("figure") or "-"
    ends = row.get("ends") or {}
    if ends:
        figure += " [" + ", ".join(f"{node} {value}" for node, value in sorted(ends.items())) + "]"
    return figure


def gate_table(rows):
    """The console table: node, gate, figure, threshold, verdict (and the reason when not PASS)."""
    head = ("node", "gate", "figure", "threshold", "verdict")
    body = [(r["node"], r["gate"] + (f" ({r['partner']})" if r.get("partner") else ""), _figure_cell(r),
             r.get("threshold") or "-", r["verdict"]) for r in rows]
    widths = [max(len(str(c)) for c in col) for col in zip(head, *body, strict=False)]
    lines = []
    for cells, row in zip([head, *body], [None, *rows], strict=False):
        line = "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()
        if row and row["verdict"] != PASS and row.get("reason"):
            line += f"  {row['reason']}"
        lines.append(line)
    return lines


def gate_gpu_reports(nodes, hostvars, partner_results=()):
    """``{node: {"gpus", "count"}}``: each node's own GPU report. The gated nodes' come from this run's
    discovery (host variables ``__health_gate_gpus`` / ``__health_gate_gpu_count``); partners from outside the
    run from ``nvidia_gpu_info`` run on each of them (a registered loop, ``item`` is the node). A node without a
    report is left out (``gate_pair_profile`` makes its pair an ERROR)."""
    reports = {}
    for node in nodes or []:
        # not hostvars.get(node, {}): HostVars.get on an unknown host does not return the default in ansible-core 2.19
        hv = hostvars[node] if node in hostvars else {}  # noqa: SIM401
        if hv.get("__health_gate_gpus") is not None and hv.get("__health_gate_gpu_count") is not None:
            reports[str(node)] = {"gpus": list(hv["__health_gate_gpus"] or []),
                                  "count": hv["__health_gate_gpu_count"]}
    for res in partner_results or []:
        if not isinstance(res, dict) or res.get("failed") or res.get("skipped") or "gpus" not in res:
            continue
        reports[str(res["item"])] = {"gpus": list(res.get("gpus") or []), "count": res.get("count")}
    return reports


def _gpu_profile(node, report):
    """``(model, count)`` of one node's report, or an ERROR reason."""
    if report is None:
        return f"no GPU report from {node}"
    try:
        gpu_count = int(str(report.get("count")).strip())
    except (TypeError, ValueError):
        return f"{node} reports a gpu_count that is not a number: {report.get('count')!r}"
    models = sorted({str(g.get("name") or "") for g in report.get("gpus") or [] if isinstance(g, dict)})
    if not models or models == [""] or gpu_count < 1:
        return f"{node} reports no GPU"
    if len(models) > 1 or "" in models:
        return f"{node} reports more than one gpu_model: {', '.join(repr(m) for m in models)}"
    return models[0], gpu_count


def gate_pair_profile(pair, reports):
    """The GPU model and count a pair is judged against (the NCCL pair test's profile), from both nodes' own
    reports: ``{"gpu_model", "gpu_count"}``, or ``{"error": reason}`` naming both nodes and the field.

    The pair is not judged as a normal pair, and not run, when a node gave no report, reports no GPU or more
    than one model, or the two disagree on ``gpu_model`` or ``gpu_count``: one profile cannot judge both, so the
    pair is an ERROR (no expectation to judge against, docs/health-gates.md), never a PASS, and blames nobody.

    Work at risk: a PASS admits both nodes to jobs. Refused: a pair whose nodes' reports disagree, or that lacks
    one, is an ERROR before any reservation or job; neither node's report is taken for the other's.
    """
    a, b = (str(n) for n in pair)
    seen = {}
    for node in (a, b):
        profile = _gpu_profile(node, (reports or {}).get(node))
        if isinstance(profile, str):
            return {"error": f"nccl_pair: {a},{b}: {profile}"}
        seen[node] = profile
    (model_a, count_a), (model_b, count_b) = seen[a], seen[b]
    if model_a != model_b:
        return {"error": f"nccl_pair: {a} and {b} disagree on gpu_model: {model_a!r} and {model_b!r}"}
    if count_a != count_b:
        return {"error": f"nccl_pair: {a} and {b} disagree on gpu_count: {count_a} and {count_b}"}
    return {"gpu_model": model_a, "gpu_count": count_a}
