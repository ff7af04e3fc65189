"""kubeadm's CNI is data: the pinned Flannel release manifest, its pod network equal to kubeadm's podSubnet."""

import pathlib

import yaml
from ansible.module_utils.k8s_sched import model_nodes, schedule_errors
from test_k8s_sched import AFTER, FAIL_TAINT, KUBEADM_SERVER_TAINT, patches

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERSIONS = yaml.safe_load((ROOT / "playbooks" / "vars" / "k8s_versions.yml").read_text())["cluster_k8s_versions"]


def test_cni_manifest_is_the_release_asset_of_the_pinned_version():
    cni = VERSIONS["cni"]
    assert cni["name"] == "flannel"
    assert cni["manifest_url"] == (
        f"https://github.com/flannel-io/flannel/releases/download/{cni['version']}/kube-flannel.yml")
    # empty until set from the release (not knowable offline); the role refuses to download without it
    assert cni["sha256"] == "" or len(cni["sha256"]) == 64


def test_cni_pod_network_is_kubeadms_pod_subnet():
    kubeadm = yaml.safe_load((ROOT / "roles" / "kubeadm_control_plane" / "defaults" / "main.yml").read_text())
    cni_defaults = yaml.safe_load((ROOT / "roles" / "cni" / "defaults" / "main.yml").read_text())
    subnet = kubeadm["kubeadm_control_plane_cluster_config"]["networking"]["podSubnet"]
    assert VERSIONS["cni"]["pod_network"] == subnet == cni_defaults["cni_cluster_pod_subnet"]


def test_cni_role_refuses_a_download_without_checksum():
    tasks = yaml.safe_load((ROOT / "roles" / "cni" / "tasks" / "main.yml").read_text())
    assert tasks[0]["ansible.builtin.assert"]["that"][0] == (
        "cni_manifest_src | length > 0 or cni_manifest_sha256 is match('^[0-9a-f]{64}$')")
    download = next(t for t in tasks if "ansible.builtin.get_url" in t)
    assert download["ansible.builtin.get_url"]["checksum"] == "sha256:{{ cni_manifest_sha256 }}"


def test_kubeadm_nodes_with_the_cni_pass_the_scheduling_check_and_without_it_fail():
    with_cni = model_nodes(patches(), [KUBEADM_SERVER_TAINT], FAIL_TAINT, cni_ready=True)
    without = model_nodes(patches(), [KUBEADM_SERVER_TAINT], FAIL_TAINT, cni_ready=False)
    assert schedule_errors(AFTER, with_cni) == []
    assert any("node.kubernetes.io/not-ready" in e for e in schedule_errors(AFTER, without))
