"""One fabric model (module_utils/fabric.py): topology.conf, node labels, Kueue Topology and Volcano
HyperNodes derived from it describe the same tree, whether the fabric comes from the inventory or from
an ibnetdiscover capture."""
import re

import pytest
from ansible.module_utils.fabric import (
    FabricError,
    from_ibnetdiscover,
    from_inventory,
    kueue_topology,
    label_value,
    node_labels,
    object_name,
    slurm_topology,
    volcano_hypernodes,
)
from ansible.module_utils.hostlist import hostlist_expand
from ansible.module_utils.ibnetdiscover import parse_ibnetdiscover
from ansible.module_utils.slurm_topology import topology_conf
from test_ibnetdiscover import TWO_TIER

MANPAGE = "ibnetdiscover_rdma_core_manpage_example_sdr.txt"
LAB = {"gpu01": "leaf1", "gpu02": "leaf1", "gpu03": "leaf2", "gpu04": "leaf2"}
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


# ---- structure readers: each turns one representation into {frozenset(hosts under a switch)} by level.

def tree_from_slurm(text, root):
    """{switch: hosts below it} from topology.conf lines, without the artificial root switch."""
    below = {}
    lines = [dict(f.split("=", 1) for f in line.split()) for line in text.splitlines() if line]
    for fields in lines:
        if "Nodes" in fields:
            below[fields["SwitchName"]] = frozenset(hostlist_expand(fields["Nodes"]))
    for fields in lines:
        if "Switches" in fields and fields["SwitchName"] != root:
            below[fields["SwitchName"]] = frozenset().union(*(below[s] for s in hostlist_expand(fields["Switches"])))
    return set(below.values())


def tree_from_labels(labels):
    groups = {}
    for host, per in labels.items():
        for key, value in per.items():
            groups.setdefault((key, value), set()).add(host)
    return {frozenset(hosts) for hosts in groups.values()}


def tree_from_hypernodes(docs, labels):
    by_name = {d["metadata"]["name"]: d for d in docs}

    def hosts(doc):
        out = set()
        for member in doc["spec"]["members"]:
            sel = member["selector"]
            if member["type"] == "Node":
                match = sel["labelMatch"]["matchLabels"]
                out |= {h for h, per in labels.items() if match.items() <= per.items()}
            else:
                out |= hosts(by_name[sel["exactMatch"]["name"]])
        return out

    return {frozenset(hosts(d)) for d in docs}


def levels_from_labels(labels):
    keys = set().union(*(per.keys() for per in labels.values()))
    # a higher level groups more hosts: order keys by how many hosts share a value, largest first
    return sorted(keys, key=lambda k: -max(sum(1 for p in labels.values() if p.get(k) == v)
                                           for v in {p.get(k) for p in labels.values()} - {None}))


def assert_same_tree(fabric, root="root"):
    labels = node_labels(fabric)
    slurm = tree_from_slurm(slurm_topology(fabric, root=root), root)
    hyper = volcano_hypernodes(fabric)
    assert slurm == tree_from_labels(labels) == tree_from_hypernodes(hyper, labels)
    topo = kueue_topology(fabric, "fabric")
    assert [lv["nodeLabel"] for lv in topo["spec"]["levels"]][:-1] == levels_from_labels(labels)
    tiers = {d["spec"]["tierName"]: d["spec"]["tier"] for d in hyper}
    assert sorted(tiers, key=tiers.get, reverse=True) == fabric["levels"]
    return slurm


def test_lab_fabric_keeps_the_topology_conf_byte_identical():
    fabric = from_inventory(LAB)
    text = slurm_topology(fabric, root="spine")
    assert text == topology_conf(LAB, "topology/tree", root="spine")
    assert text == (
        "SwitchName=leaf1 Nodes=gpu[01-02]\n"
        "SwitchName=leaf2 Nodes=gpu[03-04]\n"
        "SwitchName=spine Switches=leaf[1-2]\n"
    )
    assert slurm_topology(fabric, "topology/block") == topology_conf(LAB, "topology/block")


