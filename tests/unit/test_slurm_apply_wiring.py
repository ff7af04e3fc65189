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
    writes = [t for t in tasks if "slurm_config" in t and not t.get("check_mode")]
    assert len(writes) == 1 and writes[0]["register"] == "__slurm_common_written"
    assert writes[0]["slurm_config"]["files"] == "{{ __slurm_common_files }}"
    names = [f["name"] for f in _load(COMMON / "vars" / "main.yml")["__slurm_common_files"]]
    assert names[:2] == ["slurm.conf", "gres.conf"] and {"cgroup.conf", "topology.conf"} <= set(names)
    plan = next(t for t in tasks if "slurm_common_apply" in t.get("ansible.builtin.set_fact", {}))
    expr = " ".join(plan["ansible.builtin.set_fact"]["slurm_common_apply"].split())
    assert "__slurm_common_written).changes | slurm_apply_plan(slurm_common_version" in expr


def test_configless_nodes_follow_the_controllers_change_and_start_slurmd_with_conf_server():
    # configless_slurm.html 24.11: slurmd fetches the files from slurmctld; a node writes none, and
    # its daemons follow the controller's change, classified for them (a 22.05 GresTypes change still
    # restarts slurmd there). slurmd(8) --conf-server is set before the package may start slurmd.
    tasks = _load(COMMON / "tasks" / "config.yml")
    write = next(t for t in tasks if t.get("register") == "__slurm_common_written")
    assert write["when"] == "__slurm_common_writes_files | bool"
    plan = next(t for t in tasks if "slurm_common_apply" in t.get("ansible.builtin.set_fact", {}))
    assert (
        "hostvars[slurm_common_controller_hosts | first].__slurm_common_written"
        in (plan["ansible.builtin.set_fact"]["slurm_common_apply"])
    )
    defaults = _load(COMMON / "defaults" / "main.yml")
    assert "enable_configless" in defaults["slurm_common_config"]["SlurmctldParameters"]
    names = [t["name"] for t in _load(COMPUTE / "tasks" / "main.yml")]
    configless = names.index("Set slurmd's configuration source (configless or files)")
    # slurmd's install and start sit in converge.yml, included after the configuration source is set.
    converge = names.index("Converge what the probe found different")
    assert configless < converge < names.index("Remove the Slurm files a configless node no longer keeps")
    steps = [t["name"] for t in _load(COMPUTE / "tasks" / "converge.yml")]
    assert steps.index("converge | Install slurmd") < steps.index("converge | Run slurmd")
    dropin = next(t for t in _load(COMPUTE / "tasks" / "configless.yml") if "ansible.builtin.template" in t)
    src = COMPUTE / "templates" / dropin["ansible.builtin.template"]["src"]
    assert "--conf-server {{ slurm_compute_conf_servers | join(',') }}" in src.read_text()


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


def _lab_files(gpu01_type):
    """slurm.conf + the cluster-wide gres.conf the lab renders, with gpu01's GPUs of one type."""
    from ansible.module_utils.gres import gres_conf_cluster

    gpus = {f"gpu0{n}": [{"minor": m, "type": "h100"} for m in (0, 1)] for n in (1, 2, 3)}
    gpus["gpu01"] = [{"minor": m, "type": gpu01_type} for m in (0, 1)]
    slurm = "ClusterName=lab\nSlurmctldHost=ctl1\n" + "".join(
        f"NodeName={h} CPUs=8 Gres=gpu:{g[0]['type']}:2\n" for h, g in sorted(gpus.items())
    )
    return slurm, gres_conf_cluster(gpus, cores=False, links=False)


def _plan(before, after, version, daemons):
    from slurm_change import FilterModule

    changes = [
        {"name": n, "before": b, "after": a}
        for n, b, a in zip(("slurm.conf", "gres.conf"), before, after, strict=True)
        if b != a
    ]
    return FilterModule().filters()["slurm_apply_plan"](changes, version, daemons)


