"""One distribution setting chooses the admin kubeconfig of every role that talks to the API server."""

import json
import pathlib
import sys

import pytest
import yaml
from ansible.module_utils.k8s_distribution import admin_kubeconfig, server_ca
from conftest import run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
K3S = "/etc/rancher/k3s/k3s.yaml"
KUBEADM = "/etc/kubernetes/admin.conf"
# Every role that reads the cluster through kubernetes.core, and its kubeconfig variable.
KUBECONFIG_VARS = {
    "fleet_report": "fleet_report_kubeconfig",
    "gpu_operator": "gpu_operator_kubeconfig",
    "health_gate": "health_gate_k8s_kubeconfig",
    "k8s_pool_labels": "k8s_pool_labels_kubeconfig",
    "kuberay": "kuberay_kubeconfig",
    "kueue": "kueue_kubeconfig",
    "maint_k8s": "maint_k8s_kubeconfig",
    "maint_k8s_result": "maint_k8s_result_kubeconfig",
    "maint_planner": "maint_planner_kubeconfig",
    "maint_upgrade": "maint_upgrade_kubeconfig",
    "nvidia_driver": "nvidia_driver_kubeconfig",
    "pool_executor": "pool_executor_kubeconfig",
    "pool_planner": "pool_planner_kubeconfig",
    "volcano": "volcano_kubeconfig",
}


def resolved_defaults(tmp, hostvars, variables=None):
    """Each role's kubeconfig as Ansible templates it: the roles' defaults files loaded as the play's variables, the
    site's cluster_* settings from the inventory, the project's filters from ansible.cfg."""
    out = tmp / "resolved.json"
    inventory = {"all": {"hosts": {"ctl1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                            **hostvars}}}}
    variables = variables or KUBECONFIG_VARS
    values = "{{ {" + ", ".join(f"'{v}': {v}" for v in variables.values()) + "} | to_json }}"
    play = [{
        "name": "Resolve the kubeconfig defaults", "hosts": "ctl1", "gather_facts": False,
        "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")]
        + [str(ROOT / "roles" / role / "defaults/main.yml") for role in variables],
        "tasks": [{"name": "Write", "ansible.builtin.copy": {"content": values, "dest": str(out),
                                                                  "mode": "0644"}}],
    }]
    result = run_plays(tmp, play, inventory)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(out.read_text())


def test_kubeadm_roles_read_the_kubeadm_admin_kubeconfig(tmp_path):
    resolved = resolved_defaults(tmp_path, {"cluster_k8s_distribution": "kubeadm"})
    assert resolved == dict.fromkeys(KUBECONFIG_VARS.values(), KUBEADM)


def test_roles_read_the_k3s_kubeconfig_without_a_distribution(tmp_path):
    resolved = resolved_defaults(tmp_path, {})
    assert resolved == dict.fromkeys(KUBECONFIG_VARS.values(), K3S)


def test_cluster_kubeconfig_moves_every_role(tmp_path):
    resolved = resolved_defaults(tmp_path, {"cluster_k8s_distribution": "kubeadm",
                                            "cluster_k8s_kubeconfig": "/root/.kube/config"})
    assert resolved == dict.fromkeys(KUBECONFIG_VARS.values(), "/root/.kube/config")


@pytest.mark.parametrize(("distribution", "path"), [("k3s", K3S), ("kubeadm", KUBEADM)])
def test_admin_kubeconfig_of_each_distribution(distribution, path):
    assert admin_kubeconfig(distribution) == path


@pytest.mark.parametrize("distribution", ["k0s", "KUBEADM", "", None])
def test_unknown_distribution_is_refused_naming_the_variable(distribution):
    with pytest.raises(ValueError, match="cluster_k8s_distribution"):
        admin_kubeconfig(distribution)
    with pytest.raises(ValueError, match="cluster_k8s_distribution"):
        server_ca(distribution)


@pytest.mark.parametrize(("distribution", "service", "ca"), [
    ("k3s", "k3s-agent", "/var/lib/rancher/k3s/server/tls/server-ca.crt"),
    ("kubeadm", "kubelet", "/etc/kubernetes/pki/ca.crt")])
def test_the_agent_service_and_the_cluster_ca_follow_the_distribution(tmp_path, distribution, service, ca):
    # Issue 33 item 6: the executor stopped k3s-agent on kubeadm nodes, which have a kubelet unit instead.
    variables = {"pool_executor": "pool_executor_k8s_agent_service", "pool_planner": "pool_planner_k8s_ca"}
    resolved = resolved_defaults(tmp_path, {"cluster_k8s_distribution": distribution}, variables)
    assert resolved == {"pool_executor_k8s_agent_service": service, "pool_planner_k8s_ca": ca}


@pytest.mark.parametrize(("distribution", "path"), [("k3s", "/var/lib/rancher/k3s/server/tls/server-ca.crt"),
                                                    ("kubeadm", "/etc/kubernetes/pki/ca.crt")])
def test_server_ca_of_each_distribution(distribution, path):
    # The file the planner takes as "this cluster exists" (pool_planner_k8s_ca).
    assert server_ca(distribution) == path


def test_no_role_default_names_a_kubeconfig_path_itself():
    """The kubeconfig stays a role default (a site's <role>_kubeconfig wins) that names no distribution's path."""
    for role, var in KUBECONFIG_VARS.items():
        default = yaml.safe_load((ROOT / "roles" / role / "defaults/main.yml").read_text())[var]
        assert K3S not in default and KUBEADM not in default, f"{role}: {var} names a distribution's path"
        spec = yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())["argument_specs"]
        assert spec["main"]["options"][var]["default"] == default, f"{role}: {var} spec default differs"
