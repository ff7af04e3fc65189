"""playbooks/k8s_preflight.yml renders into private directories, never a fixed name under /tmp (issue 36).

The first play of k8s_preflight.yml (its directory checks, playbooks/tasks/private_dir.yml) runs here on local hosts
with HOME and k8s_preflight_manifest_dir under tmp_path: a fresh directory is made 0700, an existing one of its
owner is kept and made 0700, and a symlink, a file, another user's directory or a relative path is refused naming
the host and the variable before anything is rendered.
"""

import os
import stat
import sys

import pytest
import yaml
from conftest import ROOT, ansible_env, run_cases, run_playbook

PREFLIGHT = ROOT / "playbooks" / "k8s_preflight.yml"


def local(**hostvars):
    return {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **hostvars}


def test_no_fixed_name_under_tmp_and_the_check_comes_first():
    text = PREFLIGHT.read_text()
    assert "/tmp" not in text and "TMPDIR" not in text
    plays = yaml.safe_load(text)
    first, render = plays[0], plays[1]
    assert render["ansible.builtin.import_playbook"] == "k8s_render.yml"
    checked = {t["vars"]["__private_dir_var"]: t["vars"]["__private_dir_path"] for t in first["tasks"]
               if t.get("ansible.builtin.include_tasks") == "tasks/private_dir.yml"}
    assert checked == {"k8s_preflight_dir": "{{ k8s_preflight_dir }}",
                       "k8s_preflight_manifest_dir": "{{ k8s_preflight_manifest_dir }}"}
    for name in checked:  # the play that checks and the plays that render use one path
        assert first["vars"][name] == render["vars"][name]


@pytest.mark.skipif(os.geteuid() != 0, reason="the ownership checks need root (the brief's machines run as root)")
def test_private_dir_makes_keeps_and_refuses(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    paths = {"fresh": tmp_path / "a" / "fresh", "existing": tmp_path / "existing", "symlink": tmp_path / "symlink",
             "foreign": tmp_path / "foreign", "file": tmp_path / "file"}
    paths["existing"].mkdir(mode=0o755)
    (paths["existing"] / "values.yaml").write_text("kept\n")
    paths["symlink"].symlink_to(tmp_path / "elsewhere")
    paths["foreign"].mkdir()
    os.chown(paths["foreign"], 65534, 65534)
    paths["file"].write_text("x\n")
    hosts = {name: local(__private_dir_path=str(path)) for name, path in paths.items()}
    hosts["relative"] = local(__private_dir_path="gpufleet-k8s-preflight")
    play = {"name": "private_dir", "hosts": "all", "gather_facts": False,
            "vars": {"__private_dir_var": "k8s_preflight_manifest_dir", "__private_dir_uid": 0},
            "tasks": [{"name": "Check",
                       "ansible.builtin.include_tasks": str(ROOT / "playbooks/tasks/private_dir.yml")}]}
    run = run_cases(tmp_path, [play], {"all": {"hosts": hosts}})
    for name in ("fresh", "existing"):
        assert not run.failed(name), run.out
        info = paths[name].lstat()
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == 0
    assert (paths["existing"] / "values.yaml").read_text() == "kept\n"
    for name, what in (("symlink", "a symlink"), ("foreign", "owned by uid 65534"), ("file", "not a directory"),
                       ("relative", "relative")):
        assert run.failed(name), run.out
        assert f"host {name}: variable k8s_preflight_manifest_dir (" in run.messages(name), run.out
        assert f"it is {what}; remove it or choose another k8s_preflight_manifest_dir" in run.messages(name), run.out
    assert stat.S_IMODE((tmp_path / "elsewhere").stat().st_mode) != 0o700  # nothing done through the symlink
    again = run_cases(tmp_path, [play], {"all": {"hosts": {n: hosts[n] for n in ("fresh", "existing")}}})
    assert again.changed("fresh", "existing") == 0, again.out


def test_the_preflight_s_first_play_checks_both_directories(tmp_path):
    """The real first play of k8s_preflight.yml, with HOME under tmp_path: a planted symlink stops it."""
    home = tmp_path / "home"
    (home / ".cache" / "gpufleet").mkdir(parents=True)
    node_dir = tmp_path / "node" / "k8s-preflight"
    first = yaml.safe_load(PREFLIGHT.read_text())[0]
    for task in first["tasks"]:
        task["ansible.builtin.include_tasks"] = str(ROOT / "playbooks" / task["ansible.builtin.include_tasks"])
    (tmp_path / "play.yml").write_text(yaml.safe_dump([first]))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"k8s_server": {"hosts": {
        "server1": local()}}}}}))
    args = ["-i", tmp_path / "hosts.yml", tmp_path / "play.yml", "-e", f"k8s_preflight_manifest_dir={node_dir}"]
    env = ansible_env(HOME=str(home))
    ok = run_playbook(*args, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    for path in (home / ".cache" / "gpufleet" / "k8s-preflight", node_dir):
        assert stat.S_IMODE(path.lstat().st_mode) == 0o700 and path.lstat().st_uid == os.geteuid()
    again = run_playbook(*args, env=env)  # the directories persist: a second run changes nothing
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout + again.stderr
    # A name planted where the controller's directory goes is refused, naming the host and the variable.
    (home / ".cache" / "gpufleet" / "k8s-preflight").rmdir()
    (home / ".cache" / "gpufleet" / "k8s-preflight").symlink_to(tmp_path)
    refused = run_playbook(*args, env=env)
    out = " ".join((refused.stdout + refused.stderr).split())
    assert refused.returncode != 0 and "host server1: variable k8s_preflight_dir (" in out and "it is a symlink" in out
