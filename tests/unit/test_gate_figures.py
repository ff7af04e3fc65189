"""A reason shows the comparison it states: a figure and its threshold print with the same number of
decimals, at least two, more where two would print them alike; in reasons, report rows and Slurm reasons."""

import json

import pytest
from ansible.module_utils.gate import below, fmt_figures
from ansible.module_utils.gate_rows import gate_reason_detail, gate_row, gate_tcp_result
from hypothesis import given
from hypothesis import strategies as st


def _iperf3(gbps):
    """Both ends of one iperf3 test measuring ``gbps``: the client's result and the server's."""
    def report(key):
        return {"rc": 0, "finished": 1, "stdout": json.dumps({
            "start": {"cookie": "c1", "test_start": {"protocol": "TCP", "reverse": 0}},
            "end": {key: {"bytes": gbps * 5e9 / 8, "seconds": 5.0, "bits_per_second": gbps * 1e9}}})}
    return report("sum_sent"), report("sum_received")


@pytest.mark.parametrize("value,limit,texts", [
    (0.94, 1.0, ("0.94", "1.00")),
    (0.996, 1.0, ("0.996", "1.000")),
    (0.9999, 1.0, ("0.9999", "1.0000")),
    (5.48, 98.0, ("5.48", "98.00")),
    (97.995, 98.0, ("97.995", "98.000")),
    (1.0, 1.0, ("1.00", "1.00")),
])
def test_figure_and_threshold_print_apart_at_the_threshold(value, limit, texts):
    assert fmt_figures(value, limit) == texts


def test_a_tcp_figure_just_below_the_threshold_fails_and_says_so():
    result = gate_tcp_result(*_iperf3(0.996), 1.0, ["gpu01", "gpu03"])
    assert result["verdict"] == "FAIL"
    assert result["reason"] == "tcp: 0.996 Gb/s < 1.000 Gb/s"


def test_a_tcp_figure_at_the_threshold_passes():
    assert gate_tcp_result(*_iperf3(1.0), 1.0, ["gpu01", "gpu03"])["verdict"] == "PASS"


def test_the_issue_s_example_reads_as_a_comparison_in_reason_row_and_slurm_reason():
    result = gate_tcp_result(*_iperf3(0.94), 1.0, ["gpu01", "gpu03"])
    assert result["reason"] == "tcp: 0.94 Gb/s < 1.00 Gb/s"
    row = gate_row(result, "tcp", "gpu01", partner="gpu03")
    assert (row["figure"], row["threshold"]) == ("0.94Gb/s", "1.00Gb/s")
    assert gate_reason_detail(row) == "tcp:0.94Gb/s_below_1.00Gb/s_with_gpu03"


def test_nccl_reason_below_its_threshold_keeps_the_decimals():
    assert below("nccl: busbw", 97.996, 98, "GB/s") == "nccl: busbw 97.996 GB/s < 98.000 GB/s"


FIGURES = st.floats(min_value=0, max_value=1e4, allow_nan=False).map(lambda x: round(x, 6))


@given(FIGURES, FIGURES)
def test_printed_figures_never_contradict_the_comparison(value, limit):
    shown, bound = fmt_figures(value, limit)
    if value < limit:
        assert float(shown) < float(bound)
    elif value > limit:
        assert float(shown) > float(bound)
    assert len(shown.partition(".")[2]) == len(bound.partition(".")[2]) >= 2
