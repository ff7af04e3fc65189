"""Roles exchange data only through declared inputs (STYLE, docs/variables.md "Data between roles").

A role's tasks, vars, handlers and templates never read hostvars['localhost'] nor another role's
variables (<other role>_x, __<other role>_x); where one role needs another's output, the link is
written once, in a defaults/main.yml default or in the play that passes it.
"""

import ast
import re
import subprocess

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
    # Named in the assert's message only: the vault variable an admin sets (pool_executor_munge_key links to it).
    "pool_executor": {"munge_key"},
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


def test_the_issue_s_grep_finds_nothing():
    # The check exactly as issue 12 writes it, and the same for every file of a role, dotted form included.
    grep = subprocess.run("grep -rn \"hostvars\\['localhost'\\]\" roles/*/tasks", shell=True, cwd=ROOT,
                          capture_output=True, text=True)
    assert (grep.returncode, grep.stdout) == (1, "")
    localhost = re.compile(r"hostvars(\[['\"]localhost['\"]\]|\.localhost\b)")
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "roles").rglob("*")) if p.suffix in (".yml", ".j2")
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


def test_every_exception_is_still_needed_and_documented():
    # An exception that no longer matches is removed here; each one left is named in docs/variables.md.
    docs = (ROOT / "docs" / "variables.md").read_text()
    for role, names in EXCEPTIONS.items():
        assert names <= set(cross_role_reads(role)), (role, names - set(cross_role_reads(role)))
        assert all(f"`{name}`" in docs for name in names), (role, names)


# Python defaults that name a role's variable only to put it in an error message (never to read it).
MESSAGE_LABELS = {
    ("module_utils/gres.py", "check_gpu_count", "variable"),
    ("module_utils/slurm_conf.py", "config_lines", "variable"),
    ("module_utils/slurm_priority.py", "priority_conflicts", "extra_variable"),
    ("module_utils/slurm_topology.py", "block_errors", "sizes_var"),
}


def python_role_defaults(roles=ROLES, root=ROOT):
    """(file, function, parameter) of every Python default argument that is a string naming a role's variable."""
    found = set()
    for folder in ("module_utils", "filter_plugins", "library"):
        for path in sorted((root / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, (ast.FunctionDef, ast.Lambda)):
                    continue
                args = node.args
                pairs = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults, strict=True))
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
                for arg, default in pairs:
                    if (isinstance(default, ast.Constant) and isinstance(default.value, str)
                            and any(default.value.lstrip("_").startswith(r + "_") for r in roles)):
                        found.add((f"{folder}/{path.name}", getattr(node, "name", "<lambda>"), arg.arg))
    return found


def test_no_python_default_argument_names_a_role_s_fact():
    # nodes_from_facts, k8s_gate_verdicts, gate_passing and the like take the fact's name from their caller.
    assert python_role_defaults() - MESSAGE_LABELS == set()
    assert python_role_defaults() >= MESSAGE_LABELS  # no stale label


def test_the_python_scan_finds_a_default_naming_a_role_s_fact(tmp_path):
    # The counterpart: the default k8s_gate_verdicts had before issue 12.
    (tmp_path / "filter_plugins").mkdir()
    (tmp_path / "filter_plugins" / "x.py").write_text("def f(nodes, hostvars, fact='health_gate_verdict'):\n    pass\n")
    assert python_role_defaults(["health_gate", "gpu_discovery"], tmp_path) == {("filter_plugins/x.py", "f", "fact")}
