"""Roles exchange data only through declared inputs (STYLE, docs/variables.md "Data between roles").

A role's tasks, vars, handlers and templates never read hostvars['localhost'] nor another role's
variables (<other role>_x, __<other role>_x); where one role needs another's output, the link is
written once, in a defaults/main.yml default or in the play that passes it.
"""

import re

from conftest import ROOT

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if p.is_dir())
# Known reads still to be turned into inputs, by role: {role: {variable, ...}}.
EXCEPTIONS = {
    # Named in the worker's messages only: its token is the same secret, and swap can be allowed cluster-wide. The
    # shared kubeadm_node role installs and prepares; it holds no cluster configuration, so these stay.
    "kubeadm_worker": {"kubeadm_control_plane_token", "kubeadm_control_plane_kubelet_config"},
    # gpu_gate's module option, not a variable of the dcgm role.
    "health_gate": {"dcgm_level"},
    # Named in the assert's message only (the password the servers' variable also holds).
    "k3s_agent": {"k3s_server_agent_token"},
}


def role_files(role):
    for path in sorted((ROOT / "roles" / role).rglob("*")):
        rel = path.relative_to(ROOT / "roles" / role)
        if path.is_file() and path.suffix in (".yml", ".j2") and rel.parts[0] not in ("defaults", "meta"):
            yield path


def names_of_other_roles(role, text, roles=ROLES):
    """Variables of roles other than ``role`` named in ``text`` (a longer name of its own role is its own)."""
    others = [o for o in roles if o != role]
    pattern = re.compile(r"(?<![A-Za-z0-9_])(?:__)?(?:" + "|".join(map(re.escape, others)) + r")_[a-z0-9_]+")
    return [m.group(0) for m in pattern.finditer(text) if not m.group(0).lstrip("_").startswith(role + "_")]


def cross_role_reads(role):
    """{variable: [file:line, ...]} of other roles' variables named in this role outside defaults/ and meta/."""
    found = {}
    for path in role_files(role):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for name in names_of_other_roles(role, line):
                found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{number}")
    return found


def test_no_task_reads_localhost_hostvars():
    localhost = re.compile(r"hostvars\[['\"]localhost['\"]\]")
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "roles").glob("*/tasks/*.yml"))
            for n, line in enumerate(p.read_text().splitlines(), 1) if localhost.search(line)]
    assert hits == []


def test_no_role_reads_another_roles_variables_outside_its_defaults():
    unexpected = {}
    for role in ROLES:
        reads = {v: where for v, where in cross_role_reads(role).items() if v not in EXCEPTIONS.get(role, set())}
        if reads:
            unexpected[role] = reads
    assert unexpected == {}


def test_the_scan_finds_a_cross_role_read_and_not_the_roles_own():
    # The counterpart that makes the test above mean something.
    roles = ["slurm_common", "slurm_compute", "pool_planner", "pool_executor"]
    line = "{{ __slurm_common_plugin_dirs + slurm_compute_x + hostvars.h.pool_planner_plan + pool_executor_plan }}"
    assert names_of_other_roles("slurm_compute", line, roles) == [
        "__slurm_common_plugin_dirs", "pool_planner_plan", "pool_executor_plan"]
    assert names_of_other_roles("pool_executor", line, roles) == [
        "__slurm_common_plugin_dirs", "slurm_compute_x", "pool_planner_plan"]
