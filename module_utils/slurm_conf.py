"""Render Slurm configuration files from data.

Upstream configuration passes through as data: a dict of global keys and lists of NodeName,
PartitionName (and similar) entities. Keys are rendered sorted so a file only changes when
the data does. Nodes with identical attributes share one NodeName line with a folded hostlist,
which keeps slurm.conf short on 10,000-node fleets.
"""

from __future__ import annotations

import re

from ansible.module_utils.hostlist import hostlist_fold
from ansible.module_utils.slurm_change import version_tuple


class SlurmConfDataError(ValueError):
    """Configuration data that cannot be rendered; the message names the variable."""


# slurm.conf(5) / src/common/parse_config.c: a quoted value is ``"([^"]*)"``, with no escape for ``"`` inside
# it; an unescaped ``#`` starts a comment; a line ends at a newline. Text holding any of them cannot be written.
_UNWRITABLE = {'"': 'a double quote (slurm.conf has no escape for it)', "#": "a # (slurm.conf would cut the line "
               "there)", "\n": "a newline", "\r": "a carriage return"}


def _value(key, value, variable):
    """``value`` as slurm.conf text; quoted when it holds a space.

    Text with a ``"`` (other than the outer pair of a value given already quoted), a ``#`` or a line
    break is a SlurmConfDataError naming the variable and the key.
    """
    if isinstance(value, bool):
        return "YES" if value else "NO"
    if isinstance(value, dict):
        raise SlurmConfDataError(f"variable {variable}: key {key} holds a mapping, Slurm wants a scalar")
    listed = isinstance(value, (list, tuple))
    text = ",".join(str(v) for v in value) if listed else str(value)
    inner = text[1:-1] if len(text) >= 2 and text.startswith('"') and text.endswith('"') else text
    for char, what in _UNWRITABLE.items():
        if char in inner:
            raise SlurmConfDataError(f"variable {variable}: key {key} holds {what}: {text!r}")
    if listed:
        return text
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

# What a node keeps back from jobs for the OS, the GPU driver and slurmd (MemSpecLimit,
# CoreSpecCount), and how RealMemory is rounded. The role's defaults pass these in.
RESERVE_DEFAULTS = {
    "mem_min_mb": 2048,
    "mem_pct": 1,
    "cores": 2,
    "mem_step_mb": None,
}


