"""Holds that keep nodes out of service until a gate admits them (docs/health-gates.md, "Fail closed").

Two holds, both with the toolkit's ``hold`` reason, so that they blame nobody and the next gate run
(``gate.yml``, or ``site.yml`` for nodes held for Slurm) lifts them on a PASS (filters: filter_plugins/gate_hold.py):

* ``gate_error_holds``: a node in service whose gate ended ERROR (the gate could not judge it) is
  held out, like a FAIL but without blaming it;
* ``slurm_first_start_holds``: a node that slurmd is about to start for the first time, and that
  Slurm has never seen answer, is held before it registers, so it takes no job before its gate.
"""

from __future__ import annotations

from ansible.module_utils.node_reason import make_reason, parse_reason

ERROR = "ERROR"


def _ours(view):
    return view.get("ours") if view.get("ours") is not None else parse_reason(view.get("reason"))


def gate_error_detail(row):
    """The reason detail for an ERROR verdict: ``gate_error:<gate>`` (which gate could not judge)."""
    return f"gate_error:{row.get('gate') or 'unknown'}"


def gate_error_holds(verdicts, views, run_id, pool="slurm"):
    """Holds for the ERROR nodes still in service: ``[{"node", "action": "hold", "reason"}]``.

    *verdicts*: ``{node: verdict row}`` (``gate_verdict``); *views*: ``{node: slurm_node_info view}``.
    A node already drained (by this toolkit or by an admin) keeps its drain and its reason; a node
    Slurm does not know is left out; PASS and FAIL are ``gate_slurm_actions``' business.
    """
    actions = []
    for node in sorted(verdicts):
        row, view = verdicts[node], (views or {}).get(node)
        if view is None or row.get("verdict") != ERROR or view.get("drained"):
            continue
        reason = make_reason("hold", gate_error_detail(row), run_id=run_id, target=pool)
        actions.append({"node": node, "action": "hold", "reason": reason})
    return actions


def slurm_first_start_holds(starting, views, pool="slurm"):
    """Nodes to hold before slurmd starts on them: ``{node: reason}``.

    *starting*: nodes where this run is about to start slurmd (it is not running there);
    *views*: ``{node: slurm_node_info view}``. A node is held when Slurm lists it, it does not answer
    (never registered, or down) and nothing holds it yet. A node in service is never touched, so an
    adopted cluster keeps its running nodes; an admin's drain and an earlier hold of ours stay as they are.
    """
    holds = {}
    for node in sorted(set(starting)):
        view = (views or {}).get(node)
        if view is None or not view.get("down") or view.get("drained") or _ours(view) is not None:
            continue
        holds[node] = make_reason("hold", "first_start", target=pool)
    return holds


def slurm_gate_pending(nodes, views, pool="slurm"):
    """The *nodes* that wait for a gate: drained with this toolkit's ``hold`` reason for *pool*."""
    out = []
    for node in sorted(set(nodes)):
        view = (views or {}).get(node)
        ours = _ours(view) if view else None
        if view and view.get("drained") and ours and ours["kind"] == "hold" and ours.get("target") in (None, pool):
            out.append(node)
    return out
