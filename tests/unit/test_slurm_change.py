"""Reconfigure-versus-restart decisions (module_utils/slurm_change.py, filters slurm_conf_change(s)).

Each rule test names the man-page sentence (and Slurm release) it follows; docs/slurm-changes.md
has the table. "22.05" rules hold for 22.05 and 23.02, "24.11" rules from 23.11 on.
"""

import pytest
from ansible.module_utils.slurm_change import (
    LEGACY_RESTART_KEYS,
    REEXEC_RESTART_KEYS,
    SlurmConfError,
    apply_plan,
    classify_change,
    classify_changes,
    classify_file_change,
    defunct_settings,
    parse_slurm_conf,
    plan_apply,
    topology_plugin,
    version_tuple,
)
from ansible.module_utils.slurm_keys import KEYS
from hypothesis import given, settings
from hypothesis import strategies as st

BASE = """\
# slurm.conf managed by gpufleet
ClusterName=lab
SlurmctldHost=ctl1
SlurmctldHost=ctl2
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
TopologyPlugin=topology/tree
SlurmctldDebug=info
NodeName=DEFAULT CPUs=64 RealMemory=512000 \\
    Gres=gpu:h100:8 State=UNKNOWN
NodeName=gpu[01-04]
NodeName=gpu05 Features=spare   # a spare node
PartitionName=batch Nodes=gpu[01-04] Default=YES MaxTime=INFINITE State=UP
PartitionName=debug Nodes=gpu05 MaxTime=30 State=UP
"""


def edit(old, new, text=BASE):
    assert old in text, old
    return text.replace(old, new)


# --- parsing ---------------------------------------------------------------------------


def test_parse_expands_node_ranges_and_applies_node_defaults():
    conf = parse_slurm_conf(BASE)
    assert sorted(conf["nodes"]) == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]
    assert conf["nodes"]["gpu03"]["Gres"] == "gpu:h100:8"
    assert conf["nodes"]["gpu05"]["Features"] == "spare"


def test_parse_joins_continuation_lines_and_drops_comments():
    conf = parse_slurm_conf(BASE)
    assert conf["nodes"]["gpu01"]["State"] == "UNKNOWN"
    assert "managed" not in str(conf)


def test_parse_keeps_globals_and_lists_repeatable_keys():
    conf = parse_slurm_conf(BASE)
    assert conf["globals"]["SlurmctldPort"] == "6817"
    assert conf["globals"]["SlurmctldHost"] == ["ctl1", "ctl2"]


def test_parse_keys_partitions_by_name():
    conf = parse_slurm_conf(BASE)
    assert conf["partitions"]["debug"] == {"Nodes": "gpu05", "MaxTime": "30", "State": "UP"}


def test_parse_records_include_lines():
    assert parse_slurm_conf("Include /etc/slurm/nodes.conf\n")["includes"] == ["/etc/slurm/nodes.conf"]


def test_parse_quoted_values_with_spaces():
    conf = parse_slurm_conf('NodeName=n1 Reason="bad gpu" CPUs=4\n')
    assert conf["nodes"]["n1"]["Reason"] == "bad gpu"


def test_parse_rejects_token_without_equals_naming_the_line():
    with pytest.raises(SlurmConfError, match="line 2"):
        parse_slurm_conf("ClusterName=x\nNodeName=n1 CPUs\n")


# --- versions --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("22.05.8", (22, 5, 8)),
        ("23.11", (23, 11, 0)),
        ("slurm 24.11.3-2ubuntu1", (24, 11, 3)),
        ((23, 2), (23, 2, 0)),
    ],
)
def test_version_tuple(text, expected):
    assert version_tuple(text) == expected


def test_version_tuple_rejects_garbage():
    with pytest.raises(SlurmConfError, match="banana"):
        version_tuple("banana")


def test_topology_block_needs_24_05_where_blocksizes_exists():
    """topology.conf(5) 23.11 has only BlockLevels; RELEASE_NOTES 24.05 "Replaced the BlockLevels
    with BlockSizes"."""
    assert topology_plugin("22.05.8") == "topology/tree"
    assert topology_plugin("24.05.0", prefer="block") == "topology/block"
    assert topology_plugin("24.11.5", prefer="block") == "topology/block"
    with pytest.raises(SlurmConfError, match=r"24\.05 \(23\.11 had BlockLevels\)"):
        topology_plugin("23.11.10", prefer="block")


