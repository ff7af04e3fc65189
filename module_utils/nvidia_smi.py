"""Parsers for ``nvidia-smi nvlink -s`` and ``nvidia-smi topo -m`` (pure functions)."""

from __future__ import annotations

import re

from ansible.module_utils.gate import FaultSeen, ParseError, finite

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_GPU_RE = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)]+)\)\s*$")
_LINK_RE = re.compile(r"^Link (\d+): (.+)$")
_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB/s$")
_ALL_INACTIVE = "Unable to retrieve NVLink information as all links are inactive"
# What nvidia-smi prints (exit 9) on a node whose kernel driver is not loaded.
_NO_DRIVER_RE = re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")


def driver_failure(text: str) -> str | None:
    """The first line of nvidia-smi's "couldn't communicate with the NVIDIA driver" message, or None."""
    for line in (text or "").splitlines():
        if _NO_DRIVER_RE.search(line):
            return line.strip()
    return None


def check_driver(text: str) -> None:
    """Raise FaultSeen ("driver not loaded") when nvidia-smi says it cannot reach the driver."""
    line = driver_failure(text)
    if line:
        raise FaultSeen(f"driver not loaded ({line[:90]})")


def parse_nvlink_status(text: str) -> list[dict]:
    """Parse ``nvidia-smi nvlink -s`` (``--status``).

    Returns one dict per GPU: ``{"index", "name", "uuid", "links": {link: GB/s or None}, "active",
    "inactive": [link numbers], "all_inactive"}``. A link printed as ``<inactive>`` is inactive; any
    other text that is not a speed (``1.2.3 GB/s``) raises ParseError. ``Unable to retrieve NVLink
    information as all links are inactive`` under a GPU sets ``all_inactive``. A GPU header without
    any link line is kept with no links (the verdict judges it against the expected count); a foreign
    or empty text raises ParseError, and nvidia-smi's "couldn't communicate with the NVIDIA driver"
    raises FaultSeen (driver not loaded: a FAIL).
    """
    check_driver(text)
    if not text or not text.strip():
        raise ParseError("nvidia-smi nvlink -s: empty output")
    gpus: list[dict] = []
    for raw in text.splitlines():
        line = _ANSI.sub("", raw).strip()
        if not line:
            continue
        if m := _GPU_RE.match(line):
            if any(g["index"] == int(m.group(1)) for g in gpus):
                raise ParseError(f"nvidia-smi nvlink -s: GPU {m.group(1)} printed twice")
            gpus.append({"index": int(m.group(1)), "name": m.group(2), "uuid": m.group(3), "links": {},
                         "all_inactive": False})
            continue
        if line == _ALL_INACTIVE:
            if not gpus or gpus[-1]["links"]:
                raise ParseError("nvidia-smi nvlink -s: 'all links are inactive' not right after a GPU line")
            gpus[-1]["all_inactive"] = True
            continue
        if m := _LINK_RE.match(line):
            if not gpus:
                raise ParseError("nvidia-smi nvlink -s: link line before any GPU line")
            if gpus[-1]["all_inactive"]:
                raise ParseError(f"nvidia-smi nvlink -s: GPU{gpus[-1]['index']} has link lines after "
                                 "'all links are inactive'")
            link, value = int(m.group(1)), m.group(2).strip()
            if link in gpus[-1]["links"]:
                raise ParseError(f"nvidia-smi nvlink -s: GPU{gpus[-1]['index']} link {link} printed twice")
            if speed := _SPEED_RE.match(value):
                gpus[-1]["links"][link] = finite(speed.group(1), f"GPU{gpus[-1]['index']} link {link} speed")
            elif value == "<inactive>":
                gpus[-1]["links"][link] = None
            else:
                raise ParseError(f"nvidia-smi nvlink -s: GPU{gpus[-1]['index']} link {link}: {value[:40]!r} "
                                 "is neither a speed nor <inactive>")
            continue
        raise ParseError(f"nvidia-smi nvlink -s: unexpected line {line[:60]!r}")
    if not gpus:
        raise ParseError("nvidia-smi nvlink -s: no 'GPU n: ... (UUID: ...)' line")
    for gpu in gpus:
        gpu["active"] = sum(1 for v in gpu["links"].values() if v)
        gpu["inactive"] = sorted(k for k, v in gpu["links"].items() if not v)
    return gpus


def parse_topo_matrix(text: str) -> dict:
    """Parse ``nvidia-smi topo -m``.

    Returns ``{"devices": [...], "gpus": [...], "nics": [...], "links": {row: {col: "NV18"|"PIX"|...}},
    "cpu_affinity": {gpu: "0-47,96-143"}, "numa_affinity": {gpu: "0"}, "nic_names": {"NIC0": "mlx5_0"},
    "nvlink_counts": {gpu: {gpu: 18}}}``. The matrix must be square: a row with fewer cells than the
    header has devices is a truncated capture.
    """
    check_driver(text)
    if not text or not text.strip():
        raise ParseError("nvidia-smi topo -m: empty output")
    lines = [_ANSI.sub("", raw).rstrip() for raw in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines)
                      if re.match(r"^\s+GPU0\b", line) or re.match(r"^\s+GPU\s*0\b", line)), None)
    if header_at is None:
        raise ParseError("nvidia-smi topo -m: no header row starting with GPU0")
    devices = []
    for token in lines[header_at].split():
        if re.match(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|\w+\d+_\d+)$", token):
            devices.append(token)
        else:
            break
    links: dict[str, dict[str, str]] = {}
    cpu_affinity: dict[str, str] = {}
    numa_affinity: dict[str, str] = {}
    nic_names: dict[str, str] = {}
    for line in lines[header_at + 1:]:
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] in devices:
            cells = tokens[1:1 + len(devices)]
            if len(cells) != len(devices):
                raise ParseError(f"nvidia-smi topo -m: row {tokens[0]} has {len(cells)} of {len(devices)} "
                                 "cells (truncated?)")
            links[tokens[0]] = dict(zip(devices, cells, strict=True))
            rest = tokens[1 + len(devices):]
            if tokens[0].startswith("GPU") and rest:
                cpu_affinity[tokens[0]] = rest[0]
                if len(rest) > 1:
                    numa_affinity[tokens[0]] = rest[1]
        elif m := re.match(r"^(NIC\d+):\s*(\S+)$", line.strip()):
            nic_names[m.group(1)] = m.group(2)
    missing = [d for d in devices if d not in links]
    if missing:
        raise ParseError(f"nvidia-smi topo -m: no row for {', '.join(missing)} (truncated?)")
    gpus = [d for d in devices if d.startswith("GPU")]
    nvlink_counts = {
        g: {o: int(links[g][o][2:]) for o in gpus if o != g and re.match(r"^NV\d+$", links[g][o])}
        for g in gpus
    }
    return {
        "devices": devices,
        "gpus": gpus,
        "nics": [d for d in devices if not d.startswith("GPU")],
        "links": links,
        "cpu_affinity": cpu_affinity,
        "numa_affinity": numa_affinity,
        "nic_names": nic_names,
        "nvlink_counts": nvlink_counts,
    }
