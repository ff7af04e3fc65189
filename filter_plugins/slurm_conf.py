"""Filters that render slurm.conf pieces from data (logic in module_utils/slurm_conf.py)."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.errors import AnsibleFilterError
from ansible.module_utils.slurm_conf import (
    SlurmConfDataError,
    config_lines,
    entity_lines,
    host_attr_map,
    node_entities,
    nodes_from_facts,
)


def _guard(func):
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except SlurmConfDataError as exc:
            raise AnsibleFilterError(str(exc)) from exc

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


class FilterModule:
    def filters(self):
        return {
            "slurm_config_lines": _guard(config_lines),
            "slurm_entity_lines": _guard(entity_lines),
            "slurm_node_entities": _guard(node_entities),
            "slurm_nodes_from_facts": _guard(nodes_from_facts),
            "slurm_host_attr_map": _guard(host_attr_map),
        }
