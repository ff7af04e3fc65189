"""site.yml stops in preflight, before any node is contacted, on a bad inventory."""

import pathlib

import pytest
from conftest import run_playbook

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_site(inventory):
    return run_playbook("playbooks/site.yml", "-i", f"tests/inventories/{inventory}/hosts.yml", timeout=120)


@pytest.mark.parametrize(
    ("inventory", "expected"),
    [
        ("bad_exclusive", ["host gpu02: is in both groups gpu_nodes and slurm_controller"]),
        (
            "bad_missing_var",
            [
                "host gpu03: variable cluster_gpu_count is required for members of group gpu_nodes",
                "host gpu01: variable cluster_gpu_count must be of type int, got 'eight'",
            ],
        ),
        (
            "bad_accounting",
            [
                "cluster_slurm_accounting: qos high preempts unknown QOS 'scavenger'",
                "cluster_slurm_accounting: user alice names unknown account 'physics'",
            ],
        ),
        (
            "bad_controllers",
            [
                "host ctl1: variable slurm_common_state_save_shared must be true: 2 controllers (ctl1, ctl2)",
                "host ctl2: variable slurm_common_state_save_shared must be true",
            ],
        ),
        (
            "bad_priority",
            [
                "variable cluster_slurm_priority: weights.waiting is not a priority weight",
                "variable cluster_slurm_priority: weights.fairshare needs slurmdbd",
                "variable cluster_slurm_priority: decay_half_life must be a Slurm time",
            ],
        ),
        (
            "bad_partitions",
            [
                "variable slurm_common_partitions: partition b200: select {'gpu_type': 'b200'} matches no node",
                "variable slurm_common_partitions: partition far: select {'leaf': 'leaf9'} matches no node",
                "variable slurm_common_partitions: partition urgent: QOS 'urgent' is not a QOS of the accounting",
            ],
        ),
        (
            "bad_dbd_password",
            ["host ctl1: variable slurm_dbd_storage_password contains a character it must not hold (#"],
        ),
        (
            "bad_block",
            [
                "cluster_slurm_block_sizes: 6 after 2: successive BlockSizes must be the prior size times a power",
                "cluster_leaf_switch: block leaf3 has 1 nodes (gpu05), fewer than the base block size 2",
            ],
        ),
        (
            # issue 36: the Node-name map's own errors are the admin's input, refused before any host is contacted
            "bad_k8s_node_names",
            [
                "gpu01 and gpu02 both map to Kubernetes Node name 'node-a' (gpu01: cluster_k8s_node_name 'node-a'; "
                "gpu02: cluster_k8s_node_name 'node-a.lab.example')",
                "gpu03: cluster_k8s_node_name 'gpu_03' is no Kubernetes Node name",
            ],
        ),
        (
            "bad_slice",
            ["variable cluster_expected_hosts: group gpu_nodes holds 2 host(s) in this inventory, the fleet has 4"],
        ),
        (
            "bad_repo_keys",
            [
                "host gpu01: variable gpu_repos_key_fingerprints.doca is required: gpu_repos_sources enables it and "
                "its signing key has no verified default fingerprint",
                "host gpu02: gpu_repos_key_fingerprints.cuda: '3BF863CC' is not a key fingerprint (40 hex digits)",
                "host ctl1: containerd_apt_repo_key_fingerprints must be a list of key fingerprints, got a string",
            ],
        ),
        (
            "bad_node_stack",
            [
                "host gpu01: fabric_manager_equals_driver: fabric_manager.version 550.163.01 must equal "
                "driver.version 570.133.20 (host overrides: nvidia_driver_branch, nvidia_driver_version)",
                "host gpu02: exporter_pairs_host_engine: dcgm.exporter 3.3.9-3.6.1 is paired with DCGM 3.3.9, "
                "the host engine (dcgm.version) is 4.2.3 (host overrides: dcgm_exporter_version)",
            ],
        ),
    ],
)
def test_bad_inventory_fails_in_preflight_naming_host_and_variable(inventory, expected):
    result = run_site(inventory)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    for message in expected:
        assert message in out, out
    # Nothing past preflight ran: no node was contacted.
    assert "Apply the common base" not in out, out
    assert "Install the GPU node stack" not in out, out
    assert "UNREACHABLE" not in out, out
    # A refused secret is never printed.
    assert "cut-here" not in out, out


