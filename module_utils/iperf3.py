"""iperf3's JSON reports (``--json``) and the TCP pair verdict that rests on both ends of a test.

One TCP test has two reports, each written by the node that measured it:

* the client's (``iperf3 --client <server> --json``, on the client node): ``end.sum_sent`` is what the
  client wrote, by its own count. Its ``end.sum_received`` is *not* the client's measure: iperf3 sends
  the server's figure to the client when the test ends (the results exchange), and the client prints it
  (the captures ``tests/fixtures/iperf3_client_json_tcp_5s_debian12_lab.txt`` and
  ``iperf3_server_json_one_off_debian12_lab.txt`` show the same bytes and seconds in both).
* the server's (``iperf3 --server --one-off --json``, on the server node, printed when the test ended):
  ``end.sum_received`` is what the server read.

``--get-server-output`` only adds the server's JSON to the client's report (``server_output_json``), written
by the client process (``iperf3_client_json_get_server_output_debian12_lab.txt``): a client that lies
writes that too, so it is no second witness. The gate reads the server's report from the server node.

Both reports carry the test's ``cookie`` (random, made by the client for each test): two reports with
different cookies are two tests. iperf3 3.12 in JSON mode exits 0 when it cannot connect; the failure is
only in the JSON (``error``), so an ``error`` key is read before anything else.
"""

from __future__ import annotations

import json
import math

from ansible.module_utils.gate import ERROR, FAIL, PASS, ParseError, below, finite

# Each end's own measure: the client's sent bytes, the server's received bytes.
OWN_SUM = {"client": "sum_sent", "server": "sum_received"}
# How far the two ends' bytes and seconds may differ (percent of the larger) and still be one measurement:
# the client counts what it wrote, the server what it read, so the client's last writes still in flight when
# the test stops are the only difference in a sound run (none in the lab's captures).
AGREE_PCT = 10.0


def parse_report(stdout, rc, role):
    """One end's report: ``{"cookie", "bytes", "seconds", "gbps"}`` from its own sum.

    Raises ParseError (with the reason) for a report that cannot be judged: empty or not JSON, an ``error``
    key, a non-zero exit, no cookie, no own sum, a UDP or reverse test, a number that is not finite, no
    bytes or no time.
    """
    if role not in OWN_SUM:
        raise ValueError(f"role must be one of {sorted(OWN_SUM)}, got {role!r}")
    try:
        data = json.loads(stdout or "")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ParseError(f"iperf3 exit {rc} without JSON results")
    if data.get("error"):
        raise ParseError(f"iperf3: {str(data['error'])[:100]}")
    if rc not in (0, "0"):
        raise ParseError(f"iperf3 exit {rc} with results")
    start = data.get("start") if isinstance(data.get("start"), dict) else {}
    cookie = start.get("cookie")
    if not isinstance(cookie, str) or not cookie:
        raise ParseError("iperf3 JSON has no start.cookie")
    test = start.get("test_start") if isinstance(start.get("test_start"), dict) else {}
    if test.get("protocol") != "TCP" or test.get("reverse") not in (0, False):
        raise ParseError(f"iperf3 JSON is not a forward TCP test "
                         f"({test.get('protocol')}, reverse {test.get('reverse')})")
    end = data.get("end") if isinstance(data.get("end"), dict) else {}
    own = end.get(OWN_SUM[role])
    if not isinstance(own, dict):
        raise ParseError(f"iperf3 JSON has no end.{OWN_SUM[role]}")
    sent = finite(own.get("bytes"), f"end.{OWN_SUM[role]}.bytes")
    seconds = finite(own.get("seconds"), f"end.{OWN_SUM[role]}.seconds")
    bps = finite(own.get("bits_per_second"), f"end.{OWN_SUM[role]}.bits_per_second")
    if sent <= 0 or seconds <= 0 or bps < 0:
        raise ParseError(f"iperf3 JSON end.{OWN_SUM[role]}: {sent:.0f} bytes in {seconds} s")
    return {"cookie": cookie, "bytes": sent, "seconds": seconds, "gbps": bps / 1e9}


def _apart(a, b, pct):
    """True when ``a`` and ``b`` differ by more than ``pct`` percent of the larger."""
    return abs(a - b) > max(abs(a), abs(b)) * pct / 100.0


def tcp_pair_verdict(client, server, min_gbps, nodes, agree_pct=AGREE_PCT):
    """The verdict of one TCP pair test from both ends' reports.

    ``client`` and ``server`` are ``(stdout, rc)`` of each end's iperf3 (``None`` where that end gave
    nothing); ``nodes`` is ``[client node, server node]``. Figures: ``tcp_gbps`` (the lower end's, the one
    judged), ``tcp_min_gbps``, and ``tcp_ends_gbps`` ``{node: its own figure}``.

    * ERROR, naming both nodes and the end: an end that gave no report, or one that cannot be parsed
      (``parse_report``); ends that report different tests (cookies); ends that disagree on the transfer,
      bytes or seconds more than ``agree_pct`` percent apart. Which end is wrong cannot be told from the two
      reports, so nobody is blamed and the pair is re-run (docs/health-gates.md: output that cannot be
      judged is an ERROR).
    * FAIL: both ends agree and the lower figure is below ``min_gbps``.
    * PASS: both ends agree and the lower figure clears ``min_gbps``.

    Work at risk: a PASS admits both nodes to jobs (health_gate resumes a node it held). Refused: PASS needs
    both ends' own reports of one test, parsed and agreeing, so one node cannot vouch for the pair alone.
    """
    client_node, server_node = (str(n) for n in nodes)
    pair = f"{client_node}->{server_node}"
    floor = float(min_gbps)
    if not math.isfinite(floor) or floor <= 0:
        raise ValueError(f"min_gbps must be a positive number, got {min_gbps!r}")
    figures = {"tcp_gbps": None, "tcp_min_gbps": floor, "tcp_ends_gbps": {}}
    ends = {}
    for role, node, report in (("client", client_node, client), ("server", server_node, server)):
        if report is None:
            return {"verdict": ERROR, "figures": figures,
                    "reason": f"tcp: {pair}: no report from the {role} {node}"}
        try:
            ends[role] = parse_report(report[0], report[1], role)
        except ParseError as err:
            return {"verdict": ERROR, "figures": figures,
                    "reason": f"tcp: {pair}: the {role} {node}'s report: {err}"}
        figures["tcp_ends_gbps"][node] = round(ends[role]["gbps"], 6)
    sent, got = ends["client"], ends["server"]
    if sent["cookie"] != got["cookie"]:
        return {"verdict": ERROR, "figures": figures,
                "reason": f"tcp: {pair}: the client {client_node} and the server {server_node} report different tests"}
    for what, unit in (("bytes", "bytes"), ("seconds", "s")):
        if _apart(sent[what], got[what], agree_pct):
            reason = (f"tcp: {pair}: the ends disagree: the client {client_node} sent {sent[what]:g} {unit}, "
                      f"the server {server_node} received {got[what]:g} {unit} (more than {agree_pct:g}% apart)")
            return {"verdict": ERROR, "figures": figures, "reason": reason}
    # Judged on the lower end's measured figure, not a rounded one (0.996 is below 1).
    gbps = min(sent["gbps"], got["gbps"])
    figures["tcp_gbps"] = round(gbps, 6)
    if gbps < floor:
        return {"verdict": FAIL, "figures": figures, "reason": below("tcp:", gbps, floor, "Gb/s")}
    return {"verdict": PASS, "reason": "", "figures": figures}
