"""Each node's last gate verdict, kept in the fleet so that every controller reads the same one.

The gate's report (``reports/gate-<run>.json``) is the detail and stays on the controller that ran it. The verdict
itself, its run id and its time are written where any controller (a second one, an AWX job on a fresh checkout)
reads them:

* Slurm: the node's ``Comment`` (``health_gate_verdict_slurm_field``; not ``Extra``, which slurmd sets from the
  node since Slurm 23.11), one token without spaces::

      gpufleet:verdict=FAIL,run=20261128T181000,at=20261128T181502Z,gate=nccl

  Only the Slurm administrator (root or SlurmUser) can set it. A field that holds text that is not such a record
  is an admin's note: it is never overwritten (``slurm_record_writes`` skips the node and says so).
* Kubernetes: labels under ``node-restriction.kubernetes.io/``, which a kubelet cannot set on its own Node
  (the NodeRestriction admission plugin), so a node cannot forge its verdict; an annotation it could write::

      node-restriction.kubernetes.io/gpufleet-gate-verdict=FAIL
      node-restriction.kubernetes.io/gpufleet-gate-run=20261128T181000
      node-restriction.kubernetes.io/gpufleet-gate-at=20261128T181502Z
      node-restriction.kubernetes.io/gpufleet-gate-failed=nccl      (FAIL and ERROR only)

Reading is strict: a record of ours that does not parse is an error (shown UNKNOWN, never PASS), and two records
of one node that disagree on one run are an error too (``fleet_record``).
"""

from __future__ import annotations

import calendar
import re
import time

PREFIX = "gpufleet:verdict="
LABEL_PREFIX = "node-restriction.kubernetes.io/gpufleet-gate-"
LABEL_VERDICT = LABEL_PREFIX + "verdict"
LABEL_RUN = LABEL_PREFIX + "run"
LABEL_AT = LABEL_PREFIX + "at"
LABEL_FAILED = LABEL_PREFIX + "failed"
LABELS = (LABEL_VERDICT, LABEL_RUN, LABEL_AT, LABEL_FAILED)
VERDICTS = ("PASS", "FAIL", "ERROR")
# Only Comment: since Slurm 23.11 slurmd sets its node's Extra at registration (slurmd --extra), so a node could
# write a record of its own there. Comment is set by Slurm's administrator alone.
SLURM_FIELDS = ("comment",)

# A reason token (node_reason) that is also a Kubernetes label value: letters or digits at both ends.
_RUN_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,38}[A-Za-z0-9])?$")
_AT_RE = re.compile(r"^\d{8}T\d{6}Z$")
_GATE_RE = re.compile(r"^[a-z][a-z0-9_]{0,30}$")


class RecordError(ValueError):
    """A verdict record that cannot be written or read as one."""


