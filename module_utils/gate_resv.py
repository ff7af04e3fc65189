"""The NCCL pair test's Slurm reservations, and what the next gate run does with those a killed run left.

A pair test (roles/health_gate/tasks/nccl_pair.yml) runs inside a MAINT reservation for root named
``gpufleet-gate-<run>-<a>-<b>``. Slurm never starts a job on a drained node, so the nodes this toolkit holds
are resumed inside it for the test and drained again with their reasons afterwards. A run killed between the
two leaves them resumed with no hold: only the reservation keeps jobs off them. So:

* a reservation whose pair has a node the toolkit resumes has **no end** (``Duration=UNLIMITED``) and says so
  in its name, ``gpufleet-gate-held-<run>-<a>-<b>``: a killed run's nodes do not return to service by
  themselves (Slurm 22.05 keeps ``UNLIMITED`` as 365 days: ``EndTime`` a year after ``StartTime``, seen in
  molecule/health_gate), only through a gate run;
* before the reservation is made, the reasons of the nodes it will resume are written to a record on the
  Slurm controller, ``<record dir>/<reservation>.json`` (``{"run", "nodes": {node: reason}}``, root 0600);
* every gate run, first thing, finds this toolkit's gate reservations by their name, drains again each
  resumed node that is not drained now with its recorded reason, deletes the reservations, then the records
  (``stale_gate_holds``).

A pair of nodes in service (none resumed) keeps a finite reservation: a killed run frees it by itself, and
those nodes were never out of service.
"""

from __future__ import annotations

import base64
import json

from ansible.module_utils.gate_rows import ADMIT_KINDS
from ansible.module_utils.maint_resv import parse_reservations
from ansible.module_utils.node_reason import make_reason, parse_reason

PREFIX = "gpufleet-gate-"
# The name of a reservation in which the test resumes a node this toolkit holds.
HELD_PREFIX = PREFIX + "held-"
NO_END = "UNLIMITED"
# The reason a resumed node is held with when its record is lost: the toolkit's hold, which only a gate PASS lifts.
KILLED_DETAIL = "gate_killed"


def reservation_name(run_id, pair, held=False):
    """``gpufleet-gate-<run>-<a>-<b>``, or ``gpufleet-gate-held-<run>-<a>-<b>`` where the test resumes a node
    this toolkit holds: found again by its name after a kill."""
    return f"{HELD_PREFIX if held else PREFIX}{run_id}-{'-'.join(str(n) for n in pair)}"


def reservation_minutes(held, timeout_s, minutes=None):
    """A pair reservation's ``Duration``: ``UNLIMITED`` when the test resumes a node this toolkit holds (only
    the next gate run ends it), else ``minutes``, or the test's timeout in whole minutes plus five."""
    if held:
        return NO_END
    if minutes is not None and str(minutes).strip() not in ("", "None"):
        value = int(minutes)
        if value < 1:
            raise ValueError(f"health_gate_nccl_pair_resv_minutes must be >= 1, got {minutes!r}")
        return str(value)
    return str(-(-int(timeout_s) // 60) + 5)


def read_records(slurped):
    """``{reservation: record}`` from slurp results of the record files (``item.path`` and ``content``).

    A record that cannot be read (not base64, not JSON, no ``nodes`` mapping of names to text) is ``None``:
    its reservation is handled as one whose record is lost."""
    out = {}
    for res in slurped or []:
        item = res.get("item") or {}
        path = str(item.get("path") if isinstance(item, dict) else item or "")
        name = path.rsplit("/", 1)[-1]
        if not name.endswith(".json"):
            continue
        name = name[: -len(".json")]
        try:
            record = json.loads(base64.b64decode(res.get("content") or "").decode())
        except (ValueError, UnicodeDecodeError):
            record = None
        nodes = record.get("nodes") if isinstance(record, dict) else None
        if not isinstance(nodes, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in nodes.items()):
            record = None
        out[name] = record
    return out


def _restore_reason(reason, run_id, pool):
    """The recorded reason where it is a hold of this toolkit that a gate may lift for this pool, else the
    toolkit's hold naming the killed run (never an empty or foreign reason)."""
    parsed = parse_reason(reason)
    if parsed and parsed["kind"] in ADMIT_KINDS and parsed.get("target") in (None, pool):
        return reason
    try:
        return make_reason("hold", KILLED_DETAIL, run_id=run_id, target=pool)
    except ValueError:
        return make_reason("hold", KILLED_DETAIL, target=pool)


def stale_gate_holds(resv_text, records, views, pool="slurm"):
    """What a gate run does first with the gate reservations a killed run left.

    ``resv_text`` is ``scontrol show reservation`` (``-o`` or not); ``records`` is ``{reservation: record or
    None}`` (``read_records``); ``views`` is slurm_node_info's ``nodes``. Every reservation named
    ``gpufleet-gate-*`` is stale (the run that reads them has made none yet). Returns ``{"restore": [{"node",
    "reason", "reservation"}], "delete": [reservations], "records": [records to remove]}``:

    * the nodes to hold again are the record's (the ones the test resumed), with their recorded reasons; where
      the record is lost and the reservation's name says it resumed a held node (``gpufleet-gate-held-``), every
      node of it, with the toolkit's hold ``gate_killed`` (fail closed); any other resumed nobody;
    * a node drained now is left as it is (held already, or an admin's drain, which stands); a node Slurm does
      not list is left out;
    * every stale reservation is deleted; every record is removed once its reservation is gone.

    Work at risk: a node returned to service without its gate (the killed test resumed it), an admin's drain,
    a node that was in service before the test. Guarded: only nodes the record says the test resumed (or every
    node of a ``held`` reservation whose record is lost) are drained again, and only where nothing drains them
    now; a node in service before the test is in no record, and drain never stops a running job.
    """
    reservations = parse_reservations(resv_text)
    views = views or {}
    records = dict(records or {})
    restore, delete = [], []
    for name in sorted(reservations):
        if not name.startswith(PREFIX):
            continue
        resv = reservations[name]
        delete.append(name)
        record = records.get(name)
        if record is not None:
            held = {n: record["nodes"][n] for n in sorted(record["nodes"]) if n in resv["nodes"]}
            run_id = record.get("run")
        elif name.startswith(HELD_PREFIX):
            held = {n: None for n in resv["nodes"]}
            run_id = None
        else:
            held = {}
            run_id = None
        for node, reason in held.items():
            view = views.get(node)
            if view is None or view.get("drained"):
                continue
            restore.append({"node": node, "reservation": name,
                            "reason": _restore_reason(reason, run_id if isinstance(run_id, str) else None, pool)})
    return {"restore": restore, "delete": delete, "records": sorted(records)}


def stale_gate_holds_from(resv_text, slurped, views, pool="slurm"):
    """``stale_gate_holds`` from the slurp results of the record files (the role's filter)."""
    return stale_gate_holds(resv_text, read_records(slurped), views, pool)