def real_memory_step(memtotal_mb, step_mb=None):
    """Step RealMemory is rounded down to: step_mb, or 1% of MemTotal as a power of two, at least 1 GiB.

    Two nodes whose MemTotal differs by less than the step (firmware, kernel) get the same RealMemory,
    and a node reports at least what is configured, so Slurm never drains it for low memory.
    """
    if step_mb:
        return int(step_mb)
    target = max(int(memtotal_mb) // 100, 1024)
    return 1 << (target.bit_length() - 1)


def _gpu_types(gres):
    """GPU types of a Gres= string (``gpu:h100:8`` -> ``['h100']``)."""
    types = []
    for entry in str(gres or "").split(","):
        fields = entry.strip().split(":")
        if len(fields) == 3 and fields[0] == "gpu" and fields[1] not in types:
            types.append(fields[1])
    return sorted(types)


def _gpu_count(gres):
    total = 0
    for entry in str(gres or "").split(","):
        fields = entry.strip().split(":")
        if fields and fields[0] == "gpu" and len(fields) > 1 and fields[-1].isdigit():
            total += int(fields[-1])
    return total


def _reserve(reserve):
    out = dict(RESERVE_DEFAULTS)
    for key, value in (reserve or {}).items():
        if key not in RESERVE_DEFAULTS:
            raise SlurmConfDataError(
                f"variable slurm_common_reserve: unknown key {key} (known: {', '.join(RESERVE_DEFAULTS)})"
            )
        out[key] = value
    for key in ("mem_min_mb", "mem_pct", "cores"):
        if isinstance(out[key], bool) or not isinstance(out[key], int) or out[key] < 0:
            raise SlurmConfDataError(
                f"variable slurm_common_reserve: {key} must be a whole number >= 0, got {out[key]!r}"
            )
    if out["mem_step_mb"] is not None and (
        isinstance(out["mem_step_mb"], bool) or not isinstance(out["mem_step_mb"], int) or out["mem_step_mb"] < 1
    ):
        raise SlurmConfDataError(
            f"variable slurm_common_reserve: mem_step_mb must be null or >= 1, got {out['mem_step_mb']!r}"
        )
    return out


# A Gres= value as module_utils/gres.py writes it: gpu[:type][:count] entries, comma-separated, with an
# optional (S:...) socket binding; nothing that could end the value, quote it or start a comment.
_GRES = re.compile(r"[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*(\([A-Za-z0-9:,-]+\))?"
                   r"(,[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*(\([A-Za-z0-9:,-]+\))?)*")


def nodes_from_facts(hosts, hostvars, reserve, gres_var, extra=None, kept=None):
    """Per-node NodeName dicts from gathered facts and GPU discovery.

    Uses the socket/core/thread layout Ansible gathered on each node (what slurmd reports on x86;
    see docs/slurm.md for aarch64). Nodes with the same layout and GPUs are one shape: each gets
    the smallest MemTotal of its shape rounded down to real_memory_step, so identical nodes render
    one NodeName line and MemTotal drift within a step changes nothing. Each node reserves
    MemSpecLimit (max(mem_min_mb, mem_pct % of RealMemory), at most half of it) and CoreSpecCount
    (`cores`, lowered so every GPU keeps at least one core) for the system, and carries its GPU
    model as a Feature. Gres= comes from the host variable gres_var (the caller names it:
    gpu_discovery sets gpu_discovery_gres). Hosts without facts are an error naming the host.

    Work at risk: ``gres_var`` is what each node reported about its own GPUs and it lands in the one
    slurm.conf every node reads; a value that is not a Gres= list (a space, ``"``, ``#``, ``=`` or a line
    break in it) is Refused (SlurmConfDataError naming the host and the variable) before any line is
    made, so the slurm.conf in place keeps serving every node. A node whose report gpu_discovery refused (and
    held) comes in ``kept`` (``{host: {"gres": ...}}``, slurm_change.kept_gpu_report): its ``Gres=`` as the
    slurm.conf in place has it, checked the same way, so the file does not change because of it.
    """
    res = _reserve(reserve)
    raw = []
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
        short = host.split(".", 1)[0]
        if kept and (host in kept or short in kept):
            gres_var_used, gres = "its kept Gres (the slurm.conf in place)", (kept.get(host) or kept[short]).get("gres")
        else:
            gres_var_used, gres = gres_var, hv.get(gres_var) or None
        if gres is not None and (not isinstance(gres, str) or _GRES.fullmatch(gres) is None):
            raise SlurmConfDataError(
                f"host {host}: {gres_var_used} {gres!r} is no Gres= value ({_GRES.pattern}); the node's GPU "
                f"report is refused and no slurm.conf is written (rerun gpu_discovery on it)"
            )
        raw.append((host, sockets, cores, threads, gres, int(hv["ansible_memtotal_mb"])))
    shape_mem = {}
    for _, sockets, cores, threads, gres, mem in raw:
        key = (sockets, cores, threads, gres)
        shape_mem[key] = min(mem, shape_mem.get(key, mem))
    nodes = []
    for host, sockets, cores, threads, gres, _ in raw:
        memtotal = shape_mem[(sockets, cores, threads, gres)]
        step = real_memory_step(memtotal, res["mem_step_mb"])
        real = (memtotal // step) * step or memtotal
        spec_mem = min(max(res["mem_min_mb"], real * res["mem_pct"] // 100), real // 2)
        gpus = _gpu_count(gres)
        spec_cores = max(0, min(res["cores"], sockets * cores - max(gpus, 1)))
        node = {
            "NodeName": host.split(".", 1)[0],
            "CPUs": sockets * cores * threads,
            "Sockets": sockets,
            "CoresPerSocket": cores,
            "ThreadsPerCore": threads,
            "RealMemory": real,
            "MemSpecLimit": spec_mem or None,
            "CoreSpecCount": spec_cores or None,
        }
        if gres:
            node["Gres"] = gres
            features = _gpu_types(gres)
            if features:
                node["Features"] = ",".join(features)
        node.update((extra or {}).get(host, {}))
        nodes.append(node)
    return nodes


def _int_attr(node, key, default=0):
    value = node.get(key)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SlurmConfDataError(
            f"variable slurm_common_nodes: node {node.get('NodeName')} has {key}={value!r}, not a number"
        ) from None


def per_gpu_defaults(nodes):
    """DefCpuPerGPU and DefMemPerGPU that fit every GPU node of `nodes` (NodeName dicts).

    Per node: the CPUs left after CoreSpecCount, in whole cores, and the memory left after
    MemSpecLimit, shared by its GPUs; the cluster value is the smallest, so a default GPU job
    fits on every node and a node's GPUs can all run default jobs at once. Without GPU nodes
    both are None (unset).
    """
    cpus = mems = None
    for node in nodes:
        gpus = _gpu_count(node.get("Gres"))
        if not gpus:
            continue
        threads = max(_int_attr(node, "ThreadsPerCore", 1), 1)
        total_cpus = _int_attr(node, "CPUs") or (
            _int_attr(node, "Sockets", 1) * _int_attr(node, "CoresPerSocket", 1) * threads
        )
        free_cpus = total_cpus - _int_attr(node, "CoreSpecCount") * threads
        per_cpu = max((free_cpus // gpus) // threads * threads, 1)
        free_mem = _int_attr(node, "RealMemory", 1) - _int_attr(node, "MemSpecLimit")
        per_mem = max(free_mem // gpus, 1)
        cpus = per_cpu if cpus is None else min(cpus, per_cpu)
        mems = per_mem if mems is None else min(mems, per_mem)
    return {"DefCpuPerGPU": cpus, "DefMemPerGPU": mems}


_MEM_DEFAULTS = ("DefMemPerCPU", "DefMemPerNode", "DefMemPerGPU")


def resolve_mem_defaults(config):
    """Keep slurm.conf's memory defaults consistent: Slurm takes one of DefMemPerCPU, DefMemPerNode
    and DefMemPerGPU (slurm.conf(5): mutually exclusive).

    A site that sets DefMemPerCPU or DefMemPerNode chooses it over the derived DefMemPerGPU, which
    is then left out; setting DefMemPerCPU and DefMemPerNode together is an error.
    """
    out = dict(config)
    chosen = [k for k in ("DefMemPerCPU", "DefMemPerNode") if out.get(k) is not None]
    if len(chosen) > 1:
        raise SlurmConfDataError(
            "variable slurm_common_config_extra: DefMemPerCPU and DefMemPerNode are both set; "
            "slurm.conf takes only one of DefMemPerCPU, DefMemPerNode and DefMemPerGPU"
        )
    if chosen:
        out["DefMemPerGPU"] = None
    return out


def task_plugins(slurm_version):
    """TaskPlugin in the order slurm.conf(5) recommends for the version.

    The 22.05 and 23.02.0 pages say task/affinity,task/cgroup; from 23.02.7 (and 23.11, 24.11) the
    pages say task/cgroup,task/affinity.
    """
    if version_tuple(slurm_version) < (23, 2, 7):
        return "task/affinity,task/cgroup"
    return "task/cgroup,task/affinity"


def host_attr_map(hosts, hostvars, variable):
    """{short host name: value} for hosts that set `variable` (e.g. cluster_leaf_switch)."""
    out = {}
    for host in hosts:
        hv = hostvars[host]  # one lookup: each merges the host's variables
        value = hv.get(variable) if hasattr(hv, "get") else None
        if value not in (None, ""):
            out[host.split(".", 1)[0]] = value
    return out
