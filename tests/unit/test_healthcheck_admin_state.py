"""The Slurm health check never takes over a node an admin (or Slurm) already took out (issue 36, finding 4).

``gpufleet-healthcheck`` (roles/slurm_compute) drains a failing node with the toolkit's gate reason, and a gate PASS
later resumes every node drained with that reason. So the script must leave alone a node that is out of service
for someone else's reason: a drain (whatever its reason holds, ` State=IDLE` included), a DOWN or FAIL an admin set
with a reason, and a node whose state it could not read in time. Before the fix at fb64911 the script read the
state with a greedy pattern (an admin reason holding ` State=IDLE` read as IDLE) and drained on a timed-out read;
until this test's fix it drained a DOWN node, replacing the admin's reason with ours.

The template is rendered by Ansible with the role's own values; the test then runs the real script with a test
double of ``scontrol`` (first on the script's PATH: the one line the test rewrites) that answers ``show node`` with a
given line and records every ``update``.
"""

import os
import subprocess

import pytest
from conftest import healthcheck_under_test

SCONTROL_DOUBLE = """#!/bin/sh
# Test double of scontrol: `show node` prints $HC_SHOW_LINE (after $HC_SHOW_SLEEP s); `update` is recorded.
case "$1" in
  show) sleep "${HC_SHOW_SLEEP:-0}"; printf '%s\\n' "$HC_SHOW_LINE" ;;
  update) printf '%s\\n' "$*" >> "$HC_UPDATES" ;;
esac
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("healthcheck")
    return healthcheck_under_test(tmp, {
        "__slurm_compute_node_name": "gpu01", "slurm_compute_healthcheck_gpus": 2,
        "slurm_compute_healthcheck_min_free_mb": 1, "slurm_compute_healthcheck_timeout": 5,
        "__slurm_compute_healthcheck_scontrol_timeout": 1, "slurm_compute_spool_dir": str(tmp),
        "slurm_compute_healthcheck_checks": [], "__slurm_compute_health_lib": str(tmp / "lib"),
        "slurm_compute_healthcheck_state_dir": str(tmp / "state")}, SCONTROL_DOUBLE)


def run(script, tmp_path, line, sleep=0):
    """Run the health check on this host (no /dev/nvidia*: it fails its GPU check); return (rc, updates)."""
    updates = tmp_path / "updates"
    env = dict(os.environ, HC_SHOW_LINE=line, HC_SHOW_SLEEP=str(sleep), HC_UPDATES=str(updates))
    rc = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60, check=False).returncode
    return rc, updates.read_text().splitlines() if updates.exists() else []


def test_a_node_in_service_that_fails_is_drained_with_the_gate_reason(script, tmp_path):
    rc, updates = run(script, tmp_path, "NodeName=gpu01 Arch=x86_64 State=IDLE ThreadsPerCore=1")
    assert rc == 1
    assert updates == ["update NodeName=gpu01 State=DRAIN Reason=gpufleet:gate,to=slurm,healthcheck:gpu_devices_0_of_2"]


@pytest.mark.parametrize("line", [
    "NodeName=gpu01 State=IDLE+DRAIN ThreadsPerCore=1 Reason=rack 4 work, State=IDLE after [admin@2026-11-28T10:00:00]",
    "NodeName=gpu01 State=DOWN ThreadsPerCore=1 Reason=PSU swap [admin@2026-11-28T10:00:00]",
    "NodeName=gpu01 State=DOWN+DRAIN ThreadsPerCore=1 Reason=cable [admin@2026-11-28T10:00:00]",
    "NodeName=gpu01 State=IDLE+FAIL ThreadsPerCore=1 Reason=bad DIMM [admin@2026-11-28T10:00:00]",
], ids=["drain-reason-holds-State=", "down", "down-drain", "fail"])
def test_a_node_out_of_service_for_another_reason_keeps_it(script, tmp_path, line):
    rc, updates = run(script, tmp_path, line)
    assert (rc, updates) == (1, [])


def test_a_state_read_that_times_out_changes_nothing(script, tmp_path):
    rc, updates = run(script, tmp_path, "NodeName=gpu01 State=IDLE", sleep=3)
    assert (rc, updates) == (2, [])
