"""Slurm configuration changes that can lose work (module_utils/slurm_change.py, slurm_keys.py).

Each test names the man-page sentence it follows and the SchedMD/slurm tag it was read at
(slurm-22-05-8-1: Debian 12's Slurm; slurm-24-11-5-1: Debian 13's). docs/slurm-changes.md has the
table. A change that can lose jobs is refused, or guarded by a live check (squeue) before any
host writes it; a key Slurm does not know is refused before any host writes it.
"""

import pathlib

import pytest
import yaml
from ansible.module_utils.slurm_change import SlurmConfError, classify_change, classify_changes
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parents[2]

OLD = ("22.05.8", "23.02.7")  # the 22.05 rules: reconfigure re-reads the files in the running daemons
NEW = ("23.11.10", "24.05.8", "24.11.5")  # scontrol(1) 24.11: reconfigure creates new processes
DEBIAN = ("22.05.8", "24.11.5")  # bookworm, trixie

# A lab cluster's slurm.conf as slurm_common renders it (keys sorted, one NodeName line per shape).
LAB = """\
# Ansible managed
AuthType=auth/munge
ClusterName=lab
CredType=cred/munge
GresTypes=gpu
MpiDefault=pmix
ProctrackType=proctrack/cgroup
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmctldHost=ctl1
SlurmctldHost=ctl2
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=slurm
StateSaveLocation=/var/lib/slurm/slurmctld
SwitchType=switch/none
TaskPlugin=task/cgroup,task/affinity

NodeName=gpu[01-04] CoreSpecCount=2 CoresPerSocket=56 CPUs=224 Features=h100 Gres=gpu:h100:8 \
MemSpecLimit=20480 RealMemory=2048000 Sockets=2 ThreadsPerCore=2

PartitionName=gpu Default=YES DefaultTime=1:00:00 MaxTime=INFINITE Nodes=gpu[01-03] State=UP
PartitionName=debug MaxTime=30:00 Nodes=gpu04 State=UP
"""


def edit(old, new, text=LAB):
    assert old in text, old
    return text.replace(old, new)


# --- changes slurm.conf(5) says lose jobs -----------------------------------------------


@pytest.mark.parametrize("version", OLD + NEW)
def test_selecttype_change_is_applied_only_with_no_job_in_the_cluster(version):
    """slurm.conf(5) 22.05 and 24.11 SelectType: "When changed, all job information (running and
    pending) will be lost, since the job state save format used by each plugin is different."."""
    result = classify_change(LAB, edit("select/cons_tres", "select/linear"), version)
    guards = [line for line in result["needs_no_jobs"] if line.startswith("SelectType changed")]
    assert len(guards) == 1, result["needs_no_jobs"]
    assert '"When changed, all job information (running and pending) will be lost' in guards[0]
    assert {"reason": guards[0], "partition": None} in result["guards"]


@pytest.mark.parametrize("version", OLD + NEW)
def test_moving_state_save_location_is_refused(version):
    """slurm.conf(5) 22.05 and 24.11 StateSaveLocation: "Since all running and pending job
    information is stored here, ..."; a slurmctld that starts on an empty directory starts like
    slurmctld -c: "all jobs, including both running and queued, and all node states, will be
    deleted" (slurmctld(8) 24.11), the admins' DRAIN reasons included."""
    new = edit("StateSaveLocation=/var/lib/slurm/slurmctld", "StateSaveLocation=/srv/slurm/slurmctld")
    with pytest.raises(SlurmConfError, match=r"StateSaveLocation changed .*refused.*stop slurmctld.*copy"):
        classify_change(LAB, new, version)
    # The same directory written another way is no move.
    same = edit("StateSaveLocation=/var/lib/slurm/slurmctld", "StateSaveLocation=/var/lib/slurm/slurmctld/")
    assert classify_change(LAB, same, version)["action"] == "none"


@pytest.mark.parametrize("version", OLD + NEW)
def test_removing_a_partition_is_applied_only_with_no_job_in_that_partition(version):
    """slurm.conf(5) 22.05 and 24.11 PARTITION CONFIGURATION: "If a partition that is in use is
    deleted from the configuration and slurm is restarted or reconfigured (scontrol reconfigure),
    jobs using the partition are canceled."."""
    new = edit("PartitionName=debug MaxTime=30:00 Nodes=gpu04 State=UP\n", "")
    result = classify_change(LAB, new, version)
    guards = [line for line in result["needs_no_jobs"] if "debug" in line]
    assert len(guards) == 1 and guards[0].startswith("PartitionName debug removed"), result["needs_no_jobs"]
    assert "jobs using the partition are canceled" in guards[0]
    assert result["guards"] == [{"reason": guards[0], "partition": "debug"}]
    # A partition that stays (its limits changed) or a new one loses nothing: no guard.
    assert classify_change(LAB, edit("MaxTime=30:00", "MaxTime=60:00"), version)["needs_no_jobs"] == []
    assert classify_change(LAB, LAB + "PartitionName=new Nodes=gpu04\n", version)["needs_no_jobs"] == []


