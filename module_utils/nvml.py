# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU discovery through NVML (nvidia-ml-py ``pynvml``), as pure, testable pieces.

The ``nvidia_gpu_info`` module is a thin wrapper around :func:`collect_nvml` and
:func:`collect_override`. Everything that can be a pure function is one:

* :func:`gres_type_from_name`  GPU product name -> Slurm GRES type (``h100``);
* :func:`cpus_from_mask`        NVML CPU-affinity words -> logical CPU numbers;
* :func:`read_cpu_topology`     sysfs -> ``{cpu: (package_id, core_id)}``;
* :func:`slurm_core_ids`        logical CPUs -> Slurm's abstract core indices (``Cores=``);
* :func:`nvlink_peers`          per-GPU NVLink remote PCI bus ids -> peer GPU indices.

Core numbering (gres.conf(5) ``Cores``): Slurm wants *logical core indices*, not OS CPU
numbers: "Core 0 will be the first core on the first socket, while core 1 will be the
second core on the first socket. This numbering coincides with the logical core number
(Core L#) seen in lstopo -l". We read ``topology/physical_package_id`` and
``topology/core_id`` for every online CPU, sort the distinct (package, core_id) pairs,
and number them 0..N-1 in that order; a logical CPU maps to the index of its pair.
Hyper-threads of one core share a pair, so they map to the same Slurm core.
"""

import contextlib
import hashlib
import os
import re
import stat
import uuid

NVIDIA_MAJOR = 195  # character-device major of /dev/nvidia<minor> (nvidia.ko)

# Words in a product name that say nothing about the GPU model.
_VENDOR_WORDS = {"nvidia", "tesla", "geforce", "quadro", "generation"}
# Tokens that describe memory size or form factor, not the model.
_NOISE = re.compile(r"^(\d+(gb|g)|sxm\d*|pcie|hbm\d*e?|nvl|mig|smx\d*)$")
_SAFE_TYPE = re.compile(r"[^a-z0-9]")


def gres_type_from_name(name):
    """A lower-case, Slurm-safe GRES type for a GPU product name, or None.

    ``"NVIDIA H100 80GB HBM3"`` -> ``"h100"``, ``"NVIDIA A100-SXM4-80GB"`` -> ``"a100"``,
    ``"NVIDIA GH200 480GB"`` -> ``"gh200"``, ``"Tesla V100-SXM2-16GB"`` -> ``"v100"``,
    ``"NVIDIA GeForce RTX 4090"`` -> ``"rtx4090"``, ``"NVIDIA L40S"`` -> ``"l40s"``.
    Vendor words, memory sizes and form factors (SXM, PCIe, HBM, NVL) are dropped; the
    rest is joined without separators (GRES types may not contain ``:`` or ``,``).
    """
    if not name:
        return None
    tokens = re.split(r"[\s\-_/]+", str(name).strip().lower())
    kept = [t for t in tokens if t and t not in _VENDOR_WORDS and not _NOISE.match(t)]
    gtype = _SAFE_TYPE.sub("", "".join(kept))
    return gtype or None


def cpus_from_mask(words, word_bits=64):
    """Logical CPU numbers set in NVML's affinity bitmask (a list of unsigned words).

    ``nvmlDeviceGetCpuAffinity(handle, n)`` returns ``n`` C ``unsigned long`` words; word
    ``i`` bit ``b`` is CPU ``i * word_bits + b``.
    """
    cpus = []
    for i, word in enumerate(words or []):
        word = int(word)
        bit = 0
        while word:
            if word & 1:
                cpus.append(i * word_bits + bit)
            word >>= 1
            bit += 1
    return cpus


def read_cpu_topology(sysfs_root="/sys/devices/system/cpu"):
    """``{cpu: (physical_package_id, core_id)}`` for every CPU with a topology directory."""
    topology = {}
    try:
        entries = os.listdir(sysfs_root)
    except OSError:
        return topology
    for entry in entries:
        m = re.match(r"^cpu(\d+)$", entry)
        if not m:
            continue
        base = os.path.join(sysfs_root, entry, "topology")
        try:
            with open(os.path.join(base, "physical_package_id")) as fh:
                package = int(fh.read().strip())
            with open(os.path.join(base, "core_id")) as fh:
                core = int(fh.read().strip())
        except (OSError, ValueError):
            continue  # offline CPU: no topology directory
        topology[int(m.group(1))] = (package, core)
    return topology


def slurm_core_ids(cpus, topology):
    """Map logical CPUs to Slurm's abstract core indices (sorted, distinct).

    ``topology`` is :func:`read_cpu_topology`'s result. CPUs missing from it are ignored.
    """
    order = {pair: index for index, pair in enumerate(sorted(set(topology.values())))}
    return sorted({order[topology[c]] for c in cpus if c in topology})


def format_id_ranges(ids):
    """``[0, 1, 2, 5]`` -> ``"0-2,5"`` (the range syntax of gres.conf ``Cores=``)."""
    ids = sorted(set(int(i) for i in ids))
    parts = []
    start = prev = None
    for i in ids:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def parse_id_ranges(text):
    """``"0-2,5"`` -> ``[0, 1, 2, 5]``; also accepts a list of ints."""
    if text is None or text == "":
        return []
    if isinstance(text, (list, tuple)):
        return sorted({int(i) for i in text})
    ids = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            ids.update(range(int(lo), int(hi) + 1))
        else:
            ids.add(int(part))
    return sorted(ids)


def normalize_bus_id(bus_id):
    """``"00000000:1B:00.0"`` / ``b"0000:1b:00.0"`` -> ``"0000:1b:00.0"`` (4-digit domain)."""
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode("ascii", "replace")
    bus_id = str(bus_id or "").strip().lower().rstrip("\x00")
    m = re.match(r"^([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$", bus_id)
    if not m:
        return bus_id
    domain = int(m.group(1), 16)
    return f"{domain:04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}"


def nvlink_peers(gpus):
    """Fill ``peer_index`` in each GPU's ``nvlinks`` from the GPUs' own bus ids.

    ``gpus``: ``[{"index": 0, "pci_bus_id": "...", "nvlinks": [{"link": 0,
    "remote_pci_bus_id": "..."}]}]``. A link to an NVSwitch (or anything not in the list)
    keeps ``peer_index: None``. Returns the same list.
    """
    by_bus = {normalize_bus_id(g.get("pci_bus_id")): g["index"] for g in gpus if g.get("pci_bus_id")}
    for gpu in gpus:
        for link in gpu.get("nvlinks", []):
            link["peer_index"] = by_bus.get(normalize_bus_id(link.get("remote_pci_bus_id")))
    return gpus


def synthetic_uuid(host, minor):
    """A deterministic, clearly fake GPU UUID for the lab override.

    Shaped like NVML's ``GPU-xxxxxxxx-xxxx-...`` so consumers parse it, but version-5
    UUIDs in a namespace of our own, never equal to a real GPU's (those are random).
    """
    ns = uuid.UUID(hashlib.sha1(b"gpufleet-override").hexdigest()[:32])
    return "GPU-" + str(uuid.uuid5(ns, f"{host}:{int(minor)}"))


def check_device_node(path, stat_fn=None):
    """None when ``path`` is an NVIDIA character device (major 195), else why not."""
    try:
        st = (stat_fn or os.stat)(path)
    except FileNotFoundError:
        return f"{path} does not exist"
    except OSError as exc:
        return f"{path} cannot be read: {exc}"
    if not stat.S_ISCHR(st.st_mode):
        return f"{path} is not a character device"
    if os.major(st.st_rdev) != NVIDIA_MAJOR:
        return f"{path} has major {os.major(st.st_rdev)}, not {NVIDIA_MAJOR} (nvidia)"
    if os.minor(st.st_rdev) != int(re.sub(r"^.*?(\d+)$", r"\1", path)):
        return f"{path} has minor {os.minor(st.st_rdev)}, which does not match its name"
    return None


def _gpu_record(
    index,
    minor,
    name,
    uuid_,
    memory_mib,
    cores,
    pci_bus_id=None,
    nvlinks=None,
    mig_mode=None,
    synthetic=False,
):
    return {
        "index": int(index),
        "minor": int(minor),
        "name": name,
        "type": gres_type_from_name(name),
        "uuid": uuid_,
        "memory_mib": memory_mib,
        "cpu_affinity": list(cores),
        "cores": format_id_ranges(cores),
        "pci_bus_id": pci_bus_id,
        "nvlinks": list(nvlinks or []),
        "mig_mode": mig_mode,
        "file": f"/dev/nvidia{int(minor)}",
        "synthetic": synthetic,
    }


def collect_override(host, override, stat_fn=None):
    """GPU records for GPUs declared by the lab; ``(gpus, errors)``.

    ``override``: ``[{"minor": 0, "name": "NVIDIA H100 80GB HBM3", "index": 0,
    "cores": "0-15", "memory_mib": 81559, "uuid": "GPU-..."}]`` (only ``minor`` and
    ``name`` are required). Each ``/dev/nvidia<minor>`` must be a character device with
    major 195, so a declaration cannot drift from the container's device nodes.
    """
    gpus, errors = [], []
    seen = set()
    for position, item in enumerate(override):
        where = f"override[{position}]"
        if not isinstance(item, dict) or "minor" not in item or not item.get("name"):
            errors.append(f"{where} needs 'minor' and 'name', got {item!r}")
            continue
        try:
            minor = int(item["minor"])
        except (TypeError, ValueError):
            errors.append(f"{where}.minor must be an integer, got {item['minor']!r}")
            continue
        if minor in seen:
            errors.append(f"{where}.minor {minor} is declared twice")
            continue
        seen.add(minor)
        problem = check_device_node(f"/dev/nvidia{minor}", stat_fn)
        if problem:
            errors.append(f"{where}: {problem}")
            continue
        gpus.append(
            _gpu_record(
                index=item.get("index", position),
                minor=minor,
                name=item["name"],
                uuid_=item.get("uuid") or synthetic_uuid(host, minor),
                memory_mib=item.get("memory_mib"),
                cores=parse_id_ranges(item.get("cores")),
                pci_bus_id=item.get("pci_bus_id"),
                mig_mode=item.get("mig_mode"),
                synthetic=not item.get("uuid"),
            )
        )
    gpus.sort(key=lambda g: g["index"])
    return gpus, errors


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def collect_nvml(nvml, topology=None):
    """Query NVML through the ``pynvml`` module object ``nvml``.

    Returns ``{"gpus": [...], "driver_version": str|None, "reason": str}``; never raises
    for a missing library, driver or GPU: ``reason`` says why ``gpus`` is empty.
    """
    if nvml is None:
        reason = "python module pynvml (nvidia-ml-py) is not installed"
        return {"gpus": [], "driver_version": None, "reason": reason}
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, NoPermission, ...
        return {"gpus": [], "driver_version": None, "reason": f"NVML could not initialise: {exc}"}
    try:
        return _collect(nvml, topology if topology is not None else read_cpu_topology())
    except Exception as exc:
        return {"gpus": [], "driver_version": None, "reason": f"NVML query failed: {exc}"}
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def _optional(func, *args):
    try:
        return func(*args)
    except Exception:  # NVMLError_NotSupported and friends: the field stays unknown
        return None


def _collect(nvml, topology):
    driver = _optional(nvml.nvmlSystemGetDriverVersion)
    count = nvml.nvmlDeviceGetCount()
    if count == 0:
        return {
            "gpus": [],
            "driver_version": _text(driver) if driver else None,
            "reason": "NVML reports no GPU",
        }
    ncpu = (max(topology) + 1) if topology else (os.cpu_count() or 64)
    words = (ncpu + 63) // 64
    max_links = getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)
    gpus = []
    for index in range(count):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        mask = _optional(nvml.nvmlDeviceGetCpuAffinity, handle, words) or []
        memory = _optional(nvml.nvmlDeviceGetMemoryInfo, handle)
        pci = _optional(nvml.nvmlDeviceGetPciInfo, handle)
        mig = _optional(nvml.nvmlDeviceGetMigMode, handle)
        links = []
        for link in range(max_links):
            state = _optional(nvml.nvmlDeviceGetNvLinkState, handle, link)
            if state is None:
                break  # NVML_ERROR_INVALID_ARGUMENT / NOT_SUPPORTED: no such link
            if state != getattr(nvml, "NVML_FEATURE_ENABLED", 1):
                continue
            remote = _optional(nvml.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
            links.append(
                {"link": link, "remote_pci_bus_id": normalize_bus_id(remote.busId) if remote else None}
            )
        gpus.append(
            _gpu_record(
                index=index,
                minor=nvml.nvmlDeviceGetMinorNumber(handle),
                name=_text(nvml.nvmlDeviceGetName(handle)),
                uuid_=_text(nvml.nvmlDeviceGetUUID(handle)),
                memory_mib=(int(memory.total) // (1024 * 1024)) if memory else None,
                cores=slurm_core_ids(cpus_from_mask(mask), topology),
                pci_bus_id=normalize_bus_id(pci.busId) if pci else None,
                nvlinks=links,
                mig_mode=_mig_text(mig),
            )
        )
    nvlink_peers(gpus)
    return {"gpus": gpus, "driver_version": _text(driver) if driver else None, "reason": ""}


def _mig_text(mig):
    """``nvmlDeviceGetMigMode`` gives ``[current, pending]``; 1 = enabled."""
    if not mig:
        return None
    current = mig[0] if isinstance(mig, (list, tuple)) else mig
    return "enabled" if int(current) == 1 else "disabled"