def test_lab_fabric_yields_the_same_tree_everywhere():
    fabric = from_inventory(LAB)
    assert fabric["levels"] == ["leaf"]
    assert assert_same_tree(fabric, root="spine") == {frozenset({"gpu01", "gpu02"}), frozenset({"gpu03", "gpu04"})}
    assert node_labels(fabric)["gpu03"] == {"gpufleet.io/leaf": "leaf2"}
    topo = kueue_topology(fabric, "gpufleet-fabric")
    assert topo["spec"]["levels"] == [{"nodeLabel": "gpufleet.io/leaf"}, {"nodeLabel": "kubernetes.io/hostname"}]
    assert [d["metadata"]["name"] for d in volcano_hypernodes(fabric)] == ["leaf1", "leaf2"]


def test_inventory_with_spines_and_the_same_fabric_from_ibnetdiscover_agree():
    parsed = parse_ibnetdiscover(TWO_TIER)
    from_ib = from_ibnetdiscover(parsed)
    from_inv = from_inventory(
        {"gpu01": "MF0;leaf1:MQM8700/U1", "gpu02": "MF0;leaf2:MQM8700/U1"},
        {"MF0;leaf1:MQM8700/U1": "MF0;spine1:MQM8700/U1", "MF0;leaf2:MQM8700/U1": "MF0;spine1:MQM8700/U1"},
    )
    assert from_ib == from_inv
    assert from_ib["levels"] == ["spine", "leaf"]
    tree = assert_same_tree(from_ib)
    assert tree == {frozenset({"gpu01"}), frozenset({"gpu02"}), frozenset({"gpu01", "gpu02"})}
    hyper = volcano_hypernodes(from_ib)
    assert [d["spec"]["tier"] for d in hyper] == [1, 1, 2]
    assert len(hyper[2]["spec"]["members"]) == 2


def test_real_manpage_capture_with_host_names_for_its_cas():
    parsed = parse_ibnetdiscover(_manpage_text())
    hosts = {"0008f10403960984": "node1", "005442b100004900": "node2",
             "0008f10403961354": "node3", "0008f10403960558": "node4"}
    fabric = from_ibnetdiscover(parsed, hosts)
    # the two Voltaire switches both have CAs: two leaves, no spine; Slurm adds its root above them
    assert fabric["levels"] == ["leaf"]
    assert fabric["nodes"] == {"node1": "SW-6IB4 Voltaire", "node2": "SW-6IB4 Voltaire",
                               "node3": "ISR9024 Voltaire", "node4": "ISR9024 Voltaire"}
    assert assert_same_tree(fabric) == {frozenset({"node1", "node2"}), frozenset({"node3", "node4"})}
    assert "SwitchName=root Switches=" in slurm_topology(fabric)


def test_real_manpage_capture_without_host_names_is_refused():
    with pytest.raises(FabricError, match="no CA has a host name"):
        from_ibnetdiscover(parse_ibnetdiscover(_manpage_text()))


def _manpage_text():
    from conftest import FIXTURES

    return (FIXTURES / MANPAGE).read_text()


@pytest.mark.parametrize("name", ["MF0;leaf1:MQM8700/U1", "ISR9024 Voltaire", "x" * 80, "-leaf-", "S-0008f10400410015"])
def test_label_values_and_object_names_obey_kubernetes_rules(name):
    value = label_value(name)
    assert len(value) <= 63 and LABEL_VALUE.match(value)
    assert label_value(name) == value  # deterministic
    obj = object_name(name)
    assert re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", obj) and len(obj) <= 253


def test_names_that_clean_up_alike_stay_distinct():
    assert label_value("leaf 1") != label_value("leaf:1")
    fabric = from_inventory({"a": "leaf 1", "b": "leaf:1"})
    assert len({v["gpufleet.io/leaf"] for v in node_labels(fabric).values()}) == 2


