"""GPU Operator values and apply order (issue 20): on k3s the toolkit gets only the socket (k3s owns and
regenerates its config.toml), CDI is on, MIG is left as configured on unlabelled nodes, and the namespace with
its Pod Security label exists before the chart installs."""

import pathlib
import sys

import pytest
import yaml
from conftest import run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles/gpu_operator"


def render(tmp, **hostvars):
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                  "gpu_operator_apply": False, "gpu_operator_manifest_dir": str(tmp / "gpu"),
                                  **hostvars},
                         "children": {"k8s_server": {"hosts": {"ctl1": {}}}}}}
    plays = [{"name": "gpu_operator", "hosts": "k8s_server", "gather_facts": False,
              "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
              "roles": [{"role": "gpu_operator"},
                        {"role": "k8s_release", "k8s_release_releases": ["{{ gpu_operator_rendered }}"]}]}]
    result = run_plays(tmp, plays, inventory)
    return result.returncode, result.stdout + result.stderr


@pytest.fixture(scope="module")
def k3s(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpu_k3s")
    rc, out = render(tmp)
    assert rc == 0, out
    return {"values": yaml.safe_load((tmp / "gpu/values.yaml").read_text()),
            "objects": [d for d in yaml.safe_load_all((tmp / "gpu/resources.yaml").read_text()) if d]}


def test_k3s_toolkit_gets_only_the_socket_never_k3s_generated_config(k3s):
    env = {e["name"]: e["value"] for e in k3s["values"]["toolkit"]["env"]}
    assert env == {"CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock"}
    assert not any("rancher/k3s/agent/etc/containerd" in value for value in env.values())


def test_cdi_is_on_and_mig_is_left_as_configured_on_unlabelled_nodes(k3s):
    assert k3s["values"]["cdi"] == {"enabled": True}
    # The operator labels a MIG-capable node without nvidia.com/mig.config only when this is all-disabled
    # (controllers/nodelabeling_controller.go at v26.7.0); "" leaves the node's MIG mode alone.
    assert k3s["values"]["migManager"] == {"config": {"default": ""}}


def test_mig_all_disabled_is_a_choice_and_anything_else_fails_naming_host_and_variable(tmp_path):
    rc, out = render(tmp_path, gpu_operator_mig_config_default="all-disabled")
    assert rc == 0, out
    values = yaml.safe_load((tmp_path / "gpu/values.yaml").read_text())
    assert values["migManager"]["config"]["default"] == "all-disabled"
    rc, out = render(tmp_path, gpu_operator_mig_config_default="all-1g.10gb")
    assert rc != 0, out
    assert "gpu_operator_mig_config_default" in out and "ctl1" in out, out


def test_rendered_namespace_carries_the_privileged_pod_security_label(k3s):
    namespaces = [d for d in k3s["objects"] if d["kind"] == "Namespace"]
    assert [n["metadata"]["name"] for n in namespaces] == ["gpu-operator"]
    assert namespaces[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_namespace_is_applied_before_the_chart_and_helm_does_not_create_it():
    tasks = yaml.safe_load((ROOT / "roles/k8s_release/tasks/apply.yml").read_text())
    modules = [next(k for k in task if k.startswith("kubernetes.core.")) for task in tasks]
    helm = modules.index("kubernetes.core.helm")
    first_k8s = modules.index("kubernetes.core.k8s")
    assert first_k8s < helm, "the release's first objects must exist before the chart installs"
    assert tasks[first_k8s]["kubernetes.core.k8s"]["definition"].startswith("{{ __k8s_release.first ")
    render = yaml.safe_load((ROLE / "tasks/render.yml").read_text())
    release = next(t for t in render if "gpu_operator_rendered" in t.get("ansible.builtin.set_fact", {}))
    release = release["ansible.builtin.set_fact"]["gpu_operator_rendered"]
    assert "selectattr('kind', 'eq', 'Namespace')" in release["first"], "the labelled namespace goes first"
    assert release["chart"]["create_namespace"] is False


def test_operator_default_runtime_the_pinned_chart_no_longer_reads_is_refused(k3s, tmp_path):
    # Issue 33: the chart's templates stopped reading operator.defaultRuntime before v25.3.0 (the operator detects
    # the runtime); the ClusterPolicy CRD at v26.7.0 marks the field deprecated and unused.
    assert "defaultRuntime" not in k3s["values"]["operator"]
    rc, out = render(tmp_path, gpu_operator_values={"operator": {"defaultRuntime": "containerd"}})
    assert rc != 0, out
    assert "operator: unknown field(s) defaultRuntime" in " ".join(out.split()), out


def test_operator_keys_the_pinned_chart_reads_are_accepted(tmp_path):
    operator = {"priorityClassName": "system-cluster-critical", "resources": {"limits": {"memory": "1Gi"}},
                "logging": {"level": "debug"}, "imagePullSecrets": ["ngc"]}
    rc, out = render(tmp_path, gpu_operator_values={"operator": operator})
    assert rc == 0, out
    values = yaml.safe_load((tmp_path / "gpu/values.yaml").read_text())
    assert operator.items() <= values["operator"].items()
