"""Filters for the Kubernetes pool: GPU totals, ClusterQueue quota, taints, node state, nulls."""

import os

import ansible.module_utils
from ansible.errors import AnsibleFilterError

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.k8s_pool import (
    clusterqueue_gpu_quota,
    merge_taints,
    node_pool_state,
    pool_gpu_total,
)
from ansible.module_utils.k8s_schema import drop_nulls


def k8s_pool_gpu_total(nodes, hostvars, count_var):
    """Sum host variable ``count_var`` over ``nodes``; fail naming the host and the variable."""
    counts = {}
    for node in nodes:
        value = (hostvars.get(node) or {}).get(count_var)
        if value is None:
            raise AnsibleFilterError(f"{node}: host variable {count_var} (GPU count) is not defined")
        counts[node] = value
    try:
        return pool_gpu_total(list(nodes), counts)
    except ValueError as exc:
        raise AnsibleFilterError(f"{count_var}: {exc}") from exc


def k8s_clusterqueue_gpu_quota(docs, resource="nvidia.com/gpu", name=None):
    return clusterqueue_gpu_quota(list(docs), resource, name)


def k8s_merge_taints(existing, add=(), remove=()):
    return merge_taints(existing or [], list(add), list(remove))


def k8s_node_pool_state(plan, node, k8s_pool, label_key, hold_taint, pool_taint=None):
    try:
        return node_pool_state(dict(plan), node, k8s_pool, label_key, dict(hold_taint),
                               dict(pool_taint) if pool_taint else None)
    except (KeyError, ValueError) as exc:
        raise AnsibleFilterError(f"{node}: {exc}") from exc


def k8s_drop_nulls(value):
    return drop_nulls(value)


class FilterModule:
    def filters(self):
        return {
            "k8s_pool_gpu_total": k8s_pool_gpu_total,
            "k8s_clusterqueue_gpu_quota": k8s_clusterqueue_gpu_quota,
            "k8s_merge_taints": k8s_merge_taints,
            "k8s_node_pool_state": k8s_node_pool_state,
            "k8s_drop_nulls": k8s_drop_nulls,
        }
