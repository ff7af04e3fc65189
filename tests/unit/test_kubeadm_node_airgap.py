"""kubeadm_node's air-gap binaries from a directory on the node (kubeadm_node_airgap_on_node): a share or staged
media, checked there against sha256sum-<arch>.txt before anything is installed, copied there (nothing through ssh).

These runs play the role's install step on localhost (node and controller at once) in --check mode with the
directories under tmp_path; the real copy and kubelet are molecule/k8s_cluster's (the lab's read-only mount).
"""

import hashlib

import pytest
from test_k8s_kubeadm import ROOT, run_play

BINARIES = {name: f"the {name} binary".encode() for name in ("kubeadm", "kubelet", "kubectl")}


def install(tmp_path, sums, on_node=True):
    airgap = tmp_path / "airgap"
    airgap.mkdir()
    (tmp_path / "bin").mkdir()
    for name, data in BINARIES.items():
        (airgap / name).write_bytes(data)
    if sums is not None:
        (airgap / "sha256sum-amd64.txt").write_text(sums)
    play = {
        "name": "kubeadm_node install", "hosts": "k8s_agent", "gather_facts": False,
        "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
        "tasks": [{"name": "Run", "ansible.builtin.import_role": {"name": "kubeadm_node", "tasks_from": "install"}}],
    }
    hostvars = {"kubeadm_node_install_method": "airgap", "kubeadm_node_airgap_dir": str(airgap),
                "kubeadm_node_airgap_on_node": on_node, "kubeadm_node_bin_dir": str(tmp_path / "bin"),
                "kubeadm_node_arch": "amd64", "__kubeadm_node_joined": {"stat": {"exists": False}}}
    return run_play(tmp_path, [play], hostvars, check=True)


GOOD = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in BINARIES.items())


@pytest.mark.parametrize("on_node", [True, False])
def test_matching_binaries_are_copied_from_where_they_are(tmp_path, on_node):
    rc, out = install(tmp_path, GOOD, on_node=on_node)
    assert rc == 0, out
    assert "install | Checksum the air-gap binaries on the " + ("node" if on_node else "controller") in out, out
    assert "changed: [gpu01] => (item=kubelet)" in out, out


@pytest.mark.parametrize("sums", [GOOD.replace(hashlib.sha256(b"the kubelet binary").hexdigest(), "0" * 64), None])
def test_a_binary_on_the_node_not_matching_or_without_sums_stops_before_any_copy(tmp_path, sums):
    rc, out = install(tmp_path, sums)
    assert rc != 0, out
    flat = " ".join(out.split())
    assert f"gpu01: {tmp_path}/airgap/kube" in flat and "(kubeadm_node_airgap_dir, on the node)" in flat, out
    assert "install | Copy the binaries" not in out, out
