"""Partitions selected by node facts or groups (module_utils/slurm_partitions.py)."""

import pytest
from ansible.module_utils.hostlist import hostlist_expand
from ansible.module_utils.slurm_conf import entity_lines
from ansible.module_utils.slurm_partitions import (
    SlurmPartitionError,
    node_facts,
    partition_entities,
    partition_errors,
)
from hypothesis import given
from hypothesis import strategies as st

HOSTS = ["gpu01", "gpu02", "gpu03", "gpu04"]
HOSTVARS = {
    "gpu01": {"cluster_leaf_switch": "leaf1", "group_names": ["gpu_nodes", "slurm_compute", "team_a"]},
    "gpu02": {"cluster_leaf_switch": "leaf1", "group_names": ["gpu_nodes", "slurm_compute"]},
    "gpu03": {"cluster_leaf_switch": "leaf2", "group_names": ["gpu_nodes", "slurm_compute", "team_a"]},
    "gpu04": {"cluster_leaf_switch": "leaf2", "group_names": ["gpu_nodes"]},
}
# As gpu_discovery finds them (only the type matters here): two H100 nodes, two A100 nodes.
GPUS = {
    "gpu01": [{"type": "h100"}, {"type": "h100"}],
    "gpu02": [{"type": "h100"}, {"type": "h100"}],
    "gpu03": [{"type": "a100"}, {"type": "a100"}],
    "gpu04": [{"type": "a100"}, {"type": "a100"}],
}
FACTS = node_facts(HOSTS, HOSTVARS, GPUS)
POOL = ["gpu01", "gpu02", "gpu03"]

PARTITIONS = [
    {
        "PartitionName": "h100",
        "select": {"gpu_type": "h100"},
        "Default": True,
        "DefaultTime": "1:00:00",
        "MaxTime": "1-00:00:00",
        "QOS": "high",
        "PriorityTier": 2,
        "OverSubscribe": "NO",
        "PreemptMode": "REQUEUE",
    },
    {"PartitionName": "a100", "select": {"gpu_type": ["a100"]}, "MaxTime": "4:00:00"},
    {"PartitionName": "leaf2", "select": {"leaf": "leaf2"}},
    {"PartitionName": "team", "select": {"group": "team_a", "gpu_type": "h100"}},
    {"PartitionName": "named", "select": {"hosts": "gpu[02-04]"}},
    {"PartitionName": "legacy", "Nodes": "gpu[01-02]", "State": "UP"},
]


def nodes_of(entities):
    return {e["PartitionName"]: e.get("Nodes") for e in entities}


def test_selectors_pick_the_pool_s_nodes_by_gpu_type_leaf_group_and_name():
    assert nodes_of(partition_entities(PARTITIONS, FACTS, POOL)) == {
        "h100": "gpu[01-02]",
        "a100": "gpu03",
        "leaf2": "gpu03",
        "team": "gpu01",
        "named": "gpu[02-03]",
        "legacy": "gpu[01-02]",
    }


def test_the_rendered_lines_keep_the_partition_keys_and_drop_select():
    lines = entity_lines(partition_entities(PARTITIONS[:1], FACTS, POOL), "PartitionName", "slurm_common_partitions")
    assert lines == [
        "PartitionName=h100 Default=YES DefaultTime=1:00:00 MaxTime=1-00:00:00 Nodes=gpu[01-02] OverSubscribe=NO "
        "PreemptMode=REQUEUE PriorityTier=2 QOS=high"
    ]


def test_a_node_that_moves_to_the_pool_joins_every_partition_that_selects_it():
    before = nodes_of(partition_entities(PARTITIONS, FACTS, POOL))
    after = nodes_of(partition_entities(PARTITIONS, FACTS, [*POOL, "gpu04"]))
    assert (before["a100"], after["a100"]) == ("gpu03", "gpu[03-04]")
    assert (before["leaf2"], after["leaf2"]) == ("gpu03", "gpu[03-04]")
    assert (before["named"], after["named"]) == ("gpu[02-03]", "gpu[02-04]")
    # Partitions that do not select it are unchanged.
    assert (before["h100"], before["team"]) == (after["h100"], after["team"])


