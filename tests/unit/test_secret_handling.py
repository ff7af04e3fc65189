"""Secrets stay out of argv, --diff, renders and paths another user can plant (docs/security.md).

The munge key's write scripts run here for real under sh, with a stand-in `chown` on PATH (no root, no munge
user); the other checks read the roles' task files.
"""

import base64
import os
import stat
import subprocess

import pytest
import yaml
from conftest import ROOT, flat_tasks

ROLES = ROOT / "roles"


def role_tasks(role):
    for path in sorted((ROLES / role / "tasks").glob("*.yml")):
        for task in flat_tasks(yaml.safe_load(path.read_text())):
            yield path.name, task


def munge_task(name_part):
    (task,) = [t for _, t in role_tasks("munge") if name_part in t["name"]]
    return task["ansible.builtin.command"]["argv"]


@pytest.fixture
def shim(tmp_path):
    """PATH with a `chown` that does nothing, so the scripts run as an ordinary user."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "chown").write_text("#!/bin/sh\nexit 0\n")
    (bindir / "chown").chmod(0o755)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}


def run_argv(argv, key_path, env, stdin=None):
    sh, flag, script, name = argv[:4]
    return subprocess.run([sh, flag, script, name, str(key_path)], input=stdin, env=env,
                          capture_output=True, text=True, check=False)


KEY = base64.b64encode(bytes(range(256)) * 4).decode()


def test_a_symlink_planted_beside_the_munge_key_does_not_redirect_the_write(tmp_path, shim):
    victim = tmp_path / "shadow"
    victim.write_bytes(b"root:x:0:0\n")
    keydir = tmp_path / "munge"
    keydir.mkdir()
    key = keydir / "munge.key"
    for planted in ("munge.key.new", "munge.key.tmp"):
        (keydir / planted).symlink_to(victim)
    out = run_argv(munge_task("Write the cluster key"), key, shim, KEY)
    assert out.returncode == 0, out.stderr
    assert victim.read_bytes() == b"root:x:0:0\n"
    assert key.read_bytes() == base64.b64decode(KEY) and not key.is_symlink()
    assert stat.S_IMODE(key.stat().st_mode) == 0o400
    assert out.stdout.strip() == "written"
    # The same key again: nothing written, no temporary file left behind.
    again = run_argv(munge_task("Write the cluster key"), key, shim, KEY)
    assert again.returncode == 0 and again.stdout.strip() == ""
    assert sorted(p.name for p in keydir.iterdir()) == ["munge.key", "munge.key.new", "munge.key.tmp"]


def test_a_dangling_symlink_at_the_key_path_does_not_receive_a_generated_key(tmp_path, shim):
    victim = tmp_path / "elsewhere"
    key = tmp_path / "munge.key"
    key.symlink_to(victim)
    run_argv(munge_task("Generate a key"), key, shim)
    assert not victim.exists()


def test_every_munge_key_task_hides_its_output():
    touching = [(f, t) for f, t in role_tasks("munge") if "key" in t["name"].split(" | ")[0]
                and ("command" in str(t) or "slurp" in str(t))]
    assert touching and all(t.get("no_log") is True for _, t in touching)


def argv_words(task):
    for key in ("ansible.builtin.command", "command"):
        if key in task:
            argv = task[key]["argv"] if isinstance(task[key], dict) else task[key]
            return argv if isinstance(argv, list) else [argv]
    return []


@pytest.mark.parametrize("role", ["kubeadm_control_plane", "kubeadm_worker", "kubeadm_node"])
def test_no_kubeadm_command_carries_the_token_or_the_certificate_key_in_argv(role):
    exposed = [f"{f}: {t['name']}" for f, t in role_tasks(role)
               for word in argv_words(t) if "_token" in str(word) or "certificate_key" in str(word)]
    assert exposed == []


def test_k3s_config_yaml_on_the_server_is_written_without_diff_or_log():
    (task,) = [t for f, t in role_tasks("k3s_server") if f == "config.yml" and "config.yaml" in t["name"]]
    assert task.get("no_log") is True and task.get("diff") is False


def test_k3s_config_facts_are_not_logged():
    (task,) = [t for f, t in role_tasks("k3s_server") if f == "facts.yml" and "set_fact" in str(t)]
    assert task.get("no_log") is True


def test_the_k3s_render_redacts_the_datastore_endpoint():
    (task,) = [t for f, t in role_tasks("k3s_server") if f == "render.yml" and t["name"].endswith("config.yaml")]
    template = (ROLES / "k3s_server" / "templates" / "etc/rancher/k3s/config.yaml.j2").read_text()
    shown = task.get("vars", {}).get("__k3s_server_config_shown", "")
    assert "__k3s_server_config_shown" in template and "datastore-endpoint" in shown


def test_slurmdbd_conf_s_checksum_is_not_read_into_the_play():
    (probe,) = [t for f, t in role_tasks("slurm_dbd") if "host_state_info" in t]
    conf = [p for p in probe["host_state_info"]["paths"] if "__slurm_dbd_conf" in p["path"]]
    assert conf and not any(p.get("checksum") for p in conf)
    (write,) = [t for f, t in role_tasks("slurm_dbd") if "slurmdbd.conf" in t["name"] and "template" in str(t)]
    assert "hash(" not in str(write.get("when", "")) and write.get("no_log") is True and write.get("diff") is False