@pytest.mark.parametrize("version", OLD + NEW)
def test_renaming_a_partition_guards_the_old_name(version):
    """A rename is the old partition deleted (PARTITION CONFIGURATION) and a new one added."""
    result = classify_change(LAB, edit("PartitionName=debug", "PartitionName=short"), version)
    assert [g["partition"] for g in result["guards"]] == ["debug"]


# --- the primary controller under its old spelling --------------------------------------

CM = "ClusterName=lab\nControlMachine=ctl1\nBackupController=ctl2\nNodeName=gpu01 CPUs=8\n"


@pytest.mark.parametrize("version", OLD + NEW)
def test_moving_the_primary_controller_written_as_controlmachine_is_refused(version):
    """slurm.conf(5) 22.05 and 24.11 ControlMachine: "Deprecated option, see SlurmctldHost."; the
    primary moves as RELOCATING CONTROLLERS says (stop the daemons, copy StateSaveLocation)."""
    with pytest.raises(SlurmConfError, match=r"primary controller moves from ctl1 to ctl9.*RELOCATING CONTROLLERS"):
        classify_change(CM, edit("ControlMachine=ctl1", "ControlMachine=ctl9", CM), version)
    # Spelled the new way, the primary moves all the same.
    new = edit("ControlMachine=ctl1\nBackupController=ctl2\n", "SlurmctldHost=ctl9\nSlurmctldHost=ctl2\n", CM)
    with pytest.raises(SlurmConfError, match=r"from ctl1 to ctl9"):
        classify_change(CM, new, version)
    # The same primary under the new spelling is no move.
    new = edit("ControlMachine=ctl1\nBackupController=ctl2\n", "SlurmctldHost=ctl1\nSlurmctldHost=ctl2\n", CM)
    assert classify_change(CM, new, version)["action"] in ("reconfigure", "restart")


@pytest.mark.parametrize("version", OLD)
def test_22_05_a_backup_controller_change_under_the_old_spelling_restarts_slurmctld(version):
    """slurm.conf(5) 22.05 BackupController: "Deprecated option, see SlurmctldHost."; SlurmctldHost:
    "A restart of slurmctld is required for changes to this parameter to take effect."."""
    result = classify_change(CM, edit("BackupController=ctl2", "BackupController=ctl3", CM), version)
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld"]), result["reasons"]


# --- keys Slurm does not know ------------------------------------------------------------


@pytest.mark.parametrize("version", DEBIAN)
def test_a_global_key_slurm_does_not_know_is_refused_naming_key_and_version(version):
    """22.05: an unknown key in the file the daemons re-read on reconfigure stops them (slurmctld and
    every slurmd parse the same file); 24.11: the new processes refuse it. Refused before it is written."""
    tag = {"22.05.8": "slurm-22-05-8-1", "24.11.5": "slurm-24-11-5-1"}[version]
    with pytest.raises(SlurmConfError, match=rf"'SchedulerParamaters'.*Slurm {version}.*{tag}"):
        classify_change(LAB, LAB + "SchedulerParamaters=bf_interval=60\n", version)


@pytest.mark.parametrize("version", DEBIAN)
def test_a_node_or_partition_key_slurm_does_not_know_is_refused(version):
    with pytest.raises(SlurmConfError, match=r"NodeName key 'Feature'"):
        classify_change(LAB, edit("Features=h100", "Feature=h100"), version)
    with pytest.raises(SlurmConfError, match=r"PartitionName key 'MaxTme'"):
        classify_change(LAB, edit("MaxTime=30:00", "MaxTme=30:00"), version)


def test_a_key_slurm_removed_is_refused_on_the_release_without_it():
    """slurm.conf(5) 24.05 and 24.11 no longer list CoreSpecPlugin (24.11 parses it as defunct)."""
    new = LAB + "CoreSpecPlugin=core_spec/none\n"
    assert classify_change(LAB, new, "22.05.8")["action"] == "restart"
    with pytest.raises(SlurmConfError, match=r"'CoreSpecPlugin'.*24\.11\.5"):
        classify_change(LAB, new, "24.11.5")


