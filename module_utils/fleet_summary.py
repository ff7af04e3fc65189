"""The fleet summary: per node its pool, scheduler state, GPUs, last gate verdict and its age.

Pure functions. The caller reads the live state (``slurm_node_info``, Kubernetes' nodes, the gate
reports under ``reports/``, the GPU discovery facts) and passes it in; ``build_summary`` joins it into one
document and the renderers print it as a console table, JSON, or a self-contained HTML page.

Fail safe: what cannot be read is shown as ``unknown``, never as healthy or in service. A node with no
readable gate verdict is ``never gated`` only when every gate report was read; otherwise its verdict is
``UNKNOWN``. The newest readable verdict stands only when it is dated in the past and no unreadable
report is newer; only reports of this cluster count, and without a cluster name none does.
"""

from __future__ import annotations

import datetime
import fnmatch
import html
import json
import os
import re

from ansible.module_utils.gate_record import SLURM_FIELDS, fleet_record
from ansible.module_utils.k8s_state import node_states
from ansible.module_utils.node_reason import parse_reason

SCHEMA = "gpufleet.fleet_summary/1"
UNKNOWN = "unknown"
NEVER = "never gated"
# Pools as the summary names them: slurm, k8s (a Kubernetes node with the pool label), parked (committed
# to Kubernetes but in no Kubernetes cluster the inventory has, e.g. the lab), none (placed nowhere).
POOLS = ("slurm", "k8s", "parked", "none", UNKNOWN)
VERDICTS = ("PASS", "FAIL", "ERROR", "UNKNOWN", NEVER)
# Slurm base states that take jobs, and flags that keep a node from taking new ones (slurm_state.py).
_SERVING = frozenset({"IDLE", "ALLOCATED", "MIXED", "COMPLETING"})
# A node in an active MAINT reservation takes only that reservation's jobs: scontrol prints the flag as
# MAINTENANCE (State=IDLE+MAINTENANCE+RESERVED), sinfo's "$" suffix reads as MAINT (slurm_state.SUFFIX_FLAGS).
_HOLDING = frozenset({"DRAIN", "FAIL", "NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN",
                      "POWERING_UP", "REBOOT_REQUESTED", "REBOOT_ISSUED", "INVALID_REG", "FUTURE", "BLOCKED",
                      "MAINT", "MAINTENANCE"})
_RUN_STAMP_RE = re.compile(r"^(\d{8}T\d{4}(?:\d{2})?)")
# A run stamp in a report's file name (health_gate writes gate-<run>.json).
_NAME_STAMP_RE = re.compile(r"(?<!\d)(\d{8}T\d{4}(?:\d{2})?)(?!\d)")

# Colours of the HTML picture (fill = pool, outline and badge = verdict).
POOL_COLOURS = {"slurm": "#cfe3ff", "k8s": "#d9f2d0", "parked": "#f3e6c8", "none": "#eeeeee", UNKNOWN: "#ffffff"}
VERDICT_COLOURS = {"PASS": "#1e8e3e", "FAIL": "#d93025", "ERROR": "#e37400", "UNKNOWN": "#6a1b9a",
                   NEVER: "#80868b"}


class FleetSummaryError(ValueError):
    """The inputs have the wrong shape (a caller bug, not a fleet state)."""


def _iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_time(run_id):
    """Epoch seconds of a run id that starts with a UTC stamp (``20260121T1000``, ``20261123T204501``), else None."""
    match = _RUN_STAMP_RE.match(str(run_id or ""))
    if not match:
        return None
    stamp = match.group(1)
    fmt = "%Y%m%dT%H%M%S" if len(stamp) == 15 else "%Y%m%dT%H%M"
    try:
        moment = datetime.datetime.strptime(stamp, fmt).replace(tzinfo=datetime.UTC)
    except ValueError:
        return None
    return moment.timestamp()


