"""Receipts (settle_receipt), the run's digest and the choice of settled hosts (filter_plugins/settle.py).

The module runs for real on this machine: dpkg-query, systemctl where systemd runs, and files under tmp_path.
"""

import hashlib
import json
import os
import pathlib
import re
import stat

import pytest
import settle_receipt as module
import yaml
from ansible.module_utils.settle import (
    RECEIPT_VERSION,
    VOLATILE_FACTS,
    differences,
    spec_from_results,
    stable_facts,
    verdict,
)
from ansible.module_utils.testing import patch_module_args
from conftest import ansible_env, flat_tasks, run_playbook
from settle import code_digest, settle_choose

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def host(tmp_path):
    """A managed file and directory, and the spec that names them with a real package and a unit."""
    conf = tmp_path / "etc" / "slurm.conf"
    conf.parent.mkdir()
    conf.write_text("ClusterName=lab\n")
    conf.chmod(0o644)
    spec = {"packages": ["dpkg", "gpufleet-no-such-package"], "units": ["gpufleet-no-such-unit"],
            "paths": [str(conf), str(conf.parent), str(tmp_path / "absent")], "users": ["root"]}
    return {"conf": conf, "spec": spec, "receipt": str(tmp_path / "state" / "settle.json")}


def record(capsys, host, digest="d1", **extra):
    return run(capsys, state="recorded", digest=digest, spec=host["spec"], path=host["receipt"], **extra)


def check(capsys, host, digest="d1", **extra):
    return run(capsys, state="check", digest=digest, path=host["receipt"], **extra)


def test_a_recorded_host_settles_and_the_receipt_is_private(capsys, host):
    out = record(capsys, host)
    assert out["written"] is True and out["changed"] is False
    mode = stat.S_IMODE(os.stat(host["receipt"]).st_mode)
    assert mode == 0o600 and stat.S_IMODE(os.stat(os.path.dirname(host["receipt"])).st_mode) == 0o700
    receipt = json.loads(pathlib.Path(host["receipt"]).read_text())
    assert receipt["observed"]["packages"]["gpufleet-no-such-package"] is None
    assert receipt["observed"]["packages"]["dpkg"]  # dpkg is installed wherever dpkg-query runs
    assert receipt["observed"]["paths"][str(host["conf"])]["checksum"] is not None
    out = check(capsys, host)
    assert (out["changed"], out["settled"], out["reasons"], out["written"]) == (False, True, [], False)


def test_recording_an_unchanged_host_again_writes_nothing(capsys, host):
    assert record(capsys, host)["written"] is True
    before = pathlib.Path(host["receipt"]).read_text()
    assert record(capsys, host)["written"] is False
    assert pathlib.Path(host["receipt"]).read_text() == before


@pytest.mark.parametrize("drift, expect", [
    (lambda conf: conf.write_text("ClusterName=other\n"), "slurm.conf"),
    (lambda conf: conf.chmod(0o666), "slurm.conf"),
    (lambda conf: conf.unlink(), "slurm.conf"),
    (lambda conf: (conf.parent.parent / "absent").write_text("x"), "absent"),
    (lambda conf: conf.parent.chmod(0o700), "/etc"),
])
def test_any_drift_of_a_recorded_path_runs_the_host_in_full(capsys, host, drift, expect):
    record(capsys, host)
    drift(host["conf"])
    out = check(capsys, host)
    assert out["settled"] is False
    assert any(reason.startswith("path ") and expect in reason for reason in out["reasons"]), out["reasons"]


