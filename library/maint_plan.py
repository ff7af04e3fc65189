#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module: plan the waves of a rolling maintenance (changes nothing)."""

DOCUMENTATION = r"""
---
module: maint_plan
short_description: Plan the waves of a rolling maintenance across the Slurm and Kubernetes pools
description:
  - Validates the maintenance inputs (C(cluster_maintenance), C(maint_change), C(maint_nodes)) and fails with
    every error at once, each naming the variable and, where one is involved, the host.
  - Picks the nodes to maintain (O(requested), or every node whose installed packages differ from O(wanted))
    and groups them into waves of at most C(max_unavailable) nodes and each pool's maintenance share, never
    taking a pool's in-service nodes below its C(cluster_pools) minimum, with the nodes of a leaf together
    where those limits allow. Nodes an earlier run left drained for maintenance go first.
  - With O(slurm_upgrade) or O(k8s_upgrade), refuses an upgrade that skips more releases than Slurm supports
    or that skips a Kubernetes minor, and returns the documented order as RV(phases).
  - The logic lives in C(module_utils/maint_plan.py); see docs/maintenance.md.
version_added: "0.1.0"
author: gpufleet contributors
options:
  nodes:
    description: Every GPU node with its live state (the pools are counted over all of them).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Inventory host name.
        type: str
        required: true
      pool:
        description: The pool the node serves now (C(slurm), C(k8s)) or null.
        type: str
      leaf:
        description: Leaf switch of the node (C(cluster_leaf_switch)).
        type: str
      in_service:
        description: Whether the node takes work now (not drained, not down).
        type: bool
        default: true
      unfinished:
        description: Drained for maintenance by an earlier run that did not finish it.
        type: bool
        default: false
  policy:
    description: C(cluster_maintenance) (C(share), C(failure_threshold), C(max_unavailable), C(drain_timeout), C(mode));
      null takes every default.
    type: dict
  pools:
    description: C(cluster_pools), for the pool minimums and the default C(max_unavailable); null when unset.
    type: dict
  change:
    description: C(maint_change), the change to apply (C(kind) packages, reboot or tasks).
    type: dict
    required: true
  requested:
    description: The nodes to maintain; empty selects every node whose installed packages differ from O(wanted).
    type: list
    elements: str
    default: []
  wanted:
    description: Package versions the nodes must end with (C(name) to version); default the change's packages.
    type: dict
  installed:
    description: Installed packages per node (Ansible's package facts, or C(name) to version).
    type: dict
    default: {}
  slurm_upgrade:
    description: C(installed) and C(target) Slurm versions, with C(dbd) and C(controllers) host lists, for a
      Slurm upgrade.
    type: dict
  k8s_upgrade:
    description: C(installed) and C(target) Kubernetes versions, with C(control_plane) and C(workers) host
      lists, for a Kubernetes upgrade.
    type: dict
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
    details: Planning changes nothing; the plan is the preview.
notes:
  - Pure computation on the controller; runs no command.
"""

EXAMPLES = r"""
- name: Plan a package update of two nodes
  maint_plan:
    nodes:
      - {name: gpu01, pool: slurm, leaf: leaf1}
      - {name: gpu02, pool: slurm, leaf: leaf1}
      - {name: gpu03, pool: slurm, leaf: leaf2}
    policy: {share: "50%", failure_threshold: 1}
    pools: {pools: {slurm: {min: 1, target: 3}}, max_unavailable: 2}
    change: {kind: packages, packages: {libwbclient0: "2:4.17.12+dfsg-0+deb12u4"}}
  register: maint_plan_result
"""