def format_age(seconds):
    """``45s``, ``12m``, ``3h 5m``, ``2d 4h``; None is ``unknown``; a time in the future is ``0s``."""
    if seconds is None:
        return UNKNOWN
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def host_facts(nodes, hostvars, gpus_var, expected_var="cluster_gpu_count", leaf_var="cluster_leaf_switch"):
    """Per node ``{gpus, expected, leaf}`` from host variables (Ansible's hostvars or plain dicts).

    ``gpus_var`` names the variable with the discovered GPU list (the caller says which role set it:
    gpu_discovery_gpus); ``gpus`` is that list (None when the node was not discovered in this run: unknown).
    """
    out = {}
    for node in nodes:
        # Ansible's HostVars answers an unknown host with Undefined, not KeyError: test membership first.
        hv = hostvars[node] if node in hostvars else {}  # noqa: SIM401
        gpus = hv.get(gpus_var)
        out[node] = {
            "gpus": list(gpus) if isinstance(gpus, (list, tuple)) else None,
            "expected": hv.get(expected_var),
            "leaf": hv.get(leaf_var),
        }
    return out


def _gpu_model(name):
    text = str(name or "").strip()
    return text[len("NVIDIA "):] if text.startswith("NVIDIA ") else text


def gpu_view(facts):
    """``{count, expected, models, text, ok}`` of one node's GPU facts; no facts is unknown (ok None)."""
    facts = facts or {}
    gpus = facts.get("gpus")
    expected = facts.get("expected")
    try:
        expected = int(expected) if expected not in (None, "") else None
    except (TypeError, ValueError):
        expected = None
    if gpus is None:
        return {"count": None, "expected": expected, "models": [], "text": UNKNOWN, "ok": None}
    models = sorted({_gpu_model(g.get("name") if isinstance(g, dict) else g) or "?" for g in gpus})
    count = len(gpus)
    ok = expected is None or count == expected
    shown = f"{count}/{expected}" if not ok else str(count)
    text = f"{shown}x {', '.join(models)}" if models else f"{shown} GPUs"
    return {"count": count, "expected": expected, "models": models, "text": text, "ok": ok}


def list_reports(directory, pattern="gate-*.json"):
    """What ``find`` (non-recursive, regular files, no hidden ones) says of *directory*, read in-process.

    Returns ``{exists, isdir, files: [{path, mtime}], skipped: {path: why}}``; a directory that cannot be
    listed is in ``skipped``, so the summary counts its reports as incomplete, never as none.
    """
    out = {"exists": False, "isdir": False, "files": [], "skipped": {}}
    directory = str(directory)
    try:
        out["exists"] = os.path.lexists(directory)
        out["isdir"] = os.path.isdir(directory)
        if not out["isdir"]:
            return out
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.startswith(".") or not fnmatch.fnmatchcase(entry.name, pattern):
                    continue
                if entry.is_file(follow_symlinks=False):
                    out["files"].append({"path": entry.path, "mtime": entry.stat(follow_symlinks=False).st_mtime})
    except OSError as exc:
        out["skipped"][directory] = str(exc)[:160]
    return out


def newest_files(files, limit):
    """The *limit* newest of ``find``'s files (by mtime, then path), newest first."""
    ordered = sorted(files or [], key=lambda f: (float(f.get("mtime") or 0), str(f.get("path"))), reverse=True)
    return ordered[: max(0, int(limit))]


def gate_report_inputs(files, texts=None, error=None):
    """``[{name, mtime, text}]`` from ``find``'s files and the texts read from them (same order).

    With *error* (the read failed) or a text list of another length, every file is unreadable (its
    mtime kept: an unreadable report newer than a verdict makes that verdict unknown).

    Work at risk: none (read-only).
    """
    files = list(files or [])
    texts = list(texts or [])
    if error or len(texts) != len(files):
        why = str(error or f"read {len(texts)} texts for {len(files)} files")[:160]
        return [{"name": _basename(f.get("path")), "mtime": f.get("mtime"), "error": why} for f in files]
    return [{"name": _basename(f.get("path")), "mtime": f.get("mtime"), "text": t}
            for f, t in zip(files, texts, strict=True)]


def _basename(path):
    return str(path or "?").rstrip("/").rsplit("/", 1)[-1]


def _mtime(report):
    try:
        return float(report.get("mtime"))
    except (TypeError, ValueError):
        return None


def _unreadable_time(name, mtime):
    """The latest time an unreadable report may stand for: its name's run stamp or its mtime, the newer
    of the two; None when neither is known (then it may be the newest of all).

    Work at risk: none (read-only).
    """
    match = _NAME_STAMP_RE.search(name)
    known = [t for t in (run_time(match.group(1)) if match else None, mtime) if t is not None]
    return max(known) if known else None


