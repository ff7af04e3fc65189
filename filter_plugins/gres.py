"""Filters for gres.conf and NodeName Gres= from the node's GPUs: names mapped to module_utils/gres.py.

{{ nvidia_gpu_info.gpus | slurm_gres_conf }}              gres.conf for one node
{{ gpus_by_host | slurm_gres_conf_cluster }}              one gres.conf, NodeName= folded
{{ nvidia_gpu_info.gpus | slurm_gres_node }}              gpu:h100:8 for NodeName Gres=
{{ nvidia_gpu_info.gpus | slurm_gpu_refused_fields }}     the report's fields a config line cannot hold ([]: none)
{{ nvidia_gpu_info.gpus | slurm_gpu_record_errors }}      each refused field's message, naming GPU and value
"""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.gres import (
    gpu_report_errors,
    gres_conf,
    gres_conf_cluster,
    gres_node_string,
    refused_gpu_fields,
)
from ansible.module_utils.hostlist import HostlistError


class FilterModule:
    def filters(self):
        return filter_map(
            {
                "slurm_gres_conf": gres_conf,
                "slurm_gres_conf_cluster": gres_conf_cluster,
                "slurm_gres_node": gres_node_string,
                "slurm_gpu_refused_fields": refused_gpu_fields,
                "slurm_gpu_record_errors": gpu_report_errors,
            },
            HostlistError,
        )
