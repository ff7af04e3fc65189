"""The lab's build cache root (lab_build_dir, /var/tmp by default) is root's alone before anything is built or removed
under it (issue 36): owned by root, mode 0700, refused when it is a symlink, not a directory or another user's.

The role's check (roles/lab tasks/build_dir.yml) runs in a local playbook against directories under tmp_path, never
against /var/tmp/gpufleet-lab-build (other labs use it). As the brief's machines, the tests run as root.
"""

import os
import re
import stat
import sys

import pytest
from conftest import run_cases

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab runs as root; the ownership checks need root")


def run_build_dir(tmp, dirs, create=True, *args):
    hosts = {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "lab_build_dir": str(path), "__lab_build_dir_create": create} for name, path in dirs.items()}
    play = {"name": "lab build_dir", "hosts": "all", "gather_facts": False,
            "tasks": [{"name": "Run the role's check", "ansible.builtin.include_role": {
                "name": "lab", "tasks_from": "build_dir"}}]}
    return run_cases(tmp, [play], {"all": {"hosts": hosts}}, *args)


def test_the_build_dir_is_made_private_and_a_planted_one_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "rootfs").mkdir()
    dirs = {"fresh": tmp_path / "fresh", "existing": tmp_path / "existing", "symlink": tmp_path / "symlink",
            "foreign": tmp_path / "foreign", "file": tmp_path / "file",
            "nested": tmp_path / "new" / "parents" / "build"}
    os.chmod(tmp_path, 0o1777)  # the parent of the default, /var/tmp: left exactly as it is
    dirs["existing"].mkdir(mode=0o755)
    (dirs["existing"] / "cache").write_text("another lab's build\n")
    dirs["symlink"].symlink_to(tmp_path / "elsewhere")
    dirs["foreign"].mkdir(mode=0o777)
    os.chmod(dirs["foreign"], 0o777)
    os.chown(dirs["foreign"], 65534, 65534)
    dirs["file"].write_text("not a directory\n")

    check = run_build_dir(tmp_path, dirs, True, "--check")
    assert not dirs["fresh"].exists(), check.out  # check mode creates nothing

    run = run_build_dir(tmp_path, dirs)
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o1777
    for name in ("fresh", "existing", "nested"):
        assert not run.failed(name), run.out
        info = dirs[name].lstat()
        assert stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o700, name
    assert (dirs["existing"] / "cache").read_text() == "another lab's build\n"  # kept, not rebuilt
    assert run.failed("symlink") and run.failed("foreign") and run.failed("file"), run.out
    assert f"host symlink: variable lab_build_dir ({dirs['symlink']}) must be a directory owned by root, not a " \
           "symlink: it is a symlink" in run.messages("symlink"), run.out
    assert "it is owned by uid 65534" in run.messages("foreign"), run.out
    assert "it is not a directory" in run.messages("file"), run.out
    assert dirs["symlink"].is_symlink() and stat.S_IMODE((tmp_path / "elsewhere").stat().st_mode) != 0o700
    assert dirs["foreign"].lstat().st_uid == 65534 and stat.S_IMODE(dirs["foreign"].lstat().st_mode) == 0o777

    again = run_build_dir(tmp_path, {name: dirs[name] for name in ("fresh", "existing")})
    assert again.changed("fresh", "existing") == 0, again.out


def test_lab_absent_checks_without_creating(tmp_path):
    """lab_state=absent checks the root before removing under it, and creates nothing."""
    dirs = {"missing": tmp_path / "missing", "symlink": tmp_path / "symlink"}
    (tmp_path / "elsewhere").mkdir()
    dirs["symlink"].symlink_to(tmp_path / "elsewhere")
    run = run_build_dir(tmp_path, dirs, False)
    assert not run.failed("missing") and not dirs["missing"].exists(), run.out
    assert run.failed("symlink"), run.out


@pytest.mark.parametrize("tasks_file", ["image.yml", "absent.yml"])
def test_the_check_runs_before_any_task_touches_the_build_directory(tasks_file):
    """image.yml (the build) and absent.yml (the removal) run the check before their first task under lab_build_dir."""
    import yaml
    from conftest import ROOT, flat_tasks
    flat = list(flat_tasks(yaml.safe_load((ROOT / "roles/lab/tasks" / tasks_file).read_text())))
    touching = [i for i, t in enumerate(flat) if re.search(r"__lab_build_dir\b", yaml.safe_dump(t))]
    checks = [i for i, t in enumerate(flat) if t.get("ansible.builtin.include_tasks") == "build_dir.yml"]
    assert touching, tasks_file
    first = flat[touching[0]]["name"]
    assert checks and checks[0] < touching[0], f"{tasks_file}: no build_dir.yml check before {first}"
