"""Filters that hold nodes out of service until a gate admits them: names mapped to module_utils/gate_hold.py."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.gate_hold import gate_error_holds, slurm_first_start_holds, slurm_gate_pending


class FilterModule:
    def filters(self):
        return {
            "gate_error_holds": gate_error_holds,
            "slurm_first_start_holds": slurm_first_start_holds,
            "slurm_gate_pending": slurm_gate_pending,
        }
