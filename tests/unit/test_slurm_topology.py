"""topology.conf generation (module_utils/slurm_topology.py, filter slurm_topology_conf)."""

import re

import pytest
from ansible.module_utils.hostlist import hostlist_expand
from ansible.module_utils.ibnetdiscover import leaf_of, parse_ibnetdiscover, switch_parents
from ansible.module_utils.slurm_topology import (
    TopologyError,
    block_errors,
    block_lines,
    check_block_topology,
    fabric_block_order,
    missing_hosts,
    slurm_safe_name,
    slurm_safe_names,
    topology_conf,
    tree_lines,
)
from hypothesis import given
from hypothesis import strategies as st
from test_ibnetdiscover import TWO_TIER

HOST_LEAF = {"gpu01": "leaf1", "gpu02": "leaf1", "gpu03": "leaf2", "gpu04": "leaf2"}


def test_safe_names_are_kept_unchanged():
    for name in ("leaf1", "ib-leaf_07", "s0"):
        assert slurm_safe_name(name) == name


def test_unsafe_characters_are_replaced_and_hashed():
    safe = slurm_safe_name("MF0;leaf1:MQM8700/U1")
    assert re.fullmatch(r"MF0-leaf1-MQM8700-U1-h[a-p]{8}", safe)


def test_long_digit_runs_are_shortened():
    safe = slurm_safe_name("S-0008f10400410015")
    assert not re.search(r"\d{7,}", safe)
    assert safe.startswith("S-0008f0015-h")


def test_safe_name_is_stable():
    assert slurm_safe_name("ISR9024 Voltaire") == slurm_safe_name("ISR9024 Voltaire")


def test_names_that_sanitise_alike_stay_distinct():
    assert slurm_safe_name("leaf 1") != slurm_safe_name("leaf/1")


@given(st.text(min_size=1, max_size=80))
def test_safe_name_only_uses_hostlist_friendly_characters(name):
    safe = slurm_safe_name(name)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", safe)
    assert not re.search(r"\d{7,}", safe) and len(safe) <= 48
    assert hostlist_expand(safe) == [safe]


def test_slurm_safe_names_maps_every_name():
    assert slurm_safe_names(["a", "b c"])["a"] == "a"


def test_tree_leaves_get_folded_nodes_and_a_root_joins_them():
    assert tree_lines(HOST_LEAF) == [
        "SwitchName=leaf1 Nodes=gpu[01-02]",
        "SwitchName=leaf2 Nodes=gpu[03-04]",
        "SwitchName=root Switches=leaf[1-2]",
    ]


def test_tree_single_leaf_needs_no_root():
    assert tree_lines({"gpu01": "leaf1"}) == ["SwitchName=leaf1 Nodes=gpu01"]


def test_tree_without_root_leaves_the_fabric_split():
    assert len(tree_lines(HOST_LEAF, root=None)) == 2


def test_tree_with_spines():
    lines = tree_lines(
        {**HOST_LEAF, "gpu05": "leaf3"}, leaf_parent={"leaf1": "spine1", "leaf2": "spine1", "leaf3": "spine2"}
    )
    assert lines == [
        "SwitchName=leaf1 Nodes=gpu[01-02]",
        "SwitchName=leaf2 Nodes=gpu[03-04]",
        "SwitchName=leaf3 Nodes=gpu05",
        "SwitchName=spine1 Switches=leaf[1-2]",
        "SwitchName=spine2 Switches=leaf3",
        "SwitchName=root Switches=spine[1-2]",
    ]


def test_tree_rejects_empty_leaf_naming_the_host():
    with pytest.raises(TopologyError, match="host gpu02: cluster_leaf_switch is empty"):
        tree_lines({"gpu01": "leaf1", "gpu02": ""})


def test_tree_from_parsed_ibnetdiscover_uses_safe_switch_names():
    parsed = parse_ibnetdiscover(TWO_TIER)
    parents = {leaf: ups[0] for leaf, ups in switch_parents(parsed).items() if ups}
    lines = tree_lines(leaf_of(parsed), leaf_parent=parents)
    assert len(lines) == 3
    assert lines[0].startswith("SwitchName=MF0-leaf1-MQM8700-U1-h") and lines[0].endswith(" Nodes=gpu01")
    assert lines[2].startswith("SwitchName=MF0-spine1-MQM8700-U1-h") and " Switches=" in lines[2]