def test_a_slurm_release_without_a_key_list_is_refused():
    with pytest.raises(SlurmConfError, match=r"25\.05.*no slurm.conf\(5\) key list"):
        classify_change(LAB, LAB + "SlurmctldDebug=info\n", "25.05.1")


def test_unknown_keys_name_the_variable_each_line_comes_from():
    from ansible.module_utils.slurm_change import unknown_keys

    text = edit("MaxTime=30:00", "MaxTme=30:00", LAB + "SchedulerParamaters=bf_interval=60\n")
    variables = {"globals": "slurm_common_config_extra", "PartitionName": "slurm_common_partitions"}
    errors = sorted(unknown_keys(text, "22.05.8", variables))
    assert len(errors) == 2
    assert errors[0].startswith("variable slurm_common_config_extra: slurm.conf key 'SchedulerParamaters'")
    assert "Slurm 22.05.8" in errors[0] and "slurm-22-05-8-1" in errors[0]
    assert errors[1].startswith("variable slurm_common_partitions: slurm.conf PartitionName key 'MaxTme'")
    assert unknown_keys(LAB, "24.11.5", variables) == []


def test_every_key_slurm_common_renders_is_known_on_both_debian_releases():
    """The role's own keys (defaults, the priority keys, NodeName and PartitionName lines) are all
    in slurm.conf(5) of 22.05 and 24.11: the check never refuses gpufleet's own file."""
    from ansible.module_utils.slurm_change import unknown_keys
    from ansible.module_utils.slurm_conf import config_lines, entity_lines, node_entities, nodes_from_facts
    from ansible.module_utils.slurm_priority import priority_config

    defaults = yaml.safe_load((ROOT / "roles/slurm_common/defaults/main.yml").read_text())
    conf = {key: "x" for key in defaults["slurm_common_config"]}
    example = {
        "type": "multifactor",
        "weights": {"fairshare": 10000, "age": 1000, "qos": 5000, "partition": 1000, "job_size": 0},
        "decay_half_life": "7-0",
        "max_age": "7-0",
        "flags": ["SMALL_RELATIVE_TO_TIME"],
    }
    conf.update(priority_config(example, "slurm_common_priority"))
    facts = {
        "ansible_processor_count": 2,
        "ansible_processor_cores": 56,
        "ansible_processor_threads_per_core": 2,
        "ansible_memtotal_mb": 2063810,
        "gpu_discovery_gres": "gpu:h100:8",
    }
    nodes = nodes_from_facts(["gpu01"], {"gpu01": facts}, {}, "gpu_discovery_gres")
    partitions = [
        {k: "x" for k in p} | {"PartitionName": p["PartitionName"]} for p in defaults["slurm_common_partitions"]
    ]
    text = "\n".join(
        config_lines(conf)
        + entity_lines(node_entities(nodes), "NodeName", "slurm_common_nodes")
        + entity_lines(partitions, "PartitionName", "slurm_common_partitions")
    )
    assert "NodeName=gpu01" in text and "PartitionName=gpu" in text
    for version in DEBIAN:
        assert unknown_keys(text, version) == []


# --- changes that need a restart the old classifier reconfigured -------------------------


@pytest.mark.parametrize("version", OLD + NEW)
def test_slurmuser_change_restarts_slurmctld(version):
    """slurmctld becomes SlurmUser once, at start (src/slurmctld/controller.c, 22.05 and 24.11); a
    reconfigure keeps the old user, and from 23.11 the new process inherits it."""
    result = classify_change(LAB, edit("SlurmUser=slurm", "SlurmUser=slurmadm"), version)
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld"]), result["reasons"]


@pytest.mark.parametrize("version", OLD + NEW)
def test_an_auth_key_change_restarts_both_daemons(version):
    """22.05: auth plugins are initialised once (src/common/slurm_auth.c) and auth/jwt reads its key
    then (src/plugins/auth/jwt/auth_jwt.c); scontrol(1) 24.11 reconfigure: "This will not be able to
    change the daemons' listening TCP port settings or authentication mechanism."."""
    old = LAB + "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key=/etc/slurm/jwt_hs256.key\n"
    new = edit("jwt_key=/etc/slurm/jwt_hs256.key", "jwt_key=/etc/slurm/jwt_2025.key", old)
    result = classify_change(old, new, version)
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld", "slurmd"]), result["reasons"]


