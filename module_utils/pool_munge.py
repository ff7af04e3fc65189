"""The munge key follows the pool (issue 36, finding 7): which GPU nodes hold the Slurm cluster's munge key.

Every host that holds the key can make credentials for any uid towards slurmctld and slurmdbd. A node in the
Kubernetes pool runs privileged operator pods and untrusted containers, so it holds no key: the pool executor
stops munged and removes the key once the node has left Slurm (``park_decision``), and gives the key back,
munged running, before slurmd starts on a node that joins Slurm (``join_decision``). Site's munge play leaves
out the nodes outside Slurm (``keyless_nodes``), so no other path puts the key back.

Pure functions on what the pool planner and the executor read live (slurm_node_info's node views, the plan's
targets, a read-only probe of each node); docs/pools.md "The munge key follows the pool".
"""

from __future__ import annotations

SLURM = "slurm"
K8S = "k8s"
# Slurm states in which a node still runs work (jobs, or their end).
_WORKING = frozenset({"ALLOCATED", "MIXED", "COMPLETING", "DRAINING"})


class MungePoolError(ValueError):
    """Input the munge decisions do not understand: they refuse instead of guessing."""


def keyless_nodes(hosts, views, targets):
    """The GPU nodes site.yml's munge play leaves out: those outside Slurm that this run does not place in it.

    ``hosts``: the GPU nodes; ``views``: the planner's live views ({host: node_view}, empty for a fresh fleet);
    ``targets``: the plan's {host: pool}. A node holds the key when it is in a Slurm partition now (its slurmd
    may run jobs), or when the plan puts it in Slurm and it is not in the Kubernetes pool now (a fresh node,
    or one the toolkit already holds for Slurm). A node in the Kubernetes pool (parked, or running pods) gets
    the key only from the pool executor, once it has left Kubernetes and before its slurmd starts; a fresh
    node placed straight into Kubernetes never gets it.

    Work at risk: none: it only leaves nodes out of the munge play; nothing is stopped or removed here.
    """
    out = []
    for host in sorted(hosts):
        view = views.get(host) or {}
        if view.get("in_partition"):
            continue
        if targets.get(host) == SLURM and view.get("pool") != K8S:
            continue
        out.append(host)
    return out


def probe_view(stdout):
    """A node's munge probe (the executor's read-only shell probe, one ``key=value`` per line) as a dict:
    ``{slurmd, steps, unit_active, unit_enabled, key_files}`` (the unit: munge). Unreadable output raises
    MungePoolError."""
    fields = {}
    for line in (stdout or "").splitlines():
        if "=" not in line:
            continue
        key, value = line.split("=", 1)
        fields.setdefault(key.strip(), []).append(value.strip())
    try:
        return {
            "slurmd": fields["slurmd"][0],
            "steps": int(fields["steps"][0]),
            "unit_active": fields["unit_active"][0],
            "unit_enabled": fields["unit_enabled"][0],
            "key_files": sorted(v for v in fields.get("key_file", []) if v),
        }
    except (KeyError, IndexError, ValueError) as exc:
        raise MungePoolError(f"cannot read the node's munge probe ({exc}): {stdout!r}") from exc


def park_decision(targets, slurm_nodes, probes):
    """Which nodes the plan puts in Kubernetes may lose munged and the key now, from a live read.

    ``targets``: the plan's {host: pool}; ``slurm_nodes``: slurm_node_info's ``nodes`` read after the moves;
    ``probes``: {host: probe_view(...)} of those nodes. Returns ``{park: [...], parked: [...], keep: {host:
    why}}``: ``park`` are the nodes to stop and disable munged on and remove the key from, ``parked`` those
    already without key and munged, ``keep`` the nodes that keep them for now and why.

    Work at risk: the jobs of a node still in Slurm (munged is how its slurmd and job steps authenticate).
    Guarded: only a node Slurm has out of every partition, with no job (not ALLOCATED, MIXED, COMPLETING or
    DRAINING), drained with the toolkit's move reason to Kubernetes, whose own probe says slurmd is not active
    and no slurmstepd runs, is parked; a node Slurm or the probe does not answer for keeps its key (refused,
    named in ``keep``). The executor's park command checks slurmd and slurmstepd again on the node itself
    before it stops munged.
    """
    park, parked, keep = [], [], {}
    for host in sorted(h for h, pool in targets.items() if pool == K8S):
        node = slurm_nodes.get(host)
        probe = probes.get(host)
        ours = (node or {}).get("ours") or {}
        if node is None:
            keep[host] = "Slurm did not answer for it: not judged, its munge key stays"
        elif node.get("in_partition") or node.get("busy") or node.get("state") in _WORKING:
            keep[host] = (f"still in Slurm ({node.get('state')}, partitions {node.get('partitions') or []}): "
                          "its move is not done")
        elif not (ours.get("kind") == "move" and ours.get("target") == K8S):
            keep[host] = f"not drained with the toolkit's move to k8s (reason {node.get('reason')!r})"
        elif probe is None:
            keep[host] = "its probe did not answer: not judged, its munge key stays"
        elif probe["slurmd"] not in ("inactive", "failed", "unknown"):
            keep[host] = f"slurmd is {probe['slurmd']} on it"
        elif probe["steps"] > 0:
            keep[host] = f"{probe['steps']} slurmstepd process(es) still run on it"
        elif probe["key_files"] or probe["unit_active"] == "active" or probe["unit_enabled"] == "enabled":
            park.append(host)
        else:
            parked.append(host)
    return {"park": park, "parked": parked, "keep": keep}


def join_decision(nodes, probes, want_sum):
    """What a node joining Slurm needs before its slurmd starts: ``{host: {write, start}}``.

    ``probes``: {host: host_state_info result for the key (checksum) and the munge unit}; ``want_sum``: the
    sha1 the cluster's key has (the vault's munge_key, else the key source host's). ``write``: the key is
    missing, differs, or has the wrong owner or mode; ``start``: munged is not active and enabled (or the key is
    rewritten, so munged must read it again).

    Work at risk: none: it decides only what the join gives the node; the join's slurmd waits for it.
    """
    if not want_sum:
        raise MungePoolError("the cluster's munge key is unknown (no munge_key and no key on its source host): "
                             "a joining node cannot get it, so slurmd is not started")
    out = {}
    for host in sorted(nodes):
        probe = probes.get(host)
        if probe is None:
            raise MungePoolError(f"{host}: its munge probe did not answer")
        path, info = next(iter(probe["paths"].items()))
        unit = probe["units"]["munge"]
        write = (not info.get("exists")) or info.get("checksum") != want_sum or path in probe.get("paths_differ", [])
        start = write or not (unit.get("active") and unit.get("enabled"))
        out[host] = {"write": bool(write), "start": bool(start)}
    return out
