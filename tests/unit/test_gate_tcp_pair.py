"""The TCP pair gate rests on both ends (issue 36): the iperf3 client's own report and the one-off server's own
report, read from each node, on real captures of Debian 12's iperf3 3.12 in the lab (tests/fixtures/iperf3_*)."""

import json

import pytest
from ansible.module_utils.gate_rows import gate_pair_rows, gate_pass_results, gate_row, gate_table, gate_tcp_result
from conftest import FIXTURES, without_provenance

CLIENT = "iperf3_client_json_tcp_5s_debian12_lab.txt"
SERVER = "iperf3_server_json_one_off_debian12_lab.txt"
CLIENT_GSO = "iperf3_client_json_get_server_output_debian12_lab.txt"
SERVER_GSO = "iperf3_server_json_one_off_get_server_output_debian12_lab.txt"
SERVER_TIMEOUT = "iperf3_server_json_timeout_no_client_debian12_lab.txt"
CLIENT_REFUSED = "iperf3_client_json_connection_refused_debian12_lab.txt"


def _out(name):
    return without_provenance((FIXTURES / name).read_text())


def _client(name=CLIENT, rc=0, pair=("gpu01", "gpu02")):
    """A registered iperf3 client result of tcp_pass.yml's loop (``item`` is [client, server])."""
    return {"item": list(pair), "rc": rc, "stdout": _out(name) if name.endswith(".txt") else name}


def _server(name=SERVER, rc=0):
    """The one-off server's async_status result (finished, with its stdout)."""
    return {"finished": 1, "rc": rc, "stdout": _out(name) if name.endswith(".txt") else name}


def _edit(name, **own):
    """A real capture with its own sum's fields replaced (client: sum_sent, server: sum_received)."""
    data = json.loads(_out(name))
    key = "sum_sent" if "client" in name else "sum_received"
    data["end"][key].update(own)
    return json.dumps(data)


def test_the_real_captures_of_one_test_pass_and_the_row_shows_both_ends_figures():
    (result,) = gate_pass_results([_client()], "tcp", 1.0, [_server()])
    assert (result["verdict"], result["figure"], result["threshold"]) == ("PASS", "12.47Gb/s", "1.00Gb/s")
    # The client's own count (sum_sent) and the server's own count (sum_received), each from its node.
    assert result["ends"] == {"gpu01": "12.47Gb/s", "gpu02": "12.47Gb/s"}
    rows = gate_pair_rows([result], [], [], "tcp", ["gpu01", "gpu02"])
    assert [r["ends"] for r in rows] == [{"gpu01": "12.47Gb/s", "gpu02": "12.47Gb/s"}] * 2
    assert gate_table(rows)[1] == "gpu01  tcp (gpu02)  12.47Gb/s [gpu01 12.47Gb/s, gpu02 12.47Gb/s]  1.00Gb/s   PASS"


def test_a_client_report_alone_is_never_a_pass():
    # The old gate judged the client's JSON alone: the client node could report any figure for the pair.
    (result,) = gate_pass_results([_client()], "tcp", 1.0)
    assert result["verdict"] == "ERROR"
    assert result["reason"] == "tcp: gpu01->gpu02: no report from the server gpu02"


def test_a_client_that_claims_more_than_the_server_received_is_an_error_naming_both_nodes():
    forged = _edit(CLIENT, bytes=77939343360, bits_per_second=124.69e9)
    (result,) = gate_pass_results([_client(forged)], "tcp", 1.0, [_server()])
    assert result["verdict"] == "ERROR"
    assert result["reason"] == ("tcp: gpu01->gpu02: the ends disagree: the client gpu01 sent 7.79393e+10 bytes, "
                                "the server gpu02 received 7.79393e+09 bytes (more than 10% apart)")


def test_ends_that_disagree_on_the_duration_are_an_error():
    forged = _edit(SERVER, seconds=2.5)
    result = gate_tcp_result(_client(), _server(forged), 1.0, ["gpu01", "gpu02"])
    assert result["verdict"] == "ERROR" and "the server gpu02 received 2.5 s" in result["reason"]