# --- classification: nothing / first install -------------------------------------------

OLD = ("22.05.8", "23.02.7")  # scontrol(1)/slurm.conf(5) 22.05 and 23.02 rules
NEW = ("23.11.0", "24.05.8", "24.11.5")  # scontrol(1) 24.11: reconfigure creates new processes


def test_comment_and_whitespace_changes_need_nothing():
    new = "# new header\n" + BASE.replace("SlurmctldDebug=info", "SlurmctldDebug=info   # chatty")
    result = classify_change(BASE, new, "22.05.8")
    assert result == {"action": "none", "reasons": [], "daemons": [], "order": None, "guards": [], "needs_no_jobs": []}


def test_key_case_differences_need_nothing():
    assert classify_change(BASE, BASE.replace("SlurmctldDebug", "slurmctlddebug"), "22.05")["action"] == "none"


def test_first_install_restarts_everything():
    result = classify_change("", BASE, "23.11")
    assert (result["daemons"], result["order"]) == (["slurmctld", "slurmd"], "restart")


@pytest.mark.parametrize("version", OLD + NEW)
def test_ordinary_global_change_reconfigures_on_every_version(version):
    """slurm.conf(5) DESCRIPTION: changes take effect on "scontrol reconfigure" unless otherwise noted."""
    result = classify_change(BASE, edit("SlurmctldDebug=info", "SlurmctldDebug=debug"), version)
    assert result["action"] == "reconfigure"
    assert "SlurmctldDebug changed (info -> debug)" in result["reasons"][0]


# --- classification: slurm.conf keys on 22.05 / 23.02 ---------------------------------

RULE_BASE = "ClusterName=lab\nSlurmctldHost=ctl1\nNodeName=gpu01 CPUs=8\n"

# (key, old value, new value, daemons the 22.05 rule restarts, rule the test follows)
LEGACY_RESTARTS = [
    ("AccountingStorageEnforce", "associations", "associations,limits", ["slurmctld"], "AccountingStorageEnforce"),
    ("CoreSpecPlugin", "core_spec/none", "core_spec/cray_aries", ["slurmd"], "restart of the slurmd daemons"),
    ("CredType", "cred/munge", "cred/none", ["slurmctld"], "CredType"),
    ("CryptoType", "crypto/munge", "crypto/none", ["slurmctld"], "CredType"),
    ("GresTypes", "gpu", "gpu,shard", ["slurmctld", "slurmd"], "GresTypes"),
    ("JobContainerType", "job_container/none", "job_container/tmpfs", ["slurmctld"], "JobContainerType"),
    ("MaxJobCount", "10000", "20000", ["slurmctld"], "MaxJobCount"),
    ("MaxNodeCount", "10", "20", ["slurmctld"], "MaxNodeCount"),
    ("PluginDir", "/usr/lib/slurm", "/opt/slurm/lib", ["slurmctld", "slurmd"], "PluginDir"),
    ("PowerPlugin", "power/none", "power/cray_aries", ["slurmctld"], "PowerPlugin"),
    ("ProctrackType", "proctrack/cgroup", "proctrack/linuxproc", ["slurmctld"], "ProctrackType"),
    ("SchedulerType", "sched/backfill", "sched/builtin", ["slurmctld"], "SchedulerType"),
    ("SelectType", "select/cons_tres", "select/linear", ["slurmctld", "slurmd"], "SelectType"),
    ("SelectTypeParameters", "CR_Core_Memory", "CR_CPU", ["slurmctld"], "SelectTypeParameters"),
    ("SlurmctldParameters", "idle_on_node_suspend", "enable_configless", ["slurmctld"], "SlurmctldParameters"),
    ("SlurmctldPort", "6817", "7817", ["slurmctld"], "SlurmctldPort"),
    ("SlurmdPort", "6818", "7818", ["slurmctld", "slurmd"], "SlurmdPort"),
    ("SwitchType", "switch/none", "switch/hpe_slingshot", ["slurmctld", "slurmd"], "SwitchType"),
    # Man pages silent; the 22.05 source loads these plugins once.
    ("AccountingStorageType", "accounting_storage/none", "accounting_storage/slurmdbd", ["slurmctld"], "source"),
    ("AuthAltTypes", "auth/none", "auth/jwt", ["slurmctld", "slurmd"], "source"),
    ("CommunicationParameters", "NoInAddrAny", "EnableIPv6", ["slurmctld", "slurmd"], "sockets kept"),
    ("BurstBufferType", "burst_buffer/none", "burst_buffer/lua", ["slurmctld"], "read_config.c"),
    ("JobAcctGatherType", "jobacct_gather/none", "jobacct_gather/cgroup", ["slurmctld", "slurmd"], "source"),
    ("PriorityType", "priority/basic", "priority/multifactor", ["slurmctld"], "source"),
    ("TaskPlugin", "task/affinity", "task/cgroup,task/affinity", ["slurmd"], "task_plugin.c"),
    ("TopologyPlugin", "topology/none", "topology/tree", ["slurmctld", "slurmd"], "slurm_topology.c"),
]