def test_block_lines_and_block_sizes():
    assert block_lines(HOST_LEAF, block_sizes=[2, 4]) == [
        "BlockName=leaf1 Nodes=gpu[01-02]",
        "BlockName=leaf2 Nodes=gpu[03-04]",
        "BlockSizes=2,4",
    ]


def test_block_base_size_larger_than_a_block_is_refused_naming_the_block_and_variable():
    """topology.conf(5) 24.11 BlockSizes: "Each block must have at least the planning base block size
    count of nodes."."""
    with pytest.raises(TopologyError, match=r"cluster_leaf_switch: block leaf1 has 2 nodes .*base block size 4"):
        block_lines(HOST_LEAF, block_sizes=[4])


def test_blocks_follow_inventory_order_not_names():
    """topology.conf(5) 24.11: blocks are "paired with other contiguous blocks", so file order is fabric order."""
    host_block = {"gpu01": "leafZ", "gpu02": "leafZ", "gpu03": "leafA", "gpu04": "leafA"}
    assert block_lines(host_block) == ["BlockName=leafZ Nodes=gpu[01-02]", "BlockName=leafA Nodes=gpu[03-04]"]


def test_blocks_under_one_spine_stay_contiguous_in_fabric_order():
    """topology.conf(5) 24.11: "Defined blocks of nodes are paired with other contiguous blocks, to create
    a higher level block of nodes": leaves under one spine must be neighbours in the file, whatever
    their names or the order of the hosts."""
    host_block = {"gpu01": "leafB", "gpu02": "leafC", "gpu03": "leafA", "gpu04": "leafD"}
    leaf_parent = {"leafB": "spine2", "leafC": "spine1", "leafA": "spine2", "leafD": "spine1"}
    names = [line.split()[0] for line in block_lines(host_block, leaf_parent=leaf_parent)]
    assert names == ["BlockName=leafB", "BlockName=leafA", "BlockName=leafC", "BlockName=leafD"]
    assert fabric_block_order(["x", "y", "x", "z"], {"z": "s"}) == ["x", "y", "z"]


def test_block_order_can_be_given_and_must_name_every_block_once():
    assert block_lines(HOST_LEAF, block_order=["leaf2", "leaf1"])[0] == "BlockName=leaf2 Nodes=gpu[03-04]"
    with pytest.raises(TopologyError, match=r"missing \['leaf2'\]"):
        block_lines(HOST_LEAF, block_order=["leaf1"])
    with pytest.raises(TopologyError, match=r"repeated \['leaf1'\]"):
        block_lines(HOST_LEAF, block_order=["leaf1", "leaf1", "leaf2"])


def test_without_block_sizes_the_first_block_is_the_base():
    """Without BlockSizes slurmctld takes the first block's node count as the base and stops when a
    later block is smaller (src/plugins/topology/block/block_record.c 24.11)."""
    host_block = {"gpu01": "a", "gpu02": "a", "gpu03": "a", "gpu04": "b", "gpu05": "b"}
    errors = block_errors(host_block)
    assert errors == [
        "cluster_leaf_switch: block b has 2 nodes (gpu[04-05]), fewer than the first block a (3 nodes); "
        "each block must hold at least the base block size (topology.conf(5) 24.11)"
    ]
    assert block_errors({h: b for h, b in reversed(host_block.items())}) == []


@pytest.mark.parametrize(
    "sizes, ok",
    [
        ([30, 120], True),  # the topology.conf(5) 24.11 example
        ([2, 4, 16], True),
        ([2, 6], False),  # not a power of two times 2
        ([4, 2], False),  # not larger
        ([2, 2], False),  # not larger
        ([1, 2**16], False),  # beyond 16 block levels
    ],
)
def test_successive_block_sizes_are_a_power_of_two_larger(sizes, ok):
    """topology.conf(5) 24.11 BlockSizes: "Successive BlockSizes must be a power of two larger than the
    prior values."."""
    host_block = {f"n{i:03d}": f"b{i // 32}" for i in range(128)}
    errors = block_errors(host_block, sizes, "24.11.5")
    assert (errors == []) is ok, errors
    if not ok:
        assert errors[0].startswith("slurm_common_topology_block_sizes: ")


@pytest.mark.parametrize("sizes", [[0], ["x"], [-2, 4]])
def test_block_sizes_must_be_positive_node_counts(sizes):
    assert "not a" in block_errors(HOST_LEAF, sizes)[0]


