"""Parsers for RDMA port status (``ibstat``, ``ibv_devinfo [-v]``) and ``ib_write_bw`` results.

Both port parsers return the same shape, one dict per port::

    {"ca": "mlx5_0", "port": 1, "state": "Active", "physical_state": "LinkUp", "rate_gbps": 200.0,
     "link_layer": "InfiniBand"}

``state`` and ``physical_state`` use ibstat's spelling (``Active``, ``Down``, ``Initializing``,
``Armed``; ``LinkUp``, ``Disabled``, ``Polling``, ...) whichever tool produced them. ``rate_gbps``
and ``physical_state`` are ``None`` where the tool does not print them (``ibv_devinfo`` without -v).
"""

from __future__ import annotations

import re

from ansible.module_utils.gate import ParseError, count, finite

_STATE = {"PORT_ACTIVE": "Active", "PORT_DOWN": "Down", "PORT_INIT": "Initializing",
          "PORT_ARMED": "Armed", "PORT_ACTIVE_DEFER": "ActiveDefer", "PORT_NOP": "Nop"}
_PHYS = {"LINK_UP": "LinkUp", "DISABLED": "Disabled", "POLLING": "Polling", "SLEEP": "Sleep",
         "LINK_ERROR_RECOVERY": "LinkErrorRecovery", "PHY_TEST": "PhyTest",
         "NO_STATE_CHANGE": "NoStateChange"}


def _port_complete(port: dict, tool: str) -> None:
    required = ("state", "physical_state", "rate_gbps") if tool == "ibstat" else ("state",)
    missing = [k for k in required if port.get(k) is None]
    if missing:
        raise ParseError(f"{tool}: {port['ca']} port {port['port']} lacks {', '.join(missing)} (truncated?)")


def parse_ibstat(text: str) -> list[dict]:
    """Parse ``ibstat`` (tabs or spaces). Every port must carry State, Physical state and Rate, and
    every CA a ``Number of ports`` line and as many ports as it says (a CA block cut short, or a
    malformed count such as ``two``, raises ParseError)."""
    if not text or not text.strip():
        raise ParseError("ibstat: empty output")
    ports: list[dict] = []
    cas: list[dict] = []
    port = None
    for raw in text.splitlines():
        line = raw.strip()
        if m := re.match(r"^CA '([^']+)'$", line):
            cas.append({"ca": m.group(1), "nports": None, "seen": 0, "ca_type": None, "firmware": None})
            port = None
            continue
        if not cas or not line or ":" not in line:
            continue
        ca = cas[-1]
        if m := re.match(r"^Port (\d+):$", line):
            port = {"ca": ca["ca"], "port": int(m.group(1)), "state": None, "physical_state": None,
                    "rate_gbps": None, "link_layer": None, "ca_type": ca["ca_type"],
                    "firmware": ca["firmware"]}
            ports.append(port)
            ca["seen"] += 1
            continue
        key, _, value = (part.strip() for part in line.partition(":"))
        if port is None:
            if key == "Number of ports":
                ca["nports"] = count(value, f"ibstat: {ca['ca']} Number of ports")
            elif key == "CA type":
                ca["ca_type"] = value
            elif key == "Firmware version":
                ca["firmware"] = value
            continue
        if key == "State":
            port["state"] = value
        elif key == "Physical state":
            port["physical_state"] = value
        elif key == "Rate":
            port["rate_gbps"] = finite(value, f"ibstat: {port['ca']} port {port['port']} rate")
        elif key == "Link layer":
            port["link_layer"] = value
    if not cas:
        raise ParseError("ibstat: no \"CA '<name>'\" block (not ibstat output?)")
    for ca in cas:
        if ca["nports"] is None:
            raise ParseError(f"ibstat: {ca['ca']} has no 'Number of ports' line (truncated?)")
        if ca["seen"] != ca["nports"]:
            raise ParseError(f"ibstat: {ca['ca']} declares {ca['nports']} ports, output has {ca['seen']} "
                             "(truncated?)")
        if not ca["seen"]:
            raise ParseError(f"ibstat: {ca['ca']} has no port block (truncated?)")
    for p in ports:
        _port_complete(p, "ibstat")
    return ports