def test_another_digest_an_old_receipt_or_none_is_not_settled(capsys, host):
    assert check(capsys, host)["reasons"] == ["no receipt"]
    record(capsys, host)
    assert check(capsys, host, digest="d2")["reasons"] == [
        "the run's inputs differ (code, inventory, facts or discovered GPUs)"]
    receipt = json.loads(pathlib.Path(host["receipt"]).read_text())
    receipt["written"] -= 3600
    pathlib.Path(host["receipt"]).write_text(json.dumps(receipt))
    out = check(capsys, host, max_age=600)
    assert out["settled"] is False and re.match(r"the receipt is 36\d\d s old", out["reasons"][0])
    pathlib.Path(host["receipt"]).write_text("{not json")
    assert check(capsys, host)["reasons"] == ["no receipt"]
    pathlib.Path(host["receipt"]).write_text(json.dumps({**receipt, "spec": {"paths": ["relative"]}}))
    assert check(capsys, host)["reasons"] == ["receipt spec: path 'relative' is not absolute"]


def test_the_receipt_holds_no_plain_checksum_of_a_managed_file(capsys, host):
    # slurmdbd.conf holds the database password: a plain SHA-1 of it would let anyone with the receipt test
    # guesses offline. The receipt keeps a digest keyed by a random per-host key, root-only beside it.
    record(capsys, host)
    plain = hashlib.sha1(host["conf"].read_bytes()).hexdigest()
    text = pathlib.Path(host["receipt"]).read_text()
    assert plain not in text
    key = pathlib.Path(host["receipt"]).parent / "settle.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert check(capsys, host)["settled"] is True


def test_two_hosts_with_the_same_file_record_different_digests(capsys, host, tmp_path):
    record(capsys, host)
    other = str(tmp_path / "other" / "settle.json")
    run(capsys, state="recorded", digest="d1", spec=host["spec"], path=other)
    mine, theirs = (json.loads(pathlib.Path(p).read_text())["observed"]["paths"][str(host["conf"])]["checksum"]
                    for p in (host["receipt"], other))
    assert mine and theirs and mine != theirs


def test_a_receipt_without_its_key_is_not_settled(capsys, host):
    record(capsys, host)
    (pathlib.Path(host["receipt"]).parent / "settle.key").unlink()
    out = check(capsys, host)
    assert out["settled"] is False and out["reasons"] == ["no receipt key"]


def test_check_mode_writes_no_receipt(capsys, host):
    out = run(capsys, state="recorded", digest="d1", spec=host["spec"], path=host["receipt"], _ansible_check_mode=True)
    assert out["written"] is False and not os.path.exists(host["receipt"])


def test_a_spec_that_is_not_names_fails_before_writing(capsys, host):
    out = run(capsys, state="recorded", digest="d", spec={"paths": ["etc/x"]}, path=host["receipt"])
    assert out["failed"] and "path 'etc/x' is not absolute" in out["msg"] and not os.path.exists(host["receipt"])


def test_verdict_leans_to_not_settled():
    observed = {"packages": {"munge": "1"}, "units": {}, "paths": {}, "users": {}}
    good = {"version": RECEIPT_VERSION, "digest": "d", "written": 100.0, "observed": observed, "spec": {}}
    assert verdict(good, "d", observed, 150.0, 86400) == (True, [])
    assert verdict(good, "d", observed, 50.0, 86400)[0] is False  # written in the future
    assert verdict({**good, "version": RECEIPT_VERSION - 1}, "d", observed, 150.0, 86400)[0] is False
    assert verdict({**good, "written": True}, "d", observed, 150.0, 86400)[0] is False
    assert verdict(good, "d", {**observed, "packages": {"munge": "2"}}, 150.0, 86400) == (
        False, ['package munge: "1" -> "2"'])
    assert verdict(None, "d", observed, 150.0, 86400) == (False, ["no receipt"])


def test_differences_are_capped():
    before = {"paths": {f"/p{i}": 1 for i in range(8)}}
    found = differences(before, {"paths": {}})
    assert len(found) == 6 and found[-1] == "and 3 more"


def _capture(fixture_output, name):
    return json.loads(fixture_output(name))


