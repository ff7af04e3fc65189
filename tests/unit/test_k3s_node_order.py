"""The shared k3s_node role (issue 12): played first, it installs and reports; k3s_server and k3s_agent restart
their own service from its outputs, the agent draining first, and the join tokens are checked by preflight."""

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import run_playbook

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"


def load(path):
    return yaml.safe_load(path.read_text())


def flat(tasks):
    found = []
    for task in tasks:
        found.extend(flat(task["block"]) if "block" in task else [task])
    return found


def role_tasks(role, entry="main"):
    """The tasks of an entry point in run order, import_tasks expanded."""
    found = []
    for task in flat(load(ROLES / role / "tasks" / f"{entry}.yml")):
        if "ansible.builtin.import_tasks" in task:
            found.extend(role_tasks(role, task["ansible.builtin.import_tasks"].removesuffix(".yml")))
        else:
            found.append(task)
    return found


def index(tasks, predicate):
    return next(i for i, t in enumerate(tasks) if predicate(t))


def test_k8s_plays_list_k3s_node_before_the_server_and_the_agent():
    plays = {p["name"]: [r["role"] for r in p.get("roles", [])] for p in load(ROOT / "playbooks" / "k8s_cluster.yml")
             if "roles" in p}
    k3s = {name: roles for name, roles in plays.items() if any(r.startswith("k3s_") for r in roles)}
    assert sorted(k3s.values()) == [["k3s_node", "k3s_agent"], ["k3s_node", "k3s_server"]], k3s


def test_k3s_node_has_no_handler_and_computes_the_upgrade_before_replacing_the_binary():
    assert not (ROLES / "k3s_node" / "handlers").exists()
    tasks = role_tasks("k3s_node")
    assert not [t["name"] for t in tasks if "notify" in t]
    upgrade = index(tasks, lambda t: "k3s_node_upgrade" in t.get("ansible.builtin.set_fact", {}))
    writes = [i for i, t in enumerate(tasks)
              if {"ansible.builtin.get_url", "ansible.builtin.copy"} & t.keys()]
    changed = index(tasks, lambda t: "k3s_node_changed" in t.get("ansible.builtin.set_fact", {}))
    assert len(writes) == 3 and upgrade < min(writes) and changed > max(writes)