_STILL_RESTART = ("SlurmctldPort", "SlurmdPort", "AuthAltTypes", "CommunicationParameters")


def _key_change(key, old, new):
    return RULE_BASE + f"{key}={old}\n", RULE_BASE + f"{key}={new}\n"


@pytest.mark.parametrize("version", OLD)
@pytest.mark.parametrize(
    "key, old, new, daemons, rule", LEGACY_RESTARTS, ids=[f"{r[0]}-{r[4]}" for r in LEGACY_RESTARTS]
)
def test_22_05_restart_restarts_exactly_the_daemons_the_man_page_names(key, old, new, daemons, rule, version):
    """slurm.conf(5) 22.05: each key's "A restart of ... is required" sentence names the daemons."""
    result = classify_change(*_key_change(key, old, new), version)
    assert (result["action"], result["daemons"], result["order"]) == ("restart", daemons, "restart")
    assert key in result["reasons"][0] and rule in result["reasons"][0]


def _documented(key, version):
    """Whether slurm.conf(5) of the version's release lists the key (24.05 dropped CoreSpecPlugin and
    PowerPlugin; CryptoType is CredType's old spelling)."""
    names = {k.lower() for k in KEYS[version_tuple(version)[:2]]["globals"]} | {"cryptotype"}
    return key.lower() in names


@pytest.mark.parametrize(
    "key, old, new, version",
    [(*r[:3], v) for r in LEGACY_RESTARTS if r[0] not in _STILL_RESTART for v in NEW if _documented(r[0], v)],
)
def test_22_05_restart_keys_only_reconfigure_from_23_11(key, old, new, version):
    """scontrol(1) 24.11: reconfigure creates new processes that read the whole configuration;
    slurm.conf(5) 24.11 keeps no restart note for these keys."""
    result = classify_change(*_key_change(key, old, new), version)
    assert result["action"] == "reconfigure", result["reasons"]
    assert "scontrol(1) 24.11" in result["reasons"][0]


@pytest.mark.parametrize("version", OLD)
def test_22_05_authtype_stops_every_daemon_then_starts_them(version):
    """slurm.conf(5) 22.05 AuthType: all daemons terminated prior to the change, later restarted."""
    result = classify_change(*_key_change("AuthType", "auth/munge", "auth/slurm"), version)
    assert (result["action"], result["daemons"], result["order"]) == (
        "restart",
        ["slurmctld", "slurmd"],
        "stop_all_then_start",
    )


@pytest.mark.parametrize("version", OLD)
def test_22_05_schedulerparameters_restarts_only_for_no_backup_scheduling(version):
    """slurm.conf(5) 22.05 SchedulerParameters no_backup_scheduling: "A restart of slurmctld is required"."""
    toggled = classify_change(
        *_key_change("SchedulerParameters", "bf_max_job_test=100", "no_backup_scheduling"), version
    )
    assert (toggled["action"], toggled["daemons"]) == ("restart", ["slurmctld"])
    assert "no_backup_scheduling" in toggled["reasons"][0]
    tuned = classify_change(*_key_change("SchedulerParameters", "bf_max_job_test=100", "bf_max_job_test=200"), version)
    assert tuned["action"] == "reconfigure"


@pytest.mark.parametrize("version", OLD)
def test_22_05_backup_slurmctldhost_change_restarts_slurmctld(version):
    """slurm.conf(5) 22.05 SlurmctldHost: "A restart of slurmctld is required"."""
    result = classify_change(BASE, edit("SlurmctldHost=ctl2\n", "SlurmctldHost=ctl3\n"), version)
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld"])


