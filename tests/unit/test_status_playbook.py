"""status.yml checks the inventory as every other entry point does, before it reads anything."""

import pathlib

import yaml
from conftest import ansible_env, run_playbook

ROOT = pathlib.Path(__file__).resolve().parents[2]


def plays_started(out):
    """Names of the plays the run started, in order, from the default callback's PLAY banners."""
    return [line[len("PLAY ["):line.index("]")] for line in out.splitlines() if line.startswith("PLAY [")]


def test_status_refuses_an_inventory_without_cluster_name_before_any_node_is_contacted(tmp_path):
    # Without cluster_name the fleet summary cannot tell this fleet's gate reports from another's
    # (reports/ is shared by inventories): the run stops in the preflight, naming the host and the variable.
    inventory = {"all": {"children": {
        "slurm_controller": {"hosts": {"ctl1": {"ansible_host": "192.0.2.10"}}},
        "gpu_nodes": {"hosts": {"gpu01": {"ansible_host": "192.0.2.11", "cluster_gpu_count": 8},
                                "gpu02": {"ansible_host": "192.0.2.12", "cluster_gpu_count": 8}}},
    }}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    result = run_playbook("playbooks/status.yml", "-i", path, env=ansible_env(ANSIBLE_TIMEOUT="3"), timeout=180)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "host gpu01: variable cluster_name is required for members of group all" in out, out
    assert plays_started(result.stdout) == ["Preflight the inventory"], out
    assert "UNREACHABLE" not in out, out
