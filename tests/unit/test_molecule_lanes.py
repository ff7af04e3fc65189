"""scripts/molecule_lanes: a failed scenario's row names the molecule step, the kind of failure, the
failing task and its message, read from the scenario's log.

The log texts are molecule 26's step lines (with their colours, as the lanes write them) around
ansible-core 2.19's output of real failures, in the project's YAML result format.
"""

import importlib.machinery
import importlib.util

from conftest import ROOT

_loader = importlib.machinery.SourceFileLoader("molecule_lanes", str(ROOT / "scripts" / "molecule_lanes"))
_spec = importlib.util.spec_from_loader("molecule_lanes", _loader)
lanes = importlib.util.module_from_spec(_spec)
_loader.exec_module(lanes)

STEP = "\x1b[36mINFO    \x1b[0m \x1b[32mhealth_gate\x1b[0m \u279c \x1b[33m{step}\x1b[0m: Executing"
FAILED_STEP = "\x1b[31mERROR   \x1b[0m \x1b[32mhealth_gate\x1b[0m \u279c \x1b[33m{step}\x1b[0m: Executed: Failed"
DESTROY_FAIL = """
TASK [Remove the lab] **********************************************************
fatal: [localhost]: FAILED! =>
    changed: false
    msg: destroy broke too
"""
ASSERT = """
PLAY [Verify the re-gated node is back in service] *****************************

TASK [Read gpu01] **************************************************************
ok: [ctl1]

TASK [Assert gpu01 was admitted again] *****************************************
[ERROR]: Task failed: Action failed: gpu01 passed the re-gate and must be idle: drain
Origin: /tmp/ci/gpufleet/molecule/health_gate/verify.yml:9:7

7       register: verify_readmitted
8       changed_when: false
9     - name: Assert gpu01 was admitted again
        ^ column 7

fatal: [ctl1]: FAILED! =>
    assertion: verify_readmitted.stdout | trim == 'idle'
    changed: false
    evaluated_to: false
    msg: 'gpu01 passed the re-gate and must be idle: drain'

PLAY RECAP *********************************************************************
ctl1                       : ok=1    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0
"""
COMMAND = """
TASK [slurm_controller : Wait for slurmctld to answer] *************************
[ERROR]: Task failed: Module failed: non-zero return code
Origin: /tmp/ci/gpufleet/roles/slurm_controller/tasks/main.yml:65:3

fatal: [ctl1]: FAILED! =>
    changed: false
    cmd:
    - scontrol
    - ping
    msg: non-zero return code
    rc: 1
    stderr: 'slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)'
    stderr_lines: <omitted>
    stdout: ''
"""
UNREACHABLE = """
TASK [Gathering Facts] *********************************************************
fatal: [gpu03]: UNREACHABLE! =>
    changed: false
    msg: 'Task failed: Failed to connect to the host via ssh: kex_exchange_identification: read: Connection
        reset by peer'
    unreachable: true
"""
IDEMPOTENCE = """
\x1b[31mCRITICAL\x1b[0m Idempotence test failed because of the following tasks:
*  => health_gate : Admit, drain or leave each node
"""


def _log(step, body):
    return "\n".join([STEP.format(step="create"), STEP.format(step=step), body, FAILED_STEP.format(step=step),
                      STEP.format(step="destroy"), DESTROY_FAIL])


def test_a_failed_assertion_names_the_verify_step_the_task_and_its_message():
    found = lanes.failure_summary(_log("verify", ASSERT))
    assert (found["step"], found["kind"], found["host"]) == ("verify", "assert", "ctl1")
    assert found["task"] == "Assert gpu01 was admitted again"
    assert found["message"] == ("assertion: verify_readmitted.stdout | trim == 'idle': "
                                "gpu01 passed the re-gate and must be idle: drain")


def test_a_failed_command_reports_its_stderr():
    found = lanes.failure_summary(_log("converge", COMMAND))
    assert (found["step"], found["kind"], found["task"]) == (
        "converge", "task", "slurm_controller : Wait for slurmctld to answer")
    assert found["message"] == ("non-zero return code: slurm_load_ctl_conf error: "
                                "Unable to contact slurm controller (connect failure)")


def test_an_unreachable_host_is_its_own_kind():
    found = lanes.failure_summary(_log("converge", UNREACHABLE))
    assert (found["kind"], found["host"], found["task"]) == ("unreachable", "gpu03", "Gathering Facts")


