"""scripts/k8s_bins: bad input stops before anything is built or any lab container changes, naming the component."""

import os
import pathlib
import shutil
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOCK = yaml.safe_load((ROOT / "playbooks/vars/k8s_versions.yml").read_text())["cluster_k8s_versions"]["kubeadm"]


def tree(tmp, edit=None):
    """A copy of what scripts/k8s_bins reads (the script, the three modules' go.mod, the version lock)."""
    (tmp / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts/k8s_bins", tmp / "scripts/k8s_bins")
    for module in ("k8sbins", "etcd", "coredns"):
        (tmp / "tools" / module).mkdir(parents=True)
        shutil.copy2(ROOT / "tools" / module / "go.mod", tmp / "tools" / module / "go.mod")
    (tmp / "playbooks/vars").mkdir(parents=True)
    text = (ROOT / "playbooks/vars/k8s_versions.yml").read_text()
    (tmp / "playbooks/vars/k8s_versions.yml").write_text(edit(text) if edit else text)
    return tmp


def run(root, path=None):
    env = dict(os.environ, GPUFLEET_CACHE=str(root / "cache"))
    if path is not None:
        env["PATH"] = path
    return subprocess.run([str(root / "scripts/k8s_bins")], env=env, capture_output=True, text=True, timeout=60)


def test_the_modules_pin_exactly_the_locked_versions():
    for module, path, want in (("k8sbins", "k8s.io/kubernetes", LOCK["version"]),
                               ("etcd", "go.etcd.io/etcd/server/v3", "v" + LOCK["etcd_image_tag"].rsplit("-", 1)[0]),
                               ("coredns", "github.com/coredns/coredns", LOCK["coredns_image_tag"])):
        text = (ROOT / "tools" / module / "go.mod").read_text()
        assert f"\t{path} {want}\n" in text or f"require {path} {want}\n" in text, (module, want)


def test_no_go_toolchain_stops_naming_every_component_and_its_version(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(sys.executable, bindir / "python3")  # with PyYAML, as the venv's is
    for tool in ("bash", "awk", "grep", "mkdir", "flock", "dirname", "cat", "sha256sum", "cut"):
        os.symlink(shutil.which(tool), bindir / tool)
    result = run(tree(tmp_path / "repo"), path=str(bindir))
    assert result.returncode == 2, result
    assert "no Go toolchain on PATH" in result.stderr
    for part in (f"k8s.io/kubernetes {LOCK['version']}", f"etcd {LOCK['etcd_image_tag']}",
                 f"coredns {LOCK['coredns_image_tag']}"):
        assert part in result.stderr, result.stderr
    assert not (tmp_path / "repo/cache/k8s-bins").exists(), "nothing was built"


def test_a_kubernetes_version_the_modules_do_not_pin_is_refused_naming_both(tmp_path):
    root = tree(tmp_path, lambda text: text.replace(f"version: {LOCK['version']}", "version: v1.34.3"))
    result = run(root)
    assert result.returncode == 2, result
    assert (f"k8s.io/kubernetes: tools/k8sbins/go.mod pins '{LOCK['version']}' but playbooks/vars/k8s_versions.yml "
            "(cluster_k8s_versions.kubeadm.version) locks v1.34.3") in result.stderr, result.stderr


def test_an_etcd_tag_the_module_does_not_pin_is_refused(tmp_path):
    tag = LOCK["etcd_image_tag"]
    root = tree(tmp_path, lambda text: text.replace(f"etcd_image_tag: {tag}", "etcd_image_tag: 3.6.4-0"))
    result = run(root)
    assert result.returncode == 2, result
    want = "etcd: tools/etcd/go.mod pins 'v3.6.5' but the lock's cluster_k8s_versions.kubeadm.etcd_image_tag is 3.6.4-0"
    assert want in result.stderr, result.stderr


def test_the_lab_builds_before_it_creates_any_node():
    tasks = yaml.safe_load((ROOT / "roles/lab/tasks/main.yml").read_text())
    files = [t.get("ansible.builtin.import_tasks") for t in tasks]
    assert files.index("k8s.yml") < files.index("nodes.yml") < files.index("k8s_nodes.yml")


def test_an_unreadable_version_lock_stops_the_build(tmp_path):
    root = tree(tmp_path, lambda text: text.replace("  kubeadm:\n", "  kubeadm_renamed:\n"))
    result = run(root)
    assert result.returncode == 2, result
    assert "cannot read cluster_k8s_versions.kubeadm" in result.stderr, result.stderr
