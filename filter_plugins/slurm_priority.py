"""Filters over the Slurm job priority data (module_utils/slurm_priority.py)."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.slurm_priority import SlurmPriorityError, priority_config, priority_conflicts, priority_errors


class FilterModule:
    def filters(self):
        return filter_map(
            {
                "slurm_priority_errors": priority_errors,
                "slurm_priority_config": priority_config,
                "slurm_priority_conflicts": priority_conflicts,
            },
            (SlurmPriorityError,),
            prefix=False,
        )