def parse_gate_reports(reports, cluster=None, now=None):
    """Read gate reports (``[{name, mtime, text}]``; health_gate writes ``{cluster, run_id, nodes, rows}``).

    Returns ``{"runs": [{name, run_id, at, nodes, rows}] newest first, "undated": [run], "unreadable":
    ["name: why"], "unreadable_at": [{name, why, at}], "other_clusters": [name]}``. A run's time is its run
    id's UTC stamp, else the file's mtime. A run whose time is after *now* or not known at all is in
    ``undated``, never in ``runs``: it cannot be ordered against the real ones. A file that is not JSON,
    or has no ``nodes`` mapping, is unreadable (its verdicts are unknown, never PASS); ``at`` is the latest
    time it may stand for. Only reports of *cluster* count: another cluster's (one directory of reports
    can serve several inventories) is set aside, one that names no cluster is unreadable, and without
    *cluster* every report is unreadable, since none can be told apart from another cluster's.

    Work at risk: none (read-only).
    """
    runs, undated, unreadable, other = [], [], [], []

    def refuse(name, why, mtime):
        unreadable.append({"name": name, "why": why, "at": _unreadable_time(name, mtime)})

    for report in reports or []:
        name = str(report.get("name") or "?")
        mtime = _mtime(report)
        if report.get("error"):
            refuse(name, str(report["error"]), mtime)
            continue
        try:
            doc = json.loads(report.get("text") or "")
        except ValueError as exc:
            refuse(name, f"not JSON ({exc.msg})", mtime)
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
            refuse(name, "no 'nodes' mapping", mtime)
            continue
        if not cluster:
            refuse(name, "cluster_name unset: cannot tell this cluster's reports from another's", mtime)
            continue
        if not doc.get("cluster"):
            refuse(name, "names no cluster", mtime)
            continue
        if str(doc["cluster"]) != str(cluster):
            other.append(name)
            continue
        at = run_time(doc.get("run_id"))
        run = {"name": name, "run_id": str(doc.get("run_id") or ""), "at": at if at is not None else mtime,
               "nodes": doc["nodes"], "rows": doc.get("rows") if isinstance(doc.get("rows"), list) else []}
        if run["at"] is None or (now is not None and run["at"] > now):
            undated.append(run)
        else:
            runs.append(run)
    runs.sort(key=lambda r: (r["at"], r["name"]), reverse=True)
    return {"runs": runs, "undated": undated, "unreadable": [f"{u['name']}: {u['why']}" for u in unreadable],
            "unreadable_at": unreadable, "other_clusters": other}


def _figures(rows, node):
    out = []
    for row in rows:
        if not isinstance(row, dict) or row.get("node") != node:
            continue
        gate = str(row.get("gate") or "?")
        if row.get("partner"):
            gate += f"({row['partner']})"
        figure = str(row.get("figure") or "")
        out.append({"gate": gate, "verdict": str(row.get("verdict") or "UNKNOWN"), "figure": figure,
                    "threshold": str(row.get("threshold") or "")})
    return out


def _unknown_view(reason, at, source):
    return {"verdict": "UNKNOWN", "gate": "", "figure": "", "threshold": "", "reason": reason, "figures": [],
            "run_id": "", "at": at, "source": source}


def _record_view(record, view, now):
    """The view once the fleet's record (``gate_record.fleet_record``) of the node is weighed against the reports'.

    The record decides when no report read here names its run and it is newer than the report's verdict (a gate
    run from another controller); a report of the same run keeps its detail. A record that cannot be read, is dated
    in the future, or disagrees with the report of its own run makes the verdict UNKNOWN.
    """
    if record is None:
        return view
    if "error" in record:
        return _unknown_view(f"fleet record unreadable ({record['error'][:100]})", None, record["source"])
    if now is not None and record["epoch"] > now:
        return _unknown_view(f"fleet record of run {record['run_id']} is dated in the future ({record['at']})",
                             None, record["source"])
    # A view the reports made UNKNOWN (a report dated in the future, an unreadable newer one) stays so unless the
    # record is shown to be newer than what made it unknown: an older record never turns it into a verdict.
    if view is not None and view["verdict"] == "UNKNOWN" and (view["at"] is None or view["at"] >= record["epoch"]):
        return view
    if view is not None and view["run_id"] == record["run_id"]:
        if view["verdict"] != record["verdict"]:
            return _unknown_view(f"report {view['source']} says {view['verdict']}, the {record['source']} of the "
                                 f"same run {record['verdict']}", view["at"], record["source"])
        return view
    if view is not None and view["at"] is not None and view["at"] >= record["epoch"]:
        return view
    gate = record["gate"] or ""
    reason = "" if record["verdict"] == "PASS" else (
        f"{gate or 'gate'} (detail in gate-{record['run_id']}.json on the controller that ran it)")
    return {"verdict": record["verdict"], "gate": gate, "figure": "", "threshold": "", "reason": reason,
            "figures": [], "run_id": record["run_id"], "at": record["epoch"], "source": record["source"]}