@pytest.mark.parametrize("version, ok", [("23.11.10", False), ("24.05.0", True), ("24.11.5", True)])
def test_block_topology_needs_slurm_24_05(version, ok):
    """RELEASE_NOTES 24.05: "Replaced the BlockLevels with BlockSizes in topology.conf"."""
    errors = block_errors(HOST_LEAF, [2, 4], version, sizes_var="my_sizes")
    assert (errors == []) is ok
    if not ok:
        assert errors == [
            "my_sizes: topology/block with BlockSizes needs Slurm >= 24.05 (23.11 had BlockLevels); "
            "the installed Slurm is 23.11.10"
        ]


def test_check_block_topology_raises_with_every_message():
    with pytest.raises(TopologyError, match=r"needs Slurm >= 24\.05.*; cluster_leaf_switch: block leaf1"):
        check_block_topology(HOST_LEAF, [4], "23.11.1")
    check_block_topology(HOST_LEAF, [2], "24.11.5")


def test_preflight_filter_reports_block_errors_naming_the_variable():
    from slurm_topology import FilterModule

    check = FilterModule().filters()["preflight_slurm_block_errors"]
    assert check(HOST_LEAF, [2, 4], "24.11.5") == []
    assert check({}, None, "24.11.5") == ["cluster_leaf_switch: topology/block needs at least one block, none is set"]
    assert check(HOST_LEAF, [2, 3], "24.11.5", sizes_var="slurm_topo_sizes")[0].startswith(
        "slurm_topo_sizes: 3 after 2"
    )


def test_preflight_filter_takes_the_spines_and_checks_the_base_block():
    """topology.conf(5) 24.11 BlockSizes: "Each block must have at least the planning base block size
    count of nodes"; the lab's fabric (leaf1: 2 nodes, leaf2: 1) needs a base of 1."""
    from slurm_topology import FilterModule

    check = FilterModule().filters()["preflight_slurm_block_errors"]
    lab = {"gpu01": "leaf1", "gpu02": "leaf1", "gpu03": "leaf2"}
    assert check(lab, [1, 2], None, leaf_parent={"leaf1": "s1", "leaf2": "s1"}) == []
    assert check(lab, None, None, leaf_parent={"leaf1": "s1", "leaf2": "s1"}) == [
        "cluster_leaf_switch: block leaf2 has 1 nodes (gpu03), fewer than the first block leaf1 (2 nodes); "
        "each block must hold at least the base block size (topology.conf(5) 24.11)"
    ]


def test_topology_conf_dispatches_on_plugin():
    assert topology_conf(HOST_LEAF, "topology/block").startswith("BlockName=leaf1 ")
    assert topology_conf(HOST_LEAF).endswith("SwitchName=root Switches=leaf[1-2]\n")
    assert topology_conf({}) == ""
    with pytest.raises(TopologyError, match="topology/3d_torus"):
        topology_conf(HOST_LEAF, "topology/3d_torus")


def test_missing_hosts():
    assert missing_hosts(["gpu01", "gpu09"], HOST_LEAF) == ["gpu09"]


def test_10000_nodes_render_one_line_per_leaf_and_the_root():
    # Its speed is bench/slurm_render's figure, not an assertion: it moves with the machine's load.
    host_leaf = {f"gpu{i:05d}": f"leaf{i // 32:03d}" for i in range(10000)}
    text = topology_conf(host_leaf)
    assert text.count("\n") == 314  # 313 leaves + root


def test_filters_render_topology_and_raise_filter_errors():
    from ansible.errors import AnsibleFilterError
    from slurm_topology import FilterModule

    filters = FilterModule().filters()
    assert filters["slurm_topology_conf"](HOST_LEAF, "topology/block").count("BlockName=") == 2
    assert filters["slurm_safe_name"]("leaf1") == "leaf1"
    with pytest.raises(AnsibleFilterError, match="slurm_topology_conf: host gpu02"):
        filters["slurm_topology_conf"]({"gpu02": None})


def test_ibnetdiscover_filter_refuses_ca_only_capture(fixture_text):
    from ansible.errors import AnsibleFilterError
    from ibnetdiscover import FilterModule

    leaf_filter = FilterModule().filters()["ibnetdiscover_leaf_of"]
    with pytest.raises(AnsibleFilterError, match="no switch"):
        leaf_filter(fixture_text("ibnetdiscover_ca_only_no_switch_bad_topograph.txt"))
    assert leaf_filter(TWO_TIER)["gpu01"] == "MF0;leaf1:MQM8700/U1"