@pytest.mark.parametrize("version", OLD + NEW)
def test_slurmduser_change_restarts_slurmd(version):
    """slurmd checks at start that it runs as SlurmdUser (src/slurmd/slurmd/slurmd.c, 22.05 and 24.11)."""
    result = classify_change(LAB, LAB + "SlurmdUser=slurmd\n", version)
    assert result["action"] == "restart" and "slurmd" in result["daemons"], result["reasons"]


def test_23_02_jobcomploc_change_restarts_slurmctld():
    """slurm.conf(5) 23.02 JobCompLoc: "NOTE: The librdkafka parameters configured in the file
    referenced by this option take effect upon slurmctld restart."."""
    old = LAB + "JobCompType=jobcomp/kafka\nJobCompLoc=/etc/slurm/kafka.conf\n"
    result = classify_change(old, edit("kafka.conf", "kafka2.conf", old), "23.02.7")
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld"]), result["reasons"]


# --- the live check: squeue before any host writes ----------------------------------------


def _squeue(*lines, rc=0, stderr=""):
    # squeue --all --noheader --format='%i %T %u %P', as config.yml reads it on the first controller.
    return {"rc": rc, "stdout_lines": list(lines), "stderr": stderr}


def test_a_removed_partition_is_refused_only_while_it_holds_jobs():
    from ansible.module_utils.slurm_change import needs_no_jobs_refusals

    result = classify_change(LAB, edit("PartitionName=debug MaxTime=30:00 Nodes=gpu04 State=UP\n", ""), "24.11.5")
    assert needs_no_jobs_refusals(result, _squeue("4711 RUNNING alice gpu")) == []
    refusals = needs_no_jobs_refusals(result, _squeue("4711 RUNNING alice gpu", "4712_[1-9] PENDING bob gpu,debug"))
    assert len(refusals) == 1
    assert refusals[0].startswith("PartitionName debug removed")
    assert "partition debug holds 1 job(s): 4712_[1-9] PENDING bob gpu,debug" in refusals[0]


def test_a_cluster_wide_guard_is_refused_by_any_job_and_by_a_failed_squeue():
    from ansible.module_utils.slurm_change import needs_no_jobs_refusals

    result = classify_change(LAB, edit("select/cons_tres", "select/linear"), "22.05.8")
    assert needs_no_jobs_refusals(result, _squeue()) == []
    assert (
        "slurmctld holds 1 job(s): 4711 RUNNING alice gpu"
        in needs_no_jobs_refusals(result, _squeue("4711 RUNNING alice gpu"))[0]
    )
    failed = needs_no_jobs_refusals(result, _squeue(rc=1, stderr="slurm_load_jobs error: Unable to contact"))
    assert "squeue could not list the jobs (rc 1): slurm_load_jobs error" in failed[0]
    # A line it cannot read is a job it cannot place: it holds every partition (fail closed).
    removed = classify_change(LAB, edit("PartitionName=debug MaxTime=30:00 Nodes=gpu04 State=UP\n", ""), "22.05.8")
    assert len(needs_no_jobs_refusals(removed, _squeue("4711"))) == 1
    # Nothing to guard: nothing is refused, whatever squeue says.
    quiet = classify_change(LAB, edit("MaxTime=30:00", "MaxTime=60:00"), "22.05.8")
    assert needs_no_jobs_refusals(quiet, _squeue(rc=1)) == []


def test_the_role_checks_keys_and_reads_every_partitions_jobs_before_any_write():
    tasks = yaml.safe_load((ROOT / "roles/slurm_common/tasks/config.yml").read_text())
    names = [t["name"] for t in tasks]
    write = names.index("config | Write the configuration files")
    keys = next(t for t in tasks if "ansible.builtin.assert" in t and "slurm_conf_unknown_keys" in str(t))
    assert "host {{ inventory_hostname }}:" in keys["ansible.builtin.assert"]["fail_msg"]
    jobs = next(t for t in tasks if t.get("register") == "__slurm_common_jobs")
    assert "--all" in jobs["ansible.builtin.command"]["argv"]  # hidden partitions' jobs too
    assert "%P" in " ".join(jobs["ansible.builtin.command"]["argv"])
    refuse = next(t for t in tasks if "slurm_needs_no_jobs_refusals" in str(t.get("ansible.builtin.assert", {})))
    assert names.index(keys["name"]) < names.index(jobs["name"]) < names.index(refuse["name"]) < write


