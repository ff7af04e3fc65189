#!/usr/bin/python
"""Read-only: the live Slurm view of every node and partition, for the pool planner and executor."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_node_info
short_description: Read Slurm's live node and partition state
description:
  - Runs C(scontrol show node -o) and C(scontrol show partition -o) on a Slurm controller and returns
    each node's state, flags, reason, partitions and whether jobs run on it, plus its committed pool
    (see module_utils/pool_live.py) and the node list of every partition.
  - Where the controller has no Slurm configuration yet (a fresh cluster), it says so with C(fresh=true)
    and returns no nodes. Where Slurm is configured but cannot be read, it fails and says why; it never
    guesses.
  - Read-only; supports check mode.
options:
  config:
    description: slurm.conf path; its absence means a fresh cluster.
    type: path
    default: /etc/slurm/slurm.conf
  nodes:
    description: Only return these nodes (all when empty).
    type: list
    elements: str
    default: []
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Read Slurm's live state
  slurm_node_info:
  register: live
  delegate_to: "{{ groups['slurm_controller'][0] }}"
"""

RETURN = r"""
fresh:
  description: True when the controller has no slurm.conf yet (nothing to read, nothing placed).
  type: bool
  returned: always
nodes:
  description: Per node, the parsed state and the pool view (pool, healthy, admin_hold, in_partition, busy, ...),
      and the node's free-text C(comment) and C(extra) (null when unset).
  type: dict
  returned: always
partitions:
  description: Node list of every partition.
  type: dict
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.pool_live import node_view
from ansible.module_utils.slurm_state import parse_scontrol_nodes


def parse_partitions(text, expand):
    """{partition: [nodes]} from `scontrol show partition -o`; expand(hostlist) -> [names]."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("PartitionName="):
            continue
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        nodes = fields.get("Nodes", "(null)")
        out[fields["PartitionName"]] = [] if nodes in ("", "(null)") else expand(nodes)
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "config": {"type": "path", "default": "/etc/slurm/slurm.conf"},
            "nodes": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    if not os.path.exists(module.params["config"]):
        module.exit_json(changed=False, fresh=True, nodes={}, partitions={})
    scontrol = module.get_bin_path("scontrol", required=True)
    rc, out, err = module.run_command([scontrol, "show", "node", "-o"])
    if rc != 0:
        module.fail_json(msg=f"cannot read Slurm's nodes (scontrol show node -o, rc={rc}): {err.strip()}; "
                             "not guessing the pools")
    rc2, out2, err2 = module.run_command([scontrol, "show", "partition", "-o"])
    if rc2 != 0:
        module.fail_json(msg=f"cannot read Slurm's partitions (rc={rc2}): {err2.strip()}; not guessing the pools")
    def expand(hostlist):
        # Slurm's own hostlist expansion: the controller needs no extra Python library.
        rc3, names, err3 = module.run_command([scontrol, "show", "hostnames", hostlist])
        if rc3 != 0:
            raise ValueError(f"scontrol show hostnames {hostlist}: {err3.strip()}")
        return names.split()

    try:
        parsed = parse_scontrol_nodes(out)
        partitions = parse_partitions(out2, expand)
    except ValueError as exc:
        module.fail_json(msg=f"cannot parse Slurm's state: {exc}")
    wanted = set(module.params["nodes"])
    nodes = {}
    for name, node in parsed.items():
        if wanted and name not in wanted:
            continue
        view = node_view(name, node)
        view["state"] = node["state"]
        view["flags"] = sorted(node["flags"])
        # Slurm's free-text node fields: the gate's verdict record lives in one (gate_record.py).
        view["comment"] = node["comment"]
        view["extra"] = node["extra"]
        nodes[name] = view
    module.exit_json(changed=False, fresh=False, nodes=nodes, partitions=partitions)


if __name__ == "__main__":
    main()
