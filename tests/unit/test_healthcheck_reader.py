"""The health check program drains on what breaks GPUs, once, and hands the node to the gate (issue 37).

The real template is rendered by Ansible and run as Slurm would run it, with the reader installed the way slurm_compute
installs it (module_utils/node_health.py and the gate modules as a package of their own, run by the system's python3
without site packages). The kernel log is a real capture replayed through the lab's replay double
(tests/doubles/replay_capture); scontrol is a test double that answers `show node` with the line the test gives and
records every `update`.
"""

import os
import subprocess

import pytest
from conftest import ROOT, SCONTROL_DOUBLE, healthcheck_under_test, install_reader

XID79 = "kernel_log_syslog_xid79_fallen_off_bus_k80.txt"
XID31 = "kernel_log_xid31_mmu_fault_app_error_515.txt"
IDLE = "NodeName=gpu01 Arch=x86_64 State=IDLE ThreadsPerCore=1 Reason=(null)"
OURS = "NodeName=gpu01 State=IDLE+DRAIN ThreadsPerCore=1 Reason=gpufleet:gate,to=slurm,healthcheck:xid [root@2026]"
ADMIN = "NodeName=gpu01 State=IDLE+DRAIN ThreadsPerCore=1 Reason=rma ticket 42 [admin@2026-11-28T10:00:00]"


@pytest.fixture
def node(tmp_path):
    """A node: the program rendered for gpu01 with the xid check reading a file the test points at a capture."""
    install_reader(tmp_path)
    replay = [str(ROOT / "tests/doubles/replay_capture"), f"--fixtures={ROOT / 'tests/fixtures'}"]
    kernel_log = tmp_path / "kernel-log"
    program = healthcheck_under_test(tmp_path, {
        "__slurm_compute_node_name": "gpu01", "slurm_compute_healthcheck_gpus": 0,
        "slurm_compute_healthcheck_min_free_mb": 1, "slurm_compute_healthcheck_timeout": 20,
        "__slurm_compute_healthcheck_scontrol_timeout": 5, "slurm_compute_spool_dir": str(tmp_path),
        "slurm_compute_healthcheck_checks": ["xid"], "__slurm_compute_health_lib": str(tmp_path / "lib"),
        "slurm_compute_healthcheck_state_dir": str(tmp_path / "state"),
        "slurm_compute_healthcheck_fatal_xids": [48, 79], "slurm_compute_healthcheck_mounts": [],
        "slurm_compute_healthcheck_profile": None, "slurm_compute_healthcheck_profiles": {},
        "slurm_compute_healthcheck_ib_devices": [],
        "slurm_compute_healthcheck_commands": {"xid": ["sh", "-c", f'exec {" ".join(replay)} "$(cat {kernel_log})"']}},
        SCONTROL_DOUBLE)

    def run(log, show):
        kernel_log.write_text(log)
        (tmp_path / "show").write_text(show + "\n")
        updates = tmp_path / "updates"
        updates.unlink(missing_ok=True)
        env = dict(os.environ, HC_SHOW=str(tmp_path / "show"), HC_UPDATES=str(updates))
        done = subprocess.run([str(program)], env=env, capture_output=True, text=True, timeout=60, check=False)
        return done.returncode, updates.read_text().splitlines() if updates.exists() else []

    return run


def test_a_fatal_xid_drains_once_naming_the_gpu_and_the_gate_admits_the_node_again(node):
    rc, updates = node(XID79, IDLE)
    assert (rc, updates) == (1, ["update NodeName=gpu01 State=DRAIN "
                                 "Reason=gpufleet:gate,to=slurm,healthcheck:xid:_Xid_79_on_PCI:0000:05:00_-+1_more-"])
    # The drain acknowledged the Xid: the next run, still drained with the toolkit's reason, finds nothing new...
    assert node(XID79, OURS) == (0, [])
    # ...nor once gate.yml admitted the node again: the same kernel log lines are not a new fault.
    assert node(XID79, IDLE) == (0, [])


def test_under_an_admin_s_drain_the_xid_waits_for_the_admin_to_return_the_node(node):
    assert node(XID79, ADMIN) == (1, [])
    rc, updates = node(XID79, IDLE)
    assert rc == 1
    assert updates[0].endswith("Reason=gpufleet:gate,to=slurm,healthcheck:xid:_Xid_79_on_PCI:0000:05:00_-+1_more-")


def test_an_application_xid_leaves_the_node_in_service(node):
    assert node(XID31, IDLE) == (0, [])


def test_a_reader_that_cannot_read_the_kernel_log_drains_with_its_own_words(node):
    rc, updates = node("no_such_capture.txt", IDLE)
    assert rc == 1
    assert updates == ["update NodeName=gpu01 State=DRAIN "
                       "Reason=gpufleet:gate,to=slurm,healthcheck:xid:_the_kernel_log_read_exited_2"]


def test_a_node_in_a_maintenance_reservation_is_left_to_its_owner_and_nothing_is_acknowledged(node):
    """The gate's pair test resumes held nodes into a MAINT reservation and restores their reasons afterwards: a
    drain there would be overwritten and its Xid lost. Found in review of f462426."""
    assert node(XID79, "NodeName=gpu01 State=IDLE+MAINT+RESERVED ThreadsPerCore=1 Reason=(null)") == (1, [])
    rc, updates = node(XID79, IDLE)
    assert rc == 1 and len(updates) == 1