# --- classification: slurm.conf keys on 23.11 / 24.05 / 24.11 --------------------------


@pytest.mark.parametrize("version", NEW)
@pytest.mark.parametrize(
    "key, old, new",
    [
        ("SlurmctldPort", "6817", "7817"),
        ("SlurmdPort", "6818", "7818"),
        ("CommunicationParameters", "NoInAddrAny", "EnableIPv6"),
    ],
)
def test_24_11_tcp_listening_settings_restart_both_daemons(key, old, new, version):
    """slurm.conf(5) 24.11 DESCRIPTION: "Changes to TCP listening settings will require a daemon restart."."""
    result = classify_change(*_key_change(key, old, new), version)
    assert (result["action"], result["daemons"], result["order"]) == ("restart", ["slurmctld", "slurmd"], "restart")
    assert "TCP listening" in result["reasons"][0]


@pytest.mark.parametrize("version", NEW)
def test_24_11_authtype_stops_every_daemon_then_starts_them(version):
    """slurm.conf(5) 24.11 AuthType: "All Slurm daemons and commands must be terminated prior to
    changing the value of AuthType and later restarted."."""
    result = classify_change(*_key_change("AuthType", "auth/munge", "auth/slurm"), version)
    assert (result["action"], result["order"]) == ("restart", "stop_all_then_start")
    assert result["daemons"] == ["slurmctld", "slurmd"]


@pytest.mark.parametrize("version", NEW)
def test_24_11_alternative_authentication_restarts(version):
    """scontrol(1) 24.11 reconfigure: not able to change the daemons' authentication mechanism."""
    result = classify_change(*_key_change("AuthAltTypes", "auth/none", "auth/jwt"), version)
    assert (result["action"], result["order"]) == ("restart", "restart")


@pytest.mark.parametrize("version", NEW)
def test_24_11_switchtype_is_restarted_or_reconfigured(version):
    """slurm.conf(5) 24.11 SwitchType: "All Slurm daemons, commands and running jobs must be
    restarted or reconfigured for a change in SwitchType to take effect."."""
    result = classify_change(*_key_change("SwitchType", "switch/none", "switch/hpe_slingshot"), version)
    assert result["action"] == "reconfigure"
    assert "restarted or reconfigured" in result["reasons"][0]


@pytest.mark.parametrize("version", OLD + NEW)
def test_switchtype_change_needs_no_job_in_the_cluster_on_every_version(version):
    """slurm.conf(5) 22.05 and 24.11 SwitchType: "If running jobs exist at the time slurmctld is
    restarted with a new value of SwitchType, records of all jobs in any state may be lost." (from
    23.11 the reconfigure starts a new slurmctld)."""
    result = classify_change(*_key_change("SwitchType", "switch/none", "switch/hpe_slingshot"), version)
    page = "slurm.conf(5) 24.11" if version in NEW else "slurm.conf(5) 22.05"
    assert len(result["needs_no_jobs"]) == 1
    assert result["needs_no_jobs"][0].startswith("SwitchType changed (switch/none -> switch/hpe_slingshot)")
    assert f'{page} SwitchType: "If running jobs exist' in result["needs_no_jobs"][0]
    # The guard goes with the change wherever it is merged: the whole change and each host's plan.
    before, after = _key_change("SwitchType", "switch/none", "switch/hpe_slingshot")
    changes = [{"name": "slurm.conf", "before": before, "after": after}]
    assert classify_changes(changes, version)["needs_no_jobs"] == result["needs_no_jobs"]
    for daemons in (["slurmctld"], ["slurmd"]):
        assert apply_plan(changes, version, daemons)["needs_no_jobs"] == result["needs_no_jobs"]


@pytest.mark.parametrize("version", OLD + NEW)
def test_other_changes_need_no_guard_on_jobs(version):
    """Only SwitchType's page warns that the jobs' records may be lost; AuthType, SchedulerType and
    a partition change carry no such guard."""
    for key, old, new in (
        ("AuthType", "auth/munge", "auth/slurm"),
        ("SchedulerType", "sched/backfill", "sched/builtin"),
    ):
        assert classify_change(*_key_change(key, old, new), version)["needs_no_jobs"] == []
    assert classify_change(BASE, BASE + "PartitionName=extra Nodes=gpu01\n", version)["needs_no_jobs"] == []


