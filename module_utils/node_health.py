"""Health between jobs (issue 37): what the node's health check reads, and its verdict, with the gate's own judges.

Slurm runs ``gpufleet-healthcheck`` (roles/slurm_compute) as HealthCheckProgram every few minutes, in every node
state. That shell program calls this module on the node (``check``), drains the node with the toolkit's gate reason
on any finding, and then acknowledges the kernel log lines it reported (``ack``), so an Xid drains once, not at every
run. The judges are the health gate's (module_utils/gate.py): a node the health check drains is one the gate would
not admit, and ``gate.yml`` stays the one way back into service.

The checks, each named in ``checks`` (data; an operator leaves one out where the node cannot support it):

* ``gpus``:   NVML answers and lists the GPUs the node was discovered with (``nvidia-smi --query-gpu``);
* ``memory``: uncorrected volatile ECC, retired pages pending, row remaps pending or failed (the same query);
* ``xid``:    Xids in the kernel log that are new since the last acknowledged run, against a fatal list (data);
* ``nvlink``: links active against the profile's ``nvlinks_per_gpu`` (``nvidia-smi nvlink -s``);
* ``ib``:     fabric ports Active at the profile's rate, on its link layer (``ibstat``);
* ``mounts``: each mount point the site declares is mounted and answers in time.

The epilog (``gpufleet-epilog``, Slurm's Epilog) calls ``epilog``: a compute process still on a GPU after the job,
or GPU memory in use with no process, drains the node the same way.

Fail closed: a command missing, timed out or printing what the parser does not know is a finding (``ERROR``), never
healthy; a value nvidia-smi prints in brackets other than "not supported" (``[Unknown Error]``, ``[GPU requires
reset]``) is a FAIL. The module runs on the node with the standard library and its sibling modules only (gate,
gate_profiles, nvidia_smi, rdma, node_reason): slurm_compute copies exactly these there.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from ansible.module_utils.gate import (
    ERROR,
    FAIL,
    PASS,
    FaultSeen,
    ParseError,
    ProfileError,
    count,
    exit_checked,
    gpu_health_verdict,
    gpu_inventory_verdict,
    merge_profiles,
    nvlink_verdict,
    profile_for,
    rdma_ports_verdict,
    run_parsed,
    verdict,
)
from ansible.module_utils.gate_profiles import DEFAULT_PROFILES
from ansible.module_utils.node_reason import make_reason
from ansible.module_utils.nvidia_smi import check_driver, parse_nvlink_status
from ansible.module_utils.rdma import parse_ibstat

CHECKS = ("gpus", "memory", "xid", "nvlink", "ib", "mounts")
# One query for the gpus and memory checks: nvidia-smi(1) --help-query-gpu names these fields.
GPU_FIELDS = ("index", "pci.bus_id", "name", "ecc.errors.uncorrected.volatile.total", "retired_pages.double_bit.count",
              "retired_pages.pending", "remapped_rows.pending", "remapped_rows.failure")
GPU_COMMAND = ["nvidia-smi", "--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv"]
# How nvidia-smi prints a figure the part or driver does not have (ECC off, no row remapper before Ampere, MIG on).
_NOT_SUPPORTED = {"[N/A]", "N/A", "[Not Supported]", "Not Supported"}
_YES_NO = {"Yes": True, "No": False}
_KEYS = {"ecc.errors.uncorrected.volatile.total": "ecc_uncorrected_volatile",
         "retired_pages.double_bit.count": "retired_pages_dbe",
         "retired_pages.pending": "retired_pages_pending", "remapped_rows.pending": "remap_pending",
         "remapped_rows.failure": "remap_failure"}
_COUNTS = {"ecc_uncorrected_volatile", "retired_pages_dbe"}
# The NVIDIA driver's Xid line in the kernel log: "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off ...".
_XID_RE = re.compile(r"NVRM: Xid \((PCI:[0-9A-Fa-f:.]+)\): (\d+)\b")
# The GPU a "fallen off the bus" message names: "NVRM: The NVIDIA GPU 0000:b3:00.0", "NVRM: GPU 0000:05:00.0: ...".
_GPU_AT_RE = re.compile(r"NVRM: (?:The NVIDIA GPU |GPU at PCI:|GPU )"
                        r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}[.0-9]*)")
# A bracketed value that says the driver no longer answers the field (not a fault of the GPU: the query is wrong).
_DEPRECATED = "[Requested functionality has been deprecated]"
# Acknowledged kernel log lines kept (the newest): far more than a node logs between two reboots.
SEEN_KEEP = 2000
# The epilog (``epilog``): compute processes left on the GPUs when a job ended, and GPU memory still in use.
# nvidia-smi(1) --help-query-compute-apps; the header prints used_memory as "used_gpu_memory [MiB]".
APPS_COMMAND = ["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv"]
MEMORY_COMMAND = ["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,memory.used", "--format=csv"]
# The driver's own record of each GPU: its directory is the PCI address, "Device Minor:" its /dev/nvidiaN.
NVIDIA_PROC_GPUS = "/proc/driver/nvidia/gpus"
# Memory a GPU with no compute process may show as used after a job and still be clean (MiB). An idle H100 reads
# memory.used 0 MiB (its 479 MiB driver reserve is the separate memory.reserved field;
# tests/fixtures/nvidia_smi_query_gpu_h100_80gb_590.48.01_healthy_exporter.txt); more than this with no process is
# memory nobody frees (a context nvidia-smi cannot list). Data: slurm_compute_epilog_max_used_mib.
EPILOG_MAX_USED_MIB = 1024
_MIB_RE = re.compile(r"^(\d+)\s*MiB$")


def parse_gpu_query(text: str) -> list[dict]:
    """Parse ``nvidia-smi --query-gpu=<fields> --format=csv`` (with its header line) where the fields hold GPU_FIELDS.

    Columns are found by the header's names (units in brackets dropped), so a query of more fields reads the same.
    Returns one dict per GPU in the shape of nvml_health.snapshot's: ``index``, ``pci_bus_id``, ``name``,
    ``ecc_uncorrected_volatile`` and ``retired_pages_dbe`` (int or None), ``retired_pages_pending``,
    ``remap_pending``, ``remap_failure`` (bool or None); None where nvidia-smi says the part does not have it.
    A header without one of GPU_FIELDS, a row of another length, or a value that is neither a count, Yes/No nor
    "not supported" raises ParseError; another bracketed value (nvidia-smi's word for a GPU in trouble, such as
    ``[Unknown Error]``) raises FaultSeen.
    """
    gpus = []
    for values in _csv_table(text, GPU_FIELDS, "nvidia-smi --query-gpu"):
        index = count(values["index"], "nvidia-smi --query-gpu: index")
        gpu = {"index": index, "pci_bus_id": values["pci.bus_id"], "name": values["name"]}
        for field, key in _KEYS.items():
            value = values[field]
            if value in _NOT_SUPPORTED:
                gpu[key] = None
            elif value == _DEPRECATED:
                raise ParseError(f"nvidia-smi --query-gpu: {field} is deprecated in this driver")
            elif value.startswith("["):
                raise FaultSeen(f"GPU{index} {field} reads {value}")
            elif key in _COUNTS:
                gpu[key] = count(value, f"nvidia-smi --query-gpu: GPU{index} {field}")
            elif value in _YES_NO:
                gpu[key] = _YES_NO[value]
            else:
                raise ParseError(f"nvidia-smi --query-gpu: GPU{index} {field} {value!r} is not Yes, No or N/A")
        gpus.append(gpu)
    if not gpus:
        raise ParseError("nvidia-smi --query-gpu: a header and no GPU")
    return gpus


def parse_xids(text: str, boot: str = "") -> list[dict]:
    """The NVIDIA driver's faults in a kernel log text: ``[{line, pci, xid, key}]`` (key: a sha1 of the record).

    An Xid line gives its number and PCI address. The driver's "fallen off the bus" message without an Xid (a GPU
    lost at probe, printed over several lines) counts as Xid 79, the catalog's number for it, with the address of
    the line that opens the message. Other lines are ignored; a line that names ``NVRM: Xid`` but not in the
    driver's form raises ParseError (an Xid the check cannot read is never "no Xid"). The key covers ``boot`` (the
    kernel's boot id) and the record's first line, which carries the kernel's own timestamp (dmesg's default: seconds
    since boot, which no clock step or time zone changes), so the same message logged again later is a new fault.
    A "fallen off the bus" line right after an Xid 79 of the same GPU is that Xid's, not another fault.
    """
    events = []
    record = ""
    for raw in (text or "").splitlines():
        if raw[:1] not in (" ", "\t"):
            record = raw.strip()
        if "NVRM: Xid" in raw:
            line = raw.strip()
            match = _XID_RE.search(line)
            if not match:
                raise ParseError(f"kernel log: Xid line not in the driver's form: {line[:120]!r}")
            events.append({"line": line, "pci": match.group(1), "xid": int(match.group(2)),
                           "key": hashlib.sha1(f"{boot}\n{line}".encode()).hexdigest()})
        elif "NVRM:" in raw and "fallen off the bus" in raw:
            line = raw.strip()
            where = _GPU_AT_RE.search(record) or _GPU_AT_RE.search(line)
            pci = f"PCI:{where.group(1)}" if where else "PCI:unknown"
            if events and events[-1]["xid"] == 79 and pci.startswith(events[-1]["pci"]):
                continue
            events.append({"line": line, "pci": pci, "xid": 79,
                           "key": hashlib.sha1(f"{boot}\n{record}\n{line}".encode()).hexdigest()})
    return events


def _csv_table(text: str, fields: tuple, what: str, optional: tuple = ()) -> list[dict]:
    """Rows of an ``nvidia-smi --format=csv`` table as ``{field: cell}``, columns found by the header's names (units
    in brackets dropped); *optional* fields are read where the header has them. A header without one of *fields* or
    a row of another length raises ParseError."""
    check_driver(text)
    rows = [row for row in csv.reader((text or "").splitlines(), skipinitialspace=True) if row]
    if not rows:
        raise ParseError(f"{what}: empty output")
    header = [re.sub(r"\s*\[[^\]]*\]$", "", cell.strip()) for cell in rows[0]]
    missing = [field for field in fields if field not in header]
    if missing:
        raise ParseError(f"{what}: no column {', '.join(missing)} in the header {', '.join(rows[0])[:80]!r}")
    out = []
    for row in rows[1:]:
        cells = [cell.strip() for cell in row]
        if len(cells) != len(header):
            raise ParseError(f"{what}: a row has {len(cells)} fields, the header {len(header)}")
        out.append({field: cells[header.index(field)] for field in (*fields, *optional) if field in header})
    return out


def _mib(value: str, what: str):
    """MiB of ``58060 MiB`` (or a bare count); None where nvidia-smi says the figure is not available."""
    if value in _NOT_SUPPORTED:
        return None
    match = _MIB_RE.match(value) or (re.match(r"^(\d+)$", value))
    if not match:
        raise ParseError(f"{what} {value!r} is not a figure in MiB")
    return int(match.group(1))


def parse_compute_apps(text: str) -> list[dict]:
    """``nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv``: ``[{uuid, pid, name,
    used_mib}]`` (``used_mib`` None where nvidia-smi cannot say). A header alone is no process. ``[Not Found]`` as the
    name is a process nvidia-smi cannot see (another PID namespace, or one already gone): still a process on the GPU."""
    apps = []
    for row in _csv_table(text, ("gpu_uuid", "pid", "process_name", "used_gpu_memory"),
                          "nvidia-smi --query-compute-apps"):
        apps.append({"uuid": row["gpu_uuid"], "pid": count(row["pid"], "nvidia-smi --query-compute-apps: pid"),
                     "name": row["process_name"],
                     "used_mib": _mib(row["used_gpu_memory"], "nvidia-smi --query-compute-apps: used_gpu_memory")})
    return apps


def _bus(text) -> str:
    """A PCI address as the driver's /proc names it: 4-digit domain, lower case (nvidia-smi prints 8 digits)."""
    text = str(text or "").strip().lower()
    domain, sep, rest = text.partition(":")
    return f"{domain[-4:]}:{rest}" if sep and len(domain) > 4 else text


