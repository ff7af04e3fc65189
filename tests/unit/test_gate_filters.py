"""module_utils/gate_rows.py (filters gate_*): pairing, blame rows, TCP verdicts, Slurm actions and the report table."""

import json

import pytest
from ansible.module_utils.gate_rows import (
    gate_pair_rows,
    gate_pairs,
    gate_pass_results,
    gate_passing,
    gate_reason_detail,
    gate_row,
    gate_slurm_actions,
    gate_table,
    gate_tcp_result,
    gate_verdict,
)
from ansible.module_utils.node_reason import parse_reason
from gate import FilterModule as GateFilters
from gate_rows import FilterModule as RowFilters
from hypothesis import given
from hypothesis import strategies as st

HOLD = "gpufleet:hold,to=slurm,run=molecule,joining"
NCCL_FAIL = {"verdict": "FAIL", "reason": "nccl: busbw 5.48 GB/s < 98.00 GB/s",
             "figures": {"busbw_large_gbps": 5.48, "min_busbw_gbps": 98.0}}
NCCL_PASS = {"verdict": "PASS", "reason": "", "figures": {"busbw_large_gbps": 115.13, "min_busbw_gbps": 98.0}}


def _pair(a, b, verdict, figure="115.1GB/s"):
    failed = "nccl: busbw 5.48 GB/s < 98.00 GB/s"
    reason = "" if verdict == "PASS" else (failed if verdict == "FAIL" else "nccl: timed out")
    return {"nodes": [a, b], "verdict": verdict, "reason": reason, "figure": figure, "threshold": "98GB/s"}


def test_filter_map_names_every_filter():
    names = set(GateFilters().filters()) | set(RowFilters().filters())
    assert names >= {"gate_pairs", "gate_retests", "gate_blame", "gate_row", "gate_slurm_actions", "gate_table",
                     "gate_tcp_result"}


def test_pairs_take_nodes_two_by_two_and_the_odd_one_with_a_known_good_partner():
    assert gate_pairs(["gpu03", "gpu01", "gpu02"], ["gpu09"]) == [["gpu01", "gpu02"], ["gpu03", "gpu09"]]


def test_pairs_without_outside_partner_pair_the_odd_one_with_the_first_node():
    assert gate_pairs(["gpu03", "gpu01", "gpu02"]) == [["gpu01", "gpu02"], ["gpu03", "gpu01"]]


def test_a_lone_node_without_partner_gets_no_pair():
    assert gate_pairs(["gpu01"], ["gpu01"]) == []


@given(st.sets(st.sampled_from([f"n{i:02d}" for i in range(12)]), min_size=2))
def test_every_node_is_in_some_pair_and_no_pair_repeats_a_node(nodes):
    pairs = gate_pairs(sorted(nodes))
    assert {n for pair in pairs for n in pair} == nodes
    assert all(a != b for a, b in pairs)


def test_nccl_row_carries_figure_and_threshold():
    row = gate_row(NCCL_FAIL, "nccl", "gpu02")
    assert (row["verdict"], row["figure"], row["threshold"]) == ("FAIL", "5.48GB/s", "98.00GB/s")


def test_a_result_without_verdict_is_an_error_row_never_a_pass():
    row = gate_row({"failed": True, "msg": "module crashed"}, "gpu", "gpu01")
    assert row["verdict"] == "ERROR" and "module crashed" in row["reason"]


def _ends(gbps, cookie="c1"):
    """A client result and the server's async_status result of one test, both ends measuring ``gbps``."""
    def report(key):
        return json.dumps({"start": {"cookie": cookie, "test_start": {"protocol": "TCP", "reverse": 0}},
                           "end": {key: {"bytes": gbps * 5e9 / 8, "seconds": 5.0, "bits_per_second": gbps * 1e9}}})
    return {"rc": 0, "stdout": report("sum_sent")}, {"finished": 1, "rc": 0, "stdout": report("sum_received")}


def test_tcp_result_passes_and_fails_on_the_lower_end():
    assert gate_tcp_result(*_ends(25), 10, ["a", "b"])["verdict"] == "PASS"
    result = gate_tcp_result(*_ends(2), 10, ["a", "b"])
    assert result["verdict"] == "FAIL" and result["reason"] == "tcp: 2.00 Gb/s < 10.00 Gb/s"


@pytest.mark.parametrize("stdout,rc", [("", 1), ('{"error": "unable to connect to server"}', 1), ("{}", 0)])
def test_a_broken_iperf3_run_is_an_error(stdout, rc):
    server = _ends(25)[1]
    assert gate_tcp_result({"stdout": stdout, "rc": rc}, server, 10, ["a", "b"])["verdict"] == "ERROR"


def test_pass_results_judge_each_pair_of_a_registered_loop():
    client, server = _ends(5)
    (result,) = gate_pass_results([{**client, "item": ["a", "b"]}], "tcp", 1.0, [server])
    assert result == {"nodes": ["a", "b"], "verdict": "PASS", "reason": "",
                      "figure": "5.00Gb/s", "threshold": "1.00Gb/s", "ends": {"a": "5.00Gb/s", "b": "5.00Gb/s"}}


