"""slurm_controller's shared-state check (a backup controller) stops before slurmctld is installed or
started, naming the host and the variable: the share not mounted, the state directory outside it, or
SlurmUser unable to write it. Runs the role's real task file on localhost."""

import pathlib
import sys

import pytest
import yaml
from conftest import run_playbook

ROOT = pathlib.Path(__file__).resolve().parents[2]
TASKS = ROOT / "roles/slurm_controller/tasks/shared_state.yml"


def run_shared_state(tmp_path, state_dir, mount):
    play = [
        {
            "name": "Check the shared state directory",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {
                "slurm_controller_state_dir": str(state_dir),
                "slurm_controller_state_mount": str(mount),
                "__slurm_controller_state": {"paths_differ": []},
                "__slurm_controller_check_fresh": False,
            },
            "tasks": [{"name": "Run the role's shared-state tasks", "ansible.builtin.include_tasks": str(TASKS)}],
        }
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play))
    result = run_playbook("-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}", playbook,
                          timeout=120)
    return result.returncode, result.stdout + result.stderr


def test_a_state_directory_on_no_mount_is_refused_naming_host_and_variable(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    rc, out = run_shared_state(tmp_path, state, state)
    assert rc != 0, out
    assert f"host localhost: variable slurm_controller_state_mount: nothing is mounted at {state}" in out, out


def test_a_state_directory_outside_the_mount_is_refused(tmp_path):
    rc, out = run_shared_state(tmp_path, "/var/lib/slurm/slurmctld", tmp_path / "share")
    assert rc != 0, out
    assert "host localhost: variable slurm_controller_state_mount" in out, out
    assert "must be slurm_controller_state_dir (/var/lib/slurm/slurmctld) or a directory above it" in out, out
    # The assert comes first: the mount was never read.
    assert "Read the share's mount" not in out, out


def test_a_state_directory_slurm_cannot_write_is_refused_naming_the_variable(tmp_path):
    # "/" is mounted; a root-owned 0700 directory (or a host without the slurm user) is not writable by slurm.
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    rc, out = run_shared_state(tmp_path, state, "/")
    assert rc != 0, out
    assert (
        f"host localhost: variable slurm_controller_state_dir: SlurmUser slurm cannot create a file in {state}" in out
    ), out


@pytest.mark.parametrize("mount", ["/var/lib/slurm", "/var/lib/slurm/", "/var/lib/slurm/slurmctld"])
def test_the_mount_may_be_the_state_directory_or_above_it(tmp_path, mount):
    # Passes the first assert, then stops at the mount read: nothing is mounted there on this machine.
    rc, out = run_shared_state(tmp_path, "/var/lib/slurm/slurmctld", mount)
    assert rc != 0, out
    assert "must be slurm_controller_state_dir" not in out, out
    assert f"nothing is mounted at {mount}" in out, out
