"""ibstat, ibv_devinfo and ib_write_bw parsers, on the real captures."""


import pytest
from ansible.module_utils.gate import ParseError
from ansible.module_utils.rdma import parse_ib_write_bw, parse_ibstat, parse_ibv_devinfo
from conftest import FIXTURES

IBSTAT = "ibstat_hdr_cx6_one_active_one_disabled.txt"
DEVINFO = "ibv_devinfo_two_connectx3_hcas_port2_down.txt"
WRITE_BW = "ib_write_bw_client_roce_100g_cx5_deepops.txt"


def verbatim(text):
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#@"))


@pytest.fixture
def capture(fixture_text):
    return lambda name: verbatim(fixture_text(name))


def others(*own):
    return sorted(p.name for p in FIXTURES.glob("*.txt") if p.name not in own)


def test_ibstat_reports_state_physical_state_and_rate_per_port(capture):
    ports = parse_ibstat(capture(IBSTAT))
    assert [(p["ca"], p["port"], p["state"], p["physical_state"], p["rate_gbps"]) for p in ports] == [
        ("mlx5_0", 1, "Active", "LinkUp", 200.0),
        ("mlx5_1", 1, "Down", "Disabled", 10.0),
    ]
    assert ports[0]["link_layer"] == "InfiniBand" and ports[0]["ca_type"] == "MT4123"


def test_ibstat_with_tabs_parses_like_spaces(capture):
    text = capture(IBSTAT).replace("        ", "\t")
    assert parse_ibstat(text) == parse_ibstat(capture(IBSTAT))


def test_ibstat_cut_inside_a_port_block_is_truncated(capture):
    text = capture(IBSTAT)
    cut = text[: text.rindex("Physical state: Disabled")]
    with pytest.raises(ParseError, match="mlx5_1 port 1 lacks physical_state, rate_gbps"):
        parse_ibstat(cut)


def test_ibstat_cut_before_a_declared_port_is_truncated(capture):
    text = capture(IBSTAT)
    with pytest.raises(ParseError, match="mlx5_1 declares 1 ports, output has 0"):
        parse_ibstat(text[: text.rindex("        Port 1:")])


@pytest.mark.parametrize("name", others(*[p.name for p in FIXTURES.glob("ibstat_*.txt")]))
def test_ibstat_parser_rejects_other_captures(capture, name):
    with pytest.raises(ParseError):
        parse_ibstat(capture(name))


def test_ibv_devinfo_maps_port_states_to_ibstat_spelling(capture):
    ports = parse_ibv_devinfo(capture(DEVINFO))
    assert [(p["ca"], p["port"], p["state"]) for p in ports] == [
        ("mlx4_1", 1, "Active"), ("mlx4_1", 2, "Down"), ("mlx4_0", 1, "Active"), ("mlx4_0", 2, "Down"),
    ]
    # Without -v, ibv_devinfo prints neither physical state nor rate: unknown, not zero.
    assert all(p["physical_state"] is None and p["rate_gbps"] is None for p in ports)
    assert ports[0]["firmware"] == "2.42.5000"


# ibv_devinfo -v port block as printed by rdma-core on a ConnectX-6 HDR port (public capture from the
# code index, repository text; only the lines after "port: 1" that the parser reads are kept).
VERBOSE_PORT = """\t\t\tactive_width:\t\t4X (2)
\t\t\tactive_speed:\t\t50.0 Gbps (64)
\t\t\tphys_state:\t\tLINK_UP (5)
"""


def test_ibv_devinfo_verbose_gives_rate_from_width_and_speed(capture):
    text = capture(DEVINFO).replace("\t\t\tlink_layer:\t\tInfiniBand\n",
                                    "\t\t\tlink_layer:\t\tInfiniBand\n" + VERBOSE_PORT)
    ports = parse_ibv_devinfo(text)
    assert {p["rate_gbps"] for p in ports} == {200.0}
    assert {p["physical_state"] for p in ports} == {"LinkUp"}


def test_ibv_devinfo_missing_second_port_is_truncated(capture):
    text = capture(DEVINFO)
    cut = text[: text.rindex("\t\tport:\t2")]
    with pytest.raises(ParseError, match="mlx4_0 declares 2 ports, output has 1"):
        parse_ibv_devinfo(cut)


@pytest.mark.parametrize("name", others(DEVINFO))
def test_ibv_devinfo_parser_rejects_other_captures(capture, name):
    with pytest.raises(ParseError):
        parse_ibv_devinfo(capture(name))


def test_ib_write_bw_skips_the_warning_line_inside_the_table(capture):
    result = parse_ib_write_bw(capture(WRITE_BW))
    assert result["unit"] == "Gb/sec"
    assert result["rows"] == [{"bytes": 65536, "iterations": 5000, "bw_peak": 92.42, "bw_avg": 92.40,
                               "msg_rate_mpps": 0.176230, "bw_avg_gbps": 92.40}]
    assert result["bw_avg_gbps"] == 92.40
    assert (result["device"], result["link_layer"], result["transport"]) == ("mlx5_0", "Ethernet", "IB")


def test_ib_write_bw_in_mb_per_sec_is_converted_to_gbit(capture):
    text = capture(WRITE_BW).replace("[Gb/sec]", "[MB/sec]").replace("92.42              92.40",
                                                                      "11017.0            11015.0")
    assert parse_ib_write_bw(text)["bw_avg_gbps"] == pytest.approx(11015.0 * 1048576 * 8 / 1e9, abs=1e-3)


def test_ib_write_bw_cut_after_the_result_row_is_truncated(capture):
    text = capture(WRITE_BW)
    with pytest.raises(ParseError, match="not closed"):
        parse_ib_write_bw(text[: text.rindex(" ----")])


def test_ib_write_bw_cut_mid_row_is_an_error(capture):
    text = capture(WRITE_BW)
    with pytest.raises(ParseError, match="columns"):
        parse_ib_write_bw(text[: text.index("92.40") ])


def test_ib_write_bw_without_result_row_is_an_error(capture):
    text = capture(WRITE_BW)
    with pytest.raises(ParseError, match="no result row"):
        parse_ib_write_bw(text[: text.index(" Conflicting")])


@pytest.mark.parametrize("name", others(WRITE_BW))
def test_ib_write_bw_parser_rejects_other_captures(capture, name):
    with pytest.raises(ParseError):
        parse_ib_write_bw(capture(name))


@pytest.mark.parametrize("parser", [parse_ibstat, parse_ibv_devinfo, parse_ib_write_bw])
def test_empty_output_is_an_error(parser):
    with pytest.raises(ParseError, match="empty"):
        parser("")


@pytest.mark.parametrize("cell", ["nan", "-nan", "inf"])
def test_ib_write_bw_average_that_is_not_a_finite_number_is_refused(capture, cell):
    # perftest prints a double with %lf: a run that measured nothing prints nan (glibc: "nan"/"-nan").
    text = capture(WRITE_BW).replace("92.42              92.40", f"92.42              {cell:<5}")
    with pytest.raises(ParseError, match=r"not a finite number"):
        parse_ib_write_bw(text)
