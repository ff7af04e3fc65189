"""Live pool state: which pool each node is committed to, read from the schedulers, never guessed.

State lives in the cluster (DESIGN "Where state lives"): a Slurm node in a partition is in the
Slurm pool; a node the toolkit drained with a `move` reason is committed to that reason's target
(in flight, or parked outside Slurm); a Kubernetes node carries the pool label. The executor reads
this on every run, so a run killed mid-batch is finished by the next one.
"""

from __future__ import annotations

from ansible.module_utils.k8s_state import node_states
from ansible.module_utils.node_reason import parse_reason

SLURM = "slurm"
K8S = "k8s"
_DOWN = frozenset({"DOWN", "FAIL", "FUTURE", "UNKNOWN"})


def committed_pool(slurm_node=None, k8s_node=None):
    """The pool a node is committed to, or None (new or never placed).

    slurm_node: a parsed node from slurm_state.parse_scontrol_nodes (or None when Slurm has no such node);
    k8s_node: a node from k8s_state.node_state (or None).
    """
    reason = parse_reason(slurm_node.get("reason")) if slurm_node else None
    if reason and reason["kind"] in ("move", "hold") and reason["target"] in (SLURM, K8S):
        return reason["target"]
    if slurm_node and slurm_node.get("partitions"):
        return SLURM
    if k8s_node and k8s_node.get("pool") in (SLURM, K8S):
        return k8s_node["pool"]
    return None


def node_view(name, slurm_node=None, k8s_node=None):
    """What the planner and executor need to know about one node."""
    pool = committed_pool(slurm_node, k8s_node)
    flags = set(slurm_node.get("flags") or ()) if slurm_node else set()
    reason = slurm_node.get("reason") if slurm_node else None
    parsed = parse_reason(reason)
    admin_hold = "DRAIN" in flags and parsed is None
    in_partition = bool(slurm_node and slurm_node.get("partitions"))
    # A node that runs slurmd for the Slurm pool must answer; one parked outside Slurm is expected down.
    down = bool(slurm_node) and (slurm_node.get("state") in _DOWN or "NOT_RESPONDING" in flags)
    failed_gate = parsed is not None and parsed["kind"] == "gate"
    healthy = not admin_hold and not failed_gate and not (pool == SLURM and in_partition and down and parsed is None)
    return {
        "name": name,
        "pool": pool,
        "healthy": healthy,
        "admin_hold": admin_hold,
        "failed_gate": failed_gate,
        "reason": reason,
        "ours": parsed,
        "in_partition": in_partition,
        "partitions": sorted(slurm_node.get("partitions") or []) if slurm_node else [],
        "busy": bool(slurm_node and slurm_node.get("busy")),
        "drained": "DRAIN" in flags,
        "down": down,
    }


def host_facts(hosts, hostvars, gpus_var):
    """Per-host planner facts ({host: {gpus, leaf, pinned}}) from the host variables.

    gpus_var names the variable with the discovered GPU count (the caller says which role set it);
    cluster_gpu_count stands in where it is unset. Leaf and pin are the cluster_* inventory variables.
    """
    facts = {}
    for host in hosts:
        hv = hostvars[host]
        facts[host] = {
            "gpus": hv.get(gpus_var) or hv.get("cluster_gpu_count") or 0,
            "leaf": hv.get("cluster_leaf_switch"),
            "pinned": hv.get("cluster_pool_pin"),
        }
    return facts


def planner_nodes_from_hostvars(hosts, hostvars, views, gpus_var):
    """Planner nodes from the host variables (see host_facts) and the live views."""
    return planner_nodes(hosts, host_facts(hosts, hostvars, gpus_var), views)


def planner_nodes(hosts, facts, views):
    """Nodes in the planner's shape from per-host facts and live views.

    facts: {host: {gpus, leaf, pinned}}; views: {host: node_view}. A node an admin drained keeps its
    reason and its pool: it is passed as excluded, so the planner neither moves nor counts it.
    """
    nodes = []
    for host in sorted(hosts):
        view = views.get(host) or node_view(host)
        info = facts.get(host, {})
        nodes.append({
            "name": host,
            "gpus": int(info.get("gpus") or 0),
            "leaf": info.get("leaf"),
            "healthy": bool(view["healthy"]),
            "pool": view["pool"],
            "pinned": info.get("pinned"),
            "excluded": bool(view["admin_hold"]),
        })
    return nodes


def unfinished(views, targets):
    """Nodes whose last move has steps left: committed to a pool but not there yet.

    A node committed to k8s that is still in a Slurm partition has not finished leaving Slurm; a node
    committed to slurm that is drained with our hold/move reason has not been admitted yet.
    """
    out = {}
    for host, view in views.items():
        target = targets.get(host, view["pool"])
        if target == K8S and view["in_partition"]:
            out[host] = K8S
        elif target == SLURM and view["ours"] is not None and view["ours"]["kind"] in ("move", "hold"):
            out[host] = SLURM
    return out


def partition_nodes_after(partitions, pool_before, leaving, joining):
    """New node lists per partition for a batch.

    partitions: {name: [nodes]} as Slurm has them now; pool_before: nodes in the Slurm pool before the
    batch. Leaving nodes go from every partition; joining nodes go into the pool partitions, those
    whose nodes cover the whole pool (a partition built from a subset, like a debug partition of one
    node, keeps its subset). Returns only partitions whose list changes, as sorted lists.
    """
    pool = set(pool_before)
    changes = {}
    for name, nodes in sorted(partitions.items()):
        current = set(nodes)
        is_pool_partition = (bool(pool) and pool <= current) or (not pool and not current)
        new = (current - set(leaving)) | (set(joining) if is_pool_partition else set())
        if new != current:
            changes[name] = sorted(new)
    return changes


def unfinished_moves(views, targets):
    """Moves an earlier run left unfinished, as [{node, to, reason}] sorted by node (the executor's batch shape)."""
    return [{"node": node, "to": to, "reason": "finish a move an earlier run left"}
            for node, to in sorted(unfinished(views, targets).items())]


def merge_k8s_info(views, k8s_info_result, hosts):
    """merge_k8s on a kubernetes.core.k8s_info result of kind Node (read with k8s_state.node_states)."""
    return merge_k8s(views, node_states(k8s_info_result), hosts)


def merge_k8s(views, k8s_nodes, hosts):
    """Fold Kubernetes' view into the Slurm-derived views, per host.

    k8s_nodes: {name: k8s_state.node_state}. A node Slurm does not place (no partition, no move or
    hold reason of ours) takes the pool label's pool; a node in the Kubernetes pool that is not Ready,
    or that an admin cordoned (a hold that is not ours), is not healthy capacity.
    """
    out = {}
    for host in hosts:
        view = dict(views.get(host) or node_view(host))
        knode = k8s_nodes.get(host)
        if knode is not None:
            if view["pool"] is None and knode.get("pool") in (SLURM, K8S):
                view["pool"] = knode["pool"]
            if view["pool"] == K8S:
                admin_cordon = bool(knode.get("unschedulable")) and not knode.get("held_by_us")
                view["healthy"] = view["healthy"] and knode.get("ready") is not False and not admin_cordon
                view["admin_hold"] = view["admin_hold"] or admin_cordon
            view["k8s"] = {k: knode.get(k) for k in ("pool", "ready", "unschedulable", "held_by_us", "in_service")}
        out[host] = view
    return out