def parse_gpu_memory(text: str) -> list[dict]:
    """``nvidia-smi --query-gpu=index,uuid[,pci.bus_id],memory.used --format=csv``: ``[{index, uuid, bus, used_mib}]``
    (``bus`` "" without the column); a header with no GPU raises ParseError (the node has GPUs, or the epilog would not
    ask)."""
    gpus = []
    for row in _csv_table(text, ("index", "uuid", "memory.used"), "nvidia-smi --query-gpu", optional=("pci.bus_id",)):
        bus = _bus(row.get("pci.bus_id"))
        index = count(row["index"], "nvidia-smi --query-gpu: index")
        used = row["memory.used"]
        if used.startswith("[") and used not in _NOT_SUPPORTED:
            raise FaultSeen(f"GPU{index} memory.used reads {used}")
        gpus.append({"index": index, "uuid": row["uuid"], "bus": bus,
                     "used_mib": _mib(used, f"GPU{index} memory.used")})
    if not gpus:
        raise ParseError("nvidia-smi --query-gpu: a header and no GPU")
    return gpus


def read_minors(root=NVIDIA_PROC_GPUS) -> dict:
    """``{pci address: minor}`` from the driver's /proc records ({} where there are none: no driver, a lab)."""
    minors = {}
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return {}
    for entry in entries:
        try:
            with open(os.path.join(root, entry, "information"), encoding="ascii", errors="replace") as handle:
                for line in handle:
                    key, _sep, value = line.partition(":")
                    if key.strip() == "Device Minor" and value.strip().isdigit():
                        minors[_bus(entry)] = int(value.strip())
        except OSError:
            continue
    return minors


