"""Volcano schedules over the fabric's HyperNodes: the network-topology-aware plugin is in the rendered scheduler
configuration (Volcano 1.15.1: plugin name and arguments from pkg/scheduler/plugins/network-topology-aware), and a
tier list without it is refused while HyperNodes are rendered."""

import pathlib
import sys

import yaml
from conftest import run_playbook

ROOT = pathlib.Path(__file__).resolve().parents[2]
HYPERNODE = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "leaf1"},
             "spec": {"tier": 1, "members": [{"type": "Node", "selector": {
                 "labelMatch": {"matchLabels": {"gpufleet.io/leaf": "leaf1"}}}}]}}


def render(tmp_path, **overrides):
    play = [{
        "name": "Render Volcano", "hosts": "localhost", "gather_facts": False,
        "vars_files": [str(ROOT / "playbooks" / "vars" / "k8s_versions.yml")],
        "vars": {"volcano_apply": False, "volcano_manifest_dir": str(tmp_path / "out"),
                 "cluster_k8s_crd_dir": str(ROOT / "files" / "crds"), "volcano_hypernodes": [HYPERNODE],
                 "ansible_python_interpreter": sys.executable, **overrides},
        "roles": [{"role": "volcano"}, {"role": "k8s_release", "k8s_release_releases": ["{{ volcano_rendered }}"]}],
    }]
    path = tmp_path / "play.yml"
    path.write_text(yaml.safe_dump(play))
    return run_playbook("-i", "localhost,", "-c", "local", path)


def test_rendered_scheduler_config_enables_network_topology_aware_scheduling(tmp_path):
    result = render(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    values = yaml.safe_load((tmp_path / "out" / "values.yaml").read_text())
    conf = yaml.safe_load(values["custom"]["scheduler_config_override"])
    plugins = {p["name"]: p for tier in conf["tiers"] for p in tier["plugins"]}
    assert plugins["network-topology-aware"]["arguments"]["hypernode.binpack.resources"] == "nvidia.com/gpu"
    assert "gang" in plugins and "predicates" in plugins
    docs = list(yaml.safe_load_all((tmp_path / "out" / "resources.yaml").read_text()))
    assert [d["metadata"]["name"] for d in docs if d and d["kind"] == "HyperNode"] == ["leaf1"]


def test_hypernodes_without_the_plugin_are_refused_naming_the_variable(tmp_path):
    tiers = [{"plugins": [{"name": "gang"}]}, {"plugins": [{"name": "predicates"}, {"name": "binpack"}]}]
    result = render(tmp_path, volcano_scheduler_tiers=tiers)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "volcano_scheduler_tiers has no network-topology-aware plugin" in out, out
    assert not (tmp_path / "out" / "values.yaml").exists()