def _enum_value(value: str) -> str:
    """``PORT_ACTIVE (4)`` -> ``PORT_ACTIVE``."""
    return re.sub(r"\s*\(\d+\)$", "", value).strip()


def _rate(width: str | None, speed: str | None) -> float | None:
    """``4X (2)`` x ``50.0 Gbps (64)`` -> 200.0."""
    if not width or not speed:
        return None
    w = re.match(r"^(\d+)X\b", width)
    s = re.match(r"^(\d+(?:\.\d+)?)\s*Gbps\b", speed)
    if not (w and s):
        raise ParseError(f"ibv_devinfo: active_width {width!r} x active_speed {speed!r} is not a rate")
    return round(int(w.group(1)) * finite(s.group(1), "ibv_devinfo: active_speed"), 1)


def parse_ibv_devinfo(text: str) -> list[dict]:
    """Parse ``ibv_devinfo`` or ``ibv_devinfo -v``. Without -v there is no physical state or rate
    (``None``); with -v the rate is active_width x active_speed (``4X`` x ``50.0 Gbps`` = 200)."""
    if not text or not text.strip():
        raise ParseError("ibv_devinfo: empty output")
    devices: list[dict] = []
    ports: list[dict] = []
    port = None
    for raw in text.splitlines():
        line = raw.strip()
        if m := re.match(r"^hca_id:\s*(\S+)$", line):
            devices.append({"ca": m.group(1), "nports": None, "seen": 0, "fw_ver": None})
            port = None
            continue
        if not devices or ":" not in line:
            continue
        dev = devices[-1]
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "port" and value.isdigit():
            port = {"ca": dev["ca"], "port": int(value), "state": None, "physical_state": None,
                    "rate_gbps": None, "link_layer": None, "firmware": dev["fw_ver"],
                    "_width": None, "_speed": None}
            ports.append(port)
            dev["seen"] += 1
            continue
        if port is None:
            if key == "phys_port_cnt":
                dev["nports"] = count(value, f"ibv_devinfo: {dev['ca']} phys_port_cnt")
            elif key == "fw_ver":
                dev["fw_ver"] = value
            continue
        if key == "state":
            port["state"] = _STATE.get(_enum_value(value), _enum_value(value))
        elif key == "phys_state":
            port["physical_state"] = _PHYS.get(_enum_value(value), _enum_value(value))
        elif key == "link_layer":
            port["link_layer"] = value
        elif key == "active_width":
            port["_width"] = value
        elif key == "active_speed":
            port["_speed"] = value
    if not devices:
        raise ParseError("ibv_devinfo: no 'hca_id:' line (not ibv_devinfo output?)")
    for dev in devices:
        if dev["nports"] is None:
            raise ParseError(f"ibv_devinfo: {dev['ca']} has no 'phys_port_cnt' line (truncated?)")
        if dev["seen"] != dev["nports"]:
            raise ParseError(f"ibv_devinfo: {dev['ca']} declares {dev['nports']} ports, output has "
                             f"{dev['seen']} (truncated?)")
        if not dev["seen"]:
            raise ParseError(f"ibv_devinfo: {dev['ca']} has no port block (truncated?)")
    for p in ports:
        width = p.pop("_width")
        p["width"] = re.sub(r"\s*\(\d+\)$", "", width).strip() if width else None
        p["rate_gbps"] = _rate(width, p.pop("_speed"))
        _port_complete(p, "ibv_devinfo")
    return ports


# --------------------------------------------------------------------------------------------
# ib_write_bw (perftest)
# --------------------------------------------------------------------------------------------

_SEPARATOR = re.compile(r"^\s*-{20,}\s*$")
# perftest's MB/sec is 2^20 bytes per second; Gb/sec (--report_gbits) is 10^9 bits per second.
_MB_TO_GBIT = 1048576 * 8 / 1e9


