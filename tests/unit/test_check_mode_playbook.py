"""pool_executor under --check shows the moves and changes nothing: it never reaches the controller."""

import json
import os
import pathlib
import re
import subprocess
import sys

from ansible.module_utils.pool_plan import plan

ROOT = pathlib.Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(pathlib.Path(sys.executable).with_name("ansible-playbook"))

NODES = [
    {"name": f"gpu0{i}", "gpus": 2, "leaf": "leaf1" if i < 3 else "leaf2", "healthy": True, "pool": None}
    for i in range(1, 5)
]
POLICY = {"pools": {"slurm": {"min": 1, "target": 3}, "k8s": {"min": 1, "target": 1}}, "max_unavailable": 1}


def run(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", "localhost,", "tests/playbooks/pool_executor_check.yml", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_check_mode_reports_each_batch_and_reaches_no_node():
    the_plan = plan(NODES, POLICY)
    assert len(the_plan["batches"]) == 4
    result = run("--check", "-e", json.dumps({"test_plan": the_plan}))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    # The batch listing is the one change, none failed, and the unknown controller was never contacted.
    assert re.search(r"localhost\s+: ok=\d+\s+changed=1\s+unreachable=0\s+failed=0", out), out
    assert "no-such-controller" not in out, out
    joining = sorted(m["node"] for m in the_plan["moves"] if m["to"] == "slurm")
    leaving = [m["node"] for m in the_plan["moves"] if m["to"] == "k8s"]
    for m in the_plan["moves"]:
        assert f"{m['node']} none->{m['to']}" in out, out
    assert f"slurm_pool={','.join(joining)} held={','.join(joining)}" in out, out
    assert leaving and leaving[0] not in joining


def test_without_check_the_same_plan_reaches_for_the_controller():
    # The counterpart that makes the test above mean something: a real run tries the controller.
    result = run("-e", json.dumps({"test_plan": plan(NODES, POLICY)}))
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "no-such-controller" in out, out
