"""The toolkit's reason format: the tag gpufleet writes into Slurm node reasons and Kubernetes annotations.

State lives in the cluster (docs/pools.md): a node this toolkit takes out of service carries a reason that
starts with ``gpufleet:``. Only such nodes are ever put back into service (``may_resume``); a drain or cordon
set by an admin or by Slurm itself is never undone.

Format (no spaces, no quotes, nothing a shell or ``scontrol update reason=`` mangles)::

    gpufleet:<kind>[,to=<pool>][,run=<run_id>][,<detail>]

    gpufleet:move,to=k8s,run=20260121T1000,leaving-slurm
    gpufleet:gate,to=slurm,run=r42,nccl-busbw-low-120GB/s
    gpufleet:maint,to=slurm,run=20261124T0300,drain   (maintain.yml: drained, then ``applied``)

The first 20 characters (what ``sinfo -R`` shows by default) carry the tag, the kind and the target pool.
"""

import re

TAG = "gpufleet:"
KINDS = ("move", "hold", "gate", "maint")
MAX_LEN = 96

_TOKEN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
_DETAIL_BAD_RE = re.compile(r"[^A-Za-z0-9._:/+%@-]")
_WS_RE = re.compile(r"\s+")


def _clean_detail(detail):
    """Return *detail* with whitespace as ``_`` and every character a shell or Slurm mangles as ``-``."""
    text = _WS_RE.sub("_", str(detail).strip())
    return _DETAIL_BAD_RE.sub("-", text)


def make_reason(kind, detail, run_id=None, target=None):
    """Return the reason string for a node this toolkit takes out of service.

    *kind* is one of ``move``, ``hold``, ``gate``; *target* (a pool name) and *run_id* must be plain
    tokens (letters, digits, ``.``, ``_``, ``-``); *detail* is free text, cleaned so that it survives Slurm
    and a shell.
    The result is at most ``MAX_LEN`` characters (the detail is cut, never the tag, kind, target or run).
    """
    if kind not in KINDS:
        raise ValueError(f"reason kind {kind!r} is not one of {', '.join(KINDS)}")
    parts = [TAG + kind]
    for key, value in (("to", target), ("run", run_id)):
        if value is None:
            continue
        if not _TOKEN_RE.match(str(value)):
            raise ValueError(f"reason {key}={value!r} must be letters, digits, '.', '_' or '-' (at most 40)")
        parts.append(f"{key}={value}")
    head = ",".join(parts)
    detail = _clean_detail(detail) if detail is not None else ""
    if detail:
        room = MAX_LEN - len(head) - 1
        if room > 0:
            head = f"{head},{detail[:room]}"
    return head


def parse_reason(reason):
    """Return ``{kind, target, run_id, detail}`` for a reason this toolkit wrote, else ``None``.

    ``None`` means an admin's or Slurm's own reason (or no reason): such a node is not ours to resume.
    A trailing Slurm stamp (`` [root@2026-11-21T10:00:00]``) is ignored.
    """
    if not isinstance(reason, str):
        return None
    text = reason.strip()
    stamp = re.search(r"\s\[[^\]\s@]*@[^\]\s]*\]$", text)
    if stamp:
        text = text[: stamp.start()].rstrip()
    if not text.startswith(TAG):
        return None
    fields = text[len(TAG):].split(",")
    kind = fields[0]
    if kind not in KINDS:
        return None
    out = {"kind": kind, "target": None, "run_id": None, "detail": ""}
    rest = fields[1:]
    for key, name in (("to", "target"), ("run", "run_id")):
        if rest and rest[0].startswith(key + "=") and _TOKEN_RE.match(rest[0][len(key) + 1:]):
            out[name] = rest[0][len(key) + 1:]
            rest = rest[1:]
    out["detail"] = ",".join(rest)
    return out


def is_ours(reason):
    """True when *reason* carries this toolkit's tag and a known kind."""
    return parse_reason(reason) is not None


def may_resume(node_state):
    """True only when the node is held out of service *and* its reason is ours.

    *node_state* is a Slurm node from ``slurm_state.parse_scontrol_nodes`` (held = ``DRAIN`` in ``flags``)
    or a Kubernetes node from ``k8s_state.node_state`` (held = cordoned or carrying the toolkit's hold
    taint; ours = the ``gpufleet.io/reason`` annotation is ours or, with no annotation, the hold taint is
    there; an annotation an admin wrote keeps the node out). Anything else raises ``ValueError``.
    """
    if not isinstance(node_state, dict):
        raise ValueError(f"may_resume: expected a node state dict, got {type(node_state).__name__}")
    if "flags" in node_state:
        held = "DRAIN" in node_state["flags"]
    elif "unschedulable" in node_state:
        held = bool(node_state["unschedulable"]) or bool(node_state.get("hold_taint"))
        if not node_state.get("reason"):
            # A node registers with the toolkit's hold taint before any annotation exists; the taint key is
            # ours, so it marks the hold as ours. An admin's cordon alone carries neither.
            return held and bool(node_state.get("hold_taint"))
    else:
        raise ValueError("may_resume: node state has neither 'flags' (Slurm) "
                         "nor 'unschedulable' (Kubernetes)")
    return held and is_ours(node_state.get("reason"))
