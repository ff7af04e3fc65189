#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: plan which pool each GPU node belongs to (changes nothing)."""

DOCUMENTATION = r"""
---
module: pool_plan
short_description: Plan the Slurm/Kubernetes pool of each GPU node and the batches of moves
description:
  - Validates the pool policy (C(cluster_pools)) against the nodes and fails with every error at once, each
    naming the host and the variable.
  - Turns the policy, the discovered facts and the live scheduler state of each node into a target pool per
    node and an ordered list of moves in batches of at most O(policy.max_unavailable).
  - Deterministic; zero moves when the cluster already meets the policy; the fewest moves that meet it;
    keeps the nodes of one leaf switch in one pool where it can; never takes a pool's in-service nodes below
    its minimum during any batch (a node that joins adds nothing until its gate); never moves an excluded or
    held node, or a pinned node except onto its pin.
  - Fails closed, naming the node, where the policy omits a pool that has nodes, a node's pool is unknown, or
    a node takes work from both schedulers, or from one that is not its pool.
  - Planning changes nothing, so the module always reports C(changed=false). Run it once, on the controller
    (C(run_once) or C(delegate_to localhost)).
  - The logic lives in C(module_utils/pool_plan.py) and C(module_utils/pool_policy.py); see docs/pools.md.
version_added: "0.1.0"
author: gpufleet contributors
options:
  nodes:
    description:
      - One entry per GPU node, built from discovered facts and live state.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Inventory host name of the node.
        type: str
        required: true
      gpus:
        description: Number of GPUs on the node (from NVML); only used for the GPU totals.
        type: int
        default: 0
      leaf:
        description: Leaf switch the node hangs off; nodes of one leaf are kept in one pool where possible.
        type: str
      healthy:
        description: Whether the node counts as capacity. Unhealthy nodes are not moved (unless pinned).
        type: bool
        default: true
      pool:
        description: The pool the node is in now, from live state (Slurm partition, Kubernetes label); null
          when it is in none.
        type: str
      pinned:
        description: The node's C(cluster_pool_pin) host variable, if set.
        type: str
      excluded:
        description: Whether the node is in maintenance (also true when listed in O(policy.excluded)).
        type: bool
        default: false
      held:
        description:
          - Why the toolkit holds the node out of service until something finishes, from live state
            (C(module_utils/pool_live.py)) - held for its gate, held after a gate ERROR, or a maintenance a
            killed run left (C(maintenance unfinished on <node>, rerun maintain.yml)). A held node is not
            capacity and is never moved, not even onto its pin; the plan lists it in RV(held).
        type: str
      schedulers:
        description:
          - The schedulers that place work on the node now, live - C(slurm) (a serving state, no drain, in a
            partition) and C(k8s) (Ready, not cordoned, not held). A node with both, or with one that is not
            its O(nodes[].pool), fails the plan naming the node.
        type: list
        elements: str
        choices: [slurm, k8s]
        default: []
  policy:
    description:
      - The C(cluster_pools) policy. Keys C(pools) (a mapping of pool name, C(slurm) or C(k8s), to C(min) and
        C(target); a target is a node count or a fraction such as C("75%") or C(0.75) of the eligible nodes),
        C(max_unavailable) (default 1), C(drain_timeout) (seconds, default 3600) and C(excluded) (host names).
      - C(pools) must name every pool that has nodes; a pool to empty is named with C(target) 0.
    type: dict
    required: true
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
    details: Planning changes nothing; the plan itself is the preview.
notes:
  - Pure computation on the controller; runs no command.
seealso:
  - name: Node pools
    description: Policy shape, planner guarantees and the reason format.
    link: docs/pools.md
"""

EXAMPLES = r"""
- name: Plan the pools
  pool_plan:
    nodes: "{{ groups['gpu_nodes'] | map('extract', hostvars, 'pool_node') | list }}"
    policy: "{{ cluster_pools }}"
  run_once: true
  delegate_to: localhost
  register: pool_plan_result

- name: Show the plan
  ansible.builtin.debug:
    msg: "{{ pool_plan_result.summary }}"
  run_once: true

- name: Plan a first install from literal data
  pool_plan:
    nodes:
      - {name: gpu01, gpus: 8, leaf: leaf1}
      - {name: gpu02, gpus: 8, leaf: leaf1}
      - {name: gpu03, gpus: 8, leaf: leaf2, pinned: k8s}
    policy:
      pools:
        slurm: {min: 1, target: 2}
        k8s: {min: 1, target: "25%"}
      max_unavailable: 1
"""

RETURN = r"""
targets:
  description: Planned pool of every node (its current pool when it does not move; null when it has none).
  returned: success
  type: dict
  sample: {gpu01: slurm, gpu02: slurm, gpu03: k8s}
moves:
  description: Every move, in batch order.
  returned: success
  type: list
  elements: dict
  sample:
    - node: gpu03
      from: null
      to: k8s
      reason: "pinned: cluster_pool_pin=k8s"
      leaf: leaf2
      gpus: 8
      batch: 0
batches:
  description: The moves grouped into batches of at most max_unavailable, to run one batch after another.
  returned: success
  type: list
  elements: list
pools_before:
  description: Per pool, C(nodes) and C(gpus) in it now, and C(capacity_nodes)/C(capacity_gpus) counting only
    healthy, non-excluded nodes.
  returned: success
  type: dict
  sample: {slurm: {nodes: 3, gpus: 24, capacity_nodes: 3, capacity_gpus: 24}}
pools_after:
  description: The same counts once every move is done.
  returned: success
  type: dict
unassigned:
  description: Nodes in no policy pool, C(before) and C(after) the plan.
  returned: success
  type: dict
  sample: {before: 3, after: 0}
goals:
  description: Per pool the resolved C(min), C(target) (fractions resolved against the eligible nodes) and
    C(want), the count the plan aims for.
  returned: success
  type: dict
eligible:
  description: Healthy, non-excluded nodes (the base for fractional targets).
  returned: success
  type: int
held:
  description: Nodes the plan leaves alone (excluded, unhealthy, or held - for its gate, after a gate ERROR, for
    an unfinished maintenance), with the reason.
  returned: success
  type: list
  elements: dict
unmet:
  description: What the plan cannot achieve - pools short of their minimum or target, moves held back because
    they would take a pool below its minimum in service. Empty when the plan meets the policy.
  returned: success
  type: list
  elements: dict
max_unavailable:
  description: Batch size used.
  returned: success
  type: int
drain_timeout:
  description: Seconds to wait for running jobs (from the policy, default 3600), for the executor.
  returned: success
  type: int
summary:
  description: Short human table of pools before and after and the moves by batch.
  returned: success
  type: str
errors:
  description: Every validation error (host and variable named), when the policy or the nodes are invalid.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.pool_plan import PlanError, checked_plan

NODE_SPEC = {
    "name": {"type": "str", "required": True},
    "gpus": {"type": "int", "default": 0},
    "leaf": {"type": "str"},
    "healthy": {"type": "bool", "default": True},
    "pool": {"type": "str"},
    "pinned": {"type": "str"},
    "excluded": {"type": "bool", "default": False},
    "held": {"type": "str"},
    "schedulers": {"type": "list", "elements": "str", "choices": ["slurm", "k8s"], "default": []},
}


def main():
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "list", "elements": "dict", "required": True, "options": NODE_SPEC},
            "policy": {"type": "dict", "required": True},
        },
        supports_check_mode=True,
    )
    try:
        result = checked_plan(module.params["nodes"], module.params["policy"])
    except PlanError as exc:
        module.fail_json(msg=str(exc), errors=exc.errors)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