def test_pair_rows_blame_the_node_that_fails_with_a_known_good_partner():
    first = [_pair("a", "b", "FAIL", "5.5GB/s"), _pair("c", "d", "PASS")]
    second = [_pair("a", "c", "PASS"), _pair("b", "d", "FAIL", "5.5GB/s")]
    rows = {r["node"]: r for r in gate_pair_rows(first, second, [], "nccl_pair", ["a", "b", "c", "d"])}
    assert {n: r["verdict"] for n, r in rows.items()} == {"a": "PASS", "b": "FAIL", "c": "PASS", "d": "PASS"}
    assert (rows["b"]["figure"], rows["b"]["partner"]) == ("5.5GB/s", "d")
    assert gate_reason_detail(rows["b"]) == "nccl_pair:busbw_5.48GB/s_below_98.00GB/s_with_d"


def test_pair_rows_make_an_error_pair_an_error_for_both_nodes():
    rows = gate_pair_rows([_pair("a", "b", "ERROR")], [], [], "tcp", ["a", "b"])
    assert [r["verdict"] for r in rows] == ["ERROR", "ERROR"]


def test_verdict_fail_wins_over_error_and_error_over_pass():
    rows = [gate_row(NCCL_PASS, "nccl", "n"), {"node": "n", "gate": "tcp", "verdict": "ERROR", "reason": "x"},
            gate_row(NCCL_FAIL, "nccl_pair", "n")]
    assert gate_verdict(rows)["gate"] == "nccl_pair"
    assert gate_verdict(rows[:2])["verdict"] == "ERROR"
    assert gate_verdict(rows[:1])["verdict"] == "PASS"


def test_passing_keeps_only_nodes_whose_rows_all_pass():
    hostvars = {"a": {"__health_gate_rows": [{"verdict": "PASS"}]},
                "b": {"__health_gate_rows": [{"verdict": "ERROR"}]}, "c": {}}
    assert gate_passing(["a", "b", "c"], hostvars, "__health_gate_rows") == ["a", "c"]


def _views(**reasons):
    return {n: {"drained": r is not None, "reason": r} for n, r in reasons.items()}


def test_fail_drains_with_the_gate_and_the_figure_within_the_reason_limits():
    verdicts = {"gpu02": gate_row(NCCL_FAIL, "nccl", "gpu02")}
    (action,) = gate_slurm_actions(verdicts, _views(gpu02=HOLD), "20260121T100000")
    assert action["action"] == "drain"
    assert action["reason"] == "gpufleet:gate,to=slurm,run=20260121T100000,nccl:busbw_5.48GB/s_below_98.00GB/s"
    assert parse_reason(action["reason"])["kind"] == "gate" and len(action["reason"]) <= 96


def test_a_second_run_on_a_node_already_drained_by_the_same_gate_changes_nothing():
    verdicts = {"gpu02": gate_row(NCCL_FAIL, "nccl", "gpu02")}
    (first,) = gate_slurm_actions(verdicts, _views(gpu02=HOLD), "run1")
    assert gate_slurm_actions(verdicts, _views(gpu02=first["reason"] + " [root@2026-01-21T10:00:00]"), "run2") == []


def test_pass_resumes_only_drains_of_ours_for_this_pool():
    passed = {n: gate_verdict([gate_row(NCCL_PASS, "nccl", n)]) for n in ("held", "gated", "admin", "moved", "idle")}
    views = _views(held=HOLD, gated="gpufleet:gate,to=slurm,run=r1,nccl:x", admin="replacing a fan",
                   moved="gpufleet:move,to=k8s,run=r1,left_slurm", idle=None)
    assert [a["node"] for a in gate_slurm_actions(passed, views, "r2")] == ["gated", "held"]


def test_fail_never_touches_an_admin_drain_and_error_changes_nothing():
    verdicts = {"admin": gate_row(NCCL_FAIL, "nccl", "admin"),
                "held": {"node": "held", "gate": "nccl", "verdict": "ERROR", "reason": "nccl: exit 1"}}
    assert gate_slurm_actions(verdicts, _views(admin="replacing a fan", held=HOLD), "r") == []


def test_nodes_slurm_does_not_know_are_left_out():
    assert gate_slurm_actions({"k8s1": gate_row(NCCL_FAIL, "nccl", "k8s1")}, {}, "r") == []


def test_table_lines_up_columns_and_adds_the_reason_of_a_non_pass():
    lines = gate_table([gate_row(NCCL_FAIL, "nccl", "gpu02"), gate_row(NCCL_PASS, "nccl", "gpu01")])
    assert lines[0].split() == ["node", "gate", "figure", "threshold", "verdict"]
    assert lines[1].split()[:5] == ["gpu02", "nccl", "5.48GB/s", "98.00GB/s", "FAIL"] and "busbw" in lines[1]
    assert lines[2].split() == ["gpu01", "nccl", "115.13GB/s", "98.00GB/s", "PASS"]
