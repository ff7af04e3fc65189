"""Filters for the Kubernetes pool: GPU totals, ClusterQueue and allocatable quotas, taints, node admission, nulls,
kubeconfig."""

import os

import ansible.module_utils
from ansible.errors import AnsibleFilterError

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.k8s_distribution import admin_kubeconfig, agent_service, server_ca
from ansible.module_utils.k8s_pool import (
    clusterqueue_gpu_quota,
    declared_gpu_resources,
    excluded_resources,
    gpu_admission_errors,
    leave_labels,
    merge_taints,
    node_name_check,
    node_name_errors,
    pool_admissions,
    pool_allocatable_quota,
    pool_gpu_total,
)
from ansible.module_utils.k8s_schema import drop_nulls

# Host variable of a node whose GPUs are shared or partitioned: the {resource: count} its device plugin must
# advertise (module_utils/k8s_pool.declared_gpu_resources); without it, allocatable nvidia.com/gpu = its GPU count.
GPU_RESOURCES_VAR = "cluster_k8s_gpu_resources"


def _gpu_count(host, hostvars, count_var, resources_var=GPU_RESOURCES_VAR):
    """``host``'s declared GPU resources (validated) where it has ``resources_var``, else its ``count_var``."""
    # not hostvars.get(host, {}): HostVars.get on an unknown host does not return the default in ansible-core 2.19
    values = hostvars[host] if host in hostvars else {}  # noqa: SIM401
    declared = values.get(resources_var)
    if declared is None:
        return values.get(count_var)
    try:
        return declared_gpu_resources(declared, resources_var)
    except ValueError as exc:
        raise AnsibleFilterError(f"{host}: {exc}") from exc


def k8s_pool_gpu_total(nodes, hostvars, count_var):
    """Sum host variable ``count_var`` over ``nodes`` (a node's declared ``cluster_k8s_gpu_resources`` instead,
    where it has them: their nvidia.com/gpu); fail naming the host and the variable."""
    counts = {}
    for node in nodes:
        value = _gpu_count(node, hostvars, count_var)
        if value is None:
            raise AnsibleFilterError(f"{node}: host variable {count_var} (GPU count) is not defined")
        counts[node] = value
    try:
        return pool_gpu_total(list(nodes), counts)
    except ValueError as exc:
        raise AnsibleFilterError(f"{count_var}: {exc}") from exc


def k8s_pool_allocatable_quota(nodes, allocatable, resources=("cpu", "memory")):
    """``{resource: quantity}`` summed over the allocatable of ``nodes`` (``{node: status.allocatable}``); fails
    naming the node and the resource where one is missing or no Kubernetes quantity."""
    try:
        return pool_allocatable_quota(list(nodes), dict(allocatable or {}), list(resources))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def k8s_clusterqueue_gpu_quota(docs, resource="nvidia.com/gpu", name=None):
    return clusterqueue_gpu_quota(list(docs), resource, name)


def k8s_merge_taints(existing, add=(), remove=()):
    return merge_taints(existing or [], list(add), list(remove))


def k8s_pool_admissions(hosts, node_objs, hostvars, count_var, validator_pods=(), verdicts=None, node_names=None,
                        fabric=None, **kwargs):
    """``pool_admissions`` with each host's GPU count read from host variable ``count_var``. The hosts whose reported
    hostname the Node-name check refuses (``k8s_node_name_refusals``, read here from ``hostvars``, whatever map the
    caller gives) are held on their own Node, never admitted; ``node_names`` None: each host's name is its Node's."""
    hosts = list(hosts)
    name_var = kwargs.pop("node_name_var", "cluster_k8s_node_name")
    verdicts = dict(verdicts or {})
    # a modelled node (preflight) is no inventory host: it has no count, and needs none without a PASS
    # (HostVars.get on an unknown host does not return the default in ansible-core 2.19)
    counts = {host: _gpu_count(host, hostvars, count_var) for host in hosts}
    missing = [h for h in hosts if verdicts.get(h) == "PASS" and counts[h] is None]
    if missing:
        raise AnsibleFilterError(f"{missing[0]}: host variable {count_var} (GPU count) is not defined")
    for key in ("hold_taint", "pool_taint", "fail_taint"):
        if kwargs.get(key):
            kwargs[key] = dict(kwargs[key])
    refused = _node_name_check([h for h in hosts if h in hostvars], hostvars, name_var)["refused"]
    try:
        return pool_admissions(hosts, list(node_objs or []), counts, list(validator_pods or []), verdicts,
                               None if node_names is None else dict(node_names),
                               {h: dict(v) for h, v in (fabric or {}).items()}, refused, **kwargs)
    except (KeyError, ValueError) as exc:
        raise AnsibleFilterError(f"{count_var}: {exc}") from exc