def gate_view(node, gates, slurm_reason, complete, now, record=None):
    """The last gate verdict of *node*: ``{verdict, gate, figure, threshold, reason, figures, run_id, at, age,
    source}``.

    Sources, newest first: the gate reports (``parse_gate_reports``), the verdict record the gate wrote into the
    fleet (*record*, ``gate_record.fleet_record``: Slurm's node comment, the Node's labels; ``_record_view``), and
    a ``gpufleet:gate`` reason in Slurm (a FAIL that no report read here records). A verdict word other than
    PASS/FAIL/ERROR is UNKNOWN.
    The newest report that names the node decides only when it can be ordered: a report dated in the
    future (or with no time) that names it, or an unreadable report newer than the deciding one, makes the
    verdict UNKNOWN. The Slurm drain decides when it is newer than the report's verdict or its run id
    carries no time (the node is drained by the gate now; no report can be shown to have cleared it). No
    verdict at all is ``never gated`` when *complete* (every report was read), else UNKNOWN.

    Work at risk: none (read-only).
    """
    view = None
    future = next((run for run in gates.get("undated") or [] if node in run["nodes"]), None)
    found = next((run for run in gates["runs"] if node in run["nodes"]), None)
    if future is not None:
        when = f"run {future['run_id']}" if future["run_id"] else "its file time"
        why = ("has no time" if future["at"] is None else f"is dated in the future ({when}, {_iso(future['at'])})")
        view = _unknown_view(f"report {future['name']} {why}: it cannot be ordered against the others",
                             None, future["name"])
    elif found is not None:
        row = found["nodes"][node] if isinstance(found["nodes"][node], dict) else {}
        word = str(row.get("verdict") or "")
        verdict = word if word in ("PASS", "FAIL", "ERROR") else "UNKNOWN"
        reason = str(row.get("reason") or "")
        if verdict == "UNKNOWN":
            reason = f"unreadable verdict {word!r} in {found['name']}"
        view = {"verdict": verdict, "gate": str(row.get("gate") or ""), "figure": str(row.get("figure") or ""),
                "threshold": str(row.get("threshold") or ""), "reason": reason,
                "figures": _figures(found["rows"], node), "run_id": found["run_id"], "at": found["at"],
                "source": found["name"]}
        newer = [u for u in gates.get("unreadable_at") or [] if u["at"] is None or u["at"] > found["at"]]
        if newer:
            newest = max(newer, key=lambda u: (u["at"] is None, u["at"] or 0))
            view = _unknown_view(f"newer report {newest['name']} is unreadable ({newest['why'][:80]})",
                                 newest["at"], newest["name"])
    view = _record_view(record, view, now)
    ours = parse_reason(slurm_reason)
    if ours and ours["kind"] == "gate" and (view is None or ours["run_id"] != view["run_id"]):
        at = run_time(ours["run_id"])
        if view is None or view["at"] is None or at is None or at >= view["at"]:
            gate, _, figure = ours["detail"].partition(":")
            view = {"verdict": "FAIL", "gate": gate, "figure": figure, "threshold": "",
                    "reason": ours["detail"] or "gate failed (Slurm reason)", "figures": [],
                    "run_id": ours["run_id"] or "",
                    "at": at, "source": "slurm reason"}
    if view is None:
        verdict = NEVER if complete else "UNKNOWN"
        why = "" if complete else "gate reports unreadable or not all read"
        return {"verdict": verdict, "gate": "", "figure": "", "threshold": "", "reason": why, "figures": [],
                "run_id": "", "at": None, "age_s": None, "age": "-" if complete else UNKNOWN, "source": ""}
    age = None if view["at"] is None or now is None else now - view["at"]
    view["age_s"] = None if age is None else int(max(0, age))
    view["age"] = format_age(age)
    return view