def job_gpus(gpus: list[dict], ids, minors=None) -> list[dict]:
    """The GPUs of the job: Slurm's GPU ids (SLURM_JOB_GPUS) are the positions of the node's GPUs in gres.conf, which
    lists them by device minor (module_utils/gres.py; AutoDetect=nvml orders them the same), so each id is the rank of
    a minor. The minors come from the driver (*minors*, by PCI address); where it has none for every GPU, nvidia-smi's
    index stands for it (PCI order, as the driver numbers minors). An id beyond the node's GPUs raises ParseError."""
    minors = minors or {}
    known = all(g.get("bus") and g["bus"] in minors for g in gpus)
    ranked = sorted(gpus, key=lambda g: (minors[g["bus"]] if known else g["index"], g["index"]))
    picked = []
    for gpu_id in ids:
        if not 0 <= gpu_id < len(ranked):
            raise ParseError(f"SLURM_JOB_GPUS names GPU {gpu_id}, the node has {len(ranked)}")
        picked.append(ranked[gpu_id])
    return picked


def leftover_verdict(apps: list[dict], gpus: list[dict], max_used_mib: int = EPILOG_MAX_USED_MIB,
                     only=None) -> dict:
    """FAIL when a compute process is still on a GPU after the job, or a GPU with no process still has more than
    *max_used_mib* in use; the reason names the GPU, the process and the figure. *only* (the job's GPUs, job_gpus)
    limits both to the job's own GPUs: another job's processes on a shared node are that job's. A process on a GPU the
    memory query does not list cannot be placed: an ERROR, never clean."""
    index = {g["uuid"]: g["index"] for g in gpus}
    stray = [a for a in apps if a["uuid"] not in index]
    if only is not None and not stray:
        mine = {g["uuid"] for g in only}
        apps = [a for a in apps if a["uuid"] in mine]
        gpus = [g for g in gpus if g["uuid"] in mine]
    figures = {"processes": [{"gpu": index.get(a["uuid"]), "pid": a["pid"], "name": a["name"],
                              "used_mib": a["used_mib"]} for a in apps],
               "used_mib": {str(g["index"]): g["used_mib"] for g in gpus}, "max_used_mib": int(max_used_mib)}
    if stray:
        return verdict(ERROR, f"epilog: a process on GPU {stray[0]['uuid'][:24]} that the GPU list does not hold",
                       figures)
    if apps:
        first = sorted(apps, key=lambda a: (index[a["uuid"]], a["pid"]))[0]
        held = f"{first['used_mib']} MiB" if first["used_mib"] is not None else "memory"
        more = f" (+{len(apps) - 1} more)" if len(apps) > 1 else ""
        figures["short"] = (f"GPU{index[first['uuid']]}_pid_{first['pid']}_{held.replace(' ', '')}"
                            + (f"_+{len(apps) - 1}" if len(apps) > 1 else ""))
        return verdict(FAIL, f"epilog: GPU{index[first['uuid']]} pid {first['pid']} ({first['name']}) holds "
                             f"{held}{more}", figures)
    busy = [g for g in gpus if g["used_mib"] is not None and g["used_mib"] > int(max_used_mib)]
    if busy:
        first = busy[0]
        figures["short"] = f"GPU{first['index']}_{first['used_mib']}MiB_used_no_process"
        return verdict(FAIL, f"epilog: GPU{first['index']} {first['used_mib']} MiB in use with no process "
                             f"(> {int(max_used_mib)} MiB)", figures)
    return verdict(PASS, "", figures)


