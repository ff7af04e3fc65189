"""Filters that classify Slurm configuration changes: names mapped to module_utils/slurm_change.py.

{{ old_text | slurm_conf_change(new_text, '23.02.7') }}           {action, reasons, daemons}
{{ 'gres.conf' | slurm_file_change(old_text, new_text, v) }}      same, for any of the files
{{ slurm_config_result.changes | slurm_apply_plan(v, daemons) }}  what this host does: {action, restart, order, reasons}
{{ slurm_config_result.changes | slurm_conf_changes(v) }}         the whole change: {action, daemons, order, reasons,
                                                                  guards, needs_no_jobs}
{{ whole_change | slurm_needs_no_jobs_refusals(squeue_result) }}  why the guarded changes cannot go now ([]: they can)
{{ slurm_conf_text | slurm_conf_unknown_keys(v, {'globals': var}) }}  keys slurm.conf(5) of v does not document
{{ '24.11.5' | slurm_defunct_settings }}                         {file: {key: reason}} templates must not render
{{ '24.11.5' | slurm_topology_plugin('block') }}                  topology/block (Slurm >= 24.05)
{{ 'gpu02' | slurm_kept_gpu_report(slurm_text, gres_text) }}      a held node's Gres= and gres.conf lines in place
"""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.hostlist import HostlistError
from ansible.module_utils.slurm_change import (
    SlurmConfError,
    apply_plan,
    classify_change,
    classify_changes,
    classify_file_change,
    defunct_settings,
    kept_gpu_report,
    needs_no_jobs_refusals,
    topology_plugin,
    unknown_keys,
)


class FilterModule:
    def filters(self):
        return filter_map(
            {
                "slurm_conf_change": classify_change,
                "slurm_file_change": classify_file_change,
                "slurm_apply_plan": apply_plan,
                "slurm_conf_changes": classify_changes,
                "slurm_needs_no_jobs_refusals": needs_no_jobs_refusals,
                "slurm_conf_unknown_keys": unknown_keys,
                "slurm_defunct_settings": defunct_settings,
                "slurm_topology_plugin": topology_plugin,
                "slurm_kept_gpu_report": kept_gpu_report,
            },
            (SlurmConfError, HostlistError),
        )