def _slurm_scheduler(view):
    """``(state text, serving)`` of a slurm_node_info node: serving is True/False (never None here).

    Serving needs a base state that takes jobs, a partition, and no flag that keeps new jobs off the node
    (a drain, a failure, power states, a MAINT reservation).

    Work at risk: none (read-only).
    """
    flags = sorted(view.get("flags") or [])
    base = str(view.get("state") or UNKNOWN)
    text = "+".join([base, *flags])
    serving = (base in _SERVING and not (set(flags) & _HOLDING) and bool(view.get("partitions")
                                                                           or view.get("in_partition")))
    return text, serving


def _k8s_scheduler(knode):
    ready = knode.get("ready")
    words = ["Ready" if ready is True else "NotReady" if ready is False else "Ready?"]
    if knode.get("unschedulable"):
        words.append("cordoned")
    if knode.get("hold_taint"):
        words.append("held")
    return "+".join(words), bool(knode.get("in_service"))


def _reason_text(reason):
    """The reason as shown: the toolkit's parsed (``gate to=slurm: nccl:...``) or an admin's as it is."""
    if not reason:
        return ""
    ours = parse_reason(reason)
    if ours is None:
        return f"admin: {reason}" if not reason.startswith("admin") else reason
    head = f"gpufleet:{ours['kind']}"
    if ours["target"]:
        head += f" to={ours['target']}"
    if ours["run_id"]:
        head += f" run={ours['run_id']}"
    return f"{head} {ours['detail']}".strip()


def _source_state(result, label):
    """``(status, nodes)`` of a read: status is read / fresh / skipped / unreadable: <why>."""
    if result is None:
        return "skipped", None
    if not isinstance(result, dict):
        return f"unreadable: {label} result is {type(result).__name__}", None
    if result.get("skipped"):
        return "skipped", None
    if result.get("unreachable"):
        return f"unreadable: {label} host unreachable ({str(result.get('msg') or '')[:120]})", None
    if result.get("failed"):
        return f"unreadable: {str(result.get('msg') or 'read failed')[:160]}", None
    if result.get("fresh"):
        return "fresh", {}
    if "resources" in result:
        try:
            return "read", node_states(result)
        except ValueError as exc:
            return f"unreadable: {exc}", None
    nodes = result.get("nodes")
    if not isinstance(nodes, dict):
        # A read registered with failed_when: false keeps its message but not failed=true.
        why = str(result.get("msg") or f"{label} result has no nodes")[:160]
        return f"unreadable: {why}", None
    return "read", nodes