def test_bad_fabrics_are_refused_naming_the_host_or_switch():
    with pytest.raises(FabricError, match="host gpu01: cluster_leaf_switch is empty"):
        from_inventory({"gpu01": ""})
    with pytest.raises(FabricError, match="both a leaf and a spine"):
        from_inventory({"gpu01": "leaf1", "gpu02": "leaf2"}, {"leaf1": "leaf2"})


def test_fabric_from_hostvars_leaves_out_hosts_without_a_leaf_and_names_a_bad_value():
    from fabric import FilterModule

    filters = FilterModule().filters()
    hostvars = {"gpu01": {"cluster_leaf_switch": "leaf1"}, "gpu02": {"cluster_leaf_switch": "leaf2"}, "gpu03": {}}
    fabric = filters["fabric_from_hostvars"](["gpu01", "gpu02", "gpu03"], hostvars, {"leaf1": "spine1"})
    assert fabric["nodes"] == {"gpu01": "leaf1", "gpu02": "leaf2"}
    assert filters["fabric_label_keys"](fabric) == ["gpufleet.io/spine", "gpufleet.io/leaf"]
    assert filters["fabric_node_labels"](fabric) == {
        "gpu01": {"gpufleet.io/leaf": "leaf1", "gpufleet.io/spine": "spine1"},
        "gpu02": {"gpufleet.io/leaf": "leaf2"},
    }
    assert filters["fabric_from_hostvars"](["gpu03"], hostvars) == {"levels": [], "switches": {}, "nodes": {}}
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="host gpu01: cluster_leaf_switch must be a switch name"):
        filters["fabric_from_hostvars"](["gpu01"], {"gpu01": {"cluster_leaf_switch": 3}})


def test_slurm_common_topology_template_is_byte_identical_for_the_lab_and_takes_the_spines():
    import jinja2
    from conftest import ROOT
    from slurm_topology import FilterModule as SlurmFilters

    # as Ansible renders templates (trim_blocks): a block or comment tag eats the newline after it
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True)
    env.filters.update(SlurmFilters().filters())
    env.filters["comment"] = lambda text: f"# {text}"
    template = env.from_string((ROOT / "roles/slurm_common/templates/etc/slurm/topology.conf.j2").read_text())
    args = {"ansible_managed": "managed", "slurm_common_leaf_switches": LAB, "slurm_common_topology_root": "spine",
            "__slurm_common_config_merged": {"TopologyPlugin": "topology/tree"},
            "slurm_common_topology_block_sizes": None, "slurm_common_topology_block_order": None}
    lines = template.render(**args, slurm_common_leaf_spine={}).splitlines(keepends=True)
    # the lines topology.conf had before the fabric model: the lab's scenarios see no change
    assert "".join(lines[2:]) == topology_conf(LAB, "topology/tree", root="spine") + "\n"
    spined = template.render(**args, slurm_common_leaf_spine={"leaf1": "spine1", "leaf2": "spine1"})
    fabric = from_inventory(LAB, {"leaf1": "spine1", "leaf2": "spine1"})
    assert spined.split("\n", 2)[2] == slurm_topology(fabric, root="spine") + "\n"
    assert "SwitchName=spine1 Switches=leaf[1-2]\n" in spined
    # topology/block from the same leaves, in fabric order: leaf2 shares spine1 with leaf1, leaf3 does not.
    blocks = template.render(**{
        **args, "__slurm_common_config_merged": {"TopologyPlugin": "topology/block"},
        "slurm_common_leaf_switches": {"gpu01": "leaf1", "gpu02": "leaf3", "gpu03": "leaf2"},
        "slurm_common_leaf_spine": {"leaf1": "spine1", "leaf2": "spine1", "leaf3": "spine2"},
        "slurm_common_topology_block_sizes": [1, 2]})
    assert blocks.split("\n", 2)[2] == (
        "BlockName=leaf1 Nodes=gpu01\nBlockName=leaf2 Nodes=gpu03\nBlockName=leaf3 Nodes=gpu02\nBlockSizes=1,2\n\n"
    )
