"""Filters for the munge key following the pool: names mapped to module_utils/pool_munge.py."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.pool_munge import (
    MungePoolError,
    join_decision,
    keyless_nodes,
    park_decision,
    probe_view,
)


def probe_views(results):
    """{host: probe_view} from a looped command's results (each item a host), for park_decision."""
    return {r["item"]: probe_view(r.get("stdout", "")) for r in results if not r.get("failed") and "stdout" in r}


def probe_results(results):
    """{host: host_state_info result} from a looped host_state_info's results (each item a host)."""
    return {r["item"]: r for r in results if not r.get("failed") and "paths" in r}


class FilterModule:
    def filters(self):
        return filter_map({
            "pool_munge_keyless": keyless_nodes,
            "pool_munge_probes": probe_views,
            "pool_munge_states": probe_results,
            "pool_munge_park": park_decision,
            "pool_munge_join": join_decision,
        }, (MungePoolError, KeyError, TypeError))