def build_summary(nodes, slurm=None, k8s=None, hosts=None, gate_reports=None, now=None, cluster="",
                  gate_reports_complete=True, verdict_field="comment"):
    """Join the live state into the summary document.

    * *nodes*: the GPU nodes to report (names);
    * *slurm*: a ``slurm_node_info`` result (``{fresh, nodes}``), a failed/unreachable task result (shown as
      unknown), or None (no controller: not read);
    * *k8s*: a ``kubernetes.core.k8s_info`` result for kind Node, or a failed/unreachable/skipped task result
      (shown as unknown / skipped), or None (no Kubernetes server: skipped);
    * *hosts*: ``host_facts`` output; *gate_reports*: ``[{name, mtime, text}]`` (or ``{name, error}``);
    * *now*: epoch seconds (ages are measured from it, and a report dated after it is not a verdict);
      *gate_reports_complete*: every report file was read (False when only the newest were, or the
      directory could not be listed);
    * *cluster*: this inventory's ``cluster_name``; without it no gate report counts;
    * *verdict_field*: the Slurm node field the gate writes its verdict record into (``comment`` or ``extra``).

    Work at risk: none (read-only).
    """
    if not isinstance(nodes, (list, tuple)):
        raise FleetSummaryError(f"fleet summary: nodes must be a list of names, got {type(nodes).__name__}")
    if verdict_field not in SLURM_FIELDS:
        raise FleetSummaryError(f"fleet summary: the verdict field must be one of {', '.join(SLURM_FIELDS)}, "
                                f"got {verdict_field!r}")
    hosts = hosts or {}
    slurm_status, slurm_nodes = _source_state(slurm, "Slurm")
    k8s_status, k8s_nodes = _source_state(k8s, "Kubernetes")
    if k8s_status == "read" and k8s_nodes is None:
        k8s_status = "unreadable: Kubernetes nodes missing"
    gates = parse_gate_reports(gate_reports, cluster=cluster, now=now)
    complete = bool(gate_reports_complete) and not gates["unreadable"]

    rows = []
    for name in sorted(dict.fromkeys(str(n) for n in nodes)):
        facts = hosts.get(name) or {}
        sview = slurm_nodes.get(name) if slurm_nodes is not None else None
        knode = k8s_nodes.get(name) if k8s_nodes is not None else None
        slurm_known = slurm_nodes is not None or slurm_status == "skipped"
        k8s_known = k8s_nodes is not None or k8s_status == "skipped"

        committed = sview.get("pool") if sview else None
        if committed == "slurm":
            pool = "slurm"
        elif committed == "k8s":
            pool = "k8s" if knode is not None and knode.get("pool") == "k8s" else ("parked" if k8s_known else UNKNOWN)
        elif knode is not None and knode.get("pool") in ("slurm", "k8s"):
            pool = knode["pool"]
        elif slurm_known and k8s_known:
            pool = "none"
        else:
            pool = UNKNOWN

        states, serving, reason = [], [], ""
        if sview is not None:
            text, ok = _slurm_scheduler(sview)
            states.append(f"slurm {text}")
            serving.append(ok)
            reason = _reason_text(sview.get("reason"))
        elif slurm_nodes is not None:
            states.append("slurm: not a node")
        elif slurm_status != "skipped":
            states.append(f"slurm {UNKNOWN}")
            serving.append(None)
        if knode is not None:
            text, ok = _k8s_scheduler(knode)
            states.append(f"k8s {text}")
            serving.append(ok)
            reason = reason or _reason_text(knode.get("reason"))
        elif k8s_status not in ("read", "skipped"):
            states.append(f"k8s {UNKNOWN}")
            serving.append(None)
        if any(s is True for s in serving):
            in_service = "yes"
        elif any(s is None for s in serving) or pool == UNKNOWN:
            in_service = UNKNOWN
        else:
            in_service = "no"

        gpu = gpu_view(facts)
        record = fleet_record(sview, knode.get("labels") if knode else None, verdict_field)
        gate = gate_view(name, gates, sview.get("reason") if sview else None, complete, now, record)
        rows.append({
            "name": name,
            "leaf": str(facts.get("leaf") or "") or None,
            "pool": pool,
            "state": ", ".join(states) or "-",
            "in_service": in_service,
            "reason": reason,
            "gpus": gpu,
            "gate": gate,
        })

    totals = {"nodes": len(rows), "pools": {}, "verdicts": {}, "in_service": {}}
    for row in rows:
        for key, value in (("pools", row["pool"]), ("verdicts", row["gate"]["verdict"]),
                           ("in_service", row["in_service"])):
            totals[key][value] = totals[key].get(value, 0) + 1
    return {
        "schema": SCHEMA,
        "cluster": str(cluster or ""),
        "generated": _iso(now) if now is not None else UNKNOWN,
        "stamp": (datetime.datetime.fromtimestamp(now, datetime.UTC).strftime("%Y%m%dT%H%M%S")
                  if now is not None else UNKNOWN),
        "sources": {
            "slurm": slurm_status,
            "kubernetes": k8s_status,
            "gate_reports": {"read": len(gates["runs"]), "unreadable": gates["unreadable"],
                             "undated": [run["name"] for run in gates["undated"]],
                             "other_clusters": len(gates["other_clusters"]), "complete": complete},
        },
        "totals": totals,
        "nodes": rows,
    }


def _check(summary):
    if not isinstance(summary, dict) or summary.get("schema") != SCHEMA:
        raise FleetSummaryError("fleet summary: expected a document from build_summary")
    return summary


def _figures_text(gate, width=72):
    """PASS: each gate's figure. FAIL/ERROR/UNKNOWN: the deciding gate's reason (it names the gate and the
    figure), else the gate and its figure."""
    if gate["verdict"] in ("FAIL", "ERROR", "UNKNOWN"):
        text = gate.get("reason") or " ".join(x for x in (gate.get("gate"), gate.get("figure")) if x) or "-"
        return text if len(text) <= width else text[: width - 3] + "..."
    figures = [f"{f['gate']} {f['figure']}" for f in gate.get("figures") or [] if f.get("figure")]
    return ", ".join(figures) or "-"


