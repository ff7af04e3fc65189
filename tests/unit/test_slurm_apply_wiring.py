"""The Slurm roles apply configuration changes in one place, by the classifier's rule (docs/slurm-changes.md)."""

import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMON = ROOT / "roles" / "slurm_common"
COMPUTE = ROOT / "roles" / "slurm_compute"


def _load(path):
    return yaml.safe_load(path.read_text())


def test_gres_conf_is_written_with_slurm_conf_in_one_call():
    # gres.conf(5) Type and slurm.conf NodeName Gres= are one change: both files go through one
    # slurm_config call, whose changes slurm_apply_plan classifies together.
    tasks = _load(COMMON / "tasks" / "config.yml")
    writes = [t for t in tasks if "slurm_config" in t]
    assert len(writes) == 1
    names = [f["name"] for f in writes[0]["slurm_config"]["files"]]
    assert names[:2] == ["slurm.conf", "gres.conf"] and {"cgroup.conf", "topology.conf"} <= set(names)
    plan = next(t for t in tasks if "slurm_common_apply" in t.get("ansible.builtin.set_fact", {}))
    assert "__slurm_common_written.changes | slurm_apply_plan(slurm_common_version" in (
        plan["ansible.builtin.set_fact"]["slurm_common_apply"])


def test_slurm_compute_no_longer_restarts_slurmd_on_its_own():
    # The plain "restart slurmd on a gres.conf change" bypassed the classifier (22.05 restarts both
    # daemons on a Type change; 24.11 reconfigures).
    assert not (COMPUTE / "handlers").exists()
    assert not list(COMPUTE.rglob("gres.conf.j2"))
    text = (COMPUTE / "tasks" / "main.yml").read_text()
    assert "gres.conf" not in text.replace("gres.conf is already", "") and "notify" not in text


def test_handlers_stop_then_restart_then_reconfigure():
    handlers = _load(COMMON / "handlers" / "main.yml")
    assert [h["name"] for h in handlers] == ["Stop slurm daemons", "Restart slurm daemons", "Reconfigure slurm"]
    # AuthType: every host stops before any starts (handlers run in file order across all hosts).
    assert handlers[0]["when"] == "slurm_common_apply.order == 'stop_all_then_start'"
    assert handlers[1]["loop"] == handlers[0]["loop"] == "{{ slurm_common_apply.restart }}"


def test_a_failed_reconfigure_fails_the_run_naming_slurmctld():
    tasks = _load(COMMON / "tasks" / "reconfigure.yml")
    block = next(t for t in tasks if "block" in t)["block"]
    run = next(t for t in block if t.get("ansible.builtin.command", {}).get("argv") == ["scontrol", "reconfigure"])
    assert run["failed_when"] is False  # the next task fails, with the message
    fail = next(t for t in block if "ansible.builtin.fail" in t)
    assert "slurmctld on {{ slurm_common_controller_hosts | first }}" in fail["ansible.builtin.fail"]["msg"]
    assert "__slurm_common_reconfigure.rc" in fail["when"]
    assert "ignore_errors" not in (COMMON / "tasks" / "reconfigure.yml").read_text()


def test_release_vars_put_the_slurmctld_pid_file_where_its_unit_can_write_it():
    # Debian 13's slurmctld.service: User=slurm, RuntimeDirectory=slurmctld (Slurm 24.11).
    assert _load(COMMON / "vars" / "Debian_13.yml")["__slurm_common_os_ctld_pidfile"] == "/run/slurmctld/slurmctld.pid"
    assert _load(COMMON / "vars" / "Debian.yml")["__slurm_common_os_ctld_pidfile"] == "/run/slurmctld.pid"
    defaults = _load(COMMON / "defaults" / "main.yml")["slurm_common_config"]
    assert defaults["SlurmctldPidFile"] == "{{ __slurm_common_ctld_pidfile }}"
    assert "CryptoType" not in defaults and defaults["CredType"] == "cred/munge"
    assert _load(COMPUTE / "vars" / "Debian_13.yml")["__slurm_compute_nvml_packages"] == ["slurm-wlm-nvml-plugin"]
    assert _load(COMPUTE / "vars" / "main.yml")["__slurm_compute_nvml_packages"] == []