def k8s_leave_node_patch(node_name, label_key, admitted_label="node-restriction.kubernetes.io/gpufleet-admitted"):
    """Merge patch of a Node leaving the Kubernetes pool: pool, admission and fabric labels removed, operands off."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": str(node_name), "labels": leave_labels(label_key, admitted_label)}}


def _node_name_check(hosts, hostvars, var):
    known = set(hostvars)
    explicit, reported = {}, {}
    for host in hosts:
        hv = hostvars[host] if host in known else {}
        facts = hv.get("ansible_facts") or {}
        explicit[host] = hv.get(var)
        reported[host] = facts.get("nodename") if isinstance(facts, dict) else None
    try:
        return node_name_check(list(hosts), explicit, reported, known, var)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def k8s_node_names(hosts, hostvars, var="cluster_k8s_node_name"):
    """``{host: Node name}``: host variable ``var`` when set, else the inventory name; lowercased. The gathered
    kernel hostname (``ansible_facts.nodename``, where known) is only a cross-check: a host whose hostname is
    another inventory host's, or differs from its inventory name, is refused and left out of the map (its hold:
    ``k8s_node_name_refusals``); a name that is no DNS subdomain and two hosts mapping to one Node fail the run.
    Look a host up strictly (``map[host]``, or ``k8s_node_name``), never with a fallback name."""
    return _node_name_check(hosts, hostvars, var)["names"]


def k8s_node_name_refusals(hosts, hostvars, var="cluster_k8s_node_name"):
    """``{host: {name, field, value, reason}}`` for the hosts of ``hosts`` whose reported hostname failed the
    cross-check; ``name`` is the host's own Node (``var`` or the inventory name), the one to hold."""
    return _node_name_check(hosts, hostvars, var)["refused"]


def k8s_node_name(host, hostvars, var="cluster_k8s_node_name"):
    """``host``'s Node name (``var``, else its inventory name); fails naming the host and the field when its
    report was refused, so a refused host is never acted on under any name."""
    check = _node_name_check([host], hostvars, var)
    if host in check["refused"]:
        raise AnsibleFilterError(check["refused"][host]["reason"])
    return check["names"][host]


def k8s_node_name_errors(hosts, hostvars, var="cluster_k8s_node_name"):
    """Preflight: the Node-name errors of the inventory alone (``node_name_errors``), each naming the host and
    ``var``."""
    explicit = {}
    for host in hosts:
        # not hostvars.get(host, {}): HostVars.get on an unknown host does not return the default in ansible-core 2.19
        hv = hostvars[host] if host in hostvars else {}  # noqa: SIM401
        explicit[host] = hv.get(var)
    return node_name_errors(list(hosts), explicit, var)


def k8s_gpu_admission_errors(node_obj, host, hostvars, count_var, validator_pods=()):
    """``gpu_admission_errors`` for inventory host ``host`` (GPU count from host variable ``count_var``, or its
    declared ``cluster_k8s_gpu_resources``)."""
    count = _gpu_count(host, hostvars, count_var)
    if count is None:
        raise AnsibleFilterError(f"{host}: host variable {count_var} (GPU count) is not defined")
    try:
        return gpu_admission_errors(dict(node_obj), count, list(validator_pods or []))
    except ValueError as exc:
        raise AnsibleFilterError(f"{host}: {count_var}: {exc}") from exc


def k8s_gate_verdicts(nodes, hostvars, fact):
    """``{node: verdict word}`` for the ``nodes`` the health gate judged in this run (the caller names its fact,
    ``health_gate_verdict``)."""
    out = {}
    for node in nodes:
        row = (hostvars.get(node) or {}).get(fact)
        if isinstance(row, dict) and row.get("verdict") is not None:
            out[node] = row["verdict"]
    return out


def k8s_drop_nulls(value):
    return drop_nulls(value)


class FilterModule:
    def filters(self):
        return {
            "k8s_pool_gpu_total": k8s_pool_gpu_total,
            "k8s_clusterqueue_gpu_quota": k8s_clusterqueue_gpu_quota,
            "k8s_pool_allocatable_quota": k8s_pool_allocatable_quota,
            # The resources a Kueue excludeResourcePrefixes list would make Kueue ignore.
            "k8s_excluded_resources": as_filter(excluded_resources, ValueError, prefix=False),
            "k8s_merge_taints": k8s_merge_taints,
            "k8s_pool_admissions": k8s_pool_admissions,
            "k8s_gpu_admission_errors": k8s_gpu_admission_errors,
            "k8s_leave_node_patch": k8s_leave_node_patch,
            "k8s_node_names": k8s_node_names,
            "k8s_node_name_refusals": k8s_node_name_refusals,
            "k8s_node_name": k8s_node_name,
            "k8s_node_name_errors": k8s_node_name_errors,
            "k8s_gate_verdicts": k8s_gate_verdicts,
            "k8s_drop_nulls": k8s_drop_nulls,
            # What cluster_k8s_distribution decides (module_utils/k8s_distribution.py); an unknown one fails the task.
            "k8s_admin_kubeconfig": as_filter(admin_kubeconfig, ValueError, prefix=False),
            "k8s_server_ca": as_filter(server_ca, ValueError, prefix=False),
            "k8s_agent_service": as_filter(agent_service, ValueError, prefix=False),
        }
