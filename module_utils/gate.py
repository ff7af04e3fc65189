"""Health-gate verdicts: pure functions shared by the gpu_gate, rdma_gate and nccl_gate modules.

A gate check ends in one of three verdicts:

* ``PASS``  - the node did what the profile expects; it may be admitted.
* ``FAIL``  - hardware or fabric is wrong (too little bandwidth, a link down, ECC errors, Socket
  fallback where IB is expected, corrupted results). The node stays out, with the reason.
* ``ERROR`` - the test itself broke (command missing, timeout, unparsable output, a non-zero exit
  without results, no threshold to judge against). The node stays out and is retried; it is never
  blamed for it.

Every verdict is a plain dict (JSON-friendly, so modules return it unchanged)::

    {"verdict": "FAIL", "reason": "nccl: busbw 5.5 GB/s < 98 GB/s", "figures": {...}}

Reasons are short and specific and start with the check's name (``nccl:``, ``rdma:``, ``gpu:``);
the caller adds the toolkit tag.
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections.abc import Iterable, Mapping

PASS = "PASS"
FAIL = "FAIL"
ERROR = "ERROR"
VERDICTS = (PASS, FAIL, ERROR)


class ParseError(ValueError):
    """Raised by every parser for truncated, empty or foreign input (never a silent pass)."""


class FaultSeen(ParseError):
    """Raised by a parser whose input, though not a result table, proves a fault on the node (the
    tool says the NVIDIA driver is not loaded, for example): a FAIL, not an ERROR."""


def finite(text, what: str) -> float:
    """``float(text)``, or ParseError when it is not a number or not finite (``nan``, ``inf``)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ParseError(f"{what} {text!r} is not a number") from None
    if math.isnan(value) or math.isinf(value):
        raise ParseError(f"{what} {text!r} is not a finite number")
    return value


def count(text, what: str) -> int:
    """``int(text)`` of a decimal count, or ParseError (``two``, ``1.5``, ``-1``)."""
    text = str(text).strip()
    if not text.isdigit():
        raise ParseError(f"{what} {text!r} is not a count")
    return int(text)


class ProfileError(ValueError):
    """Raised when no threshold profile fits the hardware (or a named one is missing)."""


def verdict(status: str, reason: str = "", figures: Mapping | None = None) -> dict:
    """Build one verdict dict; ``reason`` is required for FAIL and ERROR."""
    if status not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {status!r}")
    if status != PASS and not reason:
        raise ValueError(f"a {status} verdict needs a reason")
    return {"verdict": status, "reason": reason, "figures": dict(figures or {})}


def combine(results: Iterable[Mapping], figures: Mapping | None = None) -> dict:
    """Fold several check verdicts into one.

    FAIL wins over ERROR (a proven hardware fault is the node's, whatever else broke), ERROR wins over
    PASS. The reason joins the distinct reasons of the checks that decided the verdict with ``"; "``.
    """
    results = list(results)
    merged_figures = dict(figures or {})
    for status in (FAIL, ERROR):
        reasons = list(dict.fromkeys(r["reason"] for r in results if r["verdict"] == status))
        if reasons:
            return verdict(status, "; ".join(reasons), merged_figures)
    return verdict(PASS, "", merged_figures)


