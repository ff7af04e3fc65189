"""The idle re-gate (issue 37): which nodes in service are gated again now, through Slurm, without touching work.

``playbooks/regate.yml`` runs on a schedule (a timer, AWX, cron on the controller). Each run takes a share of the
Slurm pool's nodes, oldest verdict first (the record the gate wrote into the fleet, gate_record.py; a node with no
readable record first of all), and only nodes that are in service and idle now. It never takes so many that fewer
than the pool's minimum stay in service. Each picked node is then held by a maintenance reservation of its own,
created without IGNORE_JOBS, so Slurm refuses it for a node a job reached since the read: that node is left out.
The gates run as Slurm jobs inside the reservations; a FAIL drains the node with the gate reason; the reservations
are deleted at the end (and end by themselves, so a killed run frees them).
"""

from __future__ import annotations

import math

from ansible.module_utils.gate_record import RecordError, at_epoch, parse_slurm_text

# Flags under which a node is someone else's now: a reservation (the gate's, maintenance's, a site's), a drain, a
# failure, power saving.
_TAKEN_FLAGS = frozenset({"RESERVED", "MAINT", "MAINTENANCE", "DRAIN", "FAIL", "NOT_RESPONDING", "POWERED_DOWN",
                          "POWERING_DOWN", "POWER_DOWN", "POWERING_UP", "REBOOT_REQUESTED", "REBOOT_ISSUED",
                          "COMPLETING", "PLANNED"})


class RegateError(ValueError):
    """Inputs the re-gate cannot plan with (a caller's or an inventory's error)."""


def _serving(view):
    return isinstance(view, dict) and "slurm" in (view.get("schedulers") or [])


def _record_rank(view, field, now):
    """The node's place in the queue, smallest first: ``(0, 0)`` no verdict record at all (never gated, or a broken
    record of ours), ``(1, -age)`` a record (the oldest first), ``(2, 0)`` an admin's note in the field (no age to
    know; after the recorded nodes, so a note never takes every run's share)."""
    text = (view or {}).get(field)
    try:
        record = parse_slurm_text(text)
    except RecordError:
        return (0, 0)
    if record is not None:
        return (1, -max(0, now - at_epoch(record["at"])))
    return (0, 0) if text in (None, "") else (2, 0)


def regate_pick(views, nodes, fraction, min_in_service, now, field="comment"):
    """The nodes to re-gate now: ``{"pick": [names], "skipped": [{node, why}], "in_service": n, "allowed": n}``.

    *views*: ``slurm_node_info`` nodes (node_view with ``state``, ``flags``, ``busy``, ``comment``); *nodes*: the
    Slurm pool's GPU nodes the run may consider; *fraction* (0 < f <= 1) of them is the most one run takes (at least
    one); *min_in_service*: the pool's minimum. A node is picked only when it is in service (Slurm places jobs on it),
    idle (state IDLE, no job, no flag that makes it someone else's) and healthy; among those the nodes with no record
    first, then the oldest recorded verdicts, then nodes whose field holds an admin's note, each by name. The pick
    never leaves fewer than *min_in_service* nodes in service.

    Work at risk: running jobs, the pool's minimum, an admin's drain or reservation. Refused: a node with a job, in a
    reservation or drained is never picked; the count is capped at in service minus the minimum; reading a node that
    is not in *views* picks nothing for it (unknown is never idle).
    """
    try:
        fraction = float(fraction)
        min_in_service = int(min_in_service)
    except (TypeError, ValueError):
        raise RegateError(f"health_gate_regate_fraction {fraction!r} must be a number and "
                          f"health_gate_regate_min_in_service {min_in_service!r} a count") from None
    if not 0 < fraction <= 1 or min_in_service < 0:
        raise RegateError(f"health_gate_regate_fraction must be in (0, 1] (got {fraction}) and "
                          f"health_gate_regate_min_in_service not negative (got {min_in_service})")
    views = views or {}
    names = sorted(dict.fromkeys(str(n) for n in nodes or []))
    in_service = [n for n in names if _serving(views.get(n))]
    skipped, eligible = [], []
    for name in names:
        view = views.get(name)
        flags = set(view.get("flags") or []) if isinstance(view, dict) else set()
        if not isinstance(view, dict):
            skipped.append({"node": name, "why": "not in Slurm's view"})
        elif not _serving(view):
            skipped.append({"node": name, "why": "not in service"})
        elif view.get("busy") or view.get("state") != "IDLE":
            skipped.append({"node": name, "why": f"running work ({view.get('state')})"})
        elif flags & _TAKEN_FLAGS:
            skipped.append({"node": name, "why": f"taken ({'+'.join(sorted(flags & _TAKEN_FLAGS))})"})
        elif not view.get("healthy"):
            skipped.append({"node": name, "why": "not healthy"})
        else:
            eligible.append((_record_rank(view, field, now), name))
    share = max(1, math.ceil(fraction * len(names))) if names else 0
    allowed = max(0, min(share, len(in_service) - min_in_service))
    eligible.sort()
    pick = [name for _age, name in eligible[:allowed]]
    for _age, name in eligible[allowed:]:
        skipped.append({"node": name, "why": f"beyond this run's share ({allowed}: fraction {fraction}, "
                                             f"{len(in_service)} in service, minimum {min_in_service})"})
    return {"pick": pick, "skipped": sorted(skipped, key=lambda s: s["node"]), "in_service": len(in_service),
            "allowed": allowed}
