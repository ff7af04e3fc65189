"""topology.conf generation (module_utils/slurm_topology.py, filter slurm_topology_conf)."""

import re
import time

import pytest
from ansible.module_utils.hostlist import hostlist_expand
from ansible.module_utils.ibnetdiscover import leaf_of, parse_ibnetdiscover, switch_parents
from ansible.module_utils.slurm_topology import (
    TopologyError,
    block_lines,
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


def test_block_base_size_larger_than_smallest_block_is_refused():
    with pytest.raises(TopologyError, match="smallest block"):
        block_lines(HOST_LEAF, block_sizes=[4])


def test_topology_conf_dispatches_on_plugin():
    assert topology_conf(HOST_LEAF, "topology/block").startswith("BlockName=leaf1 ")
    assert topology_conf(HOST_LEAF).endswith("SwitchName=root Switches=leaf[1-2]\n")
    assert topology_conf({}) == ""
    with pytest.raises(TopologyError, match="topology/3d_torus"):
        topology_conf(HOST_LEAF, "topology/3d_torus")


def test_missing_hosts():
    assert missing_hosts(["gpu01", "gpu09"], HOST_LEAF) == ["gpu09"]


def test_10000_nodes_render_quickly():
    host_leaf = {f"gpu{i:05d}": f"leaf{i // 32:03d}" for i in range(10000)}
    start = time.perf_counter()
    text = topology_conf(host_leaf)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"took {elapsed:.2f}s"
    assert text.count("\n") == 314  # 313 leaves + root


def test_filters_render_topology_and_raise_filter_errors():
    from ansible.errors import AnsibleFilterError
    from slurm import FilterModule

    filters = FilterModule().filters()
    assert filters["slurm_topology_conf"](HOST_LEAF, "topology/block").count("BlockName=") == 2
    assert filters["slurm_safe_name"]("leaf1") == "leaf1"
    with pytest.raises(AnsibleFilterError, match="slurm_topology_conf: host gpu02"):
        filters["slurm_topology_conf"]({"gpu02": None})


def test_ibnetdiscover_filter_refuses_ca_only_capture(fixture_text):
    from ansible.errors import AnsibleFilterError
    from slurm import FilterModule

    leaf_filter = FilterModule().filters()["ibnetdiscover_leaf_of"]
    with pytest.raises(AnsibleFilterError, match="no switch"):
        leaf_filter(fixture_text("ibnetdiscover_ca_only_no_switch_bad_topograph.txt"))
    assert leaf_filter(TWO_TIER)["gpu01"] == "MF0;leaf1:MQM8700/U1"
