"""Filter of the k8s_client role: which Python kubernetes client the first server gets."""

import os

import ansible.module_utils
from ansible.errors import AnsibleFilterError

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.k8s_client import apt_candidate, client_plan


def k8s_client_plan(policy_text, method, minimum, host, venv):
    """``client_plan`` from the text of ``apt-cache policy python3-kubernetes``; a refusal fails the task."""
    try:
        return client_plan(method, apt_candidate(policy_text), minimum, host, venv)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"k8s_client_plan": k8s_client_plan}