def _headline(summary):
    totals = summary["totals"]
    pools = ", ".join(f"{k} {v}" for k, v in sorted(totals["pools"].items()))
    verdicts = ", ".join(f"{k} {v}" for k, v in sorted(totals["verdicts"].items()))
    serving = totals["in_service"].get("yes", 0)
    name = summary["cluster"] or "fleet"
    return (f"{name}: {totals['nodes']} nodes, {serving} in service | pools: {pools or '-'} | "
            f"gate: {verdicts or '-'} | {summary['generated']}")


def _sources_line(summary):
    src = summary["sources"]
    gates = src["gate_reports"]
    text = f"sources: slurm {src['slurm']}; kubernetes {src['kubernetes']}; gate reports {gates['read']} read"
    if gates.get("other_clusters"):
        text += f", {gates['other_clusters']} of other clusters set aside"
    if gates.get("undated"):
        text += f", {len(gates['undated'])} dated in the future ({'; '.join(gates['undated'][:3])})"
    if gates["unreadable"]:
        text += f", {len(gates['unreadable'])} unreadable ({'; '.join(gates['unreadable'][:3])})"
    if not gates["complete"]:
        text += " (incomplete: a node without a verdict is UNKNOWN)"
    return text


def render_table(summary):
    """The console summary as a list of lines: a headline, the sources, and one row per node."""
    summary = _check(summary)
    head = ("node", "leaf", "pool", "scheduler", "serving", "gpus", "gate", "figures", "age")
    body = []
    for row in summary["nodes"]:
        gate = row["gate"]
        body.append((row["name"], row["leaf"] or "-", row["pool"], row["state"], row["in_service"],
                     row["gpus"]["text"], gate["verdict"], _figures_text(gate), gate["age"]))
    widths = [max(len(str(c)) for c in col) for col in zip(head, *body, strict=False)]
    lines = [_headline(summary), _sources_line(summary)]
    for cells, row in zip([head, *body], [None, *summary["nodes"]], strict=False):
        line = "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()
        if row is not None and row["reason"]:
            line += f"  [{row['reason']}]"
        lines.append(line)
    return lines


