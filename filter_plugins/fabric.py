"""Filters over the one fabric model (logic in module_utils/fabric.py).

{{ hosts | fabric_from_hostvars(hostvars, cluster_leaf_spine | default({})) }}   fabric of the hosts' leaves
{{ fabric | fabric_node_labels }}                      {host: {gpufleet.io/leaf: ..., gpufleet.io/spine: ...}}
{{ fabric | fabric_label_keys }}                       [gpufleet.io/spine, gpufleet.io/leaf] (top first)
{{ fabric | fabric_kueue_topology('gpufleet-fabric') }}  a Kueue Topology
{{ fabric | fabric_volcano_hypernodes }}               Volcano HyperNodes, one per switch
{{ fabric | fabric_slurm_topology('topology/tree', root='spine') }}  topology.conf text
"""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.fabric import (
    FabricError,
    from_hostvars,
    kueue_topology,
    label_keys,
    node_labels,
    slurm_topology,
    volcano_hypernodes,
)
from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.slurm_topology import TopologyError


def fabric_from_hostvars(hosts, hostvars, leaf_spine=None, leaf_var="cluster_leaf_switch"):
    """The fabric of ``hosts`` from their ``cluster_leaf_switch`` and the ``{leaf: spine}`` map."""
    hosts = list(hosts)
    found = {h: {leaf_var: hostvars[h].get(leaf_var)} for h in hosts if h in hostvars}
    return from_hostvars(hosts, found, leaf_spine, leaf_var)


def fabric_node_labels(fabric):
    """``{host: {label: value}}`` for every level of the fabric."""
    return node_labels(fabric)


def fabric_label_keys(fabric):
    """The fabric's node label keys, top level first."""
    return label_keys(fabric)


def fabric_kueue_topology(fabric, name, api_version="kueue.x-k8s.io/v1beta2"):
    """A Kueue Topology with the fabric's levels, then kubernetes.io/hostname."""
    return kueue_topology(fabric, name, api_version)


def fabric_volcano_hypernodes(fabric, api_version="topology.volcano.sh/v1alpha1"):
    """One Volcano HyperNode per switch of the fabric, tiered as the fabric is."""
    return volcano_hypernodes(fabric, api_version)


def fabric_slurm_topology(fabric, plugin="topology/tree", root="root", block_sizes=None, block_order=None):
    """topology.conf text of the fabric."""
    return slurm_topology(fabric, plugin, root, block_sizes, block_order)


class FilterModule:
    """Fabric filters."""

    def filters(self):
        return {
            f.__name__: as_filter(f, (FabricError, TopologyError), prefix=False)
            for f in (
                fabric_from_hostvars,
                fabric_node_labels,
                fabric_label_keys,
                fabric_kueue_topology,
                fabric_volcano_hypernodes,
                fabric_slurm_topology,
            )
        }