@pytest.mark.parametrize("version", NEW)
def test_24_11_backup_slurmctldhost_change_reconfigures_every_daemon(version):
    """slurm.conf(5) 24.11 SlurmctldHost: "Slurm daemons need to be reconfigured (e.g. "scontrol
    reconfig") for changes to this parameter to take effect."."""
    result = classify_change(BASE, edit("SlurmctldHost=ctl2\n", "SlurmctldHost=ctl3\n"), version)
    assert result["action"] == "reconfigure"
    assert "every daemon" in result["reasons"][0]


@pytest.mark.parametrize("version", OLD + NEW)
def test_moving_the_primary_controller_is_refused(version):
    """slurm.conf(5) RELOCATING CONTROLLERS: stop the daemons, copy StateSaveLocation, restart."""
    with pytest.raises(SlurmConfError, match=r"SlurmctldHost.*RELOCATING CONTROLLERS"):
        classify_change(BASE, edit("SlurmctldHost=ctl1\n", "SlurmctldHost=ctl9\n"), version)


@pytest.mark.parametrize("version", OLD + NEW)
def test_a_new_controller_address_is_not_a_move(version):
    result = classify_change(BASE, edit("SlurmctldHost=ctl1\n", "SlurmctldHost=ctl1(10.0.0.1)\n"), version)
    assert result["action"] in ("reconfigure", "restart")


@pytest.mark.parametrize("version", OLD + NEW)
def test_cluster_name_change_is_refused_naming_cluster_name_mismatch(version):
    """slurmctld stops with "CLUSTER NAME MISMATCH" (src/slurmctld/controller.c); no restart applies it."""
    with pytest.raises(SlurmConfError, match=r"ClusterName changed \(lab -> lab2\).*CLUSTER NAME MISMATCH"):
        classify_change(BASE, edit("ClusterName=lab", "ClusterName=lab2"), version)


@pytest.mark.parametrize("version", OLD + NEW)
def test_cryptotype_renamed_to_credtype_with_the_same_plugin_needs_nothing(version):
    """NEWS: "Change CryptoType option to CredType"; Slurm reads crypto/munge as cred/munge."""
    result = classify_change(RULE_BASE + "CryptoType=crypto/munge\n", RULE_BASE + "CredType=cred/munge\n", version)
    assert result["action"] == "none"


# --- classification: nodes and partitions ---------------------------------------------


@pytest.mark.parametrize("version", OLD)
def test_22_05_adding_or_removing_nodes_restarts_both(version):
    """scontrol(1) 22.05 reconfigure: "The slurmctld daemon and all slurmd daemons must also be
    restarted if nodes are added to or removed from the cluster."."""
    added = classify_change(BASE, edit("NodeName=gpu[01-04]", "NodeName=gpu[01-06]"), version)
    assert (added["action"], added["daemons"]) == ("restart", ["slurmctld", "slurmd"])
    assert "nodes added (gpu[05-06])" not in added["reasons"][0]  # gpu05 already exists
    assert "nodes added (gpu06)" in added["reasons"][0]
    removed = classify_change(BASE, edit("NodeName=gpu[01-04]", "NodeName=gpu[01-03]"), version)
    assert "nodes removed (gpu04)" in removed["reasons"][0]


@pytest.mark.parametrize("version", NEW)
def test_24_11_adding_nodes_reconfigures_every_daemon(version):
    """slurm.conf(5) 24.11 NODE CONFIGURATION: restarting or reconfiguring all slurmctld and slurmd daemons."""
    result = classify_change(BASE, edit("NodeName=gpu[01-04]", "NodeName=gpu[01-06]"), version)
    assert (result["action"], result["daemons"]) == ("reconfigure", [])


@pytest.mark.parametrize(
    "old, new",
    [("Gres=gpu:h100:8", "Gres=gpu:h100:4"), ("RealMemory=512000", "RealMemory=500000"), ("CPUs=64", "CPUs=32")],
)
def test_node_hardware_change_restarts_on_22_05_and_reconfigures_on_24_11(old, new):
    """slurm.conf(5) 22.05 NODE CONFIGURATION "changing their processor count, etc. require restarting
    both"; 24.11 "restarting or reconfiguring"."""
    text = edit(old, new)
    legacy = classify_change(BASE, text, "22.05.8")
    assert (legacy["action"], legacy["daemons"]) == ("restart", ["slurmctld", "slurmd"])
    assert f"NodeName {old.split('=')[0]} changed on gpu[01-05]" in legacy["reasons"][0]
    assert classify_change(BASE, text, "24.11.5")["action"] == "reconfigure"


