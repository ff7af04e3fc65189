"""ibnetdiscover parsing and leaf/spine detection (module_utils/ibnetdiscover.py)."""

import pytest
from ansible.module_utils.ibnetdiscover import (
    IbnetdiscoverError,
    hostname_from_description,
    leaf_of,
    leaves,
    parse_ibnetdiscover,
    spines,
    switch_parents,
)

MANPAGE = "ibnetdiscover_rdma_core_manpage_example_sdr.txt"
CA_ONLY = "ibnetdiscover_ca_only_no_switch_bad_topograph.txt"

# Fabricated (not a capture): two HDR leaves under one spine, in the man page's format,
# with rdma-core style NodeDescriptions "<host> <device>". gpu02 has two HCAs on leaf2
# and one on leaf1, so its majority leaf is leaf2.
TWO_TIER = """\
# Topology file: fabricated for tests
vendid=0x2c9
devid=0xd2f0
switchguid=0x1070fd0300aa0001(1070fd0300aa0001)
Switch\t40 "S-1070fd0300aa0001"\t\t# "MF0;spine1:MQM8700/U1" enhanced port 0 lid 1 lmc 0
[1]\t"S-1070fd0300bb0001"[39]\t\t# "MF0;leaf1:MQM8700/U1" lid 2 4xHDR
[2]\t"S-1070fd0300bb0002"[39]\t\t# "MF0;leaf2:MQM8700/U1" lid 3 4xHDR

switchguid=0x1070fd0300bb0001(1070fd0300bb0001)
Switch\t40 "S-1070fd0300bb0001"\t\t# "MF0;leaf1:MQM8700/U1" enhanced port 0 lid 2 lmc 0
[1]\t"H-b8599f0300000001"[1](b8599f0300000001)\t\t# "gpu01 HCA-1" lid 10 4xHDR
[2]\t"H-b8599f0300000003"[1](b8599f0300000003)\t\t# "gpu02 mlx5_2" lid 12 4xHDR
[39]\t"S-1070fd0300aa0001"[1]\t\t# "MF0;spine1:MQM8700/U1" lid 1 4xHDR

switchguid=0x1070fd0300bb0002(1070fd0300bb0002)
Switch\t40 "S-1070fd0300bb0002"\t\t# "MF0;leaf2:MQM8700/U1" enhanced port 0 lid 3 lmc 0
[1]\t"H-b8599f0300000002"[1](b8599f0300000002)\t\t# "gpu02 mlx5_0" lid 11 4xHDR
[2]\t"H-b8599f0300000004"[1](b8599f0300000004)\t\t# "gpu02.lab mlx5_1" lid 13 4xHDR
[39]\t"S-1070fd0300aa0001"[2]\t\t# "MF0;spine1:MQM8700/U1" lid 1 4xHDR

caguid=0xb8599f0300000001
Ca\t1 "H-b8599f0300000001"\t\t# "gpu01 HCA-1"
[1](b8599f0300000001)\t"S-1070fd0300bb0001"[1]\t\t# lid 10 lmc 0 "MF0;leaf1:MQM8700/U1" lid 2 4xHDR
"""


def test_manpage_example_switches_with_lids_and_ports(fixture_text):
    parsed = parse_ibnetdiscover(fixture_text(MANPAGE))
    by_guid = {sw["guid"]: sw for sw in parsed["switches"]}
    isr = by_guid["005442ba00003080"]
    assert (isr["description"], isr["lid"], isr["nports"]) == ("ISR9024 Voltaire", 6, 24)
    assert [p["port"] for p in isr["ports"]] == [6, 8, 10, 12, 22]
    port22 = isr["ports"][-1]
    assert (port22["remote_kind"], port22["remote_guid"], port22["remote_port"], port22["speed"]) == (
        "ca",
        "0008f10403961354",
        1,
        "4xSDR",
    )
    assert by_guid["0008f10400410015"]["lid"] == 3


def test_manpage_example_cas_and_links(fixture_text):
    parsed = parse_ibnetdiscover(fixture_text(MANPAGE))
    assert len(parsed["cas"]) == 4
    dual = next(ca for ca in parsed["cas"] if ca["guid"] == "0008f10403960558")
    assert [(p["port"], p["remote_port"]) for p in dual["ports"]] == [(1, 12), (2, 8)]
    # 4 switch-CA cables (5 CA ports) + 2 switch-switch cables, each counted once.
    assert len(parsed["links"]) == 7


def test_manpage_example_model_descriptions_give_no_hostnames(fixture_text):
    parsed = parse_ibnetdiscover(fixture_text(MANPAGE))
    assert {ca["hostname"] for ca in parsed["cas"]} == {None}
    assert leaf_of(parsed) == {}
    assert "not '<hostname> <device>'" in parsed["problems"][0]


def test_manpage_example_has_two_leaves_and_no_spine(fixture_text):
    parsed = parse_ibnetdiscover(fixture_text(MANPAGE))
    assert leaves(parsed) == ["ISR9024 Voltaire", "SW-6IB4 Voltaire"]
    assert spines(parsed) == []


def test_ca_only_output_is_refused_with_a_clear_error(fixture_text):
    parsed = parse_ibnetdiscover(fixture_text(CA_ONLY))
    assert parsed["switches"] == [] and len(parsed["cas"]) == 1
    assert parsed["cas"][0]["hostname"] == "dgx-gb200-n01-c1"
    assert "no switch" in parsed["problems"][0]
    with pytest.raises(IbnetdiscoverError, match="no switch"):
        leaf_of(parsed)
    assert leaf_of(parsed, strict=False) == {}


def test_two_tier_leaf_of_uses_majority_of_ports():
    parsed = parse_ibnetdiscover(TWO_TIER)
    assert leaf_of(parsed) == {"gpu01": "MF0;leaf1:MQM8700/U1", "gpu02": "MF0;leaf2:MQM8700/U1"}


def test_two_tier_spine_detection_and_parents():
    parsed = parse_ibnetdiscover(TWO_TIER)
    assert spines(parsed) == ["MF0;spine1:MQM8700/U1"]
    assert leaves(parsed) == ["MF0;leaf1:MQM8700/U1", "MF0;leaf2:MQM8700/U1"]
    assert switch_parents(parsed)["MF0;leaf2:MQM8700/U1"] == ["MF0;spine1:MQM8700/U1"]
    assert parsed["problems"] == []


def test_duplicate_switch_descriptions_fall_back_to_guid_names():
    text = TWO_TIER.replace("MF0;leaf2:MQM8700/U1", "MF0;leaf1:MQM8700/U1")
    names = {sw["name"] for sw in parse_ibnetdiscover(text)["switches"]}
    assert {"S-1070fd0300bb0001", "S-1070fd0300bb0002"} <= names


@pytest.mark.parametrize(
    "desc, host",
    [
        ("node01 HCA-1", "node01"),
        ("gpu02 mlx5_0", "gpu02"),
        ("gpu02.lab.example mlx5_1", "gpu02"),
        ("dgx-gb200-n01-c1 HCA-1", "dgx-gb200-n01-c1"),
        ("MT23108 InfiniHost Mellanox Technologies", None),
        ("", None),
    ],
)
def test_hostname_from_description(desc, host):
    assert hostname_from_description(desc) == host


def test_empty_input_has_no_switch_problem():
    parsed = parse_ibnetdiscover("")
    assert parsed["switches"] == [] and parsed["problems"]
