"""Parsers for nccl-tests output and NCCL_DEBUG=INFO transport lines (pure functions).

Every parser raises ``gate.ParseError`` for empty, truncated or foreign input; none returns an empty
result that a caller could mistake for a pass.
"""

from __future__ import annotations

import re

from ansible.module_utils.gate import ParseError, count, finite

# srun --label ("0: ") and some launchers ("[0] ") prefix every line with the rank.
_RANK_PREFIX = re.compile(r"^\s*(?:\[\d+\]\s+|\d+:\s+)")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_RANK_RE = re.compile(r"#\s*Rank\s+(\d+)\s.*?\son\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.*)$")
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(\S+)\s*(\S*)")
_BITWISE_RE = re.compile(r"^#?\s*Bitwise mismatches\s*:\s*(\S+)\s*(\S*)")
# Lines that report a fault once the table started: an NCCL warning, nccl-tests' own error lines.
_FAULT_RE = re.compile(r"\bNCCL WARN\b|^#\s*error\b|\bTest (?:NCCL |CUDA )?failure\b", re.IGNORECASE)
# nccl-tests 2.17 and later name the program before and after the run (src/util.cu, writeDeviceReport
# and writeResultFooter): "# Collective test starting: all_reduce_perf". A build with MPI=1 may be
# installed as all_reduce_perf_mpi.
_PROGRAM_RE = re.compile(r"^#\s*Collective test (?:starting|concluded)\s*:\s*(\S+)")
ALL_REDUCE_PROGRAMS = ("all_reduce_perf", "all_reduce_perf_mpi")


def _strip_prefix(line: str) -> str:
    return _RANK_PREFIX.sub("", line, count=1)


def _layout_from_header(tokens: list[str]) -> dict | None:
    """Column positions from the ``# size count type redop [root] time algbw busbw #wrong|error`` header;
    ``has_redop`` and ``has_root`` say which of the two columns the header holds.

    Work at risk: none (read-only): ``parse_all_reduce_perf`` refuses a header that is not all-reduce's.
    """
    names = [t.lstrip("#").lower() for t in tokens]
    if names[:2] != ["size", "count"] or names.count("busbw") != 2:
        return None
    blocks = []
    for placement, start in zip(("out_of_place", "in_place"),
                                [i for i, n in enumerate(names) if n == "time"], strict=False):
        if names[start:start + 3] != ["time", "algbw", "busbw"] or start + 3 >= len(names):
            return None
        check = names[start + 3]
        if check not in ("wrong", "error"):
            return None
        blocks.append((placement, start, check))
    if len(blocks) != 2:
        return None
    return {
        "ncols": len(names),
        "blocks": blocks,
        "format": "current" if blocks[0][2] == "wrong" else "legacy",
        "has_root": "root" in names,
        "has_redop": names[2:4] == ["type", "redop"],
    }


def _number(text: str, what: str, lineno: int):
    """A finite float; ``nan``, ``inf`` and words are a ParseError naming the line."""
    try:
        return finite(text, what)
    except ParseError as exc:
        raise ParseError(f"all_reduce_perf: line {lineno}: {exc}") from None


def _count(text: str, what: str, lineno: int) -> int:
    try:
        return count(text, what)
    except ParseError as exc:
        raise ParseError(f"all_reduce_perf: line {lineno}: {exc}") from None


def _half_unit(token: str) -> float:
    """Half the last printed digit of a number: the most its rounding can hide (``1.07``: 0.005)."""
    decimals = len(token.partition(".")[2]) if "." in token else 0
    return 0.5 * 10.0 ** -decimals


