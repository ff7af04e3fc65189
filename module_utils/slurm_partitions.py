"""Partitions selected by node facts or groups (slurm_common_partitions entries with `select`).

An entry of slurm_common_partitions either names its nodes (`Nodes`, as before) or selects them:

    - PartitionName: h100
      select: {gpu_type: [h100], leaf: [leaf1, leaf2], group: [gpu_nodes], hosts: "gpu[01-08]"}
      DefaultTime: "1:00:00"
      MaxTime: "1-00:00:00"
      QOS: high
      PriorityTier: 2
      OverSubscribe: "NO"
      PreemptMode: REQUEUE

A node is selected when it matches every key given (one of the values listed under each key):
`gpu_type` is the GRES type of its GPUs (gpu_discovery, e.g. h100), `leaf` its leaf switch
(cluster_leaf_switch), `block` its block (gpufleet's topology blocks are the leaf switches),
`group` an inventory group it is in, `hosts` its name (a list or hostlist). The partition's
`Nodes` are the selected nodes of the Slurm pool, so a node that moves between pools leaves or
joins every partition that selects it. A selector that matches no GPU node is an error.
"""

from __future__ import annotations

import re

from ansible.module_utils.hostlist import hostlist_expand, hostlist_fold

VARIABLE = "slurm_common_partitions"

SELECTORS = ("gpu_type", "leaf", "block", "group", "hosts")

PREEMPT_MODES = ("OFF", "CANCEL", "GANG", "REQUEUE", "SUSPEND", "WITHIN")

_TIME = re.compile(r"^(\d+|\d+:\d{1,2}(:\d{1,2})?|\d+-\d+(:\d{1,2}(:\d{1,2})?)?)$")
_OVERSUBSCRIBE = re.compile(r"^(EXCLUSIVE|NO|(YES|FORCE)(:\d+)?)$", re.IGNORECASE)


class SlurmPartitionError(ValueError):
    """Partition data that cannot be rendered; the message names the variable and the partition."""


def _short(host):
    return str(host).split(".", 1)[0]


def _values(value):
    if isinstance(value, str):
        return [value]
    return list(value) if isinstance(value, (list, tuple)) else None


def node_facts(hosts, hostvars, gpus=None, leaves=None, groups=None):
    """{short host: {gpu_types, leaf, groups}} for the selectors.

    gpus: {short host: [GPU, ...]} as gpu_discovery found them (each with its GRES `type`); without
    it a host's types are its cluster_gpu_type when the inventory declares one, else unknown (None).
    leaves: {short host: leaf switch}; without it, each host's cluster_leaf_switch.
    groups: the inventory's groups ({group: [host, ...]}, Ansible's `groups`); without it, each host's
    group_names. With all three given no host's variables are read: each hostvars lookup merges that
    host's variables, and every Slurm host renders this for every node (hosts squared).
    """
    member_of = None
    if groups is not None:
        member_of = {}
        for group, members in groups.items():
            if group != "all":
                for member in members or []:
                    member_of.setdefault(member, []).append(group)
    facts = {}
    for host in hosts or []:
        hv = hostvars[host] if gpus is None or leaves is None or member_of is None else {}
        short = _short(host)
        if gpus is not None:
            types = sorted({g.get("type") for g in (gpus.get(short) or []) if isinstance(g, dict) and g.get("type")})
        else:
            declared = hv.get("cluster_gpu_type") if hasattr(hv, "get") else None
            types = [str(declared)] if declared else None
        leaf = (
            (leaves or {}).get(short)
            if leaves is not None
            else (hv.get("cluster_leaf_switch") if hasattr(hv, "get") else None)
        )
        if member_of is not None:
            groups_of = sorted(member_of.get(host, []))
        else:
            groups_of = list(hv.get("group_names", [])) if hasattr(hv, "get") else []
        facts[short] = {"gpu_types": types, "leaf": leaf, "groups": groups_of}
    return facts


def _select_errors(name, select, variable):
    where = f"variable {variable}: partition {name}"
    if not isinstance(select, dict) or not select:
        return [f"{where}: select must be a non-empty mapping of {', '.join(SELECTORS)}, got {select!r}"]
    errors = [
        f"{where}: select.{key} is not a selector (one of {', '.join(SELECTORS)})"
        for key in select
        if key not in SELECTORS
    ]
    for key in SELECTORS:
        if key in select:
            values = _values(select[key])
            if not values or not all(isinstance(v, str) and v for v in values):
                errors.append(f"{where}: select.{key} must be a name or a non-empty list of names, got {select[key]!r}")
    return errors