def epilog_check(config: dict, runner: Runner, sleep=time.sleep, ids=None, minors=None) -> dict:
    """Read the GPUs' processes and memory after a job, again each second while something is left (a process being
    torn down) for up to ``grace`` seconds; the last reading decides. ``{verdict, reasons, checks}`` as ``check``."""
    grace = max(0.0, float(config.get("grace", 10)))
    started = runner.clock()
    while True:
        apps, error, rc = runner.parsed(config.get("apps_command") or APPS_COMMAND, parse_compute_apps, "epilog")
        if error is None and rc not in (0, None):
            error = verdict(ERROR, f"epilog: nvidia-smi --query-compute-apps exit {rc}")
        gpus = None
        if error is None:
            gpus, error, rc = runner.parsed(config.get("memory_command") or MEMORY_COMMAND, parse_gpu_memory,
                                            "epilog")
            if error is None and rc not in (0, None):
                error = verdict(ERROR, f"epilog: nvidia-smi --query-gpu exit {rc}")
        if error is None and ids is not None:
            try:
                only = job_gpus(gpus, ids, minors)
            except ParseError as exc:
                error = verdict(ERROR, f"epilog: {exc}")
        result = error or leftover_verdict(apps, gpus, int(config.get("max_used_mib", EPILOG_MAX_USED_MIB)),
                                           only if ids is not None else None)
        if result["verdict"] != FAIL or runner.clock() - started + 1 > grace or runner.left() < 2:
            break
        sleep(1)
    reasons = [result["reason"]] if result["verdict"] != PASS else []
    return {"verdict": result["verdict"], "reasons": reasons, "checks": {"epilog": result}}


