"""Filters for the health_gate role's rows, pairs, verdicts and Slurm actions: names mapped to
module_utils/gate_rows.py (the fabric gates' decision to module_utils/gate_fabric.py, the pair reservations' to
module_utils/gate_resv.py)."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.gate_fabric import fabric_defaults, fabric_nodes, fabric_pair_gdr, fabric_switch
from ansible.module_utils.gate_resv import reservation_minutes, reservation_name, stale_gate_holds_from
from ansible.module_utils.gate_rows import (
    gate_adopt_drains,
    gate_gpu_reports,
    gate_pair_profile,
    gate_pair_rows,
    gate_pairs,
    gate_pass_results,
    gate_passing,
    gate_reason_detail,
    gate_row,
    gate_slurm_actions,
    gate_table,
    gate_tcp_result,
    gate_verdict,
)


class FilterModule:
    def filters(self):
        return {
            "gate_adopt_drains": gate_adopt_drains,
            "gate_fabric": fabric_defaults,
            "gate_fabric_nodes": fabric_nodes,
            "gate_fabric_pair_gdr": fabric_pair_gdr,
            "gate_fabric_switch": fabric_switch,
            "gate_gpu_reports": gate_gpu_reports,
            "gate_pair_profile": gate_pair_profile,
            "gate_pair_rows": gate_pair_rows,
            "gate_resv_minutes": reservation_minutes,
            "gate_resv_name": reservation_name,
            "gate_stale_holds": stale_gate_holds_from,
            "gate_pairs": gate_pairs,
            "gate_pass_results": gate_pass_results,
            "gate_passing": gate_passing,
            "gate_reason_detail": gate_reason_detail,
            "gate_row": gate_row,
            "gate_slurm_actions": gate_slurm_actions,
            "gate_table": gate_table,
            "gate_tcp_result": gate_tcp_result,
            "gate_verdict": gate_verdict,
        }
