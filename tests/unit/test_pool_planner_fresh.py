"""The pool planner on a fresh fleet: Kubernetes not installed yet is an empty Kubernetes view, never a stop.

Issue 33 item 2: with a pool policy, site.yml stopped at "Plan the pools" on a fresh fleet, because the planner read
Nodes through a kubeconfig no play had written yet. Slurm's read has a fresh mode (no slurm.conf); this is
Kubernetes' (no kubeconfig and no cluster CA on the first server). A CA without the kubeconfig is a cluster the
planner cannot read: the run stops, naming the host and the variable.

These runs play the role on localhost (controller, Kubernetes server and planner at once) with paths under
tmp_path; the GPU nodes are inventory entries only, never contacted.
"""

import json
import pathlib
import sys

from conftest import ansible_env, run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
POLICY = {"pools": {"slurm": {"min": 1, "target": 2}, "k8s": {"min": 1, "target": 2}}, "max_unavailable": 1}


def run_planner(tmp, kubeconfig_exists=False, ca_exists=False, k8s=True):
    kubeconfig, ca, out = tmp / "admin.conf", tmp / "ca.crt", tmp / "plan.json"
    if kubeconfig_exists:
        kubeconfig.write_text("not read by this test\n")
    if ca_exists:
        ca.write_text("not read by this test\n")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {
        "vars": {"cluster_pools": POLICY, "cluster_gpu_count": 8},
        "children": {
            "slurm_controller": {"hosts": {"localhost": local}},
            **({"k8s_server": {"hosts": {"localhost": None}}} if k8s else {}),
            "gpu_nodes": {"hosts": {f"gpu0{i}": {"cluster_leaf": "leaf1"} for i in range(1, 5)}},
        }}}
    play = [{
        "name": "Plan", "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"name": "Plan the pools", "ansible.builtin.import_role": {"name": "pool_planner"},
             "vars": {"pool_planner_kubeconfig": str(kubeconfig), "pool_planner_k8s_ca": str(ca)}},
            {"name": "Write the plan", "ansible.builtin.copy": {
                "dest": str(out), "mode": "0644",
                "content": "{{ {'targets': pool_planner_plan.targets, 'k8s_fresh': pool_planner_k8s_fresh,"
                           " 'k8s_agent': groups['k8s_agent'] | default([]) | sort} | to_json }}"}},
        ]}]
    result = run_plays(tmp, play, inventory, env=ansible_env(ANSIBLE_LOCALHOST_WARNING="false"))
    return result, (json.loads(out.read_text()) if out.exists() else None)


def test_a_fleet_without_kubernetes_yet_is_planned_with_an_empty_kubernetes_view(tmp_path):
    result, plan = run_planner(tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert plan["k8s_fresh"] is True
    assert sorted(plan["targets"].values()) == ["k8s", "k8s", "slurm", "slurm"]
    # The nodes the plan gives Kubernetes join k8s_agent for k8s.yml's install, on the first run.
    assert plan["k8s_agent"] == sorted(n for n, pool in plan["targets"].items() if pool == "k8s")


def test_a_cluster_whose_kubeconfig_is_missing_stops_the_plan_naming_host_and_variable(tmp_path):
    result, plan = run_planner(tmp_path, ca_exists=True)
    assert result.returncode != 0 and plan is None
    assert "host localhost: a Kubernetes cluster exists" in result.stdout
    assert "pool_planner_kubeconfig" in result.stdout


def test_a_kubeconfig_the_planner_cannot_read_stops_the_plan(tmp_path):
    # The kubeconfig exists, so the cluster is read; an unreadable one is an error, never an empty view.
    result, plan = run_planner(tmp_path, kubeconfig_exists=True, ca_exists=True)
    assert result.returncode != 0 and plan is None
    assert "Read Kubernetes' nodes" in result.stdout


def test_an_inventory_without_kubernetes_reads_neither_file_nor_cluster(tmp_path):
    # The Slurm-only fleets (molecule/pool_rebalance): nothing is looked up, nothing is fresh, every node Slurm's.
    result, plan = run_planner(tmp_path, ca_exists=True, k8s=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert plan["k8s_fresh"] is False and plan["k8s_agent"] == []
