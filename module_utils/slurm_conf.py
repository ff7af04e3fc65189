"""Render Slurm configuration files from data.

Upstream configuration passes through as data: a dict of global keys and lists of NodeName,
PartitionName (and similar) entities. Keys are rendered sorted so a file only changes when
the data does. Nodes with identical attributes share one NodeName line with a folded hostlist,
which keeps slurm.conf short on 10,000-node fleets.
"""

from __future__ import annotations

from ansible.module_utils.hostlist import hostlist_fold


class SlurmConfDataError(ValueError):
    """Configuration data that cannot be rendered; the message names the variable."""


def _value(key, value, variable):
    if isinstance(value, bool):
        return "YES" if value else "NO"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        raise SlurmConfDataError(f"variable {variable}: key {key} holds a mapping, Slurm wants a scalar")
    text = str(value)
    if "\n" in text:
        raise SlurmConfDataError(f"variable {variable}: key {key} holds a newline")
    if " " in text and not (text.startswith('"') and text.endswith('"')):
        text = f'"{text}"'
    return text


# Keys Slurm reads once per line, in order (a list renders as several lines).
REPEATABLE = frozenset({"SlurmctldHost", "AccountingStorageExternalHost", "Include"})


def config_lines(config, variable="slurm_common_config"):
    """Global `Key=Value` lines, sorted by key; None values are left out (unset).

    A list under a repeatable key (SlurmctldHost for HA controllers) becomes one line per item,
    in the order given: the first SlurmctldHost is the primary.
    """
    lines = []
    for key in sorted(config, key=str.lower):
        value = config[key]
        if value is None:
            continue
        if key in REPEATABLE and isinstance(value, (list, tuple)):
            lines.extend(f"{key}={_value(key, item, variable)}" for item in value)
        else:
            lines.append(f"{key}={_value(key, value, variable)}")
    return lines


def entity_line(name_key, entity, variable):
    """One `NameKey=name Key=Value ...` line; the name key first, the rest sorted."""
    if name_key not in entity or entity[name_key] in (None, ""):
        raise SlurmConfDataError(f"variable {variable}: an entry lacks {name_key}: {entity!r}")
    parts = [f"{name_key}={_value(name_key, entity[name_key], variable)}"]
    for key in sorted((k for k in entity if k != name_key), key=str.lower):
        if entity[key] is None or entity[key] == "":
            continue
        parts.append(f"{key}={_value(key, entity[key], variable)}")
    return " ".join(parts)


def entity_lines(entities, name_key, variable):
    """Lines for a list of entities; duplicate names are an error naming the variable."""
    seen = set()
    lines = []
    for entity in entities:
        name = entity.get(name_key)
        if name in seen:
            raise SlurmConfDataError(f"variable {variable}: {name_key}={name} appears twice")
        seen.add(name)
        lines.append(entity_line(name_key, entity, variable))
    return lines


def node_entities(nodes):
    """Group per-node dicts with identical attributes into NodeName entities with folded names.

    nodes: list of dicts with NodeName (one host each) and attributes. Output order is stable:
    groups sorted by their first node name.
    """
    groups = {}
    for node in nodes:
        attrs = tuple(sorted((k, str(v)) for k, v in node.items() if k != "NodeName" and v is not None))
        groups.setdefault(attrs, []).append(node["NodeName"])
    out = []
    for attrs, names in groups.items():
        entity = {"NodeName": hostlist_fold(sorted(names))}
        entity.update(dict(attrs))
        out.append((min(names), entity))
    return [entity for _, entity in sorted(out, key=lambda item: item[0])]


_FACTS = (
    "ansible_processor_count",
    "ansible_processor_cores",
    "ansible_processor_threads_per_core",
    "ansible_memtotal_mb",
)


def nodes_from_facts(hosts, hostvars, mem_reserve_mb, gres_var, extra=None):
    """Per-node NodeName dicts from gathered facts and GPU discovery.

    Uses the socket/core/thread layout and memory Ansible gathered on each node (what slurmd
    reports), minus mem_reserve_mb for the OS, and Gres= from the host variable gres_var (the caller
    names it: gpu_discovery sets gpu_discovery_gres). Hosts without facts are an error naming the host:
    Slurm would drain a node whose configured CPUs exceed what it has.
    """
    nodes = []
    for host in hosts:
        hv = hostvars[host]
        missing = [k for k in _FACTS if k not in hv]
        if missing:
            raise SlurmConfDataError(
                f"host {host}: facts {', '.join(missing)} are missing; gather facts on it "
                f"(run without --limit, or keep the fact cache)"
            )
        sockets = int(hv["ansible_processor_count"])
        cores = int(hv["ansible_processor_cores"])
        threads = int(hv["ansible_processor_threads_per_core"])
        node = {
            "NodeName": host.split(".", 1)[0],
            "CPUs": sockets * cores * threads,
            "Sockets": sockets,
            "CoresPerSocket": cores,
            "ThreadsPerCore": threads,
            "RealMemory": max(int(hv["ansible_memtotal_mb"]) - int(mem_reserve_mb), 1),
        }
        gres = hv.get(gres_var)
        if gres:
            node["Gres"] = gres
        node.update((extra or {}).get(host, {}))
        nodes.append(node)
    return nodes


def host_attr_map(hosts, hostvars, variable):
    """{short host name: value} for hosts that set `variable` (e.g. cluster_leaf_switch)."""
    out = {}
    for host in hosts:
        value = hostvars[host].get(variable) if hasattr(hostvars[host], "get") else None
        if value not in (None, ""):
            out[host.split(".", 1)[0]] = value
    return out
