"""k8s_quota.yml refreshes Kueue's quota on the first server also in a run limited to GPU nodes (issue 33:
`gate.yml --limit gpu07` never updated the quota, because its play targeted k8s_server[0], which the limit excludes).

`--limit` filters the hosts of every play, so the quota play holds the servers and the GPU nodes, and its first host
runs the roles once, delegated to the first server, with the first server's settings of those roles."""

import pathlib
import re
import sys

import yaml
from conftest import ansible_env, run_playbook

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENV = ansible_env(ANSIBLE_LOCALHOST_WARNING="false")


def last_play_hosts(out):
    """Name and hosts of the last play `--list-hosts` lists (gate.yml's last play is k8s_quota.yml's)."""
    block = re.split(r"\n\s*play #\d+ ", out)[-1]
    name = block.split("): ", 1)[1].split("\t", 1)[0]
    return name, sorted(line.strip() for line in block.split("hosts (", 1)[1].splitlines()[1:] if line.strip())


def test_gate_limited_to_one_gpu_node_still_has_a_host_that_refreshes_the_quota():
    result = run_playbook("-i", "inventory/example", "playbooks/gate.yml", "--list-hosts", "--limit", "gpu07",
                          env=ENV, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    name, hosts = last_play_hosts(result.stdout)
    assert name.startswith("Recompute Kueue's"), result.stdout
    assert hosts == ["gpu07"], result.stdout


def quota_play(out):
    """The quota play's part of a run's output (playbooks/k8s_client.yml's play, which may name hosts, comes first)."""
    return "PLAY [Recompute Kueue's" + out.split("PLAY [Recompute Kueue's", 1)[1]


def run_quota(tmp_path, *limit):
    out = tmp_path / "out"
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "children": {
            # the server's own setting of a quota role: a limited run must still render it
            "k8s_server": {"hosts": {"k8s1": {}}, "vars": {"kueue_local_queues": [{"name": "default",
                                                                                   "namespace": "team-a"}]}},
            "gpu_nodes": {"hosts": {"gpu01": {"cluster_gpu_count": 2}, "gpu07": {"cluster_gpu_count": 2}}},
            "k8s_agent": {"hosts": {"gpu01": {}, "gpu07": {}}},
        }}}
    admitted = {"node-restriction.kubernetes.io/gpufleet-admitted": "true"}
    extra = {
        "ansible_become": False, "k8s_pool_labels_apply": False, "kueue_apply": False,
        "k8s_pool_labels_manifest_dir": str(out / "labels"), "kueue_manifest_dir": str(out / "kueue"),
        "k8s_pool_labels_model": {"validator_pods": [], "nodes": [
            {"metadata": {"name": name, "labels": admitted}, "spec": {"taints": []},
             "status": {"allocatable": {"nvidia.com/gpu": "2", "cpu": "8", "memory": "32Gi"}}}
            for name in ("gpu01", "gpu07")]},
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "extra.yml").write_text(yaml.safe_dump(extra))
    result = run_playbook("-i", tmp_path / "hosts.yml", "playbooks/k8s_quota.yml", "-e", f"@{tmp_path / 'extra.yml'}",
                          *(["--limit", ",".join(limit)] if limit else []), env=ENV)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    resources = out / "kueue" / "resources.yaml"
    assert resources.is_file(), f"no Kueue render: the quota play did not run\n{result.stdout[-6000:]}"
    docs = [d for d in yaml.safe_load_all(resources.read_text()) if d]
    return quota_play(result.stdout), docs


def quotas(docs):
    queue = next(d for d in docs if d["kind"] == "ClusterQueue")
    return {r["name"]: r["nominalQuota"] for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}


def test_a_run_limited_to_a_gpu_node_refreshes_the_quota_on_the_first_server_with_its_settings(tmp_path):
    out, docs = run_quota(tmp_path, "gpu07")
    # every admitted node counts, not only the limited one
    assert quotas(docs) == {"nvidia.com/gpu": 4, "cpu": "16", "memory": str(64 * 2**30)}
    assert [d["metadata"] for d in docs if d["kind"] == "LocalQueue"] == [{"name": "default", "namespace": "team-a"}]
    assert "[gpu07 -> k8s1]" in out, out
    assert "[gpu01" not in out, out


def test_an_unlimited_run_works_on_the_first_server_itself(tmp_path):
    out, docs = run_quota(tmp_path)
    assert quotas(docs)["nvidia.com/gpu"] == 4
    assert "[k8s1]" in out and "[gpu07" not in out and "[gpu01" not in out, out


def test_an_inventory_without_a_kubernetes_server_ends_the_quota_play_touching_no_host(tmp_path):
    # gate.yml and pools.yml import the quota play on every site: a Slurm-only one (every lab scenario but
    # k8s_cluster) must pass it untouched. Its GPU nodes here are unreachable: a task on any of them fails the run.
    inventory = {"all": {"children": {
        "slurm_controller": {"hosts": {"ctl1": {"ansible_host": "192.0.2.1"}}},
        "gpu_nodes": {"hosts": {"gpu01": {"ansible_host": "192.0.2.11"}, "gpu02": {"ansible_host": "192.0.2.12"}}},
    }}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    result = run_playbook("-i", tmp_path / "hosts.yml", "playbooks/k8s_quota.yml", env=ENV, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # the play ended before any task reached a host: the recap names none
    assert "gpu01" not in quota_play(result.stdout) and "ctl1" not in quota_play(result.stdout), result.stdout