def test_the_spec_of_a_gpu_node_names_what_its_roles_manage(fixture_output):
    results = _capture(fixture_output, "settle_registered_gpu01_trixie_lab.json.txt")
    assert spec_from_results(results) == {
        "packages": ["ca-certificates", "curl", "gnupg", "iproute2", "jq", "libpam-slurm-adopt", "libpmix-dev",
                     "munge", "procps", "rsync", "slurm-client", "slurm-wlm-basic-plugins", "slurmd"],
        "units": ["munge", "slurmd"],
        "paths": ["/etc/apt/apt.conf.d/90gpufleet-recommends", "/etc/munge/munge.key", "/etc/pam.d/sshd",
                  "/etc/slurm", "/etc/slurm/cgroup.conf", "/etc/slurm/gres.conf", "/etc/slurm/slurm.conf",
                  "/etc/slurm/topology.conf", "/etc/systemd/system/slurmd.service.d/gpufleet-configless.conf",
                  "/usr/local/sbin/gpufleet-healthcheck", "/var/lib/slurm", "/var/lib/slurm/slurmd",
                  "/var/log/slurm"],
        "users": ["slurm"],
    }


def test_the_spec_of_the_controller_names_slurmctld_slurmdbd_and_mariadb(fixture_output):
    spec = spec_from_results(_capture(fixture_output, "settle_registered_ctl1_trixie_lab.json.txt"))
    assert spec["units"] == ["mariadb", "munge", "slurmctld", "slurmdbd"]
    assert {"/etc/slurm/slurm.conf", "/etc/munge/munge.key", "/var/lib/slurm/slurmctld"} <= set(spec["paths"])
    assert "slurmctld" in spec["packages"] and spec["users"] == ["slurm"]