def test_server_and_agent_take_the_outputs_as_declared_inputs():
    for role, inputs in (("k3s_server", {"k3s_server_restart": "k3s_node_changed"}),
                         ("k3s_agent", {"k3s_agent_restart": "k3s_node_changed",
                                        "k3s_agent_upgrade": "k3s_node_upgrade"})):
        defaults = load(ROLES / role / "defaults" / "main.yml")
        spec = load(ROLES / role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
        for name, output in inputs.items():
            assert defaults[name] == f"{{{{ {output} | default(false) }}}}"
            assert spec[name]["type"] == "bool"
        tasks = role_tasks(role)
        assert not [t["name"] for t in tasks if any("k3s_node_" in str(v) for v in t.values())]


def test_the_agent_drains_before_it_restarts_and_uncordons_after():
    tasks = role_tasks("k3s_agent")
    drain = index(tasks, lambda t: "kubernetes.core.k8s_drain" in t)
    restart = index(tasks, lambda t: t.get("notify") == "Restart k3s agent"
                    and t.get("when") == "k3s_agent_restart | bool")
    flush = index(tasks, lambda t: t.get("ansible.builtin.meta") == "flush_handlers")
    assert drain < restart < flush
    assert [h["name"] for h in load(ROLES / "k3s_agent" / "handlers" / "main.yml")] == [
        "Restart k3s agent", "Wait for the upgraded k3s agent to be Ready", "Uncordon the upgraded k3s agent"]
    server = role_tasks("k3s_server")
    assert index(server, lambda t: t.get("notify") == "Restart k3s server"
                 and t.get("when") == "k3s_server_restart | bool") < index(
        server, lambda t: t.get("ansible.builtin.meta") == "flush_handlers")


def test_preflight_checks_the_join_tokens_before_any_node_play():
    preflight = load(ROOT / "playbooks" / "k8s_preflight.yml")
    checked = {p["hosts"]: t["ansible.builtin.include_role"] for p in preflight for t in p.get("tasks", [])
               if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "tokens"}
    assert checked == {"k8s_server": {"name": "k3s_server", "tasks_from": "tokens"},
                       "k8s_agent": {"name": "k3s_agent", "tasks_from": "tokens"}}
    k8s = load(ROOT / "playbooks" / "k8s.yml")
    assert k8s[0] == {"name": k8s[0]["name"], "ansible.builtin.import_playbook": "k8s_preflight.yml"}
    for role in ("k3s_server", "k3s_agent"):
        spec = load(ROLES / role / "meta" / "argument_specs.yml")["argument_specs"]
        assert all(o.get("required") and o.get("no_log") for o in spec["tokens"]["options"].values())


def run_k3s_node(tmp, check=False):
    """Play k3s_node air-gapped on localhost into tmp and return its two outputs as the play saw them."""
    out = tmp / "outputs.json"
    plays = [{"name": "k3s_node", "hosts": "localhost", "gather_facts": False,
              "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
              "vars": {"k3s_node_install_method": "airgap", "k3s_node_airgap_dir": str(tmp / "airgap"),
                       "k3s_node_arch": "amd64", "k3s_node_version": "v1.33.1+k3s1",
                       "k3s_node_bin_dir": str(tmp / "bin"), "k3s_node_data_dir": str(tmp / "data")},
              "roles": ["k3s_node"],
              "post_tasks": [{"name": "Save the outputs", "delegate_to": "localhost", "check_mode": False,
                              "ansible.builtin.copy": {"dest": str(out), "mode": "0600", "content":
                                                       "{{ {'upgrade': k3s_node_upgrade | bool,"
                                                       " 'changed': k3s_node_changed | bool} | to_json }}"}}]}]
    (tmp / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    result = run_playbook("-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
                          tmp / "play.yml", *(["--check"] if check else []))
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(out.read_text())


def release(tmp, binary):
    (tmp / "airgap").mkdir(exist_ok=True)
    files = {"k3s": binary, "k3s-airgap-images-amd64.tar.zst": b"images"}
    for name, data in files.items():
        (tmp / "airgap" / name).write_bytes(data)
    (tmp / "airgap" / "sha256sum-amd64.txt").write_text(
        "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in files.items()))


def test_k3s_node_reports_an_upgrade_only_when_an_installed_binary_is_replaced(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("k3s_node writes root-owned files")
    (tmp_path / "bin").mkdir()
    release(tmp_path, b"k3s v1")
    assert run_k3s_node(tmp_path) == {"upgrade": False, "changed": True}  # fresh node: install, no drain
    assert run_k3s_node(tmp_path) == {"upgrade": False, "changed": False}  # second run: nothing
    release(tmp_path, b"k3s v2")
    assert run_k3s_node(tmp_path, check=True) == {"upgrade": True, "changed": True}  # --check says what it would do
    assert (tmp_path / "bin" / "k3s").read_bytes() == b"k3s v1"
    assert run_k3s_node(tmp_path) == {"upgrade": True, "changed": True}  # computed before the replacement
    assert (tmp_path / "bin" / "k3s").read_bytes() == b"k3s v2"
    assert run_k3s_node(tmp_path) == {"upgrade": False, "changed": False}


def test_k3s_node_reports_a_process_still_running_a_replaced_binary(tmp_path):
    """A run that replaced the binary and stopped before the restart (a failed drain) is finished by the next."""
    if os.geteuid() != 0:
        pytest.skip("k3s_node writes root-owned files")
    (tmp_path / "bin").mkdir()
    release(tmp_path, b"k3s v1")
    assert run_k3s_node(tmp_path) == {"upgrade": False, "changed": True}
    binary = tmp_path / "bin" / "k3s"
    shutil.copy2("/bin/sleep", binary)  # the process an earlier install started
    process = subprocess.Popen([str(binary), "120"])  # a copy of sleep, killed below
    try:
        staged = tmp_path / "bin" / "k3s.new"
        staged.write_bytes(b"k3s v1")
        staged.replace(binary)  # what copy did: a new file, the running one deleted
        assert run_k3s_node(tmp_path) == {"upgrade": True, "changed": True}
    finally:
        process.kill()
        process.wait()
    assert run_k3s_node(tmp_path) == {"upgrade": False, "changed": False}


@pytest.mark.parametrize("unit", ["roles/k3s_agent/templates/etc/systemd/system/k3s-agent.service.j2",
                                  "roles/k3s_server/templates/etc/systemd/system/k3s.service.j2"])
def test_pods_get_unlimited_locked_memory_for_rdma(unit):
    # Issue 33: pods on k3s inherited the 8 MiB default, so NCCL's ibv_reg_mr failed in pods.
    service = (ROOT / unit).read_text().split("[Service]", 1)[1].split("[Install]", 1)[0]
    assert "\nLimitMEMLOCK=infinity\n" in service
