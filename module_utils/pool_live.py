"""Live pool state: which pool each node is committed to, read from the schedulers, never guessed.

State lives in the cluster (DESIGN "Where state lives"): a Slurm node in a partition is in the
Slurm pool; a node the toolkit drained with a `move` reason is committed to that reason's target
(in flight, or parked outside Slurm); a Kubernetes node carries the pool label. The executor reads
this on every run, so a run killed mid-batch is finished by the next one.
"""

from __future__ import annotations

from ansible.module_utils.k8s_state import node_states
from ansible.module_utils.maint_k8s import ANNOTATION as MAINT_ANNOTATION
from ansible.module_utils.maint_k8s import node_step
from ansible.module_utils.node_reason import make_reason, parse_reason
from ansible.module_utils.slurm_state import HOLD_FLAGS, SERVING_STATES

SLURM = "slurm"
K8S = "k8s"
_DOWN = frozenset({"DOWN", "FAIL", "FUTURE", "UNKNOWN"})
# The hold gate_hold.gate_error_holds writes after a gate ERROR: gpufleet:hold,to=<pool>,run=<id>,gate_error:<gate>.
_GATE_ERROR = "gate_error:"


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


def held_reason(name, reason):
    """Why a node the toolkit holds is out of service until something finishes, from its Slurm reason; else None.

    A ``hold`` waits for its gate (joined, or held at its first slurmd start), or, with a ``gate_error:``
    detail, for a gate run to pass it after an ERROR; a ``maint`` is a maintenance change a run drained the
    node for (``drain``) or applied (``applied``) and has not gated yet.

    Work at risk: the held node's unfinished gate or maintenance change. Guarded: a held node is never
    capacity and never moved (``pool_plan.plan``); the text says what finishes it.
    """
    parsed = parse_reason(reason)
    if parsed is None:
        return None
    reason = reason.strip()
    if parsed["kind"] == "maint":
        return f"maintenance unfinished on {name}: rerun maintain.yml ({reason})"
    if parsed["kind"] == "hold" and parsed["detail"].startswith(_GATE_ERROR):
        return f"held after a gate ERROR ({reason}): not in service until a gate run passes it"
    if parsed["kind"] == "hold":
        return f"held for its gate ({reason}): not in service until the gate admits it"
    return None


