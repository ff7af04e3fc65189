"""pool_executor under --check shows the moves and changes nothing: it never reaches the controller."""

import json
import pathlib
import re

from ansible.module_utils.pool_plan import plan
from conftest import run_playbook

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Two nodes in Kubernetes, two in no pool: the fresh ones join together (batch 0), then one leaves
# Kubernetes for Slurm (batch 1).
NODES = [
    {"name": f"gpu0{i}", "gpus": 2, "leaf": "leaf1" if i < 3 else "leaf2", "healthy": True,
     "pool": "k8s" if i < 3 else None}
    for i in range(1, 5)
]
POLICY = {"pools": {"slurm": {"min": 1, "target": 3}, "k8s": {"min": 1, "target": 1}}, "max_unavailable": 1}


def run(*args):
    return run_playbook("-i", "localhost,", "tests/playbooks/pool_executor_check.yml", *args, timeout=120)


def test_check_mode_reports_each_batch_and_reaches_no_node():
    the_plan = plan(NODES, POLICY)
    assert [len(batch) for batch in the_plan["batches"]] == [2, 1]
    result = run("--check", "-e", json.dumps({"test_plan": the_plan}))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    # The batch listing is the one change, none failed, and the unknown controller was never contacted.
    assert re.search(r"localhost\s+: ok=\d+\s+changed=1\s+unreachable=0\s+failed=0", out), out
    assert "no-such-controller" not in out, out
    joining = sorted(m["node"] for m in the_plan["moves"] if m["to"] == "slurm")
    slurm_pool = [n for n, pool in the_plan["targets"].items() if pool == "slurm"]
    for m in the_plan["moves"]:
        assert f"{m['node']} {m['from'] or 'none'}->{m['to']}" in out, out
    assert f"slurm_pool={','.join(slurm_pool)} held={','.join(joining)}" in out, out
    assert [m["from"] for m in the_plan["moves"]].count("k8s") == 1


def test_without_check_the_same_plan_reaches_for_the_controller():
    # The counterpart that makes the test above mean something: a real run tries the controller.
    result = run("-e", json.dumps({"test_plan": plan(NODES, POLICY)}))
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "no-such-controller" in out, out