def test_a_partition_whose_nodes_all_left_the_pool_is_rendered_without_nodes():
    entities = partition_entities(PARTITIONS[:2], FACTS, ["gpu01", "gpu02"])
    assert nodes_of(entities)["a100"] is None
    assert entity_lines(entities, "PartitionName", "v")[1] == "PartitionName=a100 MaxTime=4:00:00"


@given(st.sets(st.sampled_from(HOSTS)))
def test_each_partition_holds_exactly_its_selected_nodes_of_the_pool(pool):
    everywhere = partition_entities(PARTITIONS, FACTS, HOSTS)
    in_pool = partition_entities(PARTITIONS, FACTS, sorted(pool))
    for entity, full, entry in zip(in_pool, everywhere, PARTITIONS, strict=True):
        if "select" not in entry:
            assert entity is entry
            continue
        selected = set(hostlist_expand(full["Nodes"]))
        got = set(hostlist_expand(entity["Nodes"])) if entity["Nodes"] else set()
        assert got == selected & pool


@pytest.mark.parametrize(
    ("partition", "message"),
    [
        (
            {"PartitionName": "b200", "select": {"gpu_type": "b200"}},
            "variable slurm_common_partitions: partition b200: select {'gpu_type': 'b200'} matches no node",
        ),
        ({"PartitionName": "x", "select": {"leaf": "leaf9"}}, "partition x: select {'leaf': 'leaf9'} matches no node"),
        ({"PartitionName": "x", "select": {"group": "team_a", "gpu_type": "a100", "leaf": "leaf1"}}, "matches no node"),
        ({"PartitionName": "x", "select": {"model": "h100"}}, "partition x: select.model is not a selector"),
        ({"PartitionName": "x", "select": {}}, "partition x: select must be a non-empty mapping"),
        ({"PartitionName": "x", "select": {"gpu_type": []}}, "select.gpu_type must be a name or a non-empty list"),
        (
            {"PartitionName": "x", "select": {"leaf": "leaf1"}, "Nodes": "gpu01"},
            "partition x has both Nodes and select",
        ),
        ({"PartitionName": "x", "Nodes": "gpu01", "MaxTime": "one day"}, "partition x: MaxTime must be a Slurm time"),
        (
            {"PartitionName": "x", "Nodes": "gpu01", "PriorityTier": 70000},
            "PriorityTier must be an integer from 0 to 65533",
        ),
        (
            {"PartitionName": "x", "Nodes": "gpu01", "OverSubscribe": False},
            "OverSubscribe must be EXCLUSIVE, NO, YES[:n]",
        ),
        ({"PartitionName": "x", "Nodes": "gpu01", "PreemptMode": "KILL"}, "PreemptMode must be one or more of"),
    ],
)
def test_bad_partitions_are_named_by_variable_and_partition(partition, message):
    errors = partition_errors([partition], FACTS)
    assert any(message in e for e in errors), errors
    with pytest.raises(SlurmPartitionError, match="slurm_common_partitions"):
        partition_entities([partition], FACTS, POOL)


def test_good_keys_pass():
    ok = {
        "PartitionName": "x",
        "Nodes": "gpu01",
        "MaxTime": "INFINITE",
        "DefaultTime": "30",
        "OverSubscribe": "FORCE:4",
        "PreemptMode": "suspend,gang",
        "PriorityTier": 0,
    }
    assert partition_errors([ok], FACTS) == []


