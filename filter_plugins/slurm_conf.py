"""Filters that render slurm.conf pieces from data (logic in module_utils/slurm_conf.py)."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.slurm_change import SlurmConfError
from ansible.module_utils.slurm_conf import (
    SlurmConfDataError,
    config_lines,
    entity_lines,
    host_attr_map,
    node_entities,
    nodes_from_facts,
    per_gpu_defaults,
    resolve_mem_defaults,
    task_plugins,
)


def _guard(func):
    return as_filter(func, (SlurmConfDataError, SlurmConfError), prefix=False)


class FilterModule:
    def filters(self):
        return {
            "slurm_config_lines": _guard(config_lines),
            "slurm_entity_lines": _guard(entity_lines),
            "slurm_node_entities": _guard(node_entities),
            "slurm_nodes_from_facts": _guard(nodes_from_facts),
            "slurm_host_attr_map": _guard(host_attr_map),
            "slurm_per_gpu_defaults": _guard(per_gpu_defaults),
            "slurm_resolve_mem_defaults": _guard(resolve_mem_defaults),
            "slurm_task_plugins": _guard(task_plugins),
        }
