"""Pure helpers that tie the Kubernetes pool to the pool plan: GPU quota and node labels/taints."""

import re

GPU_RESOURCE = "nvidia.com/gpu"

_QUANTITY = re.compile(r"^\+?([0-9]+)$")


def parse_gpu_quantity(value):
    """A GPU quantity as an int ("8", 8); GPUs are whole devices, anything else is an error."""
    if isinstance(value, bool):
        raise ValueError(f"GPU quantity {value!r} is not a whole number")
    if isinstance(value, int):
        return value
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"GPU quantity {value!r} is not a whole number")
    return int(match.group(1))


def pool_gpu_total(nodes, gpu_counts):
    """Sum the GPU counts of ``nodes``; ``gpu_counts`` maps node -> count. Missing counts are errors."""
    missing = [node for node in nodes if gpu_counts.get(node) is None]
    if missing:
        raise ValueError(f"no GPU count for node(s) {', '.join(sorted(missing))}")
    return sum(parse_gpu_quantity(gpu_counts[node]) for node in nodes)


def clusterqueue_gpu_quota(docs, resource=GPU_RESOURCE, name=None):
    """Nominal quota of ``resource`` summed over the flavors of the ClusterQueue(s) in ``docs``."""
    total = 0
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "ClusterQueue":
            continue
        if not str(doc.get("apiVersion", "")).startswith("kueue.x-k8s.io/"):
            continue
        if name is not None and (doc.get("metadata") or {}).get("name") != name:
            continue
        for group in (doc.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    if res.get("name") == resource:
                        total += parse_gpu_quantity(res.get("nominalQuota", 0))
    return total


def quota_errors(docs, expected, resource=GPU_RESOURCE, name=None):
    """Errors when the ClusterQueue quota of ``resource`` differs from the pool's GPU count."""
    found = clusterqueue_gpu_quota(docs, resource, name)
    label = f"ClusterQueue {name}" if name else "ClusterQueues"
    if found != expected:
        return [f"{label}: nominal {resource} quota is {found}, but the admitted pool has {expected} GPUs"]
    return []


def _taint_key(taint):
    return (taint.get("key"), taint.get("effect"))


def merge_taints(existing, add=(), remove=()):
    """Return ``existing`` taints with ``add`` set (same key+effect replaced) and ``remove`` keys dropped.

    Order is stable: kept taints first in their order, then added ones, so an unchanged node compares
    equal and no patch is sent.
    """
    remove_keys = {t["key"] if isinstance(t, dict) else t for t in remove}
    add_keys = {_taint_key(t) for t in add}
    kept = [
        t for t in existing or [] if t.get("key") not in remove_keys and _taint_key(t) not in add_keys
    ]
    merged = kept + [{k: v for k, v in t.items() if v is not None} for t in add]
    # keep the existing entry (with its timeAdded) where it already matches exactly
    current = {_taint_key(t): t for t in existing or []}
    return [
        current[_taint_key(t)]
        if _taint_key(t) in current and current[_taint_key(t)].get("value") == t.get("value")
        else t
        for t in merged
    ]


def node_pool_state(plan, node, k8s_pool, label_key, hold_taint, pool_taint=None):
    """Desired labels, taints to add/remove and schedulability of ``node`` under ``plan``.

    ``plan`` maps node -> pool name, or node -> {pool, admitted}. Only the gate sets ``admitted``.

    - a Kubernetes-pool node gets the pool label and the pool taint; until admitted it also carries
      the hold taint and stays cordoned; once admitted the hold taint goes and it is uncordoned;
    - a node planned elsewhere gets its pool label, ``nvidia.com/gpu.deploy.operands=false`` (no GPU
      Operator operands), loses the pool taint, and is held and cordoned.
    A label value of None means "remove the label" (JSON merge patch).
    """
    entry = plan.get(node)
    if entry is None:
        raise ValueError(f"node {node} is not in the pool plan")
    pool = entry["pool"] if isinstance(entry, dict) else entry
    admitted = bool(entry.get("admitted", False)) if isinstance(entry, dict) else False
    labels = {label_key: pool}
    pool_taints = [pool_taint] if pool_taint else []
    if pool == k8s_pool:
        labels["nvidia.com/gpu.deploy.operands"] = None
        if admitted:
            return {"labels": labels, "taints_add": pool_taints, "taints_remove": [hold_taint["key"]],
                    "cordon": False}
        return {"labels": labels, "taints_add": [*pool_taints, hold_taint], "taints_remove": [],
                "cordon": True}
    labels["nvidia.com/gpu.deploy.operands"] = "false"
    return {"labels": labels, "taints_add": [hold_taint],
            "taints_remove": [t["key"] for t in pool_taints], "cordon": True}
