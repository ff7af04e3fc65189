"""Filters for the pool planner and executor: names mapped to module_utils/pool_live.py and node_reason.py."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.node_reason import make_reason
from ansible.module_utils.pool_live import (
    merge_k8s_info,
    partition_nodes_after,
    planner_nodes_from_hostvars,
    unfinished_moves,
)
from ansible.module_utils.pool_plan import PlanError, checked_plan


class FilterModule:
    def filters(self):
        return {
            "pool_planner_nodes": planner_nodes_from_hostvars,
            "pool_reason": make_reason,
            "pool_partition_changes": partition_nodes_after,
            "pool_unfinished_moves": unfinished_moves,
            "pool_merge_k8s": merge_k8s_info,
            # The pool_plan module's result, computed in the controller (no module run on localhost).
            "pool_plan": as_filter(checked_plan, PlanError, prefix=False),
        }