def xid_verdict(events: list[dict], seen: set, fatal: list[int]) -> dict:
    """FAIL on an Xid of the fatal list that is new (its line not acknowledged yet); new other Xids are figures."""
    new = [e for e in events if e["key"] not in seen]
    figures = {"xids_new": [{"xid": e["xid"], "pci": e["pci"]} for e in new], "xid_fatal": sorted(fatal)}
    bad = [e for e in new if e["xid"] in set(fatal)]
    if bad:
        first = bad[0]
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        return verdict(FAIL, f"xid: Xid {first['xid']} on {first['pci']}{more}", figures)
    return verdict(PASS, "", figures)


def _run(argv, timeout):
    """(rc, stdout, stderr) of argv within timeout seconds (rc 124 when it ran out, as coreutils timeout says)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return 124, out, ""
    except OSError as exc:
        return 127, "", str(exc)
    return done.returncode, done.stdout, done.stderr


class Runner:
    """Runs each command of one check within what is left of the check's time budget (seconds)."""

    def __init__(self, budget: float, run=None, which=None, clock=time.monotonic):
        self.deadline = clock() + float(budget)
        self.run, self.which, self.clock = run or _run, which or shutil.which, clock

    def left(self) -> int:
        """Whole seconds left for the next command, one kept back for the program's own end (0: none)."""
        return max(0, int(self.deadline - self.clock()) - 1)

    def parsed(self, argv, parse, name):
        """run_parsed's (parsed, error_verdict, rc) for argv, bounded by the time left; with none left the command
        does not start (an ERROR: the check could not read it)."""
        limit = self.left()
        if limit < 1:
            return None, verdict(ERROR, f"{name}: no time left in the health check's budget"), None

        def run_command(full, environ_update=None):
            # coreutils timeout (run_parsed's wrapper) ends it first and says 124; this bound is the last resort
            # for a command that ignores the TERM (its grace before KILL is longer than the budget has).
            return self.run(full, limit + 1)

        # run_parsed wraps the command in coreutils timeout when it finds one; the runner bounds it either way.
        parsed, error, rc, _out, _err = run_parsed(run_command, self.which, list(argv), parse, name, timeout=limit)
        if error is None and rc == 124:
            error = verdict(ERROR, f"{name}: timed out after {limit} s")
        return parsed, error, rc


