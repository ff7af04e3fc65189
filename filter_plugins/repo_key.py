"""Repository key filters: the preflight's check of the signing-key pins the inventory gives or lacks."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.repo_key import inventory_pin_errors


def repo_key_pin_errors(hostvars, hosts):
    """Errors of every host's repository key pins (module_utils/repo_key.py inventory_pin_errors)."""
    return inventory_pin_errors(dict(hostvars), list(hosts))


class FilterModule:
    def filters(self):
        return {"repo_key_pin_errors": repo_key_pin_errors}
