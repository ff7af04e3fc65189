"""Node-stack filters: the version lock's compatibility checks and the node-stack roles' decisions."""

import base64
import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.node_stack import (
    apt_simulate_verdict,
    driver_change_decision,
    fleet_compat_errors,
    installed_driver,
    k8s_gpu_use,
    loaded_module,
)


def node_stack_compat_errors(lock, hostvars, hosts):
    """Errors of the version lock and of every host's overrides (empty when all hold)."""
    return fleet_compat_errors(lock, dict(hostvars), list(hosts))


def node_stack_driver_decision(installed, wanted, view=None, scheduler=True, declared_drained=False, k8s=None):
    """install / keep / change / refuse for a driver version change on one node (*installed*: the
    node_stack_installed_driver result; *k8s*: node_stack_k8s_gpu_use's, none without Kubernetes)."""
    return driver_change_decision(installed or None, wanted, view, scheduler, declared_drained, k8s)


def node_stack_installed_driver(packages, manager, module=None):
    """Ansible's package facts (and the node_stack_loaded_module result) -> the installed driver {state:
    installed|none|unknown, version, packages, reason; source: module for a runfile driver}."""
    return installed_driver(packages, manager, module)


def node_stack_loaded_module(stat_result, slurp_result):
    """The registered stat and slurp of /proc/driver/nvidia/version -> the loaded kernel module {loaded:
    true|false|null, version, reason}; a failed stat is null (unknown), a failed or skipped slurp of a file
    that exists is a module whose version cannot be read."""
    stat = stat_result if isinstance(stat_result, dict) else {}
    present = None if stat.get("failed") or "stat" not in stat else bool((stat.get("stat") or {}).get("exists"))
    text = None
    slurp = slurp_result if isinstance(slurp_result, dict) else {}
    if present and not slurp.get("failed") and isinstance(slurp.get("content"), str):
        try:
            text = base64.b64decode(slurp["content"]).decode("utf-8", "replace")
        except ValueError:
            text = None
    return loaded_module(present, text)


def node_stack_k8s_gpu_use(node_result, pods_result):
    """Two registered k8s_info results (the Node, the pods bound to it) -> {read, known, pool, cordoned, gpu_pods}."""
    return k8s_gpu_use(node_result, pods_result)


def node_stack_apt_simulate(probe):
    """A registered `apt-get install --simulate` result -> {installable, reason}."""
    return apt_simulate_verdict(probe["rc"], probe.get("stdout", "") + "\n" + probe.get("stderr", ""))


class FilterModule:
    def filters(self):
        return {
            "node_stack_compat_errors": node_stack_compat_errors,
            "node_stack_driver_decision": node_stack_driver_decision,
            "node_stack_installed_driver": node_stack_installed_driver,
            "node_stack_loaded_module": node_stack_loaded_module,
            "node_stack_k8s_gpu_use": node_stack_k8s_gpu_use,
            "node_stack_apt_simulate": as_filter(node_stack_apt_simulate, (ValueError,)),
        }