def test_node_feature_change_only_reconfigures_on_old_slurm():
    result = classify_change(BASE, edit("Features=spare", "Features=spare,h100"), "22.05.8")
    assert result["action"] == "reconfigure"


@pytest.mark.parametrize("version", OLD + NEW)
def test_node_port_change_restarts_on_every_version(version):
    """NodeName Port is the port slurmd listens on: slurm.conf(5) 24.11 TCP listening settings."""
    result = classify_change(BASE, edit("NodeName=gpu05 ", "NodeName=gpu05 Port=7000 "), version)
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld", "slurmd"])


@pytest.mark.parametrize("version", OLD + NEW)
def test_partition_change_reconfigures_on_every_version(version):
    new = edit("Nodes=gpu05 MaxTime=30", "Nodes=gpu05 MaxTime=60")
    result = classify_change(BASE, new, version)
    assert result["action"] == "reconfigure"
    assert result["reasons"] == ["PartitionName debug changed: scontrol reconfigure"]


def test_moving_a_node_between_partitions_reconfigures():
    new = edit("Nodes=gpu[01-04] Default", "Nodes=gpu[01-03] Default")
    new = edit("Nodes=gpu05 MaxTime", "Nodes=gpu[04-05] MaxTime", new)
    assert classify_change(BASE, new, "22.05.8")["action"] == "reconfigure"


def test_restart_wins_over_reconfigure_and_all_reasons_are_kept():
    new = edit("SlurmctldDebug=info", "SlurmctldDebug=debug", edit("SlurmdPort=6818", "SlurmdPort=7000"))
    result = classify_change(BASE, new, "24.11")
    assert result["action"] == "restart"
    assert len(result["reasons"]) == 2


def test_the_23_11_boundary_is_the_first_release_with_the_new_reconfigure():
    text = edit("SelectTypeParameters=CR_Core_Memory", "SelectTypeParameters=CR_CPU")
    assert classify_change(BASE, text, "23.02.7")["action"] == "restart"
    assert classify_change(BASE, text, "23.11.0")["action"] == "reconfigure"


# --- gres.conf ------------------------------------------------------------------------

GRES = """\
AutoDetect=off
NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-31
NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=32-63
"""


def test_gres_type_change_restarts_both_on_22_05():
    """gres.conf(5) 22.05 Type: "A restart of the slurmctld and slurmd daemons is required for
    changes to the Type option to take effect."."""
    result = classify_file_change("gres.conf", GRES, GRES.replace("Type=h100", "Type=h200"), "22.05.8")
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld", "slurmd"])
    assert "gres.conf Type changed (gpu01:gpu, gpu02:gpu)" in result["reasons"][0]


@pytest.mark.parametrize("version", NEW)
def test_gres_type_change_reconfigures_from_23_11_when_slurmd_responds(version):
    """gres.conf(5) 24.11 Type: reconfigure works when "all affected slurmd daemons" respond."""
    result = classify_file_change("gres.conf", GRES, GRES.replace("Type=h100", "Type=h200"), version)
    assert result["action"] == "reconfigure"
    assert "must be responding" in result["reasons"][0]


def test_gres_cores_change_restarts_slurmctld_on_22_05():
    """gres.conf(5) 22.05 Cores: "A restart of the slurmctld is needed for changes to the Cores option"."""
    result = classify_file_change("gres.conf", GRES, GRES.replace("Cores=32-63", "Cores=0-63"), "22.05.8")
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld"])


def test_gres_cores_change_reconfigures_on_24_11():
    """gres.conf(5) 24.11 Cores asks for a slurmctld restart; scontrol(1) 24.11 reconfigure starts a new one."""
    result = classify_file_change("gres.conf", GRES, GRES.replace("Cores=32-63", "Cores=0-63"), "24.11.5")
    assert result["action"] == "reconfigure"


@pytest.mark.parametrize("version", OLD + NEW)
def test_gres_file_change_reconfigures(version):
    """gres.conf(5) DESCRIPTION: changes take effect on "scontrol reconfigure" unless otherwise noted."""
    result = classify_file_change("gres.conf", GRES, GRES.replace("nvidia[4-7]", "nvidia[4-6]"), version)
    assert result["action"] == "reconfigure"


