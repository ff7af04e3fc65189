"""Filters for the pairwise gates' second pass and blame: names mapped to module_utils/gate.py."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.gate import blame, propose_retests


class FilterModule:
    def filters(self):
        return {"gate_retests": propose_retests, "gate_blame": blame}
