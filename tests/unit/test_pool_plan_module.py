"""The pool_plan module: returns the plan unchanged-state, fails with every validation error."""
import json

import pool_plan as module
import pytest
from ansible.module_utils.testing import patch_module_args

POLICY = {"pools": {"slurm": {"min": 1, "target": 2}, "k8s": {"min": 1, "target": "50%"}},
          "max_unavailable": 1}
NODES = [
    {"name": "gpu01", "gpus": 8, "leaf": "leaf1", "pool": "slurm"},
    {"name": "gpu02", "gpus": 8, "leaf": "leaf1", "pool": "slurm"},
    {"name": "gpu03", "gpus": 8, "leaf": "leaf2", "pool": "slurm"},
    {"name": "gpu04", "gpus": 8, "leaf": "leaf2"},
]


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_returns_the_plan_and_changes_nothing(capsys):
    rc, out = run({"nodes": NODES, "policy": POLICY}, capsys)
    assert rc == 0
    assert out["changed"] is False
    assert out["targets"] == {"gpu01": "slurm", "gpu02": "slurm", "gpu03": "k8s", "gpu04": "k8s"}
    assert [(m["node"], m["from"], m["to"]) for m in out["moves"]] == [("gpu04", None, "k8s"),
                                                                      ("gpu03", "slurm", "k8s")]
    assert "moves: 2 in 2 batches of at most 1" in out["summary"]


def test_check_mode_returns_the_same_plan(capsys):
    _, normal = run({"nodes": NODES, "policy": POLICY}, capsys)
    _, check = run({"nodes": NODES, "policy": POLICY, "_ansible_check_mode": True}, capsys)
    assert check["moves"] == normal["moves"] and check["changed"] is False


def test_types_are_coerced_by_the_argument_spec(capsys):
    nodes = [dict(n, gpus=str(n["gpus"]), healthy="yes") for n in NODES]
    rc, out = run({"nodes": nodes, "policy": POLICY}, capsys)
    assert rc == 0 and out["pools_after"]["k8s"]["gpus"] == 16


def test_fails_with_every_error_naming_host_and_variable(capsys):
    nodes = [dict(NODES[0], pinned="gpu"), dict(NODES[1], pinned="slurm", excluded=True), NODES[2], NODES[2]]
    policy = {"pools": {"slurm": {"min": 9, "target": 9}}, "max_unavailable": 0, "excluded": ["gpu99"]}
    rc, out = run({"nodes": nodes, "policy": policy}, capsys)
    assert rc == 1 and out["failed"]
    errors = out["errors"]
    for needle in ("gpu03: appears twice in nodes",
                   "gpu01: cluster_pool_pin='gpu' is not a pool",
                   "gpu02: cluster_pool_pin='slurm' conflicts with the node's excluded flag",
                   "cluster_pools.max_unavailable: must be an integer of at least 1",
                   "cluster_pools.excluded: gpu99 is not a host of the inventory",
                   "cluster_pools.pools.slurm.target: 9 means 9 nodes, but only 3 are eligible"):
        assert any(needle in e for e in errors), (needle, errors)
    assert out["msg"].startswith("pool policy is invalid:")


def test_missing_node_name_is_refused_by_the_argument_spec(capsys):
    rc, out = run({"nodes": [{"gpus": 8}], "policy": POLICY}, capsys)
    assert rc == 1 and "name" in out["msg"]


def test_the_filter_returns_what_the_module_returns(capsys):
    from pools import FilterModule

    _, out = run({"nodes": NODES, "policy": POLICY}, capsys)
    planned = FilterModule().filters()["pool_plan"](NODES, POLICY)
    out.pop("invocation", None)
    assert dict(planned, changed=False) == out


def test_the_filter_fails_with_every_error_at_once():
    from ansible.errors import AnsibleFilterError
    from pools import FilterModule

    policy = {"pools": {"slurm": {"min": 9, "target": 9}}, "max_unavailable": 0, "excluded": ["gpu99"]}
    with pytest.raises(AnsibleFilterError) as exc:
        FilterModule().filters()["pool_plan"](NODES, policy)
    assert str(exc.value).startswith("pool policy is invalid:")
    assert "cluster_pools.max_unavailable: must be an integer of at least 1" in str(exc.value)
    assert "gpu99" in str(exc.value)


def test_refuses_a_policy_that_omits_a_pool_with_nodes_with_every_other_error(capsys):
    nodes = [dict(NODES[0], pool="k8s"), NODES[1], NODES[2],
             dict(NODES[3], pool="slurm", schedulers=["k8s", "slurm"])]
    rc, out = run({"nodes": nodes, "policy": {"pools": {"slurm": {"min": 1, "target": 2}}}}, capsys)
    assert rc == 1 and out["msg"].startswith("pool policy is invalid:")
    for needle in ("cluster_pools.pools: names no k8s pool, but gpu01 is in it",
                   "gpu04: Slurm and Kubernetes both schedule work on it now"):
        assert any(needle in e for e in out["errors"]), (needle, out["errors"])


def test_held_nodes_and_their_schedulers_are_taken_by_the_argument_spec(capsys):
    reason = "maintenance unfinished on gpu03: rerun maintain.yml (gpufleet:maint,to=slurm,run=r1,drain)"
    nodes = [dict(n, schedulers=["slurm"]) for n in NODES[:3]] + [NODES[3]]
    nodes[2] = dict(nodes[2], held=reason, schedulers=[])
    rc, out = run({"nodes": nodes, "policy": POLICY}, capsys)
    assert rc == 0, out
    assert {"node": "gpu03", "pool": "slurm", "reason": reason} in out["held"]
    assert "gpu03" not in {m["node"] for m in out["moves"]}
