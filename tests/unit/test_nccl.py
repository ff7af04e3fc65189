"""nccl-tests all_reduce_perf and NCCL_DEBUG=INFO transport parsers, on the real captures."""

import re

import pytest
from ansible.module_utils import gate
from ansible.module_utils.gate import ParseError
from ansible.module_utils.nccl import parse_all_reduce_perf, parse_transports
from conftest import FIXTURES

PERF = {
    "gh200_good": "nccl_all_reduce_perf_multinode_gh200_slingshot_good_cscs.txt",
    "gh200_bad": "nccl_all_reduce_perf_multinode_gh200_bad_cxi_hook_disabled_cscs.txt",
    "legacy": "nccl_all_reduce_perf_multinode_dgxa100x4_legacy_format_deepops.txt",
    "h100_pair": "nccl_all_reduce_perf_multinode_h100x16_roce_oci.txt",
    "a100_single": "nccl_all_reduce_perf_single_node_a100x8_oci.txt",
}
DEBUG = {
    "gdr": "nccl_debug_info_transport_ib_gdrdma_good.txt",
    "no_gdr": "nccl_debug_info_ib_without_gdr.txt",
    "socket": "nccl_debug_info_net_socket_fallback_bad.txt",
    "mixed": "nccl_debug_info_net_socket_and_ib_using_mixed.txt",
}


def verbatim(text):
    """Drop the fixture's ``#@`` metadata lines: what the tool printed, as replay_capture serves it."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#@"))


@pytest.fixture
def capture(fixture_text):
    return lambda name: verbatim(fixture_text(name))


def test_current_format_gives_every_row_with_both_placements(capture):
    perf = parse_all_reduce_perf(capture(PERF["gh200_good"]))
    assert perf["format"] == "current"
    assert len(perf["rows"]) == 25
    last = perf["rows"][-1]
    assert last["size"] == 134217728
    assert last["out_of_place"] == {"time": 1916.4, "algbw": 70.04, "busbw": 122.57, "wrong": 0}
    assert last["in_place"]["busbw"] == 123.11
    assert perf["avg_busbw"] == pytest.approx(19.7866)
    assert perf["wrong"] == 0
    assert perf["out_of_bounds"] == 0 and perf["out_of_bounds_ok"] is True


def test_current_format_lists_the_ranks_and_their_gpus(capture):
    perf = parse_all_reduce_perf(capture(PERF["h100_pair"]))
    assert len(perf["devices"]) == 16
    assert {d["host"] for d in perf["devices"]} == {"inst-xxxxx-h100-ol89", "inst-yyyyy-h100-ol89"}
    assert perf["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert [r["size"] for r in perf["rows"]] == [1 << 30, 1 << 31, 1 << 32, 1 << 33, 1 << 34]


def test_legacy_format_has_error_column_and_no_root(capture):
    perf = parse_all_reduce_perf(capture(PERF["legacy"]))
    assert perf["format"] == "legacy"
    assert len(perf["rows"]) == 13
    first = perf["rows"][0]
    assert first["out_of_place"] == {"time": 135.3, "algbw": 7.75, "busbw": 15.02, "error": 7e-07}
    assert perf["rows"][-1]["in_place"]["busbw"] == 191.56
    assert perf["avg_busbw"] == pytest.approx(113.289)
    assert perf["wrong"] == 0  # legacy: taken from "Out of bounds values : 0 OK"


def test_single_row_run_parses(capture):
    perf = parse_all_reduce_perf(capture(PERF["a100_single"]))
    assert [r["size"] for r in perf["rows"]] == [10737418240]
    assert perf["rows"][0]["out_of_place"]["busbw"] == 232.20


def test_wrong_results_are_summed_over_rows(capture):
    text = capture(PERF["gh200_good"])
    # Same capture with one corrupted row: the #wrong column of the 1 MiB out-of-place run set to 3.
    text = re.sub(r"(\n\s+1048576\s+262144\s+float\s+sum\s+-1\s+\S+\s+\S+\s+\S+\s+)0 ", r"\g<1>3 ", text)
    assert parse_all_reduce_perf(text)["wrong"] == 3


def test_validation_off_reports_wrong_as_unknown(capture):
    text = re.sub(r"(\s)0(\s+\S+\s+\S+\s+\S+\s+)0$", r"\1N/A\2N/A", capture(PERF["a100_single"]), flags=re.M)
    assert parse_all_reduce_perf(text)["wrong"] is None


def test_legacy_out_of_bounds_failed_counts_as_wrong(capture):
    text = capture(PERF["legacy"]).replace("values : 0 OK", "values : 4 FAILED")
    perf = parse_all_reduce_perf(text)
    assert perf["wrong"] == 4 and perf["out_of_bounds_ok"] is False


def test_rank_prefixed_lines_parse_like_plain_ones(capture):
    text = capture(PERF["gh200_bad"])
    labelled = "".join(f"0: {line}" for line in text.splitlines(keepends=True))
    assert parse_all_reduce_perf(labelled)["rows"] == parse_all_reduce_perf(text)["rows"]


def test_nccl_info_lines_inside_the_table_are_skipped(capture):
    table = capture(PERF["h100_pair"]).splitlines(keepends=True)
    info = capture(DEBUG["gdr"]).splitlines(keepends=True)
    at = next(i for i, line in enumerate(table) if line.lstrip().startswith("2147483648"))
    mixed = "".join(table[:at] + info + table[at:])
    assert parse_all_reduce_perf(mixed)["rows"] == parse_all_reduce_perf("".join(table))["rows"]
    assert parse_transports(mixed)["net"] == "ib"


def test_capture_cut_before_the_avg_line_is_truncated(capture):
    text = capture(PERF["gh200_good"])
    cut = text[: text.index("# Out of bounds")]
    with pytest.raises(ParseError, match="truncated"):
        parse_all_reduce_perf(cut)


def test_capture_cut_mid_row_is_an_error(capture):
    text = capture(PERF["gh200_good"])
    cut = text[: text.index("    67108864") + 40]
    with pytest.raises(ParseError, match="columns"):
        parse_all_reduce_perf(cut)


def test_capture_cut_after_the_header_has_no_rows(capture):
    text = capture(PERF["legacy"])
    with pytest.raises(ParseError, match="no result rows"):
        parse_all_reduce_perf(text[: text.index("     1048576")])


@pytest.mark.parametrize("text", ["", "   \n\n"])
def test_empty_output_is_an_error(text):
    with pytest.raises(ParseError, match="empty"):
        parse_all_reduce_perf(text)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")
                                        if not p.name.startswith("nccl_all_reduce_perf")))
def test_foreign_capture_is_rejected_by_the_perf_parser(capture, name):
    # An empty capture (ibstat with no HCA prints nothing) is rejected as empty output.
    with pytest.raises(ParseError, match=r"no result table header|empty"):
        parse_all_reduce_perf(capture(name))


def test_ibstat_text_is_rejected_by_the_perf_parser(capture):
    with pytest.raises(ParseError):
        parse_all_reduce_perf(capture("ibstat_hdr_cx6_one_active_one_disabled.txt"))


# ----------------------------------------------------------------------------------- transports


def test_ib_plugin_with_gdrdma_is_ib_with_gdr(capture):
    t = parse_transports(capture(DEBUG["gdr"]))
    assert t["net"] == "ib" and t["gdr"] is True
    assert t["channels"] == {"ib": 12}


def test_ib_without_gdrdma_suffix_is_ib_without_gdr(capture):
    t = parse_transports(capture(DEBUG["no_gdr"]))
    assert t["net"] == "ib" and t["gdr"] is False
    assert t["channels"] == {"ib": 16}


def test_socket_channels_are_a_socket_transport(capture):
    t = parse_transports(capture(DEBUG["socket"]))
    assert t["net"] == "socket"
    assert t["channels"] == {"socket": 13, "shm": 1}


def test_init_lines_alone_pick_ib_when_ib_was_initialised(capture):
    t = parse_transports(capture(DEBUG["mixed"]))
    assert t["net"] == "ib"
    assert t["channels"] == {}
    assert t["net_init"]["Socket"] == ["enp41s0f1", "virbr0"]
    assert t["net_init"]["IB"] == ["mlx5_0:1/IB", "mlx5_1:1/IB"]


def test_socket_and_ib_channels_together_are_mixed(capture):
    t = parse_transports(capture(DEBUG["gdr"]) + capture(DEBUG["socket"]))
    assert t["net"] == "mixed"


@pytest.mark.parametrize("name", [PERF["gh200_good"], "ibstat_hdr_cx6_one_active_one_disabled.txt"])
def test_output_without_nccl_info_lines_is_an_error(capture, name):
    with pytest.raises(ParseError, match="NCCL_DEBUG=INFO"):
        parse_transports(capture(name))


# --- only all_reduce_perf's output is judged as all-reduce ---------------------------------------

ALL_GATHER = "formats/nccl_all_gather_perf_gh200x8_derived_from_all_reduce.txt"


def judged(text, min_busbw=50.0):
    """The nccl gate's verdict of an output as the module reaches it: a ParseError is an ERROR."""
    try:
        return gate.nccl_verdict(parse_all_reduce_perf(text), min_busbw)["verdict"]
    except ParseError:
        return gate.ERROR