def parse_ib_write_bw(text: str) -> dict:
    """Parse the client side of ``ib_write_bw`` (one size or ``-a``).

    Tolerates perftest warning lines inside the result table. Returns ``{"device", "link_layer",
    "transport", "unit": "Gb/sec"|"MB/sec", "rows": [{"bytes", "iterations", "bw_peak", "bw_avg",
    "msg_rate_mpps", "bw_avg_gbps"}], "bw_avg_gbps"}`` where the top-level ``bw_avg_gbps`` is that of
    the largest message size, in Gb/s whatever unit was printed. Every bandwidth and rate must be a
    finite number: ``nan``/``-nan``/``inf`` (perftest prints a double with ``%lf``) raises ParseError.

    Work at risk: the gate's PASS admits a node to jobs. Refused: a table the parser does not fully read
    (truncated, unknown unit, a number that is not finite) raises ParseError, which the gate reports as
    an ERROR, never a PASS (``nan`` compares as not below any threshold).
    """
    if not text or not text.strip():
        raise ParseError("ib_write_bw: empty output")
    meta: dict[str, str | None] = {"device": None, "link_layer": None, "transport": None}
    unit = None
    rows: list[dict] = []
    closed = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if unit is None:
            if m := re.search(r"Device\s*:\s*(\S+)", line):
                meta["device"] = m.group(1)
            if m := re.search(r"Link type\s*:\s*(\S+)", line):
                meta["link_layer"] = m.group(1)
            if m := re.search(r"Transport type\s*:\s*(\S+)", line):
                meta["transport"] = m.group(1)
            if m := re.match(r"^#bytes\s+#iterations\s+BW peak\[([^\]]+)\]\s+BW average\[([^\]]+)\]", line):
                unit = m.group(2)
                if unit not in ("Gb/sec", "MB/sec"):
                    raise ParseError(f"ib_write_bw: unknown bandwidth unit {unit!r}")
            continue
        if _SEPARATOR.match(line):
            closed = True
            break
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            continue  # perftest warnings ("Conflicting CPU frequency values detected ...")
        if len(tokens) != 5:
            raise ParseError(f"ib_write_bw: line {lineno} has {len(tokens)} columns, expected 5 (truncated?)")
        try:
            row = {"bytes": int(tokens[0]), "iterations": int(tokens[1])}
        except ValueError:
            raise ParseError(f"ib_write_bw: line {lineno} is not a result row: {line!r}") from None
        for key, token, what in (("bw_peak", tokens[2], "BW peak"), ("bw_avg", tokens[3], "BW average"),
                                 ("msg_rate_mpps", tokens[4], "MsgRate")):
            try:
                row[key] = finite(token, what)
            except ParseError as exc:
                raise ParseError(f"ib_write_bw: line {lineno}: {exc}") from None
        row["bw_avg_gbps"] = round(row["bw_avg"] * (1.0 if unit == "Gb/sec" else _MB_TO_GBIT), 3)
        rows.append(row)
    if unit is None:
        raise ParseError("ib_write_bw: no '#bytes #iterations BW peak' header (not perftest output?)")
    if not rows:
        raise ParseError("ib_write_bw: result header but no result row (truncated or the test failed)")
    if not closed:
        raise ParseError("ib_write_bw: result table not closed by a separator line (truncated?)")
    largest = max(rows, key=lambda r: r["bytes"])
    return {**meta, "unit": unit, "rows": rows, "bw_avg_gbps": largest["bw_avg_gbps"]}


def no_hca_reason(tool: str, out: str, rc, sysfs_devices) -> str | None:
    """The FAIL reason for a node with no HCA at all, or None.

    ibstat with no RDMA device prints nothing and exits 0 (tests/fixtures/ibstat_no_hca_debian12_container.txt),
    which alone cannot be told from a tool that broke. Only when the kernel's RDMA class
    (``/sys/class/infiniband``) holds no device either (``sysfs_devices`` is that directory's entries,
    None where it does not exist) is it a FAIL: the node has no HCA. Any other empty output stays an ERROR.
    """
    if tool != "ibstat" or rc != 0 or (out or "").strip():
        return None
    if sysfs_devices:
        return None
    return "no HCA: ibstat lists no CA and /sys/class/infiniband has no RDMA device"
