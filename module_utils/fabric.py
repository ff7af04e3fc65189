# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One fabric model for both schedulers, and everything derived from it.

A fabric is a plain dict, built from the inventory (:func:`from_inventory`) or from an
``ibnetdiscover`` capture (:func:`from_ibnetdiscover`)::

    {"levels": ["spine", "leaf"],                        # top first; "spine" only when there is one
     "switches": {"leaf1": {"level": "leaf", "parent": "spine1"},
                  "spine1": {"level": "spine", "parent": None}},
     "nodes": {"gpu01": "leaf1", ...}}                   # host -> leaf switch

Pure functions derive from it, so the Slurm and the Kubernetes pool describe the same tree:

* :func:`slurm_topology` - topology.conf through :mod:`slurm_topology` (tree or block); for a
  fabric without spines it is exactly ``topology_conf(host_leaf, ...)``, so existing output stays.
* :func:`node_labels` - ``{host: {"gpufleet.io/spine": v, "gpufleet.io/leaf": v}}``; values obey
  the Kubernetes label value rule (:func:`label_value`).
* :func:`kueue_topology` - a Kueue ``Topology`` whose levels are those label keys (top first),
  with ``kubernetes.io/hostname`` as the lowest level (Kueue's rule: only there).
* :func:`volcano_hypernodes` - one Volcano ``HyperNode`` per switch: leaves are tier 1 and select
  their nodes by the leaf label (so a node that leaves the pool, and loses the label, leaves the
  HyperNode); spines are tier 2 and list their leaves' HyperNodes.
"""

import re

from ansible.module_utils.ibnetdiscover import IbnetdiscoverError, leaf_of, spines, switch_parents
from ansible.module_utils.slurm_topology import letters_hash, topology_conf

LABEL_PREFIX = "gpufleet.io/"
HOSTNAME_LABEL = "kubernetes.io/hostname"
LEVELS = ("spine", "leaf")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_LABEL_VALUE = 63
MAX_OBJECT_NAME = 253


class FabricError(ValueError):
    """Fabric data that cannot describe one tree."""


def label_value(name):
    """A Kubernetes label value for a switch name, stable and collision-free.

    Valid values (at most 63 characters of ``[A-Za-z0-9._-]``, alphanumeric at both ends) are
    kept. Others have every other character replaced by ``-``, are trimmed and get ``-h`` plus an
    8-letter hash of the original, so two names that clean up alike still differ:
    ``"MF0;leaf1:MQM8700/U1"`` -> ``"MF0-leaf1-MQM8700-U1-h<hash>"``.
    """
    name = str(name)
    if name and len(name) <= MAX_LABEL_VALUE and _LABEL_VALUE.match(name):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name)
    cleaned = re.sub(r"-{2,}", "-", cleaned).strip("-_.")[: MAX_LABEL_VALUE - 10].strip("-_.") or "sw"
    return f"{cleaned}-h{letters_hash(name)}"


def object_name(name, prefix=""):
    """A DNS-1123 subdomain name (lowercase) for an object named after a switch, collision-free."""
    name = str(name)
    full = f"{prefix}{name}"
    if len(full) <= MAX_OBJECT_NAME and _DNS_SUBDOMAIN.match(full):
        return full
    cleaned = re.sub(r"[^a-z0-9.-]+", "-", full.lower())
    cleaned = re.sub(r"-{2,}", "-", cleaned).strip("-.")[: MAX_OBJECT_NAME - 10].strip("-.") or "sw"
    return f"{cleaned}-h{letters_hash(name)}"


def _unique(names, func, what):
    mapping, taken = {}, {}
    for name in sorted(names):
        safe = func(name)
        if safe in taken and taken[safe] != name:
            raise FabricError(f"switch names {taken[safe]!r} and {name!r} both become the {what} {safe!r}")
        taken[safe] = name
        mapping[name] = safe
    return mapping


def _build(host_leaf, leaf_spine):
    nodes = {}
    for host, leaf in sorted((host_leaf or {}).items()):
        if leaf is None or str(leaf).strip() == "":
            raise FabricError(f"host {host}: cluster_leaf_switch is empty")
        nodes[str(host)] = str(leaf)
    leaves = set(nodes.values())
    switches = {leaf: {"level": "leaf", "parent": None} for leaf in leaves}
    for leaf, spine in sorted((leaf_spine or {}).items()):
        leaf, spine = str(leaf), str(spine)
        if leaf not in leaves:
            continue
        if spine in leaves:
            raise FabricError(f"switch {spine!r} is both a leaf and a spine")
        if not spine.strip():
            raise FabricError(f"cluster_leaf_spine: leaf {leaf} has an empty spine")
        switches[leaf]["parent"] = spine
        switches.setdefault(spine, {"level": "spine", "parent": None})
    levels = [lvl for lvl in LEVELS if any(s["level"] == lvl for s in switches.values())]
    return {"levels": levels, "switches": dict(sorted(switches.items())), "nodes": nodes}


def from_inventory(host_leaf, leaf_spine=None):
    """Fabric from ``{host: cluster_leaf_switch}`` and the optional ``{leaf: spine}`` (``cluster_leaf_spine``).

    Leaves without a spine stay top-level (Slurm joins them under its root switch).
    """
    return _build(host_leaf, leaf_spine)


def from_hostvars(hosts, hostvars, leaf_spine=None, leaf_var="cluster_leaf_switch"):
    """Fabric of the ``hosts`` that set ``leaf_var`` (others are left out: they have no place in it).

    ``hostvars`` maps host -> its variables (Ansible's ``hostvars``); ``leaf_spine`` is
    ``cluster_leaf_spine``. A value that is not a string fails naming the host and the variable.
    """
    host_leaf = {}
    for host in hosts or []:
        leaf = (hostvars.get(host) or {}).get(leaf_var)
        if leaf is None:
            continue
        if not isinstance(leaf, str):
            raise FabricError(f"host {host}: {leaf_var} must be a switch name, not {leaf!r}")
        host_leaf[host] = leaf
    if leaf_spine is not None and not isinstance(leaf_spine, dict):
        raise FabricError(f"cluster_leaf_spine must map leaf switch -> spine switch, not {leaf_spine!r}")
    return _build(host_leaf, leaf_spine)


def from_ibnetdiscover(parsed, host_names=None):
    """Fabric from :func:`ibnetdiscover.parse_ibnetdiscover`'s result.

    Hosts come from the CA NodeDescriptions (``leaf_of``); ``host_names`` (``{CA GUID: host}``)
    names CAs whose description is not ``"<host> <device>"``. A leaf cabled to several spines
    (a fat tree) gets one parent named after all of them, ``"spineA+spineB"``, so leaves that
    share the same spines share a parent. Raises :class:`FabricError` on a capture with no
    switch or no host.
    """
    try:
        host_leaf = leaf_of(parsed)
    except IbnetdiscoverError as exc:
        raise FabricError(str(exc)) from exc
    names = {sw["guid"]: sw["name"] for sw in parsed["switches"]}
    guid_host = {str(k).lower().removeprefix("0x"): v for k, v in (host_names or {}).items()}
    for sw in parsed["switches"]:
        for port in sw["ports"]:
            host = guid_host.get(port["remote_guid"])
            if port["remote_kind"] == "ca" and host and host not in host_leaf:
                host_leaf[host] = names[sw["guid"]]
    if not host_leaf:
        raise FabricError("ibnetdiscover: no CA has a host name; pass host_names {CA GUID: host}")
    spine_names = set(spines(parsed))
    leaf_spine = {
        leaf: "+".join(ups) for leaf, ups in switch_parents(parsed).items() if ups and leaf not in spine_names
    }
    return _build(host_leaf, leaf_spine)


def leaf_parent(fabric):
    """``{leaf: spine}`` of the leaves that have one."""
    return {s: d["parent"] for s, d in fabric["switches"].items() if d["level"] == "leaf" and d["parent"]}


def slurm_topology(fabric, plugin="topology/tree", root="root", block_sizes=None, block_order=None):
    """topology.conf text: the tree of leaves (and spines), or the leaves as blocks."""
    return topology_conf(
        fabric["nodes"], plugin, leaf_parent=leaf_parent(fabric) or None, root=root,
        block_sizes=block_sizes, block_order=block_order,
    )


def label_key(level, prefix=LABEL_PREFIX):
    """``gpufleet.io/<level>``."""
    return f"{prefix}{level}"


def node_labels(fabric, prefix=LABEL_PREFIX):
    """``{host: {label key: value}}`` for every level of the fabric (a leaf without spine: no spine label)."""
    safe = _unique(fabric["switches"], label_value, "label value")
    out = {}
    for host, leaf in fabric["nodes"].items():
        labels = {}
        switch = leaf
        while switch is not None:
            info = fabric["switches"][switch]
            labels[label_key(info["level"], prefix)] = safe[switch]
            switch = info["parent"]
        out[host] = dict(sorted(labels.items()))
    return out


def label_keys(fabric, prefix=LABEL_PREFIX):
    """The label keys of the fabric's levels, top first."""
    return [label_key(level, prefix) for level in fabric["levels"]]


def kueue_topology(fabric, name, api_version="kueue.x-k8s.io/v1beta2", hostname_level=True, prefix=LABEL_PREFIX):
    """A Kueue ``Topology`` with one level per fabric level, top first, then ``kubernetes.io/hostname``."""
    levels = [{"nodeLabel": key} for key in label_keys(fabric, prefix)]
    if hostname_level:
        levels.append({"nodeLabel": HOSTNAME_LABEL})
    return {"apiVersion": api_version, "kind": "Topology", "metadata": {"name": name}, "spec": {"levels": levels}}


def volcano_hypernodes(fabric, api_version="topology.volcano.sh/v1alpha1", name_prefix="", prefix=LABEL_PREFIX):
    """One ``HyperNode`` per switch, leaves at tier 1 and spines at tier 2, sorted by tier then name.

    A leaf selects its members by the leaf label (``labelMatch``), so only nodes that carry it, the
    Kubernetes pool's, are in it; a spine lists its leaves' HyperNodes by name (``exactMatch``).
    """
    labels = _unique(fabric["switches"], label_value, "label value")
    names = _unique(fabric["switches"], lambda s: object_name(s, name_prefix), "HyperNode name")
    tiers = {"leaf": 1, "spine": 2}
    docs = []
    for switch, info in fabric["switches"].items():
        if info["level"] == "leaf":
            members = [{
                "type": "Node",
                "selector": {"labelMatch": {"matchLabels": {label_key("leaf", prefix): labels[switch]}}},
            }]
        else:
            children = sorted(names[s] for s, d in fabric["switches"].items() if d["parent"] == switch)
            members = [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
        docs.append({
            "apiVersion": api_version,
            "kind": "HyperNode",
            "metadata": {"name": names[switch], "labels": {label_key("level", prefix): info["level"]}},
            "spec": {"tier": tiers[info["level"]], "tierName": info["level"], "members": members},
        })
    return sorted(docs, key=lambda d: (d["spec"]["tier"], d["metadata"]["name"]))