def _matcher(select):
    """A function of (host, fact): True, False, or None where the node's GPU type is not known yet
    (preflight before discovery, without cluster_gpu_type)."""
    wanted = {key: set(_values(select[key])) for key in SELECTORS if key in select}
    if "hosts" in wanted:
        wanted["hosts"] = {_short(h) for v in wanted["hosts"] for h in hostlist_expand(v)}

    def matches(host, fact):
        unknown = False
        for key, values in wanted.items():
            if key == "hosts":
                ok = host in values
            elif key == "group":
                ok = bool(values & set(fact["groups"]))
            elif key == "gpu_type":
                if fact["gpu_types"] is None:
                    unknown = True
                    continue
                ok = bool(values & set(fact["gpu_types"]))
            else:  # leaf, block: gpufleet's blocks are its leaf switches
                ok = fact["leaf"] in values
            if not ok:
                return False
        return None if unknown else True

    return matches


def _key_errors(name, entry, variable, qos_names):
    where = f"variable {variable}: partition {name}"
    errors = []
    for key in ("DefaultTime", "MaxTime"):
        if key in entry and entry[key] is not None:
            value = str(entry[key])
            if value.upper() not in ("INFINITE", "UNLIMITED") and not _TIME.match(value):
                errors.append(
                    f"{where}: {key} must be a Slurm time (min, hr:min:sec, days-hr:min:sec) or INFINITE, "
                    f"got {entry[key]!r}"
                )
    if "PriorityTier" in entry:
        tier = entry["PriorityTier"]
        if isinstance(tier, bool) or not isinstance(tier, int) or not 0 <= tier <= 65533:
            errors.append(f"{where}: PriorityTier must be an integer from 0 to 65533, got {tier!r}")
    if "OverSubscribe" in entry:
        value = entry["OverSubscribe"]
        if isinstance(value, bool) or not _OVERSUBSCRIBE.match(str(value)):
            errors.append(
                f"{where}: OverSubscribe must be EXCLUSIVE, NO, YES[:n] or FORCE[:n], got {value!r} "
                "(quote NO and YES in YAML)"
            )
    if "PreemptMode" in entry:
        modes = str(entry["PreemptMode"]).upper().split(",")
        if not all(mode in PREEMPT_MODES for mode in modes):
            errors.append(
                f"{where}: PreemptMode must be one or more of {', '.join(PREEMPT_MODES)}, got {entry['PreemptMode']!r}"
            )
    qos = entry.get("QOS")
    if qos_names is not None and qos not in (None, "") and str(qos) not in {*qos_names, "normal"}:
        errors.append(f"{where}: QOS {qos!r} is not a QOS of the accounting policy (cluster_slurm_accounting.qos)")
    return errors


def partition_errors(partitions, facts, variable=VARIABLE, qos_names=None):
    """Every problem in the partitions' selectors and keys, each naming the variable and the partition.

    facts: node_facts of every GPU node. qos_names: the QOS the accounting policy defines (None: not checked).
    """
    if not isinstance(partitions, list):
        return [f"variable {variable} must be a list of partitions, got {type(partitions).__name__}"]
    errors = []
    for index, entry in enumerate(partitions):
        if not isinstance(entry, dict):
            errors.append(f"variable {variable}: entry {index} must be a mapping, got {entry!r}")
            continue
        name = entry.get("PartitionName", f"#{index}")
        errors += _key_errors(name, entry, variable, qos_names)
        if "select" not in entry:
            continue
        if entry.get("Nodes") not in (None, ""):
            errors.append(f"variable {variable}: partition {name} has both Nodes and select: keep one")
            continue
        select_errors = _select_errors(name, entry["select"], variable)
        if select_errors:
            errors += select_errors
            continue
        matches = _matcher(entry["select"])
        if not any(matches(host, fact) is not False for host, fact in facts.items()):
            errors.append(f"variable {variable}: partition {name}: select {entry['select']} matches no node")
    return errors


def partition_entities(partitions, facts, pool_hosts, variable=VARIABLE):
    """The PartitionName entities to render: a selector becomes Nodes, the selected nodes of the pool.

    Entries without `select` pass through unchanged. Invalid data raises SlurmPartitionError.
    """
    errors = partition_errors(partitions, facts, variable)
    if errors:
        raise SlurmPartitionError("; ".join(errors))
    pool = {_short(h) for h in pool_hosts or []}
    entities = []
    for entry in partitions:
        if "select" not in entry:
            entities.append(entry)
            continue
        matches = _matcher(entry["select"])
        nodes = sorted(host for host, fact in facts.items() if host in pool and matches(host, fact))
        entity = {key: value for key, value in entry.items() if key != "select"}
        entity["Nodes"] = hostlist_fold(nodes) if nodes else None
        entities.append(entity)
    return entities