def test_gres_comment_only_change_needs_nothing():
    assert classify_file_change("gres.conf", GRES, "# header\n" + GRES, "22.05")["action"] == "none"


def test_first_gres_conf_restarts_both():
    assert classify_file_change("gres.conf", "", GRES, "24.11")["daemons"] == ["slurmctld", "slurmd"]


def test_gres_conf_parse_error_names_the_file():
    with pytest.raises(SlurmConfError, match=r"gres\.conf line 1"):
        classify_file_change("gres.conf", GRES, "NodeName=gpu01 Name\n", "24.11")


# --- cgroup.conf, topology.conf, other files ---------------------------------------------

CGROUP = "CgroupPlugin=cgroup/v2\nConstrainCores=yes\nConstrainDevices=yes\n"


@pytest.mark.parametrize("version", OLD + NEW)
def test_cgroup_constraint_change_reconfigures(version):
    """cgroup.conf(5) 22.05/24.11 DESCRIPTION: changes take effect on "scontrol reconfigure" unless noted."""
    result = classify_file_change(
        "cgroup.conf", CGROUP, CGROUP.replace("ConstrainDevices=yes", "ConstrainDevices=no"), version
    )
    assert result["action"] == "reconfigure"


def test_cgroup_plugin_change_restarts_slurmd_on_22_05_only():
    """22.05 sets the cgroup plugin up once (src/common/cgroup.c); 24.11 reconfigure starts a new slurmd."""
    new = CGROUP.replace("cgroup/v2", "cgroup/v1")
    legacy = classify_file_change("cgroup.conf", CGROUP, new, "22.05.8")
    assert (legacy["action"], legacy["daemons"]) == ("restart", ["slurmd"])
    assert classify_file_change("cgroup.conf", CGROUP, new, "24.11.5")["action"] == "reconfigure"


@pytest.mark.parametrize("version", OLD + NEW)
def test_topology_conf_change_reconfigures(version):
    """topology.conf(5) DESCRIPTION: changes take effect on "scontrol reconfigure"; nothing noted."""
    result = classify_file_change(
        "/etc/slurm/topology.conf", "SwitchName=a Nodes=n1\n", "SwitchName=b Nodes=n1\n", version
    )
    assert result["action"] == "reconfigure"


def test_other_files_unchanged_but_for_comments_need_nothing():
    assert classify_file_change("topology.conf", "A=1\n", "# c\nA=1\n", "22.05")["action"] == "none"


def test_a_file_without_a_rule_restarts_both_fail_closed():
    result = classify_file_change("plugstack.conf", "A=1\n", "A=2\n", "24.11")
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld", "slurmd"])


# --- several files together --------------------------------------------------------------


def _changes(gres_new, conf_new):
    return [
        {"name": "slurm.conf", "before": BASE, "after": conf_new},
        {"name": "gres.conf", "before": GRES, "after": gres_new},
    ]


def test_gres_conf_and_node_gres_change_apply_together():
    """gres.conf Type + NodeName Gres= change: one restart of both on 22.05, one reconfigure on 24.11."""
    changes = _changes(GRES.replace("Type=h100", "Type=h200"), edit("Gres=gpu:h100:8", "Gres=gpu:h200:8"))
    legacy = classify_changes(changes, "22.05.8")
    assert (legacy["action"], legacy["daemons"], legacy["order"]) == ("restart", ["slurmctld", "slurmd"], "restart")
    assert any("gres.conf Type" in r for r in legacy["reasons"]) and any(
        "NodeName Gres" in r for r in legacy["reasons"]
    )
    modern = classify_changes(changes, "24.11.5")
    assert (modern["action"], modern["daemons"], modern["order"]) == ("reconfigure", [], None)


def test_authtype_order_survives_merging():
    changes = [
        {"name": "slurm.conf", "before": BASE, "after": edit("AuthType=auth/munge", "AuthType=auth/slurm")},
        {"name": "cgroup.conf", "before": CGROUP, "after": CGROUP.replace("=yes", "=no")},
    ]
    assert classify_changes(changes, "24.11.5")["order"] == "stop_all_then_start"
    plan = plan_apply(
        [classify_file_change(c["name"], c["before"], c["after"], "24.11.5") for c in changes], ["slurmd"]
    )
    assert (plan["action"], plan["restart"], plan["order"]) == ("restart", ["slurmd"], "stop_all_then_start")