def _collective_problem(rows_bw: list[tuple[int, str, str]], devices: list[dict]) -> str | None:
    """Why these rows are not all-reduce's, or None: the ratio busbw/algbw of a row, with the rounding of
    both printed numbers, must hold all_reduce_perf's factor 2(n-1)/n (AllReduceGetBw). With the ranks
    listed as 0..n-1 that factor is known; without them it is at least 1 for any n >= 2, where
    reduce_scatter, all_gather, alltoall, gather and scatter print (n-1)/n, below 1.

    Work at risk: a row wrongly taken for all-reduce's lets another collective's bandwidth pass the
    all-reduce threshold; any row that contradicts the factor makes the whole run refused (ERROR).
    """
    ranks = sorted({d["rank"] for d in devices})
    n = len(ranks)
    factor = 2 * (n - 1) / n if n >= 2 and ranks == list(range(n)) else None
    for lineno, alg, bus in rows_bw:
        a, b = float(alg), float(bus)
        ha, hb = _half_unit(alg), _half_unit(bus)
        if a - ha <= 0:
            continue  # 0.00: the row says nothing about the ratio
        low, high = max(0.0, b - hb) / (a + ha), (b + hb) / (a - ha)
        if factor is not None and not low - 1e-9 <= factor <= high + 1e-9:
            return (f"line {lineno}: busbw/algbw {bus}/{alg} is not all_reduce_perf's 2(n-1)/n = {factor:.3f} "
                    f"for the {n} ranks listed (the output of another collective?)")
        if factor is None and high < 1 - 1e-9:
            return (f"line {lineno}: busbw/algbw {bus}/{alg} is below 1, and all_reduce_perf's 2(n-1)/n is at "
                    "least 1 (the output of reduce_scatter, all_gather or alltoall?)")
    return None


