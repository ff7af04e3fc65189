"""Filters for the pool planner and executor (logic in module_utils/pool_live.py, pool_policy.py)."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.k8s_state import node_states
from ansible.module_utils.node_reason import make_reason
from ansible.module_utils.pool_live import merge_k8s, partition_nodes_after, planner_nodes, unfinished
from ansible.module_utils.pool_policy import validate


def pool_planner_nodes(hosts, hostvars, views, gpus_var="gpu_discovery_count"):
    """Planner nodes from host facts (GPU count, leaf switch, pin) and the live views."""
    facts = {}
    for host in hosts:
        hv = hostvars[host]
        facts[host] = {
            "gpus": hv.get(gpus_var) or hv.get("cluster_gpu_count") or 0,
            "leaf": hv.get("cluster_leaf_switch"),
            "pinned": hv.get("cluster_pool_pin"),
        }
    return planner_nodes(hosts, facts, views)


def pool_policy_errors(policy, hosts, hostvars):
    """Every error in cluster_pools (and host pins), each naming the variable and the host."""
    subset = {h: {k: hostvars[h][k] for k in ("cluster_pool_pin",) if k in hostvars[h]} for h in hosts}
    return validate(policy, subset)


def pool_unfinished_moves(views, targets):
    """Moves an earlier run left unfinished, as [{node, to, reason}], read from the live views."""
    return [{"node": node, "to": to, "reason": "finish a move an earlier run left"}
            for node, to in sorted(unfinished(views, targets).items())]


def pool_merge_k8s(views, k8s_info_result, hosts):
    """Slurm-derived views with Kubernetes' labels, readiness and cordons folded in."""
    return merge_k8s(views, node_states(k8s_info_result), hosts)


def pool_reason(kind, detail, run_id, target):
    """A Slurm reason carrying the toolkit's tag (see module_utils/node_reason.py)."""
    return make_reason(kind, detail, run_id=run_id, target=target)


class FilterModule:
    def filters(self):
        return {
            "pool_planner_nodes": pool_planner_nodes,
            "pool_policy_errors": pool_policy_errors,
            "pool_reason": pool_reason,
            "pool_partition_changes": partition_nodes_after,
            "pool_unfinished_moves": pool_unfinished_moves,
            "pool_merge_k8s": pool_merge_k8s,
        }
