"""The rolling-maintenance report: JSON and a self-contained HTML page, in the fleet summary's style.

``build(plan, records, run_id, cluster)`` is pure: one row per node the run touched (wave, events with
their times, versions before and after, gate verdict, outcome, Slurm reason) and the nodes left out, why.
"""

import json

from ansible.module_utils.fleet_summary import _CSS, _esc

OUTCOMES = ("resumed", "failed", "error", "pending", "left_out")


def _duration(events):
    times = [e.get("at") for e in events or [] if e.get("at")]
    return f"{times[0]} .. {times[-1]}" if times else "-"


def build(plan, records, run_id, cluster, stopped=None):
    """The report dict. *records*: one per node (``node``, ``wave``, ``events``, ``before``, ``after``,
    ``verdict``, ``outcome``, ``reason``); a later record for the same node replaces an earlier one."""
    nodes = {}
    for r in records or []:
        if isinstance(r, dict) and r.get("node"):
            nodes[r["node"]] = dict(nodes.get(r["node"], {}), **r)
    waves = [list(w) for w in (plan or {}).get("waves") or []]
    left = list((plan or {}).get("left_out") or [])
    left += [{"node": n, "reason": r.get("reason") or r.get("outcome")} for n, r in sorted(nodes.items())
             if r.get("outcome") in ("pending", "left_out")]
    counts = dict.fromkeys(OUTCOMES, 0)
    for r in nodes.values():
        key = r.get("outcome") or "error"
        counts[key] = counts.get(key, 0) + 1
    return {"cluster": cluster or "", "run_id": run_id or "", "waves": waves, "nodes": nodes,
            "left_out": left, "counts": counts, "stopped": stopped,
            "policy": {k: (plan or {}).get(k) for k in ("max_unavailable", "share", "failure_threshold",
                                                       "drain_timeout", "mode")}}


def render_json(report):
    """The report as JSON (sorted keys)."""
    return json.dumps(report, indent=2, sort_keys=True)


def _versions(d):
    return ", ".join(f"{k} {v or 'none'}" for k, v in sorted((d or {}).items())) or "-"


def render_html(report):
    """A self-contained HTML page (no script, no external asset): headline, nodes table, left out."""
    verdict_class = {"PASS": "PASS", "FAIL": "FAIL", "ERROR": "ERROR"}
    rows = []
    for name, r in sorted(report["nodes"].items()):
        verdict = r.get("verdict") or "-"
        events = "; ".join(f"{e.get('event')} {e.get('at')}" for e in r.get("events") or [])
        rows.append(
            "<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in (name, ",".join(r.get("wave") or []) or "-"))
            + f'<td class="v {verdict_class.get(verdict, "never")}">{_esc(verdict)}</td>'
            + "".join(f"<td>{_esc(c)}</td>" for c in (r.get("outcome") or "-", _duration(r.get("events"))))
            + "".join(f'<td class="w">{_esc(c)}</td>' for c in (
                _versions(r.get("before")), _versions(r.get("after")), events, r.get("reason") or "-"))
            + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("node", "wave", "gate", "outcome", "from .. to", "before", "after",
                                              "events", "reason"))
    left = "".join(f"<tr><td>{_esc(x['node'])}</td><td class=\"w\">{_esc(x['reason'])}</td></tr>"
                   for x in report["left_out"])
    counts = ", ".join(f"{v} {k}" for k, v in report["counts"].items() if v) or "no node touched"
    title = f"gpufleet maintenance: {report['cluster'] or 'fleet'} run {report['run_id']}"
    sub = f"{len(report['waves'])} waves; {counts}"
    if report.get("stopped"):
        sub += f"; stopped: {report['stopped']}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}</h1><p class=\"sub\">{_esc(sub)}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<table><thead><tr><th>left out</th><th>why</th></tr></thead><tbody>{left}</tbody></table>"
        "</body></html>\n"
    )
