"""Read a Kubernetes Node object (as ``kubernetes.core.k8s_info`` returns it) into the pool view.

The pool is the label ``gpufleet.io/pool``; the toolkit holds a node out of service with a cordon plus the
taint ``gpufleet.io/hold`` (NoSchedule) and records why in the annotation ``gpufleet.io/reason`` (the
``node_reason`` format). Only a node whose reason is ours is ever uncordoned (``node_reason.may_resume``).
"""

from ansible.module_utils.node_reason import may_resume

POOL_LABEL = "gpufleet.io/pool"
HOLD_TAINT = "gpufleet.io/hold"
REASON_ANNOTATION = "gpufleet.io/reason"
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
# Label value -> pool name of the policy. The roles label the Kubernetes pool "kubernetes" by default.
POOL_NAMES = {"k8s": "k8s", "kubernetes": "k8s", "slurm": "slurm"}


def node_state(node_obj, pool_names=None):
    """Return ``{name, pool, pool_label, labels, unschedulable, taints, hold_taint, ready, ready_reason,
    reason, held_by_us, in_service}`` for one Node object dict.

    ``pool`` is the policy's pool name for the label value (*pool_names*, default ``POOL_NAMES``: both
    ``kubernetes`` and ``k8s`` mean ``k8s``); an unknown value is passed through as it is, so the planner
    treats the node as in no policy pool. ``ready`` is ``True``/``False`` from the Ready condition, ``None``
    when Unknown or absent. ``in_service``: Ready, not cordoned, no NoSchedule/NoExecute taint other than
    the pool taint (``gpufleet.io/pool``, which pool workloads tolerate). ``held_by_us`` is
    ``node_reason.may_resume``. Raises ``ValueError`` when the object is not a Node.
    """
    if not isinstance(node_obj, dict):
        raise ValueError(f"k8s node: expected a Node object dict, got {type(node_obj).__name__}")
    kind = node_obj.get("kind")
    if kind not in (None, "Node"):
        raise ValueError(f"k8s node: expected kind Node, got {kind!r}")
    meta = node_obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ValueError("k8s node: object has no metadata.name")
    name = meta["name"]
    spec = node_obj.get("spec") or {}
    status = node_obj.get("status") or {}
    labels = dict(meta.get("labels") or {})
    annotations = meta.get("annotations") or {}
    taints = []
    for taint in spec.get("taints") or []:
        if not isinstance(taint, dict) or "key" not in taint or "effect" not in taint:
            raise ValueError(f"k8s node {name}: spec.taints entry {taint!r} lacks key or effect")
        taints.append({"key": taint["key"], "value": taint.get("value"), "effect": taint["effect"]})
    ready = None
    ready_reason = None
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            ready = {"True": True, "False": False}.get(cond.get("status"))
            ready_reason = cond.get("reason")
    unschedulable = bool(spec.get("unschedulable", False))
    hold_taint = any(t["key"] == HOLD_TAINT for t in taints)
    reason = annotations.get(REASON_ANNOTATION)
    blocked = any(t["effect"] in _BLOCKING_EFFECTS and t["key"] != POOL_LABEL for t in taints)
    names = POOL_NAMES if pool_names is None else pool_names
    label = labels.get(POOL_LABEL) or None
    state = {
        "name": name,
        "pool": names.get(label, label) if label is not None else None,
        "pool_label": label,
        "labels": labels,
        "unschedulable": unschedulable,
        "taints": taints,
        "hold_taint": hold_taint,
        "ready": ready,
        "ready_reason": ready_reason,
        "reason": reason,
        "in_service": ready is True and not unschedulable and not blocked,
    }
    state["held_by_us"] = may_resume(state)
    return state


def node_states(k8s_info_result, pool_names=None):
    """Map ``{name: node_state}`` over a ``k8s_info`` result (``{"resources": [...]}``) or a list of Nodes."""
    items = k8s_info_result.get("resources") if isinstance(k8s_info_result, dict) else k8s_info_result
    if not isinstance(items, list):
        raise ValueError("k8s nodes: expected a k8s_info result with 'resources' or a list of Node objects")
    out = {}
    for obj in items:
        state = node_state(obj, pool_names)
        out[state["name"]] = state
    return out