def test_the_lab_gres_change_restarts_exactly_what_each_version_names():
    # verify.yml's GRES step: gpu01 h100 -> a100 changes gres.conf Type and NodeName Gres= together.
    before, after = _lab_files("h100"), _lab_files("a100")
    assert "Type=a100" in after[1] and "gpu:a100:2" in after[0]
    # gres.conf(5) 22.05 Type: "A restart of the slurmctld and slurmd daemons is required".
    ctl, node = _plan(before, after, "22.05.8", ["slurmctld"]), _plan(before, after, "22.05.8", ["slurmd"])
    assert (ctl["action"], ctl["restart"], node["action"], node["restart"]) == (
        "restart",
        ["slurmctld"],
        "restart",
        ["slurmd"],
    )
    assert any("gres.conf(5) 22.05 Type" in r for r in node["reasons"])
    # gres.conf(5) 24.11 Type: scontrol reconfigure, every affected slurmd responding.
    for daemons in (["slurmctld"], ["slurmd"]):
        plan = _plan(before, after, "24.11.5", daemons)
        assert (plan["action"], plan["restart"]) == ("reconfigure", [])
        assert any("gres.conf(5) 24.11 Type" in r for r in plan["reasons"])


def test_a_slurmctld_rule_restarts_the_controller_and_reconfigures_the_nodes_on_22_05():
    # slurm.conf(5) 22.05 SchedulerType: "A restart of slurmctld is required"; the nodes still need the
    # new file read, which the one scontrol reconfigure does.
    base = "ClusterName=lab\nSlurmctldHost=ctl1\nNodeName=gpu01 CPUs=8\n"
    before = (base + "SchedulerType=sched/backfill\n", "")
    after = (base + "SchedulerType=sched/builtin\n", "")
    ctl, node = _plan(before, after, "22.05.8", ["slurmctld"]), _plan(before, after, "22.05.8", ["slurmd"])
    assert (ctl["action"], ctl["restart"]) == ("restart", ["slurmctld"])
    assert (node["action"], node["restart"]) == ("reconfigure", [])
    assert _plan(before, after, "24.11.5", ["slurmctld"])["action"] == "reconfigure"


def test_a_change_that_may_lose_the_jobs_is_refused_before_any_host_writes():
    # slurm.conf(5) 22.05 and 24.11 SwitchType: "If running jobs exist at the time slurmctld is restarted
    # with a new value of SwitchType, records of all jobs in any state may be lost." The controller's
    # change is classified in check mode (nothing written), squeue read there, and every host refuses
    # before the write: a refusal after it would leave the new files and nothing to guard next run.
    tasks = _load(COMMON / "tasks" / "config.yml")
    names = [t["name"] for t in tasks]
    preview = next(t for t in tasks if "slurm_config" in t and t.get("check_mode") is True)
    assert preview["slurm_config"]["files"] == "{{ __slurm_common_files }}"
    assert preview["changed_when"] is False and preview["register"] == "__slurm_common_preview"
    jobs = next(t for t in tasks if t.get("register") == "__slurm_common_jobs")
    assert jobs["ansible.builtin.command"]["argv"][0] == "squeue"
    assert (jobs["changed_when"], jobs["check_mode"]) == (False, False)
    assert any("slurm_conf_changes(slurm_common_version)).needs_no_jobs" in w for w in jobs["when"])
    refuse = next(t for t in tasks if "needs_no_jobs" in str(t.get("ansible.builtin.assert", {}).get("that", "")))
    assert "when" not in refuse  # every host stops, not only the controller
    assert (
        "host {{ inventory_hostname }}: variable slurm_common_config_extra"
        in refuse["ansible.builtin.assert"]["fail_msg"]
    )
    write = names.index("config | Write the configuration files")
    assert names.index(preview["name"]) < names.index(jobs["name"]) < names.index(refuse["name"]) < write