def test_merged_classification_is_the_strongest_of_its_parts():
    """classify_changes: the strongest action wins and restarts are the union of every file's."""
    files = {
        "slurm.conf": (BASE, edit("SlurmctldDebug=info", "SlurmctldDebug=debug")),
        "gres.conf": (GRES, GRES.replace("Cores=32-63", "Cores=0-63")),
        "cgroup.conf": (CGROUP, CGROUP.replace("cgroup/v2", "cgroup/v1")),
    }
    for version in OLD + NEW:
        parts = [classify_file_change(name, a, b, version) for name, (a, b) in files.items()]
        merged = classify_changes([{"name": n, "before": a, "after": b} for n, (a, b) in files.items()], version)
        ranks = {"none": 0, "reconfigure": 1, "restart": 2}
        assert ranks[merged["action"]] == max(ranks[p["action"]] for p in parts)
        assert set(merged["daemons"]) == {d for p in parts for d in p["daemons"]}


def test_defunct_settings_for_the_templates():
    """RELEASE_NOTES 23.11: CgroupAutomount removed; slurmctld runs as User=slurm."""
    assert "cgroup.conf" not in defunct_settings("22.05.8")
    assert "CryptoType" in defunct_settings("22.05.8")["slurm.conf"]
    modern = defunct_settings("24.11.5")
    assert "CgroupAutomount" in modern["cgroup.conf"]
    assert "/run/slurmctld/" in modern["slurm.conf"]["SlurmctldPidFile"]


def test_filters_are_exposed():
    from slurm_change import FilterModule

    filters = FilterModule().filters()
    result = filters["slurm_conf_change"](BASE, edit("SlurmdPort=6818", "SlurmdPort=1"), "22.05")
    assert result["action"] == "restart"
    changes = _changes(GRES, edit("SlurmctldDebug=info", "SlurmctldDebug=debug"))
    assert filters["slurm_conf_changes"](changes, "24.11")["action"] == "reconfigure"
    assert "cgroup.conf" in filters["slurm_defunct_settings"]("24.11.5")


def test_a_refused_change_becomes_a_filter_error_naming_the_key():
    from ansible.errors import AnsibleFilterError
    from slurm_change import FilterModule

    apply_plan = FilterModule().filters()["slurm_apply_plan"]
    changes = [{"name": "slurm.conf", "before": BASE, "after": edit("ClusterName=lab", "ClusterName=x")}]
    with pytest.raises(AnsibleFilterError, match=r"ClusterName.*CLUSTER NAME MISMATCH"):
        apply_plan(changes, "24.11.5", ["slurmctld"])


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.sampled_from([r[0] for r in LEGACY_RESTARTS] + ["SlurmctldDebug", "MinJobAge"]), unique=True),
    version=st.sampled_from(OLD + NEW),
)
def test_restart_happens_exactly_when_a_changed_key_has_a_restart_rule(keys, version):
    """Property: a set of global key changes restarts iff one of the keys has a rule for that version."""
    keys = [k for k in keys if _documented(k, version)]
    old = RULE_BASE + "".join(f"{k}=a{i}\n" for i, k in enumerate(keys))
    new = RULE_BASE + "".join(f"{k}=b{i}\n" for i, k in enumerate(keys))
    table = LEGACY_RESTART_KEYS if version in OLD else REEXEC_RESTART_KEYS
    expected = any(k.lower() in table for k in keys)
    result = classify_change(old, new, version)
    assert (result["action"] == "restart") == expected
    assert result["action"] == ("none" if not keys else result["action"])


def test_classifying_10000_node_lines_names_the_one_changed_node():
    # Its speed is bench/scale_logic's figure, not an assertion: it moves with the machine's load.
    old = "ClusterName=x\n" + "".join(f"NodeName=gpu{i:05d} CPUs=64 Gres=gpu:h100:8\n" for i in range(10000))
    new = old.replace("NodeName=gpu09999 CPUs=64", "NodeName=gpu09999 CPUs=32")
    result = classify_change(old, new, "22.05.8")
    assert result["action"] == "restart" and "gpu09999" in result["reasons"][0]