# --- property: never weaker than the man page -----------------------------------------------

RULE_BASE = "ClusterName=lab\nSlurmctldHost=ctl1\nSlurmctldHost=ctl2\nNodeName=gpu01 CPUs=8\n"
PARTS = "PartitionName=gpu Nodes=gpu01\nPartitionName=debug Nodes=gpu01\n"


def _rule_change(rule):
    """The smallest slurm.conf change the rule speaks of: (old text, new text)."""
    old_value, new_value = rule.example or ("a", "b")
    if rule.where == "global":
        return RULE_BASE + PARTS + f"{rule.key}={old_value}\n", RULE_BASE + PARTS + f"{rule.key}={new_value}\n"
    if rule.where == "node":
        return (
            RULE_BASE.replace("CPUs=8", f"{rule.key}={old_value}") + PARTS,
            RULE_BASE.replace("CPUs=8", f"{rule.key}={new_value}") + PARTS,
        )
    if rule.where == "node added":
        return RULE_BASE + PARTS, RULE_BASE + PARTS + "NodeName=gpu02 CPUs=8\n"
    if rule.where == "partition removed":
        return RULE_BASE + PARTS, RULE_BASE + "PartitionName=gpu Nodes=gpu01\n"
    if rule.where == "primary controller":
        return RULE_BASE + PARTS, RULE_BASE.replace("SlurmctldHost=ctl1", "SlurmctldHost=ctl9") + PARTS
    raise AssertionError(rule)


def _version(series):
    from ansible.module_utils.slurm_keys import TAGS

    return ".".join(TAGS[series].split("-")[1:4])  # slurm-22-05-8-1 -> 22.05.8


def _meets(rule, result):
    """Whether a classification is at least as strong as the rule (a refusal is stronger than all)."""
    if rule.need == "refuse":
        return False
    if rule.need in ("restart", "stop_all"):
        ok = result["action"] == "restart" and set(rule.daemons) <= set(result["daemons"])
        return ok and (rule.need != "stop_all" or result["order"] == "stop_all_then_start")
    if rule.need == "no_jobs":
        return any(g["partition"] is None and rule.key.lower() in g["reason"].lower() for g in result["guards"])
    if rule.need == "no_jobs_in_partition":
        return any(g["partition"] in (None, "debug") for g in result["guards"])
    raise AssertionError(rule)


def _rules():
    from ansible.module_utils.slurm_keys import MAN_RULES, TAGS

    return [
        pytest.param(series, rule, id=f"{TAGS[series]}-{rule.where}-{rule.key}-{rule.need}")
        for rule in MAN_RULES
        for series in rule.series
    ]


@pytest.mark.parametrize("series, rule", _rules())
def test_no_classification_is_weaker_than_the_man_page(series, rule):
    """Property over the whole rule table: for every man-page sentence at every tag, changing its
    key gets the restart, the live check or the refusal it asks for, or a stronger answer."""
    old, new = _rule_change(rule)
    try:
        result = classify_change(old, new, _version(series))
    except SlurmConfError:
        return  # refused before anything is written: the strongest answer
    assert _meets(rule, result), (rule.page, rule.sentence, result)


def _global_rules(series):
    from ansible.module_utils.slurm_keys import MAN_RULES

    return [r for r in MAN_RULES if series in r.series and r.where == "global" and r.need != "refuse"]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_several_changes_at_once_each_keep_their_man_page_answer(data):
    """Property: any mix of the table's key changes in one run keeps every rule's answer (the
    strongest action wins, no guard or daemon is dropped when the results merge across files)."""
    from ansible.module_utils.slurm_keys import TAGS

    series = data.draw(st.sampled_from(sorted(TAGS)))
    rules = data.draw(st.lists(st.sampled_from(_global_rules(series)), unique_by=lambda r: r.key, min_size=1))
    old = RULE_BASE + "".join(f"{r.key}={(r.example or ('a', 'b'))[0]}\n" for r in rules)
    new = RULE_BASE + "".join(f"{r.key}={(r.example or ('a', 'b'))[1]}\n" for r in rules)
    changes = [{"name": "slurm.conf", "before": old, "after": new}]
    try:
        result = classify_changes(changes, _version(series))
    except SlurmConfError as exc:
        assert any(r.key.lower() in ("statesavelocation",) for r in rules), exc
        return
    for rule in rules:
        assert _meets(rule, result), (series, rule.key, rule.sentence, result)