def node_view(name, slurm_node=None, k8s_node=None):
    """What the planner and executor need to know about one node.

    ``healthy`` is capacity: in service as Slurm says, live (no admin drain, no failed gate, no hold of
    ours, answering where it is in a partition); ``held`` says why a node the toolkit holds is out
    (``held_reason``); ``schedulers`` is ``["slurm"]`` where Slurm places new jobs on the node now (a
    serving state, no holding flag, in a partition), else ``[]``.

    Work at risk: running jobs, a pool's minimum, an admin's drain, a held node's unfinished gate or
    maintenance. Guarded: an admin's drain is ``admin_hold`` (never moved or resumed), a held or failed node
    is not ``healthy`` (never capacity), and ``schedulers`` lets the planner refuse a node Kubernetes
    schedules on too.
    """
    pool = committed_pool(slurm_node, k8s_node)
    flags = set(slurm_node.get("flags") or ()) if slurm_node else set()
    reason = slurm_node.get("reason") if slurm_node else None
    parsed = parse_reason(reason)
    admin_hold = "DRAIN" in flags and parsed is None
    in_partition = bool(slurm_node and slurm_node.get("partitions"))
    # A node that runs slurmd for the Slurm pool must answer; one parked outside Slurm is expected down.
    down = bool(slurm_node) and (slurm_node.get("state") in _DOWN or "NOT_RESPONDING" in flags)
    failed_gate = parsed is not None and parsed["kind"] == "gate"
    held = held_reason(name, reason)
    # A node in an active MAINT reservation runs only that reservation's jobs: not capacity, and not moved.
    in_maint = bool(flags & {"MAINT", "MAINTENANCE"})
    healthy = (not admin_hold and not failed_gate and held is None and not in_maint
               and not (pool == SLURM and in_partition and down and parsed is None))
    schedulable = (in_partition and slurm_node.get("state") in SERVING_STATES and not flags & HOLD_FLAGS)
    return {
        "name": name,
        "pool": pool,
        "healthy": healthy,
        "held": held,
        "schedulers": [SLURM] if schedulable else [],
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


def host_facts(hosts, hostvars, gpus_var, refused_var):
    """Per-host planner facts ({host: {gpus, leaf, pinned, refused}}) from the host variables.

    gpus_var names the variable with the discovered GPU count (the caller says which role set it);
    cluster_gpu_count stands in where it is unset. Leaf and pin are the cluster_* inventory variables.
    refused_var names the variable with the fields of the node's own GPU report refused in this run (the caller
    says which role set it, as for gpus_var).
    """
    facts = {}
    for host in hosts:
        hv = hostvars[host]
        facts[host] = {
            "gpus": hv.get(gpus_var) or hv.get("cluster_gpu_count") or 0,
            "leaf": hv.get("cluster_leaf_switch"),
            "pinned": hv.get("cluster_pool_pin"),
            "refused": list(hv.get(refused_var) or []),
        }
    return facts


def planner_nodes_from_hostvars(hosts, hostvars, views, gpus_var, refused_var):
    """Planner nodes from the host variables (see host_facts) and the live views."""
    return planner_nodes(hosts, host_facts(hosts, hostvars, gpus_var, refused_var), views)


def planner_nodes(hosts, facts, views):
    """Nodes in the planner's shape from per-host facts and live views.

    facts: {host: {gpus, leaf, pinned}}; views: {host: node_view}. A node an admin drained keeps its
    reason and its pool: it is passed as excluded, so the planner neither moves nor counts it. A node the
    toolkit holds is passed with its ``held`` reason, and every node with the ``schedulers`` that place work
    on it now.

    Work at risk: as ``node_view``, and a node whose own GPU report was refused in this run (``refused`` in
    its facts): placed into Slurm, it would get the cluster's munge key and slurmd on a report judged
    untrustworthy. Guarded: the admin hold, the held reason and the schedulers reach the planner unchanged,
    and a refused node is held (never moved, never capacity) whatever its live view says.
    """
    nodes = []
    for host in sorted(hosts):
        view = views.get(host) or node_view(host)
        info = facts.get(host, {})
        held = view.get("held")
        if info.get("refused") and held is None:
            held = (f"its GPU report was refused in this run (field(s) {', '.join(map(str, info['refused']))}): "
                    f"held until gpu_discovery accepts a report")
        nodes.append({
            "name": host,
            "gpus": int(info.get("gpus") or 0),
            "leaf": info.get("leaf"),
            "healthy": bool(view["healthy"]) and not info.get("refused"),
            "pool": view["pool"],
            "pinned": info.get("pinned"),
            "excluded": bool(view["admin_hold"]),
            "held": held,
            "schedulers": list(view.get("schedulers") or []),
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


def merge_k8s_info(views, k8s_info_result, hosts, node_names=None):
    """merge_k8s on a kubernetes.core.k8s_info result of kind Node (read with k8s_state.node_states).

    Each node also carries ``maint``: where maintenance's label records a step of ours (module_utils/maint_k8s.py,
    ``node_step``), its ``gpufleet.io/maint`` annotation (or the step alone, where the annotation does not match),
    else None. An annotation without the label is no step: the node's kubelet can write it.

    Work at risk: as ``merge_k8s``.
    """
    nodes = node_states(k8s_info_result)
    items = k8s_info_result.get("resources") if isinstance(k8s_info_result, dict) else k8s_info_result
    for obj in items:
        name = obj["metadata"]["name"]
        step = node_step(obj)
        if step["step"] is not None:
            annotation = (obj["metadata"].get("annotations") or {}).get(MAINT_ANNOTATION)
            nodes[name] = dict(nodes[name], maint=annotation if step["run_id"] is not None
                               else make_reason("maint", step["step"], None, K8S))
    return merge_k8s(views, nodes, hosts, node_names)


def _k8s_held(knode):
    """Why the toolkit holds a Kubernetes node out of service (its hold taint or reason annotation), else None.

    Work at risk: the held node's gate. Guarded: the text makes the node ``held`` in ``merge_k8s``.
    """
    if not knode.get("held_by_us"):
        return None
    reason = knode.get("reason")
    parsed = parse_reason(reason)
    if parsed is not None and parsed["kind"] == "gate":
        return f"failed a gate in Kubernetes ({reason}): not in service until a gate passes it"
    return (f"held in Kubernetes for its gate ({reason or 'taint gpufleet.io/hold'}): not in service until "
            "the gate admits it")


def merge_k8s(views, k8s_nodes, hosts, node_names=None):
    """Fold Kubernetes' view into the Slurm-derived views, per host.

    k8s_nodes: {name: k8s_state.node_state, plus ``maint`` (see merge_k8s_info)}; node_names: {host: Node name}
    (filter k8s_node_names), or None where every host's name is its Node's. A host the map leaves out (its reported
    hostname was refused) is looked up under no name: where Kubernetes has Nodes it is ``held`` and unhealthy. A node
    Kubernetes knows and Slurm does not place (no partition, no move or hold reason of ours) is in the Kubernetes
    pool, whatever its pool label says or if it has none: it is never fresh. A node in the Kubernetes pool is
    capacity only where Kubernetes has it in service (Ready, not cordoned, no taint but the pool's); a cordon that
    is not ours is an admin's hold; a hold of ours (taint or reason) and a maintenance step in ``gpufleet.io/maint``
    are ``held``. A node Slurm places is Slurm's to judge, whatever its Node says. ``schedulers`` gains ``k8s``
    where Kubernetes places pods on the node now (Ready, not cordoned, no hold taint).

    Work at risk: running pods, the Kubernetes pool's minimum, an admin's cordon, a held node's gate or
    maintenance. Guarded: a node with pods is never read as fresh, a node out of service in Kubernetes is not
    capacity, an admin's cordon is ``admin_hold`` (never moved or uncordoned), a held node is ``held``
    (never moved), and a node both schedulers place work on shows both in ``schedulers`` (the planner
    refuses it); a host without a Node name in a given map is held, never looked up under its inventory name.
    """
    out = {}
    for host in hosts:
        view = dict(views.get(host) or node_view(host))
        view.setdefault("held", None)
        view["schedulers"] = list(view.get("schedulers") or [])
        if node_names is None:
            knode = k8s_nodes.get(host)
        elif host in node_names:
            knode = k8s_nodes.get(node_names[host])
        else:
            knode = None
            if k8s_nodes:
                # refused (its report failed the Node-name check) or left out of the map: never looked up under a
                # guessed name, never moved, never capacity
                view["held"] = view["held"] or (f"{host}: no Kubernetes Node name (its reported hostname was "
                                                f"refused, or it is not in the Node-name map): not moved, not capacity")
                view["healthy"] = False
        if knode is not None:
            if view["pool"] is None:
                view["pool"] = K8S
            if view["pool"] == K8S:
                maint = knode.get("maint")
                admin_cordon = bool(knode.get("unschedulable")) and not knode.get("held_by_us") and not maint
                if view["held"] is None and maint:
                    view["held"] = (f"maintenance unfinished on {host}: rerun maintain.yml "
                                    f"({MAINT_ANNOTATION}={maint})")
                if view["held"] is None:
                    view["held"] = _k8s_held(knode)
                view["healthy"] = (view["healthy"] and knode.get("in_service") is True and not admin_cordon
                                   and view["held"] is None)
                view["admin_hold"] = view["admin_hold"] or admin_cordon
            if knode.get("ready") is True and not knode.get("unschedulable") and not knode.get("hold_taint"):
                view["schedulers"] = sorted({*view["schedulers"], K8S})
            view["k8s"] = {k: knode.get(k) for k in ("pool", "ready", "unschedulable", "held_by_us", "in_service")}
        out[host] = view
    return out