# Results of tasks a no-op skips, in the shapes these modules return on a converging run.
CONVERGING = {
    "__slurm_controller_run": {"changed": True, "name": "slurmctld", "state": "started", "enabled": True,
                               "status": {"ActiveState": "inactive"}},
    "__slurm_common_user": {"changed": True, "name": "slurm", "uid": 64030, "state": "present"},
    "__slurm_compute_dropin": {"changed": True, "dest": "/etc/systemd/system/slurmd.service.d/gpufleet-configless.conf",
                               "checksum": "0" * 40},
    "__munge_write": {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified"},
    "__munge_source_key": {"skipped": True, "skip_reason": "Conditional result was False"},
}


def test_the_spec_takes_services_users_and_written_files_and_skips_hidden_results():
    assert spec_from_results(CONVERGING) == {
        "packages": [], "units": ["slurmctld"], "users": ["slurm"],
        "paths": ["/etc/systemd/system/slurmd.service.d/gpufleet-configless.conf"]}


def test_two_gatherings_of_an_unchanged_host_have_the_same_stable_facts(fixture_output):
    first = _capture(fixture_output, "settle_facts_gpu01_gathering1.json.txt")
    second = _capture(fixture_output, "settle_facts_gpu01_gathering2.json.txt")
    differ = {key for key in set(first) | set(second) if first.get(key) != second.get(key)}
    assert differ - VOLATILE_FACTS == {"interfaces", "virtualization_tech_guest"}  # the same strings reordered
    assert stable_facts(first) == stable_facts(second)
    assert "memtotal_mb" in stable_facts(first) and "processor_vcpus" in stable_facts(first)


def test_stable_facts_drop_the_volatile_ones_only():
    facts = {"memtotal_mb": 1000, "memfree_mb": 10, "date_time": {"epoch": "1"}, "os_family": "Debian"}
    assert stable_facts(facts) == {"memtotal_mb": 1000, "os_family": "Debian"}
    assert stable_facts({}) is None and stable_facts(None) is None


# A role that read a volatile fact would go stale on a settled host: none may.
def test_no_role_reads_a_volatile_fact():
    sources = [p for d in ("roles", "playbooks", "filter_plugins", "module_utils", "library", "inventory")
               for p in (ROOT / d).rglob("*") if p.is_file() and p.suffix in (".yml", ".j2", ".py")]
    readers = []
    for fact in sorted(VOLATILE_FACTS):
        pattern = re.compile(rf"ansible_facts(\[['\"]{fact}['\"]\]|\.{fact}\b)|\bansible_{fact}\b")
        readers += [f"{p.relative_to(ROOT)}: {fact}" for p in sources
                    if p.name != "settle.py" and pattern.search(p.read_text(errors="replace"))]
    assert readers == []


CHECKS = {"ctl1": {"settled": True}, "gpu01": {"settled": True}, "gpu02": {"settled": True}}
VIEWS = {"gpu01": {"reason": None}, "gpu02": {"reason": None}}


def test_every_host_settles_when_every_receipt_holds():
    out = settle_choose(CHECKS, VIEWS, ["gpu01", "gpu02"], ["ctl1"])
    assert out == {"settled": ["ctl1", "gpu01", "gpu02"], "full": {}, "lines": []}


def test_a_node_in_full_takes_the_coupled_hosts_along_but_not_the_other_nodes():
    checks = {**CHECKS, "gpu02": {"settled": False, "reasons": ["unit munge: a -> b"]}}
    out = settle_choose(checks, VIEWS, ["gpu01", "gpu02"], ["ctl1"])
    assert out["settled"] == ["gpu01"]
    assert out["full"] == {"ctl1": "gpu02 runs in full", "gpu02": "unit munge: a -> b"}


def test_a_coupled_host_in_full_runs_every_host_in_full():
    checks = {**CHECKS, "ctl1": {"settled": False, "reasons": ["no receipt"]}}
    out = settle_choose(checks, VIEWS, ["gpu01", "gpu02"], ["ctl1"])
    assert out["settled"] == [] and out["full"]["gpu01"] == "coupled host ctl1 runs in full"


def test_a_node_held_for_its_gate_or_an_unread_view_runs_in_full():
    held = {**VIEWS, "gpu02": {"drained": True, "reason": "gpufleet:hold,first_start,target=slurm"}}
    out = settle_choose(CHECKS, held, ["gpu01", "gpu02"], ["ctl1"])
    assert out["settled"] == ["gpu01"] and out["full"]["gpu02"].startswith("Slurm holds it for its gate")
    out = settle_choose(CHECKS, None, ["gpu01", "gpu02"], ["ctl1"])
    assert out["settled"] == [] or out["settled"] == ["ctl1"]
    assert out["full"]["gpu01"] == "Slurm's view could not be read"


def test_a_skipped_check_is_not_settled():
    out = settle_choose({"gpu01": {"skipped": True}}, {}, [], [])
    assert out["full"] == {"gpu01": "no receipt check"}


def test_the_code_digest_follows_every_code_file(tmp_path):
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    task = tmp_path / "roles" / "r" / "tasks" / "main.yml"
    task.write_text("---\n")
    (tmp_path / "roles" / "r" / "__pycache__").mkdir()
    (tmp_path / "roles" / "r" / "__pycache__" / "x.pyc").write_bytes(b"1")
    first = code_digest(tmp_path)
    (tmp_path / "roles" / "r" / "__pycache__" / "x.pyc").write_bytes(b"2")
    assert code_digest(tmp_path) == first
    task.write_text("---\n# changed\n")
    assert code_digest(tmp_path) != first


# Tasks in the roles site.yml skips on a settled host that write a path outside the files their probe
# guards (included only where the probe found a step to do) must register their result, so the receipt
# records that path; a probe (host_state_info) must register too.
SETTLED_ROLES = ("base", "munge", "slurm_common", "slurm_controller", "slurm_compute")
GUARDED = {"base": {"converge.yml", "time.yml"}, "munge": {"converge.yml", "key.yml"},
           "slurm_common": {"converge.yml"}, "slurm_compute": {"converge.yml", "pam_adopt.yml"}}
PATH_MODULES = {"file", "template", "copy", "lineinfile", "blockinfile", "replace", "slurm_config", "host_state_info"}
NO_PATH_MODULES = {"lineinfile", "blockinfile", "replace"}



@pytest.mark.parametrize("role", SETTLED_ROLES)
def test_the_always_run_path_tasks_of_a_settled_role_register_their_result(role):
    unregistered = []
    for path in sorted((ROOT / "roles" / role / "tasks").glob("*.yml")):
        if path.name in GUARDED.get(role, set()):
            continue
        for task in flat_tasks(yaml.safe_load(path.read_text())):
            modules = {key.rsplit(".", 1)[-1] for key in task} & PATH_MODULES
            if modules and "register" not in task:
                unregistered.append(f"{path.name}: {task.get('name')}")
            # These return no path: the role's probe must name the file.
            for key in task:
                if key.rsplit(".", 1)[-1] in NO_PATH_MODULES:
                    probes = [str(other) for other in flat_tasks(yaml.safe_load(path.read_text()))
                              if "host_state_info" in other]
                    if not any(str(task[key]["path"]) in probe for probe in probes):
                        unregistered.append(f"{path.name}: {task.get('name')} (its path is in no probe)")
    assert unregistered == []


def test_the_settled_plays_of_site_yml_leave_the_settled_hosts_out():
    plays = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    by_role = {}
    for play in plays:
        for entry in play.get("roles") or []:
            by_role[entry["role"] if isinstance(entry, dict) else entry] = play["hosts"]
    for role in SETTLED_ROLES:
        assert by_role[role].endswith(":!gpufleet_settled"), role
    # slurmdbd and the accounting policy keep state in MariaDB, which no receipt observes.
    assert "gpufleet_settled" not in by_role["slurm_dbd"] + by_role["slurm_accounting"]
    assert plays[-1]["hosts"] == "all:!gpufleet_settled"


# The receipt is written under --skip-tags (molecule passes it to every run) because nothing can be
# skipped by a tag: no task or play of this project carries one.
def test_no_task_or_play_carries_a_tag():
    tagged = [str(path.relative_to(ROOT)) for base in ("roles", "playbooks") for path in (ROOT / base).rglob("*.yml")
              if re.search(r"^\s*-?\s*tags:", path.read_text(), re.MULTILINE)]
    assert tagged == []


def test_a_difference_names_what_changed_and_never_a_checksum():
    key = "/etc/munge/munge.key"
    before = {"paths": {key: {"exists": True, "mode": "0400", "checksum": "a" * 40}},
              "units": {"munge": {"active_state": "active", "unit_file_state": "enabled"}}}
    now = {"paths": {key: {"exists": True, "mode": "0644", "checksum": "b" * 40}},
           "units": {"munge": {"active_state": "inactive", "unit_file_state": "enabled"}}}
    found = differences(before, now)
    assert found == ["unit munge: active/enabled -> inactive/enabled", f"path {key}: content, mode 0400 -> 0644"]
    assert not any("a" * 40 in line or "b" * 40 in line for line in found)


# The inputs digest on real inventories, through Ansible's own hostvars: node_stack's reads
# hostvars['localhost'] in a group variable, which a host's own variables cannot resolve (Ansible 2.19
# raises a jinja2 UndefinedError there); the digest takes its text and is the same run after run.
INPUTS_PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.import_role: {name: settle, tasks_from: inputs}
    - ansible.builtin.debug: {msg: "digest={{ settle_run_inputs }}"}
"""


@pytest.mark.parametrize("inventory", ["inventory/lab", "molecule/node_stack/inventory"])
def test_the_inputs_digest_takes_every_inventory_and_is_stable(tmp_path, inventory):
    play = tmp_path / "inputs.yml"
    play.write_text(INPUTS_PLAY)
    env = ansible_env(ANSIBLE_ROLES_PATH=str(ROOT / "roles"))
    digests = []
    for extra in ([], [], ["-e", "cluster_gpu_count=3"]):
        out = run_playbook("-i", inventory, play, *extra, env=env, timeout=120)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        digests.append(re.search(r"digest=([0-9a-f]{64})", out.stdout).group(1))
    assert digests[0] == digests[1] != digests[2]
