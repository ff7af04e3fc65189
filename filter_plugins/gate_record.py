"""Filters that write the gate's verdict into the fleet (Slurm node field, Node labels): module_utils/gate_record.py."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.gate_record import RecordError, k8s_labels, slurm_record_writes, verdict_record


def gate_k8s_record_labels(verdict, run_id, at):
    """The Node labels that record a node's verdict (``gate_verdict``) of run *run_id* at *at*."""
    return k8s_labels(verdict_record(verdict, run_id, at))


class FilterModule:
    def filters(self):
        return filter_map({
            "gate_k8s_record_labels": gate_k8s_record_labels,
            "gate_slurm_records": slurm_record_writes,
        }, RecordError)
