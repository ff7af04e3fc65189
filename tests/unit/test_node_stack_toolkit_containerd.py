"""Issue 33 item 4: the host's container toolkit never edits a containerd configuration the Kubernetes distribution
owns, nor restarts a containerd unit. k3s generates its own configuration on every start (and adds the nvidia
runtimes it finds then) and has no containerd unit; on kubeadm the containerd role owns config.toml and the GPU
Operator's toolkit its runtimes' drop-in."""

import pathlib
import sys

import pytest
import yaml
from conftest import flat_tasks, run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles/nvidia_container_toolkit"
# The containerd files of either distribution: k3s's generated configuration, kubeadm's system containerd.
CONTAINERD_PATHS = ("/var/lib/rancher/k3s/agent/etc/containerd", "/etc/containerd")
SERVICE_MODULES = {"ansible.builtin.systemd_service", "ansible.builtin.systemd", "ansible.builtin.service"}


def listed_tasks(tmp, distribution):
    """The task names ansible-playbook --list-tasks gives for the role on a node of the Kubernetes pool."""
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                  "cluster_k8s_distribution": distribution},
                         "children": {"k8s_agent": {"hosts": {"gpu01": {}}}, "node_stack": {"hosts": {"gpu01": {}}}}}}
    plays = [{"name": "Install the GPU node stack", "hosts": "node_stack", "gather_facts": False,
              "vars_files": [str(ROOT / "playbooks/vars/node_stack_versions.yml")],
              "roles": [{"role": "nvidia_container_toolkit"}]}]
    result = run_plays(tmp, plays, inventory, "--list-tasks")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("distribution", ["k3s", "kubeadm"])
def test_a_kubernetes_pool_node_gets_no_containerd_step_from_the_host_toolkit(tmp_path, distribution):
    listing = listed_tasks(tmp_path, distribution)
    assert "nvidia_container_toolkit : Install the toolkit at the locked version" in listing, listing
    assert "containerd" not in listing.lower(), listing


def test_no_task_handler_or_default_of_the_toolkit_touches_containerd():
    files = sorted((ROLE / "tasks").glob("*.yml")) + sorted((ROLE / "handlers").glob("*.yml"))
    for path in files:
        for task in flat_tasks(yaml.safe_load(path.read_text())):
            where = f"{path.relative_to(ROOT)}: {task.get('name')}"
            assert not SERVICE_MODULES & set(task), f"{where} manages a service"
            text = yaml.safe_dump(task)
            assert "nvidia-ctk" not in text and "containerd" not in text.lower(), where
    for path in (ROLE / "defaults/main.yml", ROLE / "meta/argument_specs.yml"):
        text = path.read_text()
        assert not [p for p in CONTAINERD_PATHS if p in text], f"{path.relative_to(ROOT)} names a containerd path"