def test_get_server_output_inside_the_client_s_report_is_no_second_witness():
    # server_output_json is written by the client process; without the server node's own report: ERROR.
    assert "server_output_json" in json.loads(_out(CLIENT_GSO))
    result = gate_tcp_result(_client(CLIENT_GSO), None, 1.0, ["gpu01", "gpu02"])
    assert result["verdict"] == "ERROR"
    # With the server's own report of that test, the pair passes.
    assert gate_tcp_result(_client(CLIENT_GSO), _server(SERVER_GSO), 1.0, ["gpu01", "gpu02"])["verdict"] == "PASS"


def test_reports_of_two_different_tests_are_an_error():
    result = gate_tcp_result(_client(), _server(SERVER_GSO), 1.0, ["gpu01", "gpu02"])
    assert result["verdict"] == "ERROR"
    assert result["reason"] == "tcp: gpu01->gpu02: the client gpu01 and the server gpu02 report different tests"


def test_a_server_that_no_client_reached_is_an_error_naming_it():
    result = gate_tcp_result(_client(), _server(SERVER_TIMEOUT, rc=124), 1.0, ["gpu01", "gpu02"])
    assert result["verdict"] == "ERROR"
    assert result["reason"] == ("tcp: gpu01->gpu02: the server gpu02's report: "
                                "iperf3: interrupt - the server has terminated")


def test_a_client_that_could_not_connect_exits_0_and_is_still_an_error():
    result = gate_tcp_result(_client(CLIENT_REFUSED), None, 1.0, ["gpu01", "gpu02"])
    assert result["verdict"] == "ERROR"
    assert result["reason"] == ("tcp: gpu01->gpu02: the client gpu01's report: "
                                "iperf3: unable to connect to server: Connection refused")


@pytest.mark.parametrize("server", [None, {"skipped": True}, {"finished": 0, "stdout": ""},
                                    {"finished": 1, "rc": 1, "stdout": ""}])
def test_a_server_result_that_is_not_a_finished_report_is_an_error(server):
    assert gate_tcp_result(_client(), server, 1.0, ["gpu01", "gpu02"])["verdict"] == "ERROR"


def test_the_lower_end_is_judged():
    # The real client measured 12.469447 Gb/s sent, the server 12.467749 Gb/s received: a floor between them fails.
    result = gate_tcp_result(_client(), _server(), 12.4685, ["gpu01", "gpu02"])
    assert result["verdict"] == "FAIL"
    assert result["reason"] == "tcp: 12.468 Gb/s < 12.469 Gb/s"
    row = gate_row(result, "tcp", "gpu01,gpu02")
    assert row["ends"] == {"gpu01": "12.4694Gb/s", "gpu02": "12.468Gb/s"} and row["figure"] == "12.468Gb/s"


def test_an_error_pair_row_names_what_broke_and_both_nodes():
    (broken,) = gate_pass_results([_client()], "tcp", 1.0, [_server(SERVER_TIMEOUT, rc=124)])
    rows = gate_pair_rows([broken], [], [], "tcp", ["gpu01", "gpu02"])
    assert [r["verdict"] for r in rows] == ["ERROR", "ERROR"]
    assert all(r["reason"].startswith("tcp: gpu01->gpu02: the server gpu02's report:") for r in rows)


@pytest.mark.parametrize("role,name", [("client", CLIENT), ("server", SERVER)])
def test_each_end_is_read_from_its_own_sum(role, name):
    from ansible.module_utils.iperf3 import parse_report

    report = parse_report(_out(name), 0, role)
    assert report["cookie"] == "46xrepk727mbk7hdkdteu6zdpix3zf5bvvvk" and report["bytes"] == 7793934336


@pytest.mark.parametrize("mutate", [
    lambda d: d["end"].pop("sum_received"),
    lambda d: d["start"].pop("cookie"),
    lambda d: d["end"]["sum_received"].update(bits_per_second="nan"),
    lambda d: d["end"]["sum_received"].update(bytes=0),
    lambda d: d["start"]["test_start"].update(reverse=1),
    lambda d: d["start"]["test_start"].update(protocol="UDP"),
])
def test_a_server_report_missing_what_the_verdict_reads_is_an_error(mutate):
    data = json.loads(_out(SERVER))
    mutate(data)
    assert gate_tcp_result(_client(), _server(json.dumps(data)), 1.0, ["gpu01", "gpu02"])["verdict"] == "ERROR"


def test_a_non_zero_exit_with_results_is_an_error():
    assert gate_tcp_result(_client(rc=1), _server(), 1.0, ["gpu01", "gpu02"])["verdict"] == "ERROR"
