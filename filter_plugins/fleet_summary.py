"""Filters for the fleet_report role: the fleet summary and its renderers (logic in module_utils/fleet_summary.py)."""

import os
import time

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import as_filter
from ansible.module_utils.fleet_summary import (
    FleetSummaryError,
    build_summary,
    gate_report_inputs,
    host_facts,
    list_reports,
    newest_files,
    render_html,
    render_json,
    render_table,
)


def _guard(func):
    return as_filter(func, FleetSummaryError, prefix=False)


def fleet_summary(nodes, slurm=None, k8s=None, hosts=None, gate_reports=None, now=None, cluster="",
                  gate_reports_complete=True, verdict_field="comment"):
    """build_summary, measuring ages from the time of the call unless *now* (epoch seconds) is given."""
    return build_summary(nodes, slurm=slurm, k8s=k8s, hosts=hosts, gate_reports=gate_reports,
                         now=time.time() if now is None else float(now), cluster=cluster,
                         gate_reports_complete=gate_reports_complete, verdict_field=verdict_field)


class FilterModule:
    def filters(self):
        return {
            "fleet_gate_inputs": gate_report_inputs,
            "fleet_host_facts": host_facts,
            "fleet_summary": _guard(fleet_summary),
            "fleet_table": _guard(render_table),
            "fleet_json": _guard(render_json),
            "fleet_newest_files": newest_files,
            "fleet_list_reports": list_reports,
            "fleet_html": _guard(render_html),
        }
