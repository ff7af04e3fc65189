"""Reconfigure-versus-restart decisions (module_utils/slurm_change.py, filter slurm_conf_change)."""

import pytest
from ansible.module_utils.slurm_change import (
    SlurmConfError,
    classify_change,
    classify_file_change,
    parse_slurm_conf,
    topology_plugin,
    version_tuple,
)

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


def test_topology_plugin_is_tree_by_default_and_block_from_23_11():
    assert topology_plugin("22.05.8") == "topology/tree"
    assert topology_plugin("23.11.1", prefer="block") == "topology/block"
    with pytest.raises(SlurmConfError, match=r"23\.11"):
        topology_plugin("23.02.7", prefer="block")


# --- classification --------------------------------------------------------------------


def test_comment_and_whitespace_changes_need_nothing():
    new = "# new header\n" + BASE.replace("SlurmctldDebug=info", "SlurmctldDebug=info   # chatty")
    result = classify_change(BASE, new, "22.05.8")
    assert result == {"action": "none", "reasons": [], "daemons": []}


def test_key_case_differences_need_nothing():
    assert (
        classify_change(BASE, BASE.replace("SlurmctldDebug", "slurmctlddebug"), "22.05")["action"] == "none"
    )


def test_first_install_restarts_everything():
    assert classify_change("", BASE, "23.11")["daemons"] == ["slurmctld", "slurmd"]


def test_ordinary_global_change_reconfigures():
    result = classify_change(BASE, edit("SlurmctldDebug=info", "SlurmctldDebug=debug"), "22.05.8")
    assert result["action"] == "reconfigure"
    assert "SlurmctldDebug changed (info -> debug)" in result["reasons"][0]


@pytest.mark.parametrize(
    "old, new",
    [
        ("SlurmctldPort=6817", "SlurmctldPort=7817"),
        ("SlurmdPort=6818", "SlurmdPort=7818"),
        ("AuthType=auth/munge", "AuthType=auth/slurm"),
        ("SelectType=select/cons_tres", "SelectType=select/linear"),
        ("SelectTypeParameters=CR_Core_Memory", "SelectTypeParameters=CR_CPU"),
        ("GresTypes=gpu", "GresTypes=gpu,shard"),
        ("ProctrackType=proctrack/cgroup", "ProctrackType=proctrack/linuxproc"),
        ("TaskPlugin=task/cgroup,task/affinity", "TaskPlugin=task/affinity"),
        ("TopologyPlugin=topology/tree", "TopologyPlugin=topology/block"),
        ("SlurmctldHost=ctl2\n", "SlurmctldHost=ctl3\n"),
    ],
)
@pytest.mark.parametrize("version", ["22.05.8", "24.11.3"])
def test_restart_keys_restart_on_every_version(old, new, version):
    result = classify_change(BASE, edit(old, new), version)
    assert result["action"] == "restart"
    assert result["daemons"] == ["slurmctld", "slurmd"]
    assert old.split("=")[0] in result["reasons"][0]


def test_new_restart_key_set_for_the_first_time_restarts():
    result = classify_change(BASE, BASE + "SwitchType=switch/none\n", "23.02.7")
    assert result["action"] == "restart"
    assert "SwitchType changed (unset -> switch/none)" in result["reasons"][0]


def test_slurmctld_only_rule_restarts_only_slurmctld():
    result = classify_change(BASE, BASE + "MaxJobCount=20000\n", "22.05")
    assert (result["action"], result["daemons"]) == ("restart", ["slurmctld"])


def test_adding_nodes_restarts_before_23_11():
    new = edit("NodeName=gpu[01-04]", "NodeName=gpu[01-06]")
    result = classify_change(BASE, new, "23.02.7")
    assert result["action"] == "restart"
    assert result["daemons"] == ["slurmctld", "slurmd"]
    assert "nodes added (gpu06)" in result["reasons"][0]


def test_removing_nodes_restarts_before_23_11():
    result = classify_change(BASE, edit("NodeName=gpu[01-04]", "NodeName=gpu[01-03]"), "22.05.8")
    assert result["action"] == "restart"
    assert "nodes removed (gpu04)" in result["reasons"][0]


def test_adding_nodes_reconfigures_from_23_11():
    result = classify_change(BASE, edit("NodeName=gpu[01-04]", "NodeName=gpu[01-06]"), "23.11.0")
    assert result["action"] == "reconfigure"
    assert result["daemons"] == []


def test_node_gres_change_restarts_before_23_11_and_reconfigures_after():
    new = edit("Gres=gpu:h100:8", "Gres=gpu:h100:4")
    old_slurm = classify_change(BASE, new, "22.05.8")
    assert old_slurm["action"] == "restart"
    assert "NodeName Gres changed on gpu[01-05]" in old_slurm["reasons"][0]
    assert classify_change(BASE, new, "23.11.4")["action"] == "reconfigure"


def test_node_realmemory_change_restarts_before_23_11():
    assert (
        classify_change(BASE, edit("RealMemory=512000", "RealMemory=500000"), "23.02.1")["action"]
        == "restart"
    )


def test_node_feature_change_only_reconfigures_on_old_slurm():
    result = classify_change(BASE, edit("Features=spare", "Features=spare,h100"), "22.05.8")
    assert result["action"] == "reconfigure"


def test_node_port_change_restarts_even_on_new_slurm():
    result = classify_change(BASE, edit("NodeName=gpu05 ", "NodeName=gpu05 Port=7000 "), "24.11")
    assert result["action"] == "restart"


def test_partition_change_reconfigures_even_on_old_slurm():
    new = edit("Nodes=gpu05 MaxTime=30", "Nodes=gpu05 MaxTime=60")
    result = classify_change(BASE, new, "22.05.8")
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


@pytest.mark.parametrize(
    "name, version, action",
    [
        ("/etc/slurm/topology.conf", "22.05.8", "reconfigure"),
        ("gres.conf", "22.05.8", "restart"),
        ("gres.conf", "23.11.4", "reconfigure"),
        ("cgroup.conf", "24.11", "restart"),
    ],
)
def test_other_files(name, version, action):
    assert classify_file_change(name, "A=1\n", "A=2\n", version)["action"] == action


def test_other_files_unchanged_but_for_comments_need_nothing():
    assert classify_file_change("topology.conf", "A=1\n", "# c\nA=1\n", "22.05")["action"] == "none"


def test_filter_is_exposed_as_slurm_conf_change():
    from slurm import FilterModule

    result = FilterModule().filters()["slurm_conf_change"](
        BASE, edit("SlurmdPort=6818", "SlurmdPort=1"), "22.05"
    )
    assert result["action"] == "restart"


def test_classifying_10000_node_lines_is_fast():
    import time

    old = "ClusterName=x\n" + "".join(f"NodeName=gpu{i:05d} CPUs=64 Gres=gpu:h100:8\n" for i in range(10000))
    new = old.replace("NodeName=gpu09999 CPUs=64", "NodeName=gpu09999 CPUs=32")
    start = time.perf_counter()
    result = classify_change(old, new, "22.05.8")
    assert time.perf_counter() - start < 1.0
    assert result["action"] == "restart" and "gpu09999" in result["reasons"][0]