def render_json(summary):
    """The summary as a JSON document (sorted keys; ``json.loads`` gives the summary back)."""
    return json.dumps(_check(summary), indent=2, sort_keys=True)


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#202124;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}.sub{color:#5f6368;margin:0 0 16px}
table{border-collapse:collapse;margin-top:16px;background:#fff}
th,td{border:1px solid #dadce0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f4}td{white-space:nowrap}td.w{white-space:normal;min-width:14em}td.v{font-weight:600}
.PASS{color:#1e8e3e}.FAIL{color:#d93025}.ERROR{color:#e37400}.UNKNOWN{color:#6a1b9a}.never{color:#80868b}
svg{background:#fff;border:1px solid #dadce0}
"""


def _esc(value):
    return html.escape(str(value), quote=True)


def _svg(summary):
    """The fleet picture: one box per leaf switch, a node per tile (fill = pool, outline = verdict), a legend."""
    leaves = {}
    for row in summary["nodes"]:
        leaves.setdefault(row["leaf"] or "(no leaf switch)", []).append(row)
    tile_w, tile_h, gap, pad, per_row = 180, 74, 10, 12, 5
    width = 40 + per_row * (tile_w + gap) + 2 * pad
    parts, y = [], 16
    for leaf in sorted(leaves):
        rows = leaves[leaf]
        lines = (len(rows) + per_row - 1) // per_row
        box_h = 30 + lines * (tile_h + gap) + pad
        parts.append(f'<g><rect x="20" y="{y}" width="{width - 40}" height="{box_h}" rx="8" fill="#f8f9fa" '
                     f'stroke="#9aa0a6"/><text x="{20 + pad}" y="{y + 20}" font-size="13" font-weight="600">'
                     f'leaf {_esc(leaf)} ({len(rows)} nodes)</text>')
        for i, row in enumerate(rows):
            gx = 20 + pad + (i % per_row) * (tile_w + gap)
            gy = y + 30 + (i // per_row) * (tile_h + gap)
            verdict = row["gate"]["verdict"]
            fill = POOL_COLOURS.get(row["pool"], "#ffffff")
            stroke = VERDICT_COLOURS.get(verdict, VERDICT_COLOURS["UNKNOWN"])
            dash = ' stroke-dasharray="5 3"' if verdict in ("UNKNOWN", NEVER) or row["pool"] == UNKNOWN else ""
            title = (f"{row['name']}: pool {row['pool']}, {row['state']}, gpus {row['gpus']['text']}, "
                     f"gate {verdict} {_figures_text(row['gate'], 400)}, age {row['gate']['age']}"
                     + (f", reason {row['reason']}" if row["reason"] else ""))
            parts.append(
                f'<g><title>{_esc(title)}</title>'
                f'<rect x="{gx}" y="{gy}" width="{tile_w}" height="{tile_h}" rx="6" fill="{fill}" '
                f'stroke="{stroke}" stroke-width="3"{dash}/>'
                f'<text x="{gx + 8}" y="{gy + 18}" font-size="13" font-weight="600">{_esc(row["name"])}</text>'
                f'<text x="{gx + 8}" y="{gy + 35}" font-size="11">{_esc(row["pool"])} · '
                f'serving {_esc(row["in_service"])}</text>'
                f'<text x="{gx + 8}" y="{gy + 50}" font-size="11">{_esc(row["gpus"]["text"][:24])}</text>'
                f'<text x="{gx + 8}" y="{gy + 65}" font-size="11" font-weight="600" fill="{stroke}">'
                f'{_esc(verdict)} · {_esc(row["gate"]["age"])}</text></g>')
        parts.append("</g>")
        y += box_h + 12
    # Legend: pools (fill) then verdicts (outline).
    lx = 20
    parts.append(f'<text x="{lx}" y="{y + 16}" font-size="12" font-weight="600">pool (fill):</text>')
    lx += 84
    for pool in POOLS:
        parts.append(f'<rect x="{lx}" y="{y + 5}" width="16" height="14" fill="{POOL_COLOURS[pool]}" '
                     f'stroke="#5f6368"/><text x="{lx + 21}" y="{y + 16}" font-size="12">{_esc(pool)}</text>')
        lx += 34 + 8 * len(pool)
    lx = 20
    y += 24
    parts.append(f'<text x="{lx}" y="{y + 16}" font-size="12" font-weight="600">gate (outline):</text>')
    lx += 112
    for verdict in VERDICTS:
        dash = ' stroke-dasharray="5 3"' if verdict in ("UNKNOWN", NEVER) else ""
        parts.append(f'<rect x="{lx}" y="{y + 5}" width="16" height="14" fill="#fff" stroke-width="3" '
                     f'stroke="{VERDICT_COLOURS[verdict]}"{dash}/>'
                     f'<text x="{lx + 21}" y="{y + 16}" font-size="12">{_esc(verdict)}</text>')
        lx += 36 + 9 * len(verdict)
    height = y + 32
    return (f'<svg role="img" aria-label="fleet by leaf switch" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'font-family="system-ui,sans-serif">{"".join(parts)}</svg>')


def render_html(summary):
    """A self-contained HTML page: headline, the fleet picture (inline SVG), the table.

    Inline CSS and SVG only: no script, no external asset, no URL at all (inline SVG in HTML needs no
    namespace attribute), so the page opens the same offline, from a mail attachment or a CI artefact.
    """
    summary = _check(summary)
    rows = []
    for row in summary["nodes"]:
        gate = row["gate"]
        klass = "never" if gate["verdict"] == NEVER else gate["verdict"]
        rows.append(
            "<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in (row["name"], row["leaf"] or "-", row["pool"],
                                                              row["state"], row["in_service"], row["gpus"]["text"]))
            + f'<td class="v {klass}">{_esc(gate["verdict"])}</td>'
            + f'<td class="w">{_esc(_figures_text(gate, 400))}</td>'
            + "".join(f"<td>{_esc(c)}</td>" for c in (gate["age"], gate["run_id"] or "-"))
            + f'<td class="w">{_esc(row["reason"] or "-")}</td>'
            + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("node", "leaf", "pool", "scheduler", "serving", "gpus", "gate",
                                              "figures", "age", "gate run", "scheduler reason"))
    title = f"gpufleet: {summary['cluster'] or 'fleet'} at {summary['generated']}"
    svg = _svg(summary)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}</h1><p class=\"sub\">{_esc(_headline(summary))}<br>{_esc(_sources_line(summary))}</p>"
        f"{svg}<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        "</body></html>\n"
    )
