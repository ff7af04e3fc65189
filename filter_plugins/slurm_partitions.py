"""Filters over partitions selected by node facts (module_utils/slurm_partitions.py)."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.slurm_partitions import SlurmPartitionError, node_facts, partition_entities, partition_errors


class FilterModule:
    def filters(self):
        return filter_map(
            {
                "slurm_partition_node_facts": node_facts,
                "slurm_partition_errors": partition_errors,
                "slurm_partition_entities": partition_entities,
            },
            (SlurmPartitionError,),
            prefix=False,
        )