RETURN = r"""
waves:
  description: Node names per wave, in the order to run them.
  returned: success
  type: list
  elements: list
  sample: [[gpu01], [gpu02]]
left_out:
  description: Selected nodes the plan does not maintain, with the reason.
  returned: success
  type: list
  elements: dict
pools:
  description: Per pool the nodes, those in service, the minimum, the share and the nodes one wave may take.
  returned: success
  type: dict
drift:
  description: Per selected node, the packages whose installed version differs from the wanted one.
  returned: success
  type: dict
phases:
  description: The documented upgrade order (slurmdbd, slurmctld, slurmd waves; or control plane, workers).
  returned: success
  type: list
  elements: dict
max_unavailable:
  description: Most nodes out in one wave.
  returned: success
  type: int
failure_threshold:
  description: FAIL or ERROR nodes a wave may have before the rollout stops.
  returned: success
  type: int
drain_timeout:
  description: Seconds to wait for a node's jobs.
  returned: success
  type: int
mode:
  description: How a wave's Slurm nodes stop taking jobs, C(drain) or C(reservation) (a MAINT reservation).
  returned: success
  type: str
reboot:
  description: Whether the change reboots the node.
  returned: success
  type: bool
summary:
  description: Short human lines of the plan.
  returned: success
  type: str
errors:
  description: Every validation error, when the inputs are invalid.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.maint_plan import (
    change_reboots,
    drifted,
    k8s_upgrade_errors,
    k8s_upgrade_phases,
    plan_waves,
    slurm_upgrade_errors,
    slurm_upgrade_phases,
    summary,
    validate,
)

NODE_SPEC = {
    "name": {"type": "str", "required": True},
    "pool": {"type": "str"},
    "leaf": {"type": "str"},
    "in_service": {"type": "bool", "default": True},
    "unfinished": {"type": "bool", "default": False},
}


def main():
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "list", "elements": "dict", "required": True, "options": NODE_SPEC},
            "policy": {"type": "dict"},
            "pools": {"type": "dict"},
            "change": {"type": "dict", "required": True},
            "requested": {"type": "list", "elements": "str", "default": []},
            "wanted": {"type": "dict"},
            "installed": {"type": "dict", "default": {}},
            "slurm_upgrade": {"type": "dict"},
            "k8s_upgrade": {"type": "dict"},
        },
        supports_check_mode=True,
    )
    p = module.params
    names = [n["name"] for n in p["nodes"]]
    errors = validate(p["policy"], p["pools"], p["change"], p["requested"], names)
    for key, check in (("slurm_upgrade", slurm_upgrade_errors), ("k8s_upgrade", k8s_upgrade_errors)):
        spec = p[key]
        if spec:
            try:
                errors += check(spec.get("installed"), spec.get("target"), var=f"{key}.target")
            except ValueError as exc:
                errors.append(str(exc))
    if errors:
        module.fail_json(msg="maintenance inputs are invalid:\n" + "\n".join(errors), errors=errors)
    change = p["change"]
    wanted = p["wanted"] if p["wanted"] is not None else (change.get("packages") or {})
    drift = {}
    nodes = []
    for n in p["nodes"]:
        node = dict(n)
        if p["requested"]:
            node["selected"] = n["name"] in p["requested"]
        else:
            found = drifted((p["installed"] or {}).get(n["name"]), wanted)
            node["selected"] = bool(found)
            if found:
                drift[n["name"]] = found
        nodes.append(node)
    try:
        result = plan_waves(nodes, p["policy"], p["pools"])
    except ValueError as exc:
        module.fail_json(msg=f"maintenance plan failed: {exc}", errors=[str(exc)])
    phases = []
    if p["slurm_upgrade"]:
        s = p["slurm_upgrade"]
        phases = slurm_upgrade_phases(s.get("dbd") or [], s.get("controllers") or [], names, result["waves"])
    elif p["k8s_upgrade"]:
        k = p["k8s_upgrade"]
        phases = k8s_upgrade_phases(k.get("control_plane") or [], k.get("workers") or names, result["waves"])
    module.exit_json(changed=False, drift=drift, phases=phases, reboot=change_reboots(change),
                     summary=summary(result), **result)


if __name__ == "__main__":
    main()
