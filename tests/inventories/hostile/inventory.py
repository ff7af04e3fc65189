#!/usr/bin/env python3
"""Hostile and mistyped inventory values, as a dynamic inventory (a CMDB export) hands them over verbatim.

A Slurm hostlist and Slurm's reserved word as host names, a name with a space and one with ';', GPU01
beside gpu01 (one Kubernetes node), a leaf that is a hostlist, an exempt "user" that injects a PAM line,
an Ansible login outside the PAM exemptions and cluster_gpu_count 80 (a typo for 8): site.yml must stop
in preflight, naming each host and variable, before any node is contacted (only localhost in the recap).
A script, since the YAML and INI inventories would expand gpu[01-04] or refuse it.
"""

import json
import sys

NODES = {
    "gpu[01-04]": {"ansible_host": "192.0.2.11", "cluster_leaf_switch": "leaf1"},
    "ALL": {"ansible_host": "192.0.2.12", "cluster_leaf_switch": "leaf1"},
    "gpu 05": {"ansible_host": "192.0.2.13", "cluster_leaf_switch": "leaf1"},
    "gpu06;reboot": {"ansible_host": "192.0.2.14", "cluster_leaf_switch": "leaf1"},
    "GPU01": {"ansible_host": "192.0.2.15", "cluster_leaf_switch": "leaf1"},
    "gpu01": {"ansible_host": "192.0.2.16", "cluster_leaf_switch": "leaf[1-2]"},
    "gpu07": {"ansible_host": "192.0.2.17", "cluster_leaf_switch": "leaf1", "ansible_user": "deploy",
              "slurm_compute_pam_adopt_exempt_users": ["root\naccount sufficient pam_permit.so"]},
}
INVENTORY = {
    "all": {"vars": {"cluster_name": "hostile", "ansible_user": "root"}},
    "slurm_controller": {"hosts": ["ctl1"]},
    "gpu_nodes": {"hosts": sorted(NODES), "vars": {"cluster_gpu_count": 80}},
    "_meta": {"hostvars": {"ctl1": {"ansible_host": "192.0.2.10"}, **NODES}},
}

if __name__ == "__main__":
    print(json.dumps(INVENTORY if "--list" in sys.argv else {}))