def _mount_verdict(mounts, runner: Runner) -> dict:
    problems = []
    for path in mounts:
        limit = min(runner.left(), 10)
        if limit < 1:
            problems.append(f"{path} not read (no time left)")
            continue
        rc, _out, _err = runner.run(["mountpoint", "-q", str(path)], limit)
        if rc == 124:
            problems.append(f"{path} did not answer")
        elif rc != 0:
            problems.append(f"{path} not mounted")
    if problems:
        return verdict(FAIL, "mount: " + ", ".join(problems), {"mounts": list(mounts)})
    return verdict(PASS, "", {"mounts": list(mounts)})


def read_seen(path) -> list:
    """Keys of kernel log lines in a state file, oldest first (an absent or unreadable file: none, so every Xid is
    new and drains again: fail closed)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    return [str(k) for k in data] if isinstance(data, list) else []


def _write_json(path, data) -> None:
    """Write path whole (a temporary file of its own, then a rename: a run of slurmd's and one by hand never clash)."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".xid-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def check(config: dict, runner: Runner, seen: set, boot: str = "") -> dict:
    """Run the configured checks; return ``{verdict, reasons, checks: {name: verdict}, pending, unjudged}``.

    ``verdict`` is PASS only when every check passed; ``reasons`` lists each other check's reason, in the order read
    (the kernel log first). ``boot`` is the kernel's boot id (the Xid lines' keys hold it).
    """
    wanted = list(config.get("checks") or [])
    unknown = [c for c in wanted if c not in CHECKS]
    results: dict = {}
    pending: list = []
    if unknown:
        results["config"] = verdict(ERROR, f"healthcheck: unknown check(s) {', '.join(map(str, unknown))}")
    # The kernel log first: a GPU that fell off the bus often hangs nvidia-smi, and its Xid must still be read.
    if "xid" in wanted:
        events, error, rc = runner.parsed(config.get("xid_command") or ["dmesg"],
                                          lambda text: parse_xids(text, boot), "xid")
        if error is None and rc not in (0, None):
            error = verdict(ERROR, f"xid: the kernel log read exited {rc}")
        results["xid"] = error or xid_verdict(events, seen, [int(x) for x in config.get("fatal_xids") or []])
        if error is None:
            fatal = {int(x) for x in config.get("fatal_xids") or []}
            pending = [e["key"] for e in events if e["key"] not in seen and e["xid"] in fatal]
    gpus, gpu_error = None, None
    if "gpus" in wanted or "memory" in wanted or "nvlink" in wanted or "ib" in wanted:
        gpus, gpu_error, rc = runner.parsed(config.get("gpu_command") or GPU_COMMAND, parse_gpu_query, "gpu")
        if gpu_error is None and rc not in (0, None):
            gpu_error = verdict(ERROR, f"gpu: nvidia-smi exit {rc} although it printed the GPUs")
    if "gpus" in wanted:
        results["gpus"] = gpu_error or gpu_inventory_verdict(gpus, config.get("expected_gpus"))
    if "memory" in wanted:
        results["memory"] = gpu_error or gpu_health_verdict(gpus)
    # NVLink and the fabric ports are judged against the gate's profile, where it sets what to expect
    # (nvlinks_per_gpu; rdma_ports or named devices): on by profile. No profile for this hardware (and none named)
    # leaves them unjudged, and the result says so; a named profile that does not exist is a finding.
    profile, profile_error, unjudged = None, None, []
    if "nvlink" in wanted or "ib" in wanted:
        model = gpus[0]["name"] if gpus else None
        try:
            _name, profile = profile_for(merge_profiles(DEFAULT_PROFILES, config.get("profiles") or {}),
                                         config.get("profile"), model, len(gpus) if gpus else None)
        except ProfileError as exc:
            if config.get("profile") or gpu_error:
                profile_error = gpu_error or verdict(ERROR, f"profile: {exc}")
    if "nvlink" in wanted:
        if profile_error or (gpu_error and profile):
            results["nvlink"] = profile_error or gpu_error
        elif profile and profile.get("nvlinks_per_gpu"):
            links, error, rc = runner.parsed(config.get("nvlink_command") or ["nvidia-smi", "nvlink", "-s"],
                                             parse_nvlink_status, "nvlink")
            results["nvlink"] = error or exit_checked(
                nvlink_verdict(links, profile["nvlinks_per_gpu"], len(gpus)), rc, "nvlink")
        else:
            unjudged.append("nvlink")
    if "ib" in wanted:
        devices = list(config.get("ib_devices") or [])
        if profile_error or (gpu_error and profile):
            results["ib"] = profile_error or gpu_error
        elif profile and (profile.get("rdma_ports") or devices):
            ports, error, rc = runner.parsed(config.get("ib_command") or ["ibstat"], parse_ibstat, "rdma")
            results["ib"] = error or exit_checked(
                rdma_ports_verdict(ports, devices, profile.get("nic_rate_gbps"), profile.get("link_layer"),
                                   profile.get("rdma_ports")), rc, "rdma")
        else:
            unjudged.append("ib")
    if "mounts" in wanted:
        results["mounts"] = _mount_verdict(config.get("mounts") or [], runner)
    reasons = [r["reason"] or f"{name}: {r['verdict']}" for name, r in results.items() if r["verdict"] != PASS]
    return {"verdict": PASS if not reasons else (FAIL if any(r["verdict"] == FAIL for r in results.values())
                                                 else ERROR),
            "reasons": reasons, "checks": results, "pending": pending, "unjudged": unjudged}


def drain_reason(reasons: list[str]) -> str:
    """The Slurm reason for the first finding (the toolkit's gate reason, so gate.yml is the way back)."""
    return make_reason("gate", "healthcheck:" + reasons[0], target="slurm")


def boot_id() -> str:
    """The running kernel's boot id ("" where it cannot be read: the keys then hold the lines alone)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def main(argv=None, stdin=None, stdout=None) -> int:
    """``check STATE_DIR`` (config JSON on stdin): print the drain reason and every finding, one per line, and
    exit 1 on a finding (0: healthy); the Xid lines it reports wait in STATE_DIR/xid-pending.json.
    ``ack STATE_DIR``: those lines are acknowledged (the node is drained now, with the toolkit's reason).
    ``epilog`` (config JSON on stdin): the same contract for what a job left on the GPUs (``_epilog_main``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    if argv[:1] == ["epilog"] and len(argv) <= 3:
        return _epilog_main(stdin, stdout, argv[1] if len(argv) >= 2 else "", argv[2] if len(argv) == 3 else None)
    if len(argv) != 2 or argv[0] not in ("check", "ack"):
        stdout.write("gpufleet:gate,to=slurm,healthcheck:usage_check_or_ack_STATE_DIR\n")
        return 1
    verb, state_dir = argv
    seen_path = os.path.join(state_dir, "xid-seen.json")
    pending_path = os.path.join(state_dir, "xid-pending.json")
    if verb == "ack":
        seen = read_seen(seen_path)
        new = [key for key in read_seen(pending_path) if key not in set(seen)]
        if new:
            _write_json(seen_path, (seen + new)[-SEEN_KEEP:])
        _write_json(pending_path, [])
        return 0
    try:
        config = json.load(stdin)
        if not isinstance(config, dict):
            raise ValueError("the configuration is not a mapping")
        result = check(config, Runner(float(config.get("timeout") or 20)), set(read_seen(seen_path)), boot_id())
        _write_json(pending_path, result["pending"])
    except Exception as exc:  # any failure of the check itself is a finding, never healthy
        stdout.write(make_reason("gate", f"healthcheck:internal_error_{type(exc).__name__}", target="slurm") + "\n")
        stdout.write(f"healthcheck: {type(exc).__name__}: {exc}\n")
        return 1
    if result["verdict"] == PASS:
        if result["unjudged"]:
            stdout.write(f"healthcheck: {', '.join(result['unjudged'])} not judged (the gate profile sets nothing to "
                         "expect for this hardware)\n")
        return 0
    stdout.write(drain_reason(result["reasons"]) + "\n")
    for reason in result["reasons"]:
        stdout.write(reason + "\n")
    return 1


def _epilog_main(stdin, stdout, job="", gpus=None) -> int:
    """``epilog [JOB [GPUS]]`` (config JSON on stdin: ``grace``, ``max_used_mib``, ``timeout``, ``apps_command``,
    ``memory_command``; ``job`` there when not given): print the drain reason and the finding and exit 1 when the job
    left something on its GPUs (0: clean). GPUS is Slurm's SLURM_JOB_GPUS ("0,1"): only those GPUs are judged; "none"
    (the job had no GPU) judges nothing; without it every GPU of the node is judged."""
    try:
        config = json.load(stdin)
        if not isinstance(config, dict):
            raise ValueError("the configuration is not a mapping")
        ids = None
        if gpus is not None:
            if gpus in ("", "none"):
                return 0
            if not re.match(r"^\d+(,\d+)*$", gpus):
                raise ValueError(f"SLURM_JOB_GPUS {gpus[:40]!r} is not a list of GPU ids")
            ids = [int(x) for x in gpus.split(",")]
        result = epilog_check(config, Runner(float(config.get("timeout") or 20)), ids=ids, minors=read_minors())
    except Exception as exc:  # any failure of the check itself is a finding, never clean
        stdout.write(make_reason("gate", f"epilog:internal_error_{type(exc).__name__}", target="slurm") + "\n")
        stdout.write(f"epilog: {type(exc).__name__}: {exc}\n")
        return 1
    if result["verdict"] == PASS:
        return 0
    # The reason is short (Slurm shows 96 characters of it): the job, the GPU and the figure; the process's name
    # is in the finding's own line, which the program logs.
    job = str(job or config.get("job") or "")
    check_result = result["checks"]["epilog"]
    short = (check_result.get("figures") or {}).get("short") or result["reasons"][0].removeprefix("epilog: ")
    detail = f"epilog:job_{job}:{short}" if job.isdigit() else f"epilog:{short}"
    stdout.write(make_reason("gate", detail, target="slurm") + "\n")
    stdout.write(result["reasons"][0] + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