def plays_started(out):
    """Names of the plays the run started, in order, from the default callback's PLAY banners."""
    return [line[len("PLAY ["):line.index("]")] for line in out.splitlines() if line.startswith("PLAY [")]


@pytest.mark.parametrize(
    ("inventory", "expected"),
    [
        (
            "bad_policy",
            [
                "variable cluster_pools.pools.slurm.target: 5 means 5 nodes, but only 2 are eligible",
                "host gpu02: cluster_pool_pin='k8s' names a pool that cluster_pools.pools does not define",
            ],
        ),
        (
            "bad_static_group",
            ["variable cluster_pools: the pool plan decides the Slurm pool, so the inventory must not define "
             "group slurm_compute (it has gpu01"],
        ),
    ],
)
def test_bad_pool_policy_stops_site_before_any_node_play(inventory, expected):
    result = run_site(inventory)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    for message in expected:
        assert message in out, out
    # The only play that started is the preflight on localhost: discovery, base, munge, the
    # planner and every later play never began.
    assert plays_started(result.stdout) == ["Preflight the inventory"], out
    assert "UNREACHABLE" not in out, out


@pytest.mark.parametrize(("sliceable", "refused"), [(False, True), (True, False)])
def test_only_the_sliceable_entry_point_runs_on_a_slice(sliceable, refused):
    # node_stack.yml imports the shared head with __preflight_sliceable: true (node-local plays); site.yml,
    # pools.yml and gate.yml do not. --limit localhost,ctl1: only the preflight play runs (ctl1 is in no
    # other play of the head), no node is contacted.
    result = run_playbook("playbooks/preflight.yml", "-i", "tests/inventories/bad_slice/hosts.yml",
                          "--limit", "localhost,ctl1", "-e", f"__preflight_sliceable={str(sliceable).lower()}",
                          timeout=120)
    out = result.stdout + result.stderr
    assert (result.returncode != 0) is refused, out
    assert ("variable cluster_expected_hosts: group gpu_nodes holds 2 host(s)" in out) is refused, out
    assert "UNREACHABLE" not in out, out
    text = (ROOT / "playbooks" / "node_stack.yml").read_text()
    assert "__preflight_sliceable: true" in text
    assert "__preflight_sliceable" not in (ROOT / "playbooks" / "site.yml").read_text()


def test_a_hostile_inventory_stops_in_preflight_with_only_localhost_in_the_recap():
    # tests/inventories/hostile: host names Slurm or Kubernetes would read otherwise, a leaf that is a hostlist,
    # a PAM line injected as an exempt user, a login pam_slurm_adopt would refuse and cluster_gpu_count 80.
    result = run_playbook("playbooks/site.yml", "-i", "tests/inventories/hostile", timeout=120)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    flat = " ".join(out.split())  # the callback wraps long messages
    for message in [
        "host gpu[01-04]: variable inventory_hostname",
        "host ALL: variable inventory_hostname",
        "host gpu 05: variable inventory_hostname",
        "host gpu06;reboot: variable inventory_hostname",
        "host gpu01: variable inventory_hostname: gpu01 and GPU01 are one node to Kubernetes",
        "host gpu01: variable cluster_gpu_count is 80, outside 1..16",
        "host gpu01: variable cluster_leaf_switch must match",
        "host gpu07: variable slurm_compute_pam_adopt_exempt_users holds",
        "host gpu07: variable ansible_user deploy is not in slurm_compute_pam_adopt_exempt_users",
    ]:
        assert message in flat, out
    assert plays_started(result.stdout) == ["Preflight the inventory"], out
    recap = result.stdout[result.stdout.index("PLAY RECAP"):].splitlines()[1:]
    assert [line.split()[0] for line in recap if line.strip()] == ["localhost"], out
    assert "UNREACHABLE" not in out, out