def stamp(epoch):
    """The record's time format (UTC, ``20261128T181502Z``) of *epoch* seconds."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(int(epoch)))


def at_epoch(text):
    """Epoch seconds of a record time ``20261128T181502Z``; RecordError when it is not one."""
    if not isinstance(text, str) or not _AT_RE.match(text):
        raise RecordError(f"time {text!r} is not YYYYMMDDTHHMMSSZ")
    try:
        return calendar.timegm(time.strptime(text, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise RecordError(f"time {text!r} is not a date") from None


def make_record(verdict, run_id, at, gate=None):
    """``{verdict, run_id, at, gate}`` checked for both stores: *verdict* PASS/FAIL/ERROR, *run_id* a reason token
    (node_reason), *at* a record time, *gate* (FAIL and ERROR: the deciding gate, e.g. ``nccl_pair``) a lowercase
    word; PASS carries no gate. Raises RecordError naming the field."""
    if verdict not in VERDICTS:
        raise RecordError(f"verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
    if not isinstance(run_id, str) or not _RUN_RE.match(run_id):
        raise RecordError(f"run id {run_id!r} must be letters, digits, '.', '_' or '-', begin and end with a letter "
                          "or digit (a Kubernetes label value), at most 40")
    at_epoch(at)
    gate = None if verdict == "PASS" or gate in (None, "", "all") else gate
    if gate is not None and (not isinstance(gate, str) or not _GATE_RE.match(gate)):
        raise RecordError(f"gate {gate!r} must be a lowercase word (letters, digits, '_')")
    return {"verdict": verdict, "run_id": run_id, "at": at, "gate": gate}


def slurm_text(record):
    """The Slurm field text of a record (no spaces: ``scontrol update Comment=`` takes it whole)."""
    rec = make_record(record.get("verdict"), record.get("run_id"), record.get("at"), record.get("gate"))
    text = f"{PREFIX}{rec['verdict']},run={rec['run_id']},at={rec['at']}"
    return text + (f",gate={rec['gate']}" if rec["gate"] else "")


def parse_slurm_text(text):
    """The record in a Slurm Comment/Extra text: None when the text is not ours (empty, or an admin's note), the
    record when it is, RecordError when it is ours and malformed (never read as a verdict)."""
    if not isinstance(text, str) or not text.startswith(PREFIX):
        return None
    head, *pairs = text[len("gpufleet:"):].split(",")
    fields = {}
    for part in [head, *pairs]:
        key, sep, value = part.partition("=")
        if not sep or key in fields:
            raise RecordError(f"record {text!r}: {part!r} is not a single key=value")
        fields[key] = value
    unknown = sorted(set(fields) - {"verdict", "run", "at", "gate"})
    if unknown or not {"verdict", "run", "at"} <= set(fields):
        raise RecordError(f"record {text!r}: needs verdict, run and at (and at most gate), has {sorted(fields)}")
    try:
        return make_record(fields["verdict"], fields["run"], fields["at"], fields.get("gate"))
    except RecordError as exc:
        raise RecordError(f"record {text!r}: {exc}") from None


def k8s_labels(record):
    """The Node labels of a record; the failed-gate label is null (removed) for a PASS."""
    rec = make_record(record.get("verdict"), record.get("run_id"), record.get("at"), record.get("gate"))
    return {LABEL_VERDICT: rec["verdict"], LABEL_RUN: rec["run_id"], LABEL_AT: rec["at"], LABEL_FAILED: rec["gate"]}


def parse_k8s_labels(labels):
    """The record in a Node's labels: None when it has none of ours, the record, or RecordError when one of ours is
    there without the others or does not parse."""
    labels = labels if isinstance(labels, dict) else {}
    present = [key for key in LABELS if key in labels]
    if not present:
        return None
    missing = [key for key in (LABEL_VERDICT, LABEL_RUN, LABEL_AT) if key not in labels]
    if missing:
        raise RecordError(f"labels {', '.join(present)} without {', '.join(missing)}")
    try:
        return make_record(labels[LABEL_VERDICT], labels[LABEL_RUN], labels[LABEL_AT], labels.get(LABEL_FAILED))
    except RecordError as exc:
        raise RecordError(f"labels: {exc}") from None


def verdict_record(verdict, run_id, at):
    """A node's record from the gate's verdict (``gate_verdict``: ``{verdict, gate, ...}``)."""
    verdict = verdict if isinstance(verdict, dict) else {}
    return make_record(verdict.get("verdict"), run_id, at, verdict.get("gate"))


def slurm_record_writes(verdicts, views, run_id, at, field="comment"):
    """What to write into each gated node's Slurm *field*: ``[{node, action, text, why}]``, by node name.

    *verdicts*: ``{node: gate_verdict}``; *views*: ``slurm_node_info`` nodes (with ``comment`` and ``extra``).
    ``write``: the field is empty or holds a record of ours; ``skip``: the node is not in Slurm, or the field holds
    an admin's text (kept, never overwritten: the report still has the verdict).

    Work at risk: an admin's note in the node's Comment/Extra. Refused: writing over text that is not our record.
    """
    if field not in SLURM_FIELDS:
        raise RecordError(f"health_gate_verdict_slurm_field {field!r} is not one of {', '.join(SLURM_FIELDS)}")
    out = []
    for node in sorted(verdicts or {}):
        text = slurm_text(verdict_record(verdicts[node], run_id, at))
        view = (views or {}).get(node)
        if not isinstance(view, dict):
            out.append({"node": node, "action": "skip", "text": text, "why": "not a Slurm node"})
            continue
        current = view.get(field)
        try:
            ours = current in (None, "") or parse_slurm_text(current) is not None
        except RecordError:
            ours = True  # a broken record of ours is replaced by a good one
        if not ours:
            out.append({"node": node, "action": "skip", "text": text,
                        "why": f"its {field.capitalize()} is an admin's note, kept: {str(current)[:60]!r}"})
        else:
            out.append({"node": node, "action": "write", "text": text, "why": ""})
    return out


def fleet_record(slurm_view=None, k8s_labels_=None, field="comment"):
    """The node's record as the fleet holds it: ``{verdict, run_id, at, gate, epoch, source}``, None when neither
    store has one, or ``{"error": why, "source": ...}`` when a record of ours is malformed or the two stores disagree
    on one run (fail closed: an error is never a PASS). When both stores hold records of different runs, the newer
    one is the node's last verdict."""
    found, errors = [], []
    text = slurm_view.get(field) if isinstance(slurm_view, dict) else None
    for source, read in ((f"slurm {field}", lambda: parse_slurm_text(text)),
                         ("k8s labels", lambda: parse_k8s_labels(k8s_labels_))):
        try:
            rec = read()
        except RecordError as exc:
            errors.append({"error": f"{source}: {exc}", "source": source})
            continue
        if rec is not None:
            found.append({**rec, "epoch": at_epoch(rec["at"]), "source": source})
    if errors:
        return errors[0]
    if not found:
        return None
    if len(found) == 2 and found[0]["run_id"] == found[1]["run_id"] and (
            found[0]["verdict"], found[0]["gate"]) != (found[1]["verdict"], found[1]["gate"]):
        return {"error": (f"slurm and k8s records of run {found[0]['run_id']} disagree: "
                          f"{found[0]['verdict']} and {found[1]['verdict']}"), "source": "slurm, k8s"}
    return max(found, key=lambda r: (r["epoch"], r["source"]))
