"""Preflight filters: inventory validation that names the host and the variable."""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.inventory_check import inventory_errors
from ansible.module_utils.slurm_topology import block_errors


def preflight_inventory_errors(hostvars, groups, rules):
    """Return the list of inventory errors (empty when the inventory is sound)."""
    return inventory_errors(hostvars, groups, rules)


def preflight_slurm_block_errors(
    host_block,
    block_sizes,
    slurm_version,
    block_order=None,
    block_var="cluster_leaf_switch",
    sizes_var="slurm_common_topology_block_sizes",
):
    """topology/block errors (version, base block size, BlockSizes steps), each naming the variable."""
    return block_errors(host_block, block_sizes, slurm_version, block_order, block_var=block_var, sizes_var=sizes_var)


class FilterModule:
    def filters(self):
        return {
            "preflight_inventory_errors": preflight_inventory_errors,
            "preflight_slurm_block_errors": preflight_slurm_block_errors,
        }
