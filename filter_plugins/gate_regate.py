"""Filters of the idle re-gate (playbooks/regate.yml): module_utils/gate_regate.py."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.gate_regate import RegateError, regate_pick


class FilterModule:
    def filters(self):
        return filter_map({"gate_regate_pick": regate_pick}, RegateError, prefix=False)
