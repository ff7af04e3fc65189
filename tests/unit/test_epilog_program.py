"""slurm_compute's epilog program, rendered by Ansible and run as slurmd runs it after a job (issue 37).

The reader is installed the way slurm_compute installs it (module_utils/node_health.py and the gate modules as a
package of their own, run by python3 without site packages). nvidia-smi's readings are real H100 captures replayed
through the lab's replay double (tests/doubles/replay_capture); scontrol is a test double that answers `show node`
with the line the test gives and records every `update`.
"""

import os
import subprocess

import pytest
from conftest import EPILOG_TEMPLATE, ROOT, SCONTROL_DOUBLE, healthcheck_under_test, install_reader

APPS_LOAD = "nvidia_smi_query_compute_apps_h100_80gb_590.48.01_load_exporter.txt"
APPS_IDLE = "nvidia_smi_query_compute_apps_h100_80gb_590.48.01_idle_exporter.txt"
GPU_LOAD = "nvidia_smi_query_gpu_h100_80gb_590.48.01_load_exporter.txt"
GPU_IDLE = "nvidia_smi_query_gpu_h100_80gb_590.48.01_healthy_exporter.txt"
COMPLETING = "NodeName=gpu01 Arch=x86_64 State=IDLE+COMPLETING ThreadsPerCore=1"
ADMIN = "NodeName=gpu01 State=IDLE+COMPLETING+DRAIN ThreadsPerCore=1 Reason=rma ticket 42 [admin@2026-11-28T10:00:00]"
MAINT = "NodeName=gpu01 State=IDLE+COMPLETING+MAINT ThreadsPerCore=1"


@pytest.fixture
def node(tmp_path):
    """gpu01's epilog with the GPU check reading files the test points at captures, and one declared path."""
    install_reader(tmp_path)
    replay = " ".join([str(ROOT / "tests/doubles/replay_capture"), f"--fixtures={ROOT / 'tests/fixtures'}"])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    program = healthcheck_under_test(tmp_path, {
        "__slurm_compute_node_name": "gpu01", "__slurm_compute_epilog_gpu": True,
        "__slurm_compute_healthcheck_scontrol_timeout": 5, "__slurm_compute_health_lib": str(tmp_path / "lib"),
        "slurm_compute_epilog_grace": 1, "slurm_compute_epilog_max_used_mib": 1024, "slurm_compute_epilog_timeout": 20,
        "slurm_compute_epilog_clean_paths": [f"{scratch}/job-%j"],
        "slurm_compute_epilog_commands": {
            "apps": ["sh", "-c", f'exec {replay} "$(cat {tmp_path}/apps)"'],
            "memory": ["sh", "-c", f'exec {replay} "$(cat {tmp_path}/memory)"']}},
        SCONTROL_DOUBLE, template=EPILOG_TEMPLATE)

    def run(apps, memory, show, job="4242", gpus="0"):
        (tmp_path / "apps").write_text(apps)
        (tmp_path / "memory").write_text(memory)
        (tmp_path / "show").write_text(show + "\n")
        updates = tmp_path / "updates"
        updates.unlink(missing_ok=True)
        env = dict(os.environ, HC_SHOW=str(tmp_path / "show"), HC_UPDATES=str(updates), SLURM_JOB_ID=job)
        if gpus is not None:
            env["SLURM_JOB_GPUS"] = gpus
        done = subprocess.run([str(program)], env=env, capture_output=True, text=True, timeout=60, check=False)
        return done.returncode, updates.read_text().splitlines() if updates.exists() else []

    return run


def test_a_job_that_left_processes_on_the_gpu_drains_its_node_naming_the_job_the_gpu_and_the_memory(node):
    reason = "gpufleet:gate,to=slurm,epilog:job_4242:GPU0_pid_11327_2566MiB_+2"
    assert node(APPS_LOAD, GPU_LOAD, COMPLETING) == (0, [f"update NodeName=gpu01 State=DRAIN Reason={reason}"])


def test_a_clean_gpu_changes_nothing(node):
    assert node(APPS_IDLE, GPU_IDLE, COMPLETING) == (0, [])


def test_an_admins_drain_and_a_maintenance_reservation_stand(node):
    assert node(APPS_LOAD, GPU_LOAD, ADMIN) == (0, [])
    assert node(APPS_LOAD, GPU_LOAD, MAINT) == (0, [])


def test_a_reading_that_cannot_be_parsed_drains_never_passes(node):
    rc, updates = node("no_such_capture.txt", GPU_IDLE, COMPLETING)
    assert rc == 0 and len(updates) == 1
    assert updates[0].startswith("update NodeName=gpu01 State=DRAIN Reason=gpufleet:gate,to=slurm,epilog:job_4242:")


def test_the_declared_path_of_the_job_is_removed_and_no_other(node, tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "job-4242").mkdir()
    (scratch / "job-4242" / "data").write_text("x")
    (scratch / "job-99").mkdir()
    assert node(APPS_IDLE, GPU_IDLE, COMPLETING, job="4242") == (0, [])
    assert not (scratch / "job-4242").exists() and (scratch / "job-99").exists()
    # No job id, or one that is not a number: nothing is removed.
    assert node(APPS_IDLE, GPU_IDLE, COMPLETING, job="") == (0, [])
    assert node(APPS_IDLE, GPU_IDLE, COMPLETING, job="../x") == (0, [])
    assert (scratch / "job-99").exists()


def test_a_job_without_gpus_leaves_another_jobs_processes_alone(node):
    """Slurm sets SLURM_JOB_GPUS for a job with GPUs only: a CPU job ending on a node where another job runs on the
    GPU drains nothing."""
    assert node(APPS_LOAD, GPU_LOAD, COMPLETING, gpus=None) == (0, [])
    assert node(APPS_LOAD, GPU_LOAD, COMPLETING, gpus="") == (0, [])
