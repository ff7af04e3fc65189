"""The Node-name cross-check applies only to a node that can be in Kubernetes (review of issue 33's node-name fix).

A GPU node that only ever runs in Slurm (static groups, not in k8s_agent, no pool policy) on a site that also has a
Kubernetes server keeps its inventory name as its Node name, whatever its kernel hostname (an FQDN, an alias): before,
health_gate and nvidia_driver cross-checked every GPU node's hostname there and refused such a node. A node of the
Kubernetes pool is still cross-checked. The hosts run locally, so their gathered hostname is this machine's, which
is neither inventory name.
"""

import pathlib
import sys

from conftest import run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]


def names(tmp_path, host, **all_vars):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"vars": all_vars, "children": {
        "k8s_server": {"hosts": {"k1": local}},
        "gpu_nodes": {"hosts": {"slurm07": local, "kgpu07": local}},
        "k8s_agent": {"hosts": {"kgpu07": {}}},
    }}}
    play = [{"hosts": host, "gather_subset": ["min"],
             "vars_files": [str(ROOT / "roles/health_gate/defaults/main.yml"),
                            str(ROOT / "roles/nvidia_driver/defaults/main.yml")],
             "tasks": [{"ansible.builtin.debug": {"msg": "NAMES {{ health_gate_k8s_node_name }} "
                                                         "{{ nvidia_driver_k8s_node_name }}"}}]}]
    return run_plays(tmp_path, play, inventory, timeout=120, sort_keys=True)


def test_a_slurm_only_node_keeps_its_inventory_name_whatever_its_hostname(tmp_path):
    result = names(tmp_path, "slurm07")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "NAMES slurm07 slurm07" in result.stdout, result.stdout[-3000:]


def test_a_kubernetes_pool_node_is_still_cross_checked(tmp_path):
    result = names(tmp_path, "kgpu07")
    assert result.returncode != 0, result.stdout[-3000:]
    assert "cluster_k8s_node_name" in result.stdout, result.stdout[-3000:]


def test_with_a_pool_policy_every_gpu_node_is_cross_checked(tmp_path):
    result = names(tmp_path, "slurm07", cluster_pools={"pools": {"slurm": {"target": 1}}})
    assert result.returncode != 0, result.stdout[-3000:]
    assert "cluster_k8s_node_name" in result.stdout, result.stdout[-3000:]
