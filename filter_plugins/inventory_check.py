"""Filters for preflight's inventory validation: names mapped to module_utils/inventory_check.py."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.inventory_check import gpu_count_majority_error, inventory_errors


class FilterModule:
    def filters(self):
        return {
            "preflight_inventory_errors": inventory_errors,
            "gpu_count_majority_error": gpu_count_majority_error,
        }