def fmt_gbps(value: float) -> str:
    """Format a rate that is compared with nothing (a NIC speed in a message): 5.4, 98, 465.3."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def fmt_figures(value, limit, decimals: int = 2, most: int = 9) -> tuple[str, str]:
    """Texts of a measured figure and the threshold it is judged against, with the same number of
    decimals: two, or more where two would print different numbers alike. A reason must show the
    comparison it states, so ``0.996 < 1`` prints ``0.996 < 1.000``, never ``1.00 < 1.00`` (rounding is
    monotone: the first precision that tells them apart keeps their order). Either may be None (``""``).
    """
    if value is None or limit is None:
        return ("" if value is None else f"{float(value):.{decimals}f}",
                "" if limit is None else f"{float(limit):.{decimals}f}")
    value, limit = float(value), float(limit)
    for places in range(decimals, most + 1):
        texts = (f"{value:.{places}f}", f"{limit:.{places}f}")
        if texts[0] != texts[1] or value == limit:
            return texts
    return repr(value), repr(limit)


def below(what: str, value, limit, unit: str) -> str:
    """``"<what> 0.94 Gb/s < 1.00 Gb/s"``: a FAIL reason for a figure under its threshold."""
    shown, bound = fmt_figures(value, limit)
    return f"{what} {shown} {unit} < {bound} {unit}"


# --------------------------------------------------------------------------------------------
# Threshold profiles (data lives in gate_profiles.py; a site merges its own on top)
# --------------------------------------------------------------------------------------------


def merge_profiles(defaults: Mapping, overrides: Mapping | None) -> dict:
    """Return defaults with a site's profiles merged on top.

    A site profile with a new name is added; one with an existing name is merged key by key (so an
    inventory can lower one threshold of a shipped profile). ``match`` is replaced, not merged.
    """
    merged = copy.deepcopy(dict(defaults))
    for name, profile in (overrides or {}).items():
        if not isinstance(profile, Mapping):
            raise ProfileError(f"profile {name!r} must be a mapping, got {type(profile).__name__}")
        base = merged.get(name, {})
        base.update(copy.deepcopy(dict(profile)))
        merged[name] = base
    return merged


def _profile_matches(match: Mapping, gpu_model, gpu_count, nic_rate_gbps) -> int | None:
    """Return how many match keys hit (the specificity), or None when one key contradicts."""
    hits = 0
    model_re = match.get("gpu_model")
    if model_re is not None:
        if not gpu_model or not re.search(model_re, str(gpu_model), re.IGNORECASE):
            return None
        hits += 1
    for key, actual in (("gpu_count", gpu_count), ("nic_rate_gbps", nic_rate_gbps)):
        wanted = match.get(key)
        if wanted is None:
            continue
        if actual is None or float(actual) != float(wanted):
            return None
        hits += 1
    return hits


def select_profile(
    profiles: Mapping,
    gpu_model: str | None = None,
    gpu_count: int | None = None,
    nic_rate_gbps: float | None = None,
    name: str | None = None,
) -> tuple[str, dict]:
    """Pick the threshold profile for this hardware; return ``(name, profile)``.

    ``name`` selects a profile explicitly. Otherwise every profile's ``match`` (``gpu_model`` a
    case-insensitive regex searched in the NVML name, ``gpu_count``, ``nic_rate_gbps``) is tried and
    the most specific full match wins; a tie between equally specific profiles is an error, as is no
    match at all (a gate without a threshold cannot judge).
    """
    if name:
        if name not in profiles:
            raise ProfileError(f"profile {name!r} is not defined (known: {', '.join(sorted(profiles))})")
        return name, dict(profiles[name])
    scored = []
    for pname, profile in profiles.items():
        match = profile.get("match") or {}
        if not match:
            continue
        hits = _profile_matches(match, gpu_model, gpu_count, nic_rate_gbps)
        if hits is not None:
            scored.append((hits, pname))
    if not scored:
        hw = f"{gpu_count if gpu_count is not None else '?'}x {gpu_model or 'unknown GPU'}"
        if nic_rate_gbps is not None:
            hw += f" with {fmt_gbps(float(nic_rate_gbps))} Gb/s NICs"
        raise ProfileError(f"no threshold profile matches {hw}")
    scored.sort(key=lambda item: (-item[0], item[1]))
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        raise ProfileError(
            f"profiles {scored[0][1]!r} and {scored[1][1]!r} match equally; name one with profile"
        )
    best = scored[0][1]
    return best, dict(profiles[best])


def profile_for(profiles: Mapping, name: str | None = None, gpu_model: str | None = None,
                gpu_count: int | None = None, nic_rate_gbps: float | None = None) -> tuple[str, dict]:
    """The gate profile for this node: by ``name``, else by model and count, else by model alone.

    The model-only fallback lets a node that lost a GPU (7 of 8) still be judged by its profile, so
    that the missing GPU is a FAIL against the profile's ``gpu_count`` rather than "no profile".
    """
    try:
        return select_profile(profiles, gpu_model, gpu_count, nic_rate_gbps, name=name)
    except ProfileError:
        if name or not gpu_model:
            raise
        hits = sorted(pname for pname, profile in profiles.items()
                      if (profile.get("match") or {}).get("gpu_model")
                      and re.search(profile["match"]["gpu_model"], str(gpu_model), re.IGNORECASE))
        if len(hits) != 1:
            raise
        return hits[0], dict(profiles[hits[0]])


# --------------------------------------------------------------------------------------------
# NCCL verdict
# --------------------------------------------------------------------------------------------

NCCL_DEFAULT_MIN_SIZE = 1 << 30  # 1 GiB: below this, latency still dominates all_reduce
NCCL_DEFAULT_FALLBACK_ROWS = 2


def large_message_busbw(
    rows: list[dict],
    min_size: int = NCCL_DEFAULT_MIN_SIZE,
    fallback_rows: int = NCCL_DEFAULT_FALLBACK_ROWS,
    placement: str = "out_of_place",
) -> tuple[float, list[int]]:
    """Mean bus bandwidth (GB/s) of the large messages, and the sizes it used.

    Uses every row with ``size >= min_size``; when the sweep stopped below that, the
    ``fallback_rows`` largest sizes. The ``Avg bus bandwidth`` line is not used: it averages every
    size, so small, latency-bound messages dominate it.
    """
    if not rows:
        raise ParseError("no result rows to take the bus bandwidth from")
    large = [r for r in rows if r["size"] >= min_size]
    if not large:
        large = sorted(rows, key=lambda r: r["size"])[-max(1, fallback_rows):]
    values = [r[placement]["busbw"] for r in large]
    return sum(values) / len(values), sorted(r["size"] for r in large)


def transport_check(transports: Mapping, expect: str, mode: str, require_gdr: bool = False) -> dict:
    """Judge the NCCL network transport (from ``nccl.parse_transports``) against the expectation.

    ``expect`` is ``ib``, ``socket`` or ``any``. A Socket fallback where IB is expected is a FAIL.
    In ``single`` mode no network transport is needed, so only a transport that *is* seen is judged.
    In ``pair`` mode with ``expect=ib`` no transport line at all is an ERROR (NCCL_DEBUG=INFO missing
    or the output cut), never a pass.
    """
    net = transports.get("net")
    figures = {"transport": net, "gdr": transports.get("gdr")}
    if expect == "any":
        return verdict(PASS, "", figures)
    if net is None:
        if mode == "pair":
            return verdict(ERROR, "nccl: no NET transport lines (is NCCL_DEBUG=INFO set?)", figures)
        return verdict(PASS, "", figures)
    if expect == "ib":
        if net != "ib":
            sock = transports.get("channels", {}).get("socket", 0)
            detail = f" ({sock} channels)" if sock else ""
            return verdict(FAIL, f"nccl: transport {net}{detail}, expected IB", figures)
        if require_gdr and transports.get("gdr") is not True:
            return verdict(FAIL, "nccl: IB without GPUDirect RDMA (GDR 0)", figures)
        return verdict(PASS, "", figures)
    if expect == "socket":
        if net != "socket":
            return verdict(FAIL, f"nccl: transport {net}, expected Socket", figures)
        return verdict(PASS, "", figures)
    raise ValueError(f"expect must be ib, socket or any, got {expect!r}")


def nccl_verdict(
    perf: Mapping,
    min_busbw_gbps: float,
    min_size: int = NCCL_DEFAULT_MIN_SIZE,
    fallback_rows: int = NCCL_DEFAULT_FALLBACK_ROWS,
) -> dict:
    """Judge a parsed all_reduce_perf run (``nccl.parse_all_reduce_perf``).

    FAIL when any result was wrong (``#wrong`` > 0, out-of-bounds values, bitwise mismatches), NCCL
    or nccl-tests reported a fault with the results (``NCCL WARN``, ``# error``), or the large-message
    out-of-place bus bandwidth is below ``min_busbw_gbps``. ERROR when the results were not checked
    (``-c 0``: ``#wrong`` N/A), wholly or in part.
    """
    busbw, sizes = large_message_busbw(perf["rows"], min_size, fallback_rows)
    peak = max(r["out_of_place"]["busbw"] for r in perf["rows"])
    figures = {
        "busbw_large_gbps": round(busbw, 2),
        "busbw_peak_gbps": peak,
        "avg_busbw_gbps": perf.get("avg_busbw"),
        "sizes_used": sizes,
        "wrong": perf.get("wrong"),
        "min_busbw_gbps": min_busbw_gbps,
        "format": perf.get("format"),
    }
    figures["unchecked"] = perf.get("unchecked", 0)
    checks = []
    if perf.get("wrong"):
        checks.append(verdict(FAIL, f"nccl: {perf['wrong']} wrong results"))
    for line in perf.get("faults") or []:
        checks.append(verdict(FAIL, f"nccl: fault reported with the results: {line[:100]}"))
    if perf.get("wrong") is None:
        checks.append(verdict(ERROR, "nccl: results not checked (#wrong N/A: run with -c 1)"))
    elif perf.get("unchecked"):
        checks.append(verdict(ERROR, f"nccl: {perf['unchecked']} #wrong cells N/A (results not all checked)"))
    if busbw < min_busbw_gbps:
        checks.append(verdict(FAIL, below("nccl: busbw", busbw, min_busbw_gbps, "GB/s")))
    return combine(checks, figures)


# --------------------------------------------------------------------------------------------
# Pairwise blame
# --------------------------------------------------------------------------------------------


def _normalise_pairs(results) -> list[tuple[tuple[str, str], str]]:
    """Accept ``{("a","b"): "PASS"}``, ``{"a,b": "FAIL"}`` or ``[{"nodes": [a, b], "verdict": ...}]``."""
    items = []
    if isinstance(results, Mapping):
        for key, status in results.items():
            nodes = key.split(",") if isinstance(key, str) else list(key)
            items.append((nodes, status))
    else:
        for entry in results:
            items.append((list(entry["nodes"]), entry["verdict"]))
    out = []
    for nodes, status in items:
        if isinstance(status, Mapping):
            status = status["verdict"]
        nodes = [str(n).strip() for n in nodes]
        if len(nodes) != 2 or nodes[0] == nodes[1]:
            raise ValueError(f"a pair names two different nodes, got {nodes}")
        status = str(status).upper()
        if status not in VERDICTS:
            raise ValueError(f"pair {nodes[0]},{nodes[1]}: verdict must be one of {VERDICTS}, got {status}")
        out.append(((nodes[0], nodes[1]), status))
    return out


def propose_retests(first_pass, known_good: Iterable[str] = ()) -> dict:
    """Plan the second pass of a pairwise test.

    Every node of a FAILed pair is a suspect unless it is known good (given, or passed with some
    partner in this pass). A suspect whose first-pass partner was known good is blamed at once; the
    others are each paired with a known-good partner. Partners are spread round-robin and ``round``
    groups the re-tests so that no node runs twice in one round. ERROR pairs are re-run as they were
    (the test broke; nobody is suspected).

    Returns ``{"retests": [{"nodes": [suspect, partner], "suspect", "partner", "round"}],
    "blamed": {node: reason}, "unresolved": [nodes without any known-good partner], "rerun": [[a, b]],
    "good": [known-good nodes after this pass]}``.
    """
    pairs = _normalise_pairs(first_pass)
    good = set(known_good)
    for (a, b), status in pairs:
        if status == PASS:
            good.update((a, b))
    blamed: dict[str, str] = {}
    suspects: set[str] = set()
    rerun = []
    for (a, b), status in pairs:
        if status == ERROR:
            rerun.append([a, b])
        if status != FAIL:
            continue
        for node, partner in ((a, b), (b, a)):
            if node in good:
                continue
            if partner in good:
                blamed[node] = f"pair: failed with known-good {partner}"
            else:
                suspects.add(node)
    partners = sorted(good)
    retests, unresolved = [], []
    if not partners:
        unresolved = sorted(suspects)
    else:
        for i, suspect in enumerate(sorted(suspects)):
            partner = partners[i % len(partners)]
            retests.append({"nodes": [suspect, partner], "suspect": suspect, "partner": partner,
                            "round": i // len(partners)})
    return {"retests": retests, "blamed": blamed, "unresolved": unresolved, "rerun": rerun,
            "good": partners}


def blame(first_pass, second_pass, known_good: Iterable[str] = ()) -> dict:
    """Turn both passes of a pairwise test into a verdict per node.

    * a node in a PASSed first-pass pair: PASS;
    * a node that failed with a known-good partner (either pass): FAIL;
    * a suspect that passed with its known-good partner: PASS (its first-pass partner is to blame);
    * both nodes of a failed pair passing with known-good partners: ERROR (inconclusive, retried);
    * a suspect without a known-good partner or second-pass result: ERROR;
    * an ERROR pair (the test broke) is judged by its re-run in the second pass: PASS passes both; FAIL
      blames a node whose partner is known good and otherwise blames nobody (ERROR); a re-run that broke
      too, or never ran, leaves both ERROR.

    Known-good partners are trusted: a suspect that fails with one is blamed.
    Returns ``{node: {"verdict", "reason"}}`` for every node named in the first pass.
    """
    first = _normalise_pairs(first_pass)
    plan = propose_retests(first_pass, known_good)
    second = dict(_normalise_pairs(second_pass or []))

    def second_result(suspect, partner):
        return second.get((suspect, partner)) or second.get((partner, suspect))

    out: dict[str, dict] = {}
    for (a, b), status in first:
        for node in (a, b):
            if status == PASS:
                out[node] = {"verdict": PASS, "reason": ""}
            elif status == ERROR and node not in out:
                out[node] = {"verdict": ERROR, "reason": f"pair: test {a},{b} broke; re-run"}
    good = set(plan["good"])
    for a, b in plan["rerun"]:
        result = second_result(a, b)
        for node, partner in ((a, b), (b, a)):
            if result == PASS or (result == FAIL and node in good):  # a good node's fault was its partner's
                out[node] = {"verdict": PASS, "reason": ""}
            elif result == FAIL:
                out[node] = ({"verdict": FAIL, "reason": f"pair: re-run failed with known-good {partner}"}
                             if partner in good else
                             {"verdict": ERROR, "reason": f"pair: {a},{b} broke, then failed; no known-good partner"})
            elif result in (None, ERROR) and out.get(node, {}).get("verdict") != PASS:
                out[node] = {"verdict": ERROR, "reason": f"pair: test {a},{b} broke twice; re-run the gate"}
    for node, reason in plan["blamed"].items():
        out[node] = {"verdict": FAIL, "reason": reason}
    for node in plan["unresolved"]:
        out[node] = {"verdict": ERROR, "reason": "pair: failed, no known-good partner to isolate it"}
    for t in plan["retests"]:
        suspect, partner = t["suspect"], t["partner"]
        result = second_result(suspect, partner)
        if result is None or result == ERROR:
            out[suspect] = {"verdict": ERROR, "reason": f"pair: re-test with {partner} did not complete"}
        elif result == FAIL:
            out[suspect] = {"verdict": FAIL, "reason": f"pair: failed with known-good {partner}"}
        else:
            out[suspect] = {"verdict": PASS, "reason": ""}
    # A known-good node whose only pairs failed: the fault was its partner's.
    for (a, b), _status in first:
        for node in (a, b):
            if node not in out and node in plan["good"]:
                out[node] = {"verdict": PASS, "reason": ""}
    # A failed first-pass pair whose suspects both passed with known-good partners is unexplained.
    for (a, b), status in first:
        if status == FAIL and a not in plan["blamed"] and b not in plan["blamed"]:
            both_passed_retests = all(
                out.get(n, {}).get("verdict") == PASS and n not in set(known_good) for n in (a, b)
            )
            if both_passed_retests and {a, b} <= {t["suspect"] for t in plan["retests"]}:
                for n in (a, b):
                    out[n] = {"verdict": ERROR,
                              "reason": f"pair: {a},{b} failed but both passed with known-good partners"}
    return out


# --------------------------------------------------------------------------------------------
# RDMA verdicts
# --------------------------------------------------------------------------------------------


def rdma_ports_verdict(
    ports: list[dict],
    devices: list[str] | None = None,
    expected_rate_gbps: float | None = None,
    link_layer: str | None = None,
    expected_ports: int | None = None,
) -> dict:
    """Every expected HCA port Active / LinkUp at the expected rate, on the expected link layer.

    ``devices`` names the CAs (``mlx5_0``) or single ports (``mlx5_0:1``) that must be up; a named
    device that is absent, or on another link layer than ``link_layer``, is a FAIL. When ``devices``
    is empty, the ports on ``link_layer`` (all ports when it is None) are judged and there must be at
    least ``expected_ports`` of them (7 of 8 is a FAIL naming the port on the wrong layer, if any).

    Fail closed: no ``expected_rate_gbps``, or neither ``devices`` nor ``expected_ports``, is an
    ERROR (nothing to judge against), as is a rate the tool did not print (ibv_devinfo without -v).
    """
    checked = []
    problems: list[str] = []
    errors: list[str] = []

    def layer_ok(p):
        return not link_layer or (p.get("link_layer") or "").lower() == link_layer.lower()

    if devices:
        for want in devices:
            ca, _, port = want.partition(":")
            hits = [p for p in ports if p["ca"] == ca and (not port or str(p["port"]) == port)]
            if not hits:
                problems.append(f"{want} missing")
            checked.extend(hits)
    else:
        checked = [p for p in ports if layer_ok(p)]
        if expected_ports is None:
            errors.append("no expected port count (name devices, or set the profile's rdma_ports)")
        elif len(checked) < int(expected_ports):
            other = [f"{p['ca']}/{p['port']} is {p.get('link_layer') or 'unknown'}"
                     for p in ports if not layer_ok(p)]
            what = f"{link_layer} ports" if link_layer else "ports"
            problems.append(f"{len(checked)} of {expected_ports} {what}"
                            + (f" ({', '.join(other)})" if other else ""))
    if expected_rate_gbps is None:
        errors.append("no expected port rate (set expected_rate_gbps or the profile's nic_rate_gbps)")
    for p in checked:
        label = f"{p['ca']}/{p['port']}"
        if devices and not layer_ok(p):
            problems.append(f"{label} link layer {p.get('link_layer') or 'unknown'}, expected {link_layer}")
            continue
        phys = p.get("physical_state")
        if p["state"] != "Active" or (phys is not None and phys != "LinkUp"):
            problems.append(f"{label} {p['state']}/{phys}" if phys else f"{label} {p['state']}")
            continue
        if expected_rate_gbps is not None:
            rate = p.get("rate_gbps")
            if rate is None:
                errors.append(f"{label} rate not reported (ibv_devinfo needs -v)")
            elif rate < float(expected_rate_gbps):
                width = f" ({p['width']})" if p.get("width") else ""
                problems.append(below(f"{label} rate", rate, expected_rate_gbps, "Gb/s") + width)
    figures = {
        "ports": [{k: p.get(k) for k in ("ca", "port", "state", "physical_state", "rate_gbps", "link_layer")}
                  for p in checked],
        "active": sum(1 for p in checked if p["state"] == "Active"),
        "expected_rate_gbps": expected_rate_gbps,
        "expected_ports": expected_ports,
        "expected_link_layer": link_layer,
    }
    if problems:
        return verdict(FAIL, "rdma: " + ", ".join(problems), figures)
    if errors:
        return verdict(ERROR, "rdma: " + ", ".join(errors), figures)
    return verdict(PASS, "", figures)


def ib_write_bw_verdict(parsed: Mapping, min_gbps: float) -> dict:
    """Pairwise ``ib_write_bw``: average bandwidth of the largest size against ``min_gbps`` (Gb/s)."""
    bw = parsed["bw_avg_gbps"]
    figures = {"ib_write_bw_gbps": bw, "ib_write_bw_min_gbps": min_gbps, "device": parsed.get("device")}
    if bw < float(min_gbps):
        reason = below("rdma: ib_write_bw", bw, min_gbps, "Gb/s")
        return verdict(FAIL, reason, figures)
    return verdict(PASS, "", figures)


# --------------------------------------------------------------------------------------------
# GPU verdicts
# --------------------------------------------------------------------------------------------


def _gpu_label(gpu: Mapping) -> str:
    return f"GPU{gpu.get('index', '?')}"


def gpu_inventory_verdict(gpus: list[Mapping], expected_count: int | None = None,
                          expected_model: str | None = None) -> dict:
    """Count and model. ``expected_model`` is a case-insensitive regex searched in each GPU's name.
    Without an expected count the check is an ERROR (zero GPUs seen proves nothing either way)."""
    names = sorted({str(g.get("name", "")) for g in gpus})
    figures = {"gpu_count": len(gpus), "gpu_models": names, "gpu_expected_count": expected_count}
    checks = []
    if expected_count is None:
        checks.append(verdict(ERROR, f"gpu: {len(gpus)} GPUs seen, no expected count to judge against "
                                     "(set expected_count or a profile with gpu_count)"))
    elif len(gpus) != int(expected_count):
        checks.append(verdict(FAIL, f"gpu: {len(gpus)} GPUs, expected {expected_count}"))
    if expected_model:
        wrong = [g for g in gpus if not re.search(expected_model, str(g.get("name", "")), re.IGNORECASE)]
        if wrong:
            checks.append(verdict(FAIL, f"gpu: {_gpu_label(wrong[0])} is {wrong[0].get('name')!r}, "
                                        f"expected {expected_model!r}"
                                        + (f" (+{len(wrong) - 1} more)" if len(wrong) > 1 else "")))
    return combine(checks, figures)


def gpu_health_verdict(gpus: list[Mapping], max_retired_pages: int = 60) -> dict:
    """ECC (volatile uncorrectable), retired pages (pending, or too many DBE) and row remapping.

    Keys that a GPU lacks or holds ``None`` for (NVML said "not supported") are skipped and listed in
    the figures as ``not_supported``, except the ECC counter: unreadable on every GPU is an ERROR
    (nothing to judge), on some GPUs only a FAIL naming them; no GPU at all is an ERROR.
    """
    problems: list[str] = []
    unsupported: set[str] = set()
    for g in gpus:
        label = _gpu_label(g)
        for key in ("ecc_uncorrected_volatile", "retired_pages_pending", "retired_pages_dbe",
                    "remap_pending", "remap_failure"):
            if g.get(key) is None:
                unsupported.add(key)
        if g.get("ecc_uncorrected_volatile"):
            problems.append(f"{label} {g['ecc_uncorrected_volatile']} uncorrectable ECC errors (volatile)")
        if g.get("retired_pages_pending"):
            problems.append(f"{label} page retirement pending (reset needed)")
        if g.get("retired_pages_dbe") is not None and g["retired_pages_dbe"] >= max_retired_pages:
            problems.append(f"{label} {g['retired_pages_dbe']} retired pages >= {max_retired_pages}")
        if g.get("remap_failure"):
            problems.append(f"{label} row remapping failed")
        if g.get("remap_pending"):
            problems.append(f"{label} row remap pending (reset needed)")
    figures = {
        "ecc_uncorrected_volatile": {_gpu_label(g): g.get("ecc_uncorrected_volatile") for g in gpus},
        "not_supported": sorted(unsupported),
    }
    no_ecc = [_gpu_label(g) for g in gpus if g.get("ecc_uncorrected_volatile") is None]
    if gpus and no_ecc and len(no_ecc) < len(gpus):
        problems.append(f"{', '.join(no_ecc)} ECC counters unreadable while the other GPUs report them")
    if problems:
        return verdict(FAIL, "gpu: " + ", ".join(problems), figures)
    if not gpus:
        return verdict(ERROR, "gpu: no GPU to read health figures from", figures)
    if no_ecc:
        return verdict(ERROR, "gpu: ECC counters not supported on any GPU (ECC off?); memory health "
                              "cannot be judged", figures)
    return verdict(PASS, "", figures)


def nvlink_verdict(gpus: list[Mapping], expected_per_gpu: int | None = None,
                   expected_gpus: int | None = None) -> dict:
    """NVLink links active. Each entry has ``index`` and ``links`` (``{link: speed or None}``, as from
    ``nvidia_smi.parse_nvlink_status``) or ``nvlinks_active`` / ``nvlinks_inactive`` (from NVML).

    FAIL when a GPU has an inactive link, all links inactive, fewer active links than
    ``expected_per_gpu`` (a GPU header with no link lines has none), or when fewer GPUs than
    ``expected_gpus`` are reported (output cut after GPU5). ERROR when there is no expected
    link count to judge against, or no GPU at all and no expected GPU count.
    """
    figures = {"nvlinks_active": {}, "nvlinks_expected_per_gpu": expected_per_gpu}
    if expected_per_gpu is None:
        return verdict(ERROR, "nvlink: no expected link count per GPU (set expected_nvlinks or the "
                              "profile's nvlinks_per_gpu)", figures)
    expected_per_gpu = int(expected_per_gpu)
    problems = []
    if expected_gpus is not None and len(gpus) < int(expected_gpus):
        seen = {g.get("index") for g in gpus}
        absent = [f"GPU{i}" for i in range(int(expected_gpus)) if i not in seen]
        problems.append(f"{', '.join(absent) or 'some GPUs'} not reported ({len(gpus)} of {expected_gpus} GPUs)")
    elif not gpus:
        return verdict(ERROR, "nvlink: no GPU in the output and no expected GPU count", figures)
    for g in gpus:
        label = _gpu_label(g)
        if "links" in g:
            active = sum(1 for v in g["links"].values() if v)
            inactive = sorted(k for k, v in g["links"].items() if not v)
            reported = bool(g["links"]) or bool(g.get("all_inactive"))
        else:
            reported = g.get("nvlinks_active") is not None
            active, inactive = g.get("nvlinks_active") or 0, list(g.get("nvlinks_inactive") or [])
        figures["nvlinks_active"][label] = active
        if expected_per_gpu == 0:
            continue
        if g.get("all_inactive"):
            problems.append(f"{label} all links inactive")
        elif inactive:
            problems.append(f"{label} link{'s' if len(inactive) > 1 else ''} "
                            f"{','.join(str(i) for i in inactive)} inactive")
        elif not reported:
            problems.append(f"{label} no NVLink reported (0/{expected_per_gpu})")
        elif active < expected_per_gpu:
            problems.append(f"{label} {active}/{expected_per_gpu} links active")
    if problems:
        return verdict(FAIL, "nvlink: " + ", ".join(problems), figures)
    return verdict(PASS, "", figures)


# Sections each ``dcgmi diag -r`` level runs (DCGM user guide, "Run Levels"): every one must be in the
# output with at least one test that ran (not Skip).
DCGM_LEVEL_SECTIONS = {
    1: ("Deployment",),
    2: ("Deployment", "Integration", "Hardware"),
    3: ("Deployment", "Integration", "Hardware", "Stress"),
    4: ("Deployment", "Integration", "Hardware", "Stress"),
}


def dcgm_verdict(parsed: Mapping, level: int | None = None) -> dict:
    """``dcgmi diag`` (``dcgm.parse_dcgmi_diag``), failing closed.

    * FAIL: any test (or any GPU of a test) says Fail; the reason names the test and the GPUs.
    * ERROR: a result word that is not Pass/Fail/Warn/Skip (``Not Run``, empty, unknown), an
      ``Error`` row, a section the ``level`` runs that is missing or has no test that ran (all Skip),
      no GPU test that ran (every Integration, Hardware and Stress test skipped, or none at all: level 1
      runs only the Deployment checks), or no test that ran at all.
    * PASS otherwise; warnings are kept in the figures.

    Work at risk: a PASS admits the node to jobs (health_gate resumes a node it held). Refused: PASS needs a GPU
    test that ran and every section the level runs; anything the parse could not fully read is an
    ERROR, never a PASS.
    """
    figures = {"dcgm_failed": list(parsed["failed"]), "dcgm_warned": list(parsed["warned"]),
               "dcgm_version": parsed.get("metadata", {}).get("DCGM Version"), "dcgm_level": level}
    if parsed["failed"]:
        detail = parsed.get("failed_detail") or parsed["failed"]
        return verdict(FAIL, "dcgm: failed " + ", ".join(detail), figures)
    problems = []
    for error in parsed.get("errors") or []:
        problems.append(error[:100])
    if parsed.get("unknown"):
        problems.append("unknown result " + ", ".join(parsed["unknown"]))
    ran = {t["section"] for t in parsed["tests"] if t["result"] in ("Pass", "Warn")}
    wanted = DCGM_LEVEL_SECTIONS.get(int(level), ("Deployment",)) if level else ("Deployment",)
    seen = set(parsed.get("sections") or {t["section"] for t in parsed["tests"]})
    missing = [s for s in wanted if s not in seen]
    if missing:
        problems.append(f"level {level or '?'} output lacks the {', '.join(missing)} section"
                        + ("s" if len(missing) > 1 else ""))
    skipped = [s for s in wanted if s in seen and s not in ran]
    if skipped:
        problems.append(f"every {', '.join(skipped)} test skipped")
    gpu_tests = [t for t in parsed["tests"] if t["section"] != "Deployment"]
    if not problems and not any(t["result"] in ("Pass", "Warn") for t in gpu_tests):
        if gpu_tests:
            sections = list(dict.fromkeys(t["section"] for t in gpu_tests))
            problems.append(f"every GPU test skipped ({', '.join(sections)})")
        else:
            problems.append("no GPU test ran (the output holds only the metadata and the Deployment checks)")
    if not ran and not problems:
        problems.append("no test ran (all Skip)")
    if problems:
        return verdict(ERROR, "dcgm: " + "; ".join(problems), figures)
    return verdict(PASS, "", figures)


# --------------------------------------------------------------------------------------------
# Running a probe (shared by the gate modules; run_command and the binary lookup are passed in)
# --------------------------------------------------------------------------------------------


def tail(text: str, lines: int = 20) -> list[str]:
    """The last ``lines`` non-empty lines of a command's output (for the report)."""
    kept = [line for line in (text or "").splitlines() if line.strip()]
    return kept[-lines:] if lines > 0 else []


def resolve_argv(argv: list[str], find_bin) -> list[str] | None:
    """Resolve ``argv[0]``: a path is checked as is, a bare name through ``find_bin`` (PATH lookup).
    Returns the argv with the resolved executable, or None when it cannot be run."""
    if not argv:
        return None
    exe = str(argv[0])
    if "/" in exe:
        return list(argv) if os.path.isfile(exe) and os.access(exe, os.X_OK) else None
    found = find_bin(exe)
    return [found, *argv[1:]] if found else None


def run_parsed(run_command, find_bin, argv, parse, name, timeout=None, environ_update=None,
               parse_stderr=False):
    """Run ``argv`` and parse its output; turn every way the test itself can break into an ERROR.

    ``run_command`` is ``AnsibleModule.run_command``; ``find_bin`` is ``AnsibleModule.get_bin_path``.
    A ``timeout`` wraps the command in coreutils ``timeout`` (rc 124/137 = timed out).
    Returns ``(parsed, error_verdict, rc, out, err)``; exactly one of ``parsed`` / ``error_verdict`` is
    set. A parse error on a zero exit is an ERROR too: unparsable output is never a pass. A parser that
    recognises a fault in place of results (``FaultSeen``, e.g. the driver is not loaded) gives a FAIL.
    A non-zero exit with parseable output returns the parsed result: judge it, then pass the verdict
    through :func:`exit_checked`.
    """
    resolved = resolve_argv(argv, find_bin)
    if resolved is None:
        missing = argv[0] if argv else "(empty)"
        return None, verdict(ERROR, f"{name}: command not found: {missing}"), None, "", ""
    full = resolved
    timeout_bin = find_bin("timeout") if timeout else None
    if timeout_bin:
        full = [timeout_bin, "-k", "10", str(int(timeout)), *resolved]
    rc, out, err = run_command(full, environ_update=dict(environ_update or {}))
    if timeout_bin and rc in (124, 137):
        return None, verdict(ERROR, f"{name}: timed out after {int(timeout)} s"), rc, out, err
    text = out + ("\n" + err if parse_stderr and err else "")
    try:
        parsed = parse(text)
    except FaultSeen as exc:
        return None, verdict(FAIL, f"{name}: {exc}"), rc, out, err
    except ParseError as exc:
        if rc != 0:
            last = (tail(err, 1) or tail(out, 1) or [""])[0][:120]
            reason = f"{name}: exit {rc} without results" + (f": {last}" if last else "")
        else:
            reason = f"{name}: {exc}"
        return None, verdict(ERROR, reason), rc, out, err
    return parsed, None, rc, out, err


def exit_checked(result: Mapping, rc, name: str) -> dict:
    """A verdict judged from a command's output, held to the command's exit status.

    PASS needs the tool to have exited 0: a PASS reading with a non-zero exit (``dcgmi`` 226, ``srun``
    1 after a full NCCL table, ``ibstat`` 255) is an ERROR. A FAIL stays a FAIL (the output proved the
    fault); the exit status is added to the figures either way.
    """
    out = verdict(result["verdict"], result.get("reason", ""), result.get("figures"))
    out["figures"]["rc"] = rc
    if rc in (0, None) or out["verdict"] == FAIL:
        return out
    reason = f"{name}: exit {rc} although the output reads as a pass"
    if out["verdict"] == ERROR:
        reason = f"{out['reason']}; {reason}"
    return verdict(ERROR, reason, out["figures"])