def parse_all_reduce_perf(text: str) -> dict:
    """Parse an ``all_reduce_perf`` (nccl-tests) run.

    Handles the current layout (``root`` and ``#wrong`` columns) and the legacy one (no ``root``,
    float ``error`` column), rank-prefixed lines and NCCL INFO lines interleaved with the table.

    Returns ``{"format", "rows": [{"size", "count", "type", "redop", "out_of_place": {"time",
    "algbw", "busbw", "wrong"|"error"}, "in_place": {...}}], "avg_busbw", "out_of_bounds",
    "out_of_bounds_ok", "wrong", "devices": [{"rank", "host", "device", "name"}]}``. ``wrong`` is the
    sum of the ``#wrong`` cells that hold a number (current) or the out-of-bounds count (legacy), plus
    any ``Bitwise mismatches``; ``None`` when no cell was checked (``-c 0``: every cell ``N/A``).
    ``unchecked`` counts the ``N/A`` cells; ``faults`` keeps the ``NCCL WARN`` / ``# error`` /
    ``Test failure`` lines seen once the table started. Every number must be finite: ``nan``/``inf``
    or a word in a number column raises ParseError.

    Only all_reduce_perf's output is read; another collective's raises ParseError: a program named in
    a ``# Collective test`` line other than ``all_reduce_perf`` (nccl-tests 2.17 and later), a row whose
    redop is ``none`` (all_gather, alltoall, broadcast, gather, scatter) or whose root is not -1
    (broadcast, reduce), a legacy header without the redop column or with a root column, or a row whose
    busbw/algbw cannot be all-reduce's factor (see ``_collective_problem``: reduce_scatter, all_gather,
    alltoall). sendrecv_perf between two ranks (busbw = algbw, as all-reduce's over two ranks) cannot
    be told apart where the output does not name its program.

    Work at risk: the gate's PASS admits a node to jobs. Refused: output the parser does not fully understand
    (truncated, foreign, another collective, a number that is not finite) raises ParseError, which the
    gate reports as an ERROR, never a PASS.
    """
    if not text or not text.strip():
        raise ParseError("all_reduce_perf: empty output")
    layout = None
    rows: list[dict] = []
    avg = None
    oob = None
    oob_ok = None
    devices = []
    bitwise = None
    faults: list[str] = []
    rows_bw: list[tuple[int, str, str]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _strip_prefix(raw).rstrip()
        if not line.strip():
            continue
        stripped = line.strip()
        if layout is not None and _FAULT_RE.search(stripped):
            faults.append(stripped[:120])
            continue
        if m := _BITWISE_RE.match(stripped):
            mismatches = _count(m.group(1), "Bitwise mismatches", lineno)
            bitwise = (bitwise or 0) + (mismatches or (1 if m.group(2).upper() == "FAILED" else 0))
            continue
        if stripped.startswith("#"):
            if m := _PROGRAM_RE.match(stripped):
                if m.group(1) not in ALL_REDUCE_PROGRAMS:
                    raise ParseError(f"all_reduce_perf: line {lineno}: the output is {m.group(1)}'s "
                                     f"({stripped[:60]!r}), not all_reduce_perf's")
                continue
            if m := _AVG_RE.match(stripped):
                avg = _number(m.group(1), "Avg bus bandwidth", lineno)
                continue
            if m := _OOB_RE.match(stripped):
                oob, oob_ok = _count(m.group(1), "Out of bounds values", lineno), m.group(2).upper() != "FAILED"
                continue
            if m := _RANK_RE.match(stripped):
                devices.append({"rank": int(m.group(1)), "host": m.group(2), "device": int(m.group(3)),
                                "name": m.group(4).strip()})
                continue
            header = _layout_from_header(stripped.lstrip("#").split())
            if header:
                layout = header
            continue
        if layout is None or avg is not None:
            continue
        tokens = stripped.split()
        if not tokens[0].isdigit():
            continue  # NCCL INFO/WARN lines, launcher chatter
        if len(tokens) != layout["ncols"]:
            raise ParseError(
                f"all_reduce_perf: line {lineno} has {len(tokens)} columns, the header has {layout['ncols']}"
                " (truncated or mixed output)"
            )
        row = {"size": _count(tokens[0], "size", lineno), "count": _count(tokens[1], "count", lineno),
               "type": tokens[2], "redop": tokens[3]}
        if layout["has_redop"] and row["redop"].lower() == "none":
            raise ParseError(f"all_reduce_perf: line {lineno} has redop 'none': the output of a collective "
                             "without a reduction (all_gather, alltoall, broadcast), not all_reduce_perf's")
        if layout["has_root"] and layout["has_redop"] and tokens[4] != "-1":
            raise ParseError(f"all_reduce_perf: line {lineno} has root {tokens[4]}: the output of a rooted "
                             "collective (reduce, broadcast), not all_reduce_perf's")
        for placement, start, check in layout["blocks"]:
            block = {
                "time": _number(tokens[start], "time", lineno),
                "algbw": _number(tokens[start + 1], "algbw", lineno),
                "busbw": _number(tokens[start + 2], "busbw", lineno),
            }
            value = tokens[start + 3]
            if check == "wrong":
                block["wrong"] = None if value.upper() == "N/A" else _count(value, "#wrong", lineno)
            else:
                block["error"] = None if value.upper() == "N/A" else _number(value, "error", lineno)
            row[placement] = block
            rows_bw.append((lineno, tokens[start + 1], tokens[start + 2]))
        key = (row["type"], row["redop"])
        if any((r["type"], r["redop"]) == key and r["size"] >= row["size"] for r in rows):
            raise ParseError(f"all_reduce_perf: line {lineno}: size {row['size']} {key[0]} {key[1]} repeats or "
                             "goes backwards (duplicated or mixed output)")
        rows.append(row)
    if layout is None:
        raise ParseError("all_reduce_perf: no result table header (not nccl-tests output?)")
    if not layout["has_redop"] or (layout["format"] == "legacy" and layout["has_root"]):
        raise ParseError("all_reduce_perf: the table header is not all_reduce_perf's (size count type redop, "
                         f"{'and a root column' if layout['has_redop'] else 'no redop column'}): another collective")
    if not rows:
        raise ParseError("all_reduce_perf: result header but no result rows (truncated?)")
    if avg is None:
        raise ParseError(
            f"all_reduce_perf: no 'Avg bus bandwidth' line after {len(rows)} rows (truncated?)"
        )
    if oob is None:
        raise ParseError("all_reduce_perf: no 'Out of bounds values' line after the table (truncated?)")
    if problem := _collective_problem(rows_bw, devices):
        raise ParseError(f"all_reduce_perf: {problem}")
    unchecked = 0
    if layout["format"] == "current":
        counts = [r[p]["wrong"] for r in rows for p in ("out_of_place", "in_place")]
        known = [c for c in counts if c is not None]
        unchecked = len(counts) - len(known)
        wrong = sum(known) if known else None
    else:
        wrong = oob
    if oob_ok is False and not wrong:
        wrong = oob or 1
    if bitwise:
        wrong = (wrong or 0) + bitwise
    return {
        "unchecked": unchecked,
        "bitwise_mismatches": bitwise,
        "faults": faults,
        "format": layout["format"],
        "rows": rows,
        "avg_busbw": avg,
        "out_of_bounds": oob,
        "out_of_bounds_ok": oob_ok,
        "wrong": wrong,
        "devices": devices,
    }


# --------------------------------------------------------------------------------------------
# NCCL_DEBUG=INFO transport lines
# --------------------------------------------------------------------------------------------

_NCCL_LINE = re.compile(r"\bNCCL (?:INFO|WARN)\b")
_VIA_RE = re.compile(r"\bvia\s+(\S+)")
_INIT_RE = re.compile(r"NCCL INFO NET/(\w+)\s*:\s*Using\s+(.*)$")
_USING_NETWORK_RE = re.compile(r"NCCL INFO Using network (\S+)")
_GDR_SUMMARY_RE = re.compile(r"Connected all rings.*\bGDR\s+(\d)")


def _classify_via(path: str) -> str:
    """Map a ``via`` path (``NET/IB/4/GDRDMA``, ``NET/IBext_v8/7``, ``NET/Socket/0``, ``P2P/IPC``) to a kind.
    """
    head = path.split("/")
    if head[0] == "NET" and len(head) > 1:
        name = head[1].lower()
        if name.startswith("ib"):
            return "ib"
        if name.startswith("socket"):
            return "socket"
        return "net_other"
    if head[0] in ("P2P", "SHM", "NVLS", "CollNet", "COLLNET"):
        return head[0].lower()
    return "other"


def parse_transports(text: str) -> dict:
    """Summarise the transports in NCCL_DEBUG=INFO output.

    Returns ``{"channels": {kind: count}, "net": "ib"|"socket"|"mixed"|"other"|None, "gdr":
    True|False|None, "net_init": {"IB": [...], "Socket": [...]}, "networks": [...]}``.

    ``net`` comes from the ``via NET/...`` channel lines when there are any (they say what carried
    the data), else from ``Using network X``, else from the ``NET/IB : Using`` init lines (IB wins:
    NCCL initialises Socket as well). ``gdr`` is True when a NET/IB channel ends in ``/GDRDMA``, False
    when IB channels run without it or the ring summary says ``GDR 0``. Raises ParseError when the text
    holds no NCCL INFO line at all.
    """
    if not text or not text.strip():
        raise ParseError("NCCL_DEBUG: empty output")
    channels: dict[str, int] = {}
    net_init: dict[str, list[str]] = {}
    networks: list[str] = []
    ib_gdr = ib_plain = 0
    gdr_summary = None
    seen = False
    for raw in text.splitlines():
        if not _NCCL_LINE.search(raw):
            continue
        seen = True
        if m := _VIA_RE.search(raw):
            kind = _classify_via(m.group(1))
            channels[kind] = channels.get(kind, 0) + 1
            if kind == "ib":
                if m.group(1).upper().endswith("/GDRDMA"):
                    ib_gdr += 1
                else:
                    ib_plain += 1
            continue
        if m := _INIT_RE.search(raw):
            ifaces = re.findall(r"\[\d+\]([^\s;]+?)(?::<\d+>)?(?=[\s;]|$)", m.group(2))
            known = net_init.setdefault(m.group(1), [])
            known.extend(i for i in ifaces if i not in known)
            continue
        if m := _USING_NETWORK_RE.search(raw):
            if m.group(1) not in networks:
                networks.append(m.group(1))
            continue
        if m := _GDR_SUMMARY_RE.search(raw):
            gdr_summary = m.group(1) == "1"
    if not seen:
        raise ParseError("NCCL_DEBUG: no 'NCCL INFO' lines (NCCL_DEBUG=INFO not set, or not NCCL output)")
    net_kinds = [k for k in ("ib", "socket", "net_other") if channels.get(k)]
    if len(net_kinds) > 1:
        net = "mixed"
    elif net_kinds:
        net = "other" if net_kinds[0] == "net_other" else net_kinds[0]
    elif networks:
        name = networks[-1].lower()
        net = "ib" if name.startswith("ib") else "socket" if name.startswith("socket") else "other"
    elif "IB" in net_init:
        net = "ib"
    elif "Socket" in net_init:
        net = "socket"
    else:
        net = None
    if ib_gdr and not ib_plain:
        gdr = True
    elif ib_gdr:
        gdr = None  # some IB channels with GDR, some without
    elif ib_plain:
        gdr = False
    else:
        gdr = gdr_summary
    if gdr_summary is False and ib_gdr:
        gdr = None  # contradicting lines: do not claim either way
    return {"channels": channels, "net": net, "gdr": gdr, "net_init": net_init, "networks": networks}