def test_all_gather_perf_output_is_refused_by_name(capture):
    text = capture(ALL_GATHER)
    with pytest.raises(ParseError, match=r"all_gather_perf.*not all_reduce_perf"):
        parse_all_reduce_perf(text)
    assert judged(text) == gate.ERROR


def test_all_gather_perf_output_without_the_name_lines_is_refused_by_its_redop(capture):
    # nccl-tests before 2.17 (the version lock pins 2.13.6) prints no "Collective test" lines.
    text = re.sub(r"(?m)^# Collective test .*\n", "", capture(ALL_GATHER))
    with pytest.raises(ParseError, match=r"redop 'none'"):
        parse_all_reduce_perf(text)
    assert judged(text) == gate.ERROR


def as_reduce_scatter(text, ranks=8):
    """The real all_reduce run as reduce_scatter_perf prints it before 2.17: same columns (redop sum, root
    -1), no name lines, busbw = algbw * (n-1)/n (ReduceScatterGetBw) instead of all-reduce's 2(n-1)/n."""
    text = re.sub(r"(?m)^# Collective test .*\n", "", text)

    def row(m):
        t = m.group(0).split()
        for i in (7, 11):
            t[i] = f"{float(t[i - 1]) * (ranks - 1) / ranks:.2f}"
        return (f"{t[0]:>12}  {t[1]:>12}  {t[2]:>8}  {t[3]:>6}  {t[4]:>6}  {t[5]:>7}  {t[6]:>6}  {t[7]:>6}  {t[8]:>6}"
                f"  {t[9]:>7}  {t[10]:>6}  {t[11]:>6}  {t[12]:>6}")

    return re.sub(r"(?m)^\s+\d+\s+\d+\s+float\s+sum\s+-1\s.*$", row, text)


def test_reduce_scatter_output_without_the_name_lines_is_refused_by_its_bus_bandwidth(capture):
    text = as_reduce_scatter(capture(PERF["gh200_good"]))
    with pytest.raises(ParseError, match=r"busbw/algbw"):
        parse_all_reduce_perf(text)
    assert judged(text, 5.0) == gate.ERROR

