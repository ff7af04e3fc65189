"""Filters over the Slurm accounting policy (module_utils/slurm_accounting.py)."""

from ansible.module_utils.slurm_accounting import validate


class FilterModule:
    def filters(self):
        return {"accounting_policy_errors": validate}