def test_an_unknown_qos_is_refused_only_where_the_accounting_policy_is_known():
    entry = {"PartitionName": "x", "Nodes": "gpu01", "QOS": "urgent"}
    assert partition_errors([entry], FACTS, qos_names=["high", "low"]) == [
        "variable slurm_common_partitions: partition x: QOS 'urgent' is not a QOS of the accounting policy "
        "(cluster_slurm_accounting.qos)"
    ]
    assert partition_errors([dict(entry, QOS="high")], FACTS, qos_names=["high"]) == []
    assert partition_errors([dict(entry, QOS="normal")], FACTS, qos_names=[]) == []
    assert partition_errors([entry], FACTS) == []


def test_preflight_matches_gpu_types_on_the_declared_cluster_gpu_type_and_waits_for_discovery_elsewhere():
    hostvars = {"gpu01": {"cluster_gpu_type": "h100", "group_names": []}, "gpu02": {"group_names": []}}
    facts = node_facts(["gpu01", "gpu02"], hostvars)
    assert facts["gpu01"]["gpu_types"] == ["h100"]
    assert facts["gpu02"]["gpu_types"] is None
    # gpu02's type is unknown before discovery: it may be a b200, so preflight does not refuse.
    assert partition_errors([{"PartitionName": "b", "select": {"gpu_type": "b200"}}], facts) == []
    # With every type declared, a type nobody has is refused.
    declared = node_facts(["gpu01"], hostvars)
    assert partition_errors([{"PartitionName": "b", "select": {"gpu_type": "b200"}}], declared) != []


def test_block_selects_by_the_leaf_switch_gpufleet_renders_as_the_block():
    assert nodes_of(partition_entities([{"PartitionName": "b", "select": {"block": "leaf1"}}], FACTS, HOSTS)) == {
        "b": "gpu[01-02]"
    }


def test_the_role_s_leaf_map_and_fqdn_hosts_are_used():
    hostvars = {"gpu01.example.org": {"group_names": ["gpu_nodes"]}}
    facts = node_facts(["gpu01.example.org"], hostvars, {"gpu01": [{"type": "h100"}]}, {"gpu01": "leafA"})
    assert facts == {"gpu01": {"gpu_types": ["h100"], "leaf": "leafA", "groups": ["gpu_nodes"]}}
    assert nodes_of(
        partition_entities([{"PartitionName": "p", "select": {"leaf": "leafA"}}], facts, ["gpu01.example.org"])
    ) == {"p": "gpu01"}


def test_not_a_list_is_refused():
    assert partition_errors({"PartitionName": "gpu"}, FACTS) == [
        "variable slurm_common_partitions must be a list of partitions, got dict"
    ]


class _NoHostvars(dict):
    """hostvars that fail the test when read: with gpus, leaves and groups given, none is needed."""

    def __getitem__(self, host):
        raise AssertionError(f"hostvars[{host!r}] read")


def test_groups_give_the_same_facts_without_reading_any_host_s_variables():
    # Ansible's `groups` (with all and ungrouped) against each host's group_names, as HOSTVARS holds them.
    groups = {"all": [*HOSTS, "ctl1"], "ungrouped": [], "gpu_nodes": HOSTS, "slurm_compute": POOL,
              "team_a": ["gpu01", "gpu03"], "slurm_controller": ["ctl1"]}
    leaves = {h: HOSTVARS[h]["cluster_leaf_switch"] for h in HOSTS}
    by_groups = node_facts(HOSTS, _NoHostvars(), GPUS, leaves, groups)
    by_hostvars = node_facts(HOSTS, HOSTVARS, GPUS, leaves)
    assert by_groups == {h: dict(f, groups=sorted(f["groups"])) for h, f in by_hostvars.items()}
    assert by_groups["gpu01"]["groups"] == ["gpu_nodes", "slurm_compute", "team_a"]
    assert by_groups["gpu02"]["groups"] == ["gpu_nodes", "slurm_compute"]
    with pytest.raises(AssertionError, match="hostvars"):
        node_facts(HOSTS, _NoHostvars(), GPUS, None, groups)