def test_a_lost_idempotence_names_the_tasks_that_changed():
    found = lanes.failure_summary(_log("idempotence", IDEMPOTENCE))
    assert (found["step"], found["kind"]) == ("idempotence", "idempotence")
    assert "Admit, drain or leave each node" in found["task"]


def test_a_log_without_a_failed_task_says_what_molecule_said():
    text = STEP.format(step="syntax") + "\n\x1b[31mCRITICAL\x1b[0m Ansible return code was 4, command was: x\n"
    found = lanes.failure_summary(text)
    assert (found["step"], found["kind"]) == ("syntax", "molecule")
    assert found["message"].startswith("CRITICAL Ansible return code was 4") or "return code was 4" in found["message"]


def test_long_messages_are_cut_to_one_table_line():
    body = ASSERT.replace("must be idle: drain'", "must be idle: " + "x" * 400 + "'")
    assert len(lanes.failure_summary(_log("verify", body))["message"]) == lanes.MESSAGE_WIDTH


RESCUED = """
TASK [Probe a node that may be gone] *******************************************
fatal: [gpu02]: FAILED! =>
    changed: false
    msg: non-zero return code

TASK [Carry on] ****************************************************************
ok: [gpu02]

PLAY RECAP *********************************************************************
gpu02                      : ok=1    changed=0    unreachable=0    failed=0    skipped=0    rescued=1    ignored=0
"""


def test_a_failure_a_block_rescued_is_not_the_one_reported():
    found = lanes.failure_summary(_log("converge", RESCUED + ASSERT))
    assert (found["kind"], found["task"]) == ("assert", "Assert gpu01 was admitted again")
    alone = lanes.failure_summary(_log("converge", RESCUED) + "\nCRITICAL Ansible return code was 2\n")
    assert alone["kind"] == "molecule"


def _real(name):
    """failure_summary of a real lanes log kept in tests/fixtures/molecule_lanes."""
    return lanes.failure_summary((ROOT / "tests" / "fixtures" / "molecule_lanes" / name).read_text())


def test_a_real_lanes_log_names_the_verify_task_that_gave_up():
    found = _real("pool_rebalance_verify_until_failed.log")
    assert (found["step"], found["kind"], found["host"]) == ("verify", "task", "localhost -> ctl1")
    assert found["task"] == "Watch for the node that drains"
    assert found["message"] == "until not met after 60 attempts (rc 0)"


def test_a_real_assertion_molecule_folded_past_yaml_still_gives_its_condition_and_message():
    found = _real("maintenance_verify_assert_folded.log")
    assert (found["step"], found["kind"], found["host"]) == ("verify", "assert", "localhost")
    assert found["task"] == "Assert the run waits for the node's job"
    assert found["message"].startswith("assertion: verify_run_log_now.stdout_lines | select('search', verify_waiting)")
    assert ": the run never waited for gpu04" in found["message"]



def test_a_status_line_says_what_each_lane_runs_in_which_step_and_what_the_watched_logs_say(tmp_path, monkeypatch):
    """The status line CI's tail shows when it stops a run at its time limit: where every lane was."""
    monkeypatch.setattr(lanes, "LOG_DIR", tmp_path)
    (tmp_path / "health_gate.log").write_text("\n".join([STEP.format(step="create"), STEP.format(step="converge")]))
    (tmp_path / "k8s_cluster.log").write_text("")
    checks, stale = tmp_path / "checks.log", tmp_path / "stale.log"
    checks.write_text("tests/unit/test_a.py ....\ntests/unit/test_pool_plan.py .....   [ 62%]\n")
    stale.write_text("from an earlier run\n")
    import os
    import time
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    now = time.monotonic()
    monkeypatch.setattr(lanes, "RUNNING", {0: ("base image for node_stack", now - 30), 2: ("health_gate", now - 95),
                                           5: ("k8s_cluster", now - 5)})
    line = lanes.status_line(3, 11, [checks, stale, tmp_path / "missing.log"], time.time() - 600)
    assert line.startswith("lanes: at ") and ", 3 of 11 scenarios ended, load " in line, line
    assert "running: base image for node_stack 30 s; lane 2 health_gate converge 95 s; lane 5 k8s_cluster ? 5 s" in line
    assert line.endswith("; checks.log: tests/unit/test_pool_plan.py .....   [ 62%]"), line
    assert "earlier run" not in line
