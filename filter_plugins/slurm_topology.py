"""Filters for topology.conf: names mapped to module_utils/slurm_topology.py.

{{ host_leaf | slurm_topology_conf('topology/tree') }}            topology.conf
{{ 'MF0;leaf1:MQM8700/U1' | slurm_safe_name }}                    MF0-leaf1-MQM8700-U1-h...
{{ host_block | preflight_slurm_block_errors(sizes, version) }}   topology/block errors, each naming the variable
"""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.hostlist import HostlistError
from ansible.module_utils.slurm_change import SlurmConfError
from ansible.module_utils.slurm_topology import TopologyError, block_errors, slurm_safe_name, topology_conf


class FilterModule:
    def filters(self):
        return filter_map(
            {
                "slurm_topology_conf": topology_conf,
                "slurm_safe_name": slurm_safe_name,
                "preflight_slurm_block_errors": block_errors,
            },
            (TopologyError, SlurmConfError, HostlistError),
        )
