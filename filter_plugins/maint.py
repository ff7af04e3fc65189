"""Filters for rolling maintenance (maintain.yml): names mapped to module_utils/maint_plan.py."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.maint_k8s import live_views
from ansible.module_utils.maint_lock import fleet_lock_drift
from ansible.module_utils.maint_plan import (
    planner_nodes,
    rollout_stop,
    rollout_stops,
    validate,
    wave_check,
    wave_failures,
    wave_schedule,
)
from ansible.module_utils.maint_report import build, render_html, render_json
from ansible.module_utils.node_stack import OVERRIDES


def maint_input_errors(inputs, pools, hosts):
    """Errors in maintain.yml's inputs ``{policy, change, nodes}`` (preflight, before any node play)."""
    if not inputs:
        return []
    return validate(inputs.get("policy"), pools, inputs.get("change"), inputs.get("nodes") or [], hosts)


def maint_planner_nodes(hosts, views, hostvars, k8s_nodes=None, node_names=None):
    """module_utils.maint_plan.planner_nodes from slurm_node_info views, the leaf host variable and, where
    Kubernetes was read, its Nodes (*k8s_nodes*: k8s_info ``resources``; *node_names*: ``{host: Node name}``; a host
    it leaves out, refused by the Node-name check, is looked up under no name and so never counted in service; None:
    each host's inventory name). *k8s_nodes* None: Kubernetes was not read."""
    leaves = {h: (hostvars.get(h) or {}).get("cluster_leaf_switch") for h in hosts}
    k8s = None
    if k8s_nodes is not None:
        # A host the map leaves out (its reported hostname refused) has no Kubernetes view: never in service.
        names = {h: h for h in hosts} if node_names is None else {h: node_names[h] for h in hosts if h in node_names}
        k8s = live_views(list(k8s_nodes), names)
    return planner_nodes(hosts, views, leaves, k8s)


def maint_node_records(hosts, hostvars, keys):
    """``{host: record or None}``: for each host, the value of the first of *keys* (the roles' record facts,
    latest first) it has."""
    out = {}
    for host in hosts or []:
        hv = hostvars.get(host) if hasattr(hostvars, "get") else None
        out[host] = None
        for key in keys:
            value = hv.get(key) if hasattr(hv, "get") else None
            if value:
                out[host] = dict(value)
                break
    return out


def maint_wave_failures(wave, records):
    """module_utils.maint_plan.wave_failures: the wave's nodes that count against failure_threshold."""
    return wave_failures(list(wave or []), records)


def maint_rollout_stop(records, threshold):
    """module_utils.maint_plan.rollout_stop: why the rollout stops, or ''."""
    return rollout_stop(records, int(threshold))


def maint_wave_check(wave, views, pools):
    """module_utils.maint_plan.wave_check with each node's pool read from its view."""
    pool_of = {n: (v.get("pool") or ("slurm" if v.get("in_partition") else None)) for n, v in (views or {}).items()}
    return wave_check(wave, views, pools, pool_of)


def maint_schedule(plan, nodes, k8s=False):
    """The Slurm wave play's host order and serial batch sizes from the plan's waves: ``{order, serial,
    left_out, lines}`` (module_utils.maint_plan.wave_schedule; *nodes*: maint_planner_nodes', the plan's input).

    Only Slurm-pool nodes are executed here; with *k8s* (the inventory has a Kubernetes server) the
    Kubernetes wave play takes the Kubernetes-pool nodes (maint_kube_schedule). ``left_out`` is the plan's
    and the nodes neither play takes, with the reason; ``lines`` says the latter for the plan's summary.
    """
    split = wave_schedule(plan, nodes, bool(k8s))
    left = list((plan or {}).get("left_out") or []) + split["left_out"]
    lines = [f"  left out: {x['node']}: {x['reason']}" for x in split["left_out"]]
    return {**split["slurm"], "left_out": left, "lines": lines}


def maint_versions(packages, names):
    """``{name: installed version or None}`` for *names* from Ansible's package facts."""
    out = {}
    for name in names or []:
        found = (packages or {}).get(name) or []
        out[name] = str(found[0].get("version")) if found and isinstance(found[0], dict) else None
    return out


def maint_apt_names(packages):
    """``["name=version", ...]`` for the apt module, sorted."""
    return [f"{name}={version}" for name, version in sorted((packages or {}).items())]


def maint_lock_drift(hosts, hostvars, package_facts, lock):
    """module_utils.maint_lock.fleet_lock_drift with each host's facts and its node-stack overrides read
    from *hostvars* (only those keys: the rest of a host's variables is never templated here)."""
    small = {}
    for host in hosts or []:
        hv = hostvars.get(host) if hasattr(hostvars, "get") else None
        hv = hv if hv is not None else {}
        small[host] = {key: hv[key] for key in [*OVERRIDES, "ansible_facts"] if key in hv}
    return fleet_lock_drift(hosts, small, package_facts, lock)


def maint_pick(hostvars_list, keys):
    """For each host's variables, the value of the first of *keys* it has (hosts with none are skipped)."""
    out = []
    for hv in hostvars_list or []:
        for key in keys:
            value = hv.get(key) if hasattr(hv, "get") else None
            if value:
                out.append(value)
                break
    return out


class FilterModule:
    def filters(self):
        return {
            "maint_input_errors": maint_input_errors,
            "maint_planner_nodes": as_filter(maint_planner_nodes, (ValueError,)),
            "maint_wave_check": as_filter(maint_wave_check, (ValueError,)),
            "maint_schedule": maint_schedule,
            "maint_report": build,
            "maint_report_json": render_json,
            "maint_report_html": render_html,
            "maint_rollout_stops": rollout_stops,
            "maint_node_records": maint_node_records,
            "maint_wave_failures": maint_wave_failures,
            "maint_rollout_stop": maint_rollout_stop,
            "maint_versions": maint_versions,
            "maint_pick": maint_pick,
            "maint_apt_names": maint_apt_names,
            "maint_lock_drift": maint_lock_drift,
        }
