"""The lab role's input checks pass on every lab inventory the project ships, and name the host on bad input.

Every molecule scenario starts with `destroy` (the lab role with lab_state=absent), so a check that cannot
render on an inventory that leaves a per-host variable unset stops every scenario before it starts
(stop 47: lab_cgroupns's message read the variable without its default). These runs touch no container:
they run only roles/lab/tasks/validate.yml, on localhost.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
INVENTORIES = sorted(
    p.parent.parent.parent
    for p in [ROOT / "inventory" / "lab" / "group_vars" / "all" / "lab.yml",
              *ROOT.glob("molecule/*/inventory/group_vars/all/lab.yml")]
    if p.is_file()
)
PLAY = """
- name: Validate the lab inputs only
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files:
    - {root}/playbooks/vars/k8s_versions.yml
  tasks:
    - name: Run the lab role's checks
      ansible.builtin.import_role:
        name: lab
        tasks_from: validate
"""


def _run(tmp_path, inventories, *extra):
    play = tmp_path / "validate.yml"
    play.write_text(PLAY.format(root=ROOT))
    env = dict(os.environ, ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_FILTER_PLUGINS=str(ROOT / "filter_plugins"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    args = [pathlib.Path(sys.executable).parent / "ansible-playbook", str(play)]
    for inv in inventories:
        args += ["-i", str(inv)]
    return subprocess.run([*map(str, args), *extra], capture_output=True, text=True, env=env, cwd=ROOT, check=False)


@pytest.mark.parametrize("inventory", INVENTORIES, ids=[str(p.relative_to(ROOT)) for p in INVENTORIES])
def test_every_lab_inventory_passes_the_lab_checks_of_destroy(tmp_path, inventory):
    run = _run(tmp_path, [inventory], "-e", "lab_state=absent")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_the_default_lab_passes_the_lab_checks_of_create(tmp_path):
    run = _run(tmp_path, [ROOT / "inventory" / "lab"], "-e", "lab_state=present")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def _failure_messages(stdout):
    out = json.loads(stdout)
    messages = []
    for play in out["plays"]:
        for task in play["tasks"]:
            for result in task["hosts"].values():
                for item in result.get("results", [result]):
                    if item.get("failed"):
                        messages.append(item.get("msg", ""))
    return messages


def test_a_bad_cgroup_namespace_names_the_host_and_the_variable(tmp_path):
    bad = tmp_path / "inventory"
    (bad / "group_vars" / "all").mkdir(parents=True)
    (bad / "hosts.yml").write_text(
        "lab_nodes:\n  hosts:\n    n1: {}\n    n2:\n      lab_cgroupns: shared\n")
    run = _run(tmp_path, [bad])
    assert run.returncode != 0
    messages = _failure_messages(run.stdout)
    assert messages == ["host n2: variable lab_cgroupns must be private or host (got shared)"], messages


@pytest.mark.parametrize("mount", ["srv/airgap", "/etc", "/usr/", "/usr/local/bin", "/srv/air gap", "/srv/../etc", "/"])
def test_a_bad_kubernetes_airgap_mount_is_refused_naming_the_variable(tmp_path, mount):
    bad = tmp_path / "inventory"
    (bad / "group_vars" / "all").mkdir(parents=True)
    (bad / "hosts.yml").write_text("lab_nodes:\n  hosts:\n    n1: {}\n")
    run = _run(tmp_path, [bad], "-e", "lab_k8s=true", "-e", f"lab_k8s_airgap_mount='{mount}'")
    assert run.returncode != 0
    messages = _failure_messages(run.stdout)
    assert len(messages) == 1 and messages[0].startswith("lab: variable lab_k8s_airgap_mount must be"), messages
    assert f"(got {mount})" in messages[0]


def test_a_kubernetes_airgap_mount_under_srv_passes(tmp_path):
    good = tmp_path / "inventory"
    (good / "group_vars" / "all").mkdir(parents=True)
    (good / "hosts.yml").write_text("lab_nodes:\n  hosts:\n    n1: {}\n")
    run = _run(tmp_path, [good], "-e", "lab_k8s=true", "-e", "lab_k8s_airgap_mount=/srv/gpufleet-airgap.v2")
    assert run.returncode == 0, run.stdout[-3000:]
