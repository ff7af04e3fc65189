# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jinja filters for Slurm configuration built from discovered facts.

{{ nvidia_gpu_info.gpus | slurm_gres_conf }}                     gres.conf for one node
{{ gpus_by_host | slurm_gres_conf_cluster }}                     one gres.conf, NodeName= folded
{{ nvidia_gpu_info.gpus | slurm_gres_node }}                     gpu:h100:8 for NodeName Gres=
{{ host_leaf | slurm_topology_conf('topology/tree') }}           topology.conf
{{ old_text | slurm_conf_change(new_text, '23.02.7') }}          {action, reasons, daemons}
{{ old_text | slurm_file_change(new_text, 'gres.conf', v) }}     same, for other files
{{ slurm_config_result.changes | slurm_apply_plan(v, daemons) }}  what this host does: {action, restart, order, reasons}
{{ slurm_config_result.changes | slurm_conf_changes(v) }}        the whole change: {action, daemons, order, reasons}
{{ '24.11.5' | slurm_defunct_settings }}                        {file: {key: reason}} templates must not render
{{ '24.11.5' | slurm_topology_plugin('block') }}                 topology/block (Slurm >= 24.05)
{{ 'MF0;leaf1:MQM8700/U1' | slurm_safe_name }}                   MF0-leaf1-MQM8700-U1-h...
{{ ibnetdiscover_stdout | ibnetdiscover_leaf_of }}               {host: leaf switch}
"""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.gres import gres_conf, gres_conf_cluster, gres_node_string
from ansible.module_utils.hostlist import HostlistError
from ansible.module_utils.ibnetdiscover import IbnetdiscoverError, leaf_of, parse_ibnetdiscover
from ansible.module_utils.slurm_change import (
    SlurmConfError,
    classify_change,
    classify_changes,
    classify_file_change,
    defunct_settings,
    plan_apply,
    topology_plugin,
)
from ansible.module_utils.slurm_topology import TopologyError, slurm_safe_name, topology_conf

_ERRORS = (HostlistError, IbnetdiscoverError, SlurmConfError, TopologyError)


def slurm_gres_conf(gpus, autodetect=False, node_name=None, cores=True, links=True):
    """gres.conf text for one node's ``nvidia_gpu_info.gpus``."""
    return gres_conf(gpus, autodetect=autodetect, node_name=node_name, cores=cores, links=links)


def slurm_gres_conf_cluster(gpus_by_host, autodetect=False, cores=True, links=True):
    """One gres.conf for ``{host: gpus}``; identical nodes share lines."""
    return gres_conf_cluster(gpus_by_host, autodetect=autodetect, cores=cores, links=links)


def slurm_gres_node(gpus):
    """``Gres=`` value for a NodeName line: ``gpu:h100:8``."""
    return gres_node_string(gpus)


def slurm_topology_conf(
    host_switch, plugin="topology/tree", leaf_parent=None, root="root", block_sizes=None, block_order=None
):
    """topology.conf text from ``{host: leaf}`` (tree) or ``{host: block}`` (block, fabric order)."""
    return topology_conf(
        host_switch, plugin, leaf_parent=leaf_parent, root=root, block_sizes=block_sizes, block_order=block_order
    )


def slurm_conf_change(old_text, new_text, slurm_version):
    """Classify a slurm.conf change: ``{"action", "reasons", "daemons"}``."""
    return classify_change(old_text, new_text, slurm_version)


def slurm_file_change(old_text, new_text, filename, slurm_version):
    """Classify a change of slurm.conf, gres.conf, topology.conf or cgroup.conf."""
    return classify_file_change(filename, old_text, new_text, slurm_version)


def slurm_apply_plan(changes, slurm_version, daemons):
    """Classify each ``{name, before, after}`` change and merge them into what one host does."""
    results = [classify_file_change(c["name"], c["before"], c["after"], slurm_version) for c in changes]
    return plan_apply(results, list(daemons))


def slurm_conf_changes(changes, slurm_version):
    """Classify all ``{name, before, after}`` changes of one run together: ``{action, daemons, order, reasons}``."""
    return classify_changes(changes, slurm_version)


def slurm_defunct_settings(slurm_version):
    """``{file: {key: reason}}``: settings the templates must not render on this Slurm version."""
    return defunct_settings(slurm_version)


def slurm_topology_plugin(slurm_version, prefer="tree"):
    """``topology/tree``, or ``topology/block`` on Slurm >= 24.05 when preferred."""
    return topology_plugin(slurm_version, prefer)


def ibnetdiscover_leaf_of(text, strict=True):
    """``{host: leaf switch name}`` from ibnetdiscover output (errors on a switchless capture)."""
    return leaf_of(parse_ibnetdiscover(text), strict=strict)


def _wrap(func):
    return as_filter(func, _ERRORS)


class FilterModule:
    """Slurm configuration filters."""

    def filters(self):
        return {
            f.__name__: _wrap(f)
            for f in (
                slurm_gres_conf,
                slurm_gres_conf_cluster,
                slurm_gres_node,
                slurm_topology_conf,
                slurm_conf_change,
                slurm_file_change,
                slurm_apply_plan,
                slurm_conf_changes,
                slurm_defunct_settings,
                slurm_topology_plugin,
                slurm_safe_name,
                ibnetdiscover_leaf_of,
            )
        }
