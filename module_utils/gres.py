# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gres.conf and slurm.conf ``Gres=`` from ``nvidia_gpu_info`` facts.

Two ways to tell slurmd about GPUs (gres.conf(5)):

* ``AutoDetect=nvml``: slurmd asks NVML itself, through Slurm's gpu_nvml plugin. Debian ships
  it apart from slurmd, in ``slurm-wlm-nvml-plugin`` (contrib): trixie's 24.11.5-2 installs;
  bookworm's 22.05.8-4+deb12u2 pins slurm-wlm-basic-plugins deb12u2 while bookworm now ships
  deb12u3, so it cannot be installed there (roles/slurm_nvml detects and says so). Without the
  plugin, AutoDetect=nvml falls back to gpu/generic, finds 0 GPUs and the node drains with
  "gres/gpu count reported lower than configured"
  (tests/fixtures/slurm_sinfo_R_gres_gpu_count_reported_lower.txt), so gres.conf says it only
  for the nodes where roles/slurm_nvml proved that the plugin loads and NVML answers
  (module_utils/slurm_nvml.py), one ``NodeName=... AutoDetect=nvml`` line for them. Slurm
  22.05's plugin opens only the unversioned ``libnvidia-ml.so``, which Debian's libnvidia-ml1
  does not ship (it has ``libnvidia-ml.so.1``).
* explicit lines, one per GPU, generated here:
  ``Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-31 Links=-1,18,...``.

gres.conf(5) facts used:

* ``Cores``: Slurm's logical core indices (see module_utils/nvml.py), ranges allowed.
* ``Links``: "A comma-delimited list of numbers identifying the number of connections
  between this device and other devices ... an ordered list in which the number of
  connections this specific device has to device number 0 would be in the first
  position, ... A -1 indicates the device itself and a 0 indicates no connection. If
  specified, then this line can only contain a single GRES device". Device numbers are
  the order of the GPUs in the file; lines are written sorted by minor number, so
  position = rank of the minor number.
* ``NodeName=`` first on a line when one file serves many nodes (configless Slurm
  ships the controller's gres.conf to every node).

GPU records are reported by the nodes themselves, and one gres.conf serves every node, so each
field is checked on the controller before it is written (:func:`gpu_record_errors`): a newline in
``file`` would add a line of its own (``NodeName=ALL ...``), a ``#`` would cut the line, a space
would add a key. A record that fails is refused naming the host and the field; nothing is written.
"""

import re

from ansible.module_utils.hostlist import hostlist_fold

# What the nodes' discovery (module_utils/nvml.py) produces, and nothing a config line could misread.
_GPU_FIELDS = {
    "type": re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*"),
    "file": re.compile(r"/dev/nvidia[0-9]+"),
    "cores": re.compile(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*"),
}


def _whole(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and re.fullmatch(r"[0-9]+", value) is not None


def gpu_record_errors(gpu):
    """Errors (list) for one node-reported GPU record: each names the field and shows the value.

    ``minor`` (and ``index`` when given) must be whole numbers, ``type`` a GRES type (letters, digits,
    ``_ . -``), ``file`` a ``/dev/nvidia<N>`` device and ``cores`` a list of core ranges; ``nvlinks``
    peers must be whole numbers. Empty ``type``/``file``/``cores`` are allowed (left out or derived).
    """
    if not isinstance(gpu, dict):
        return [f"record is no mapping: {gpu!r}"]
    where = f"GPU {gpu.get('index', '?')}"
    errors = []
    if not _whole(gpu.get("minor")):
        errors.append(f"{where} field minor {gpu.get('minor')!r} is no whole number")
    if "index" in gpu and not _whole(gpu["index"]):
        errors.append(f"{where} field index {gpu['index']!r} is no whole number")
    for field, pattern in _GPU_FIELDS.items():
        value = gpu.get(field)
        if value in (None, ""):
            continue
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            errors.append(f"{where} field {field} {value!r} is not {pattern.pattern!r}")
    for link in gpu.get("nvlinks") or []:
        peer = link.get("peer_index") if isinstance(link, dict) else link
        if peer is not None and not _whole(peer):
            errors.append(f"{where} field nvlinks peer_index {peer!r} is no whole number")
    return errors


def gpu_report_errors(gpus):
    """Every error of a node's GPU report (:func:`gpu_record_errors` of each record), for the message that holds it."""
    if gpus is None:
        return []
    if isinstance(gpus, (str, bytes, dict)) or not isinstance(gpus, (list, tuple)):
        return [f"report is no list of records: {gpus!r}"]
    return [error for gpu in gpus for error in gpu_record_errors(gpu)]


def refused_gpu_fields(gpus):
    """The fields of a node's GPU report that :func:`gpu_record_errors` refuses, sorted and each named once
    (``record`` for an entry that is no mapping, or a report that is no list); empty when every record passes.
    The health hold's reason names them (roles/gpu_discovery)."""
    if gpus is None:
        return []
    if isinstance(gpus, (str, bytes, dict)) or not isinstance(gpus, (list, tuple)):
        return ["record"]
    fields = set()
    for gpu in gpus:
        for error in gpu_record_errors(gpu):
            match = re.search(r" field (\w+)", error)
            fields.add(match.group(1) if match else "record")
    return sorted(fields)


def check_gpu_records(gpus, host=None):
    """Raise ValueError naming ``host`` and the first bad field when a GPU record fails
    :func:`gpu_record_errors`; the caller writes nothing then."""
    for gpu in gpus or []:
        errors = gpu_record_errors(gpu)
        if errors:
            prefix = f"host {host}: " if host is not None else ""
            raise ValueError(f"{prefix}{errors[0]}; the node's GPU report is refused and no gres.conf "
                             f"is written (rerun gpu_discovery on it, or leave it out of the run)")


def _ordered(gpus):
    return sorted(gpus, key=lambda g: (int(g["minor"]), int(g.get("index", 0))))


def links_value(gpu, gpus):
    """The ``Links=`` value for ``gpu`` among ``gpus``, or None when no GPU-GPU NVLink."""
    ordered = _ordered(gpus)
    counts = {}
    for link in gpu.get("nvlinks") or []:
        peer = link.get("peer_index")
        if peer is not None and peer != gpu.get("index"):
            counts[peer] = counts.get(peer, 0) + 1
    if not counts:
        return None
    values = []
    for other in ordered:
        if other.get("index") == gpu.get("index"):
            values.append("-1")
        else:
            values.append(str(counts.get(other.get("index"), 0)))
    return ",".join(values)


def gres_conf_lines(gpus, autodetect=False, node_name=None, cores=True, links=True):
    """gres.conf lines (no trailing newline) for one node's GPUs.

    ``autodetect=True`` gives the single ``AutoDetect=nvml`` line (per node when
    ``node_name`` is set). ``cores``/``links`` switch off ``Cores=``/``Links=``.
    """
    prefix = f"NodeName={node_name} " if node_name else ""
    if autodetect:
        return [f"{prefix}AutoDetect=nvml"]
    check_gpu_records(gpus, node_name)
    lines = []
    for gpu in _ordered(gpus or []):
        parts = ["Name=gpu"]
        if gpu.get("type"):
            parts.append(f"Type={gpu['type']}")
        device = gpu.get("file") or f"/dev/nvidia{int(gpu['minor'])}"
        parts.append(f"File={device}")
        if cores and gpu.get("cores"):
            parts.append(f"Cores={gpu['cores']}")
        link_text = links_value(gpu, gpus) if links else None
        if link_text:
            parts.append(f"Links={link_text}")
        lines.append(prefix + " ".join(parts))
    return lines


def gres_conf(gpus, autodetect=False, node_name=None, cores=True, links=True):
    """gres.conf text for one node (ends with a newline; empty string without GPUs)."""
    lines = gres_conf_lines(gpus, autodetect, node_name, cores, links)
    return "".join(line + "\n" for line in lines)


def gres_conf_cluster(gpus_by_host, autodetect=False, cores=True, links=True, autodetect_nodes=(), kept=None):
    """One gres.conf for many nodes: ``{host: gpus}`` -> text.

    Hosts whose lines are identical share lines with a folded ``NodeName=`` hostlist, so
    10,000 identical nodes give one line per GPU. ``autodetect_nodes`` (short names) get the
    node-specific ``NodeName=<nodes> AutoDetect=nvml`` line instead of explicit lines (gres.conf(5)
    at 22.05 and 24.11: a NodeName line may carry its own AutoDetect, which wins over a global one);
    ``autodetect=True`` gives the one global line for every node.

    Work at risk: ``gpus_by_host`` is what each node reported about itself, and the file reaches every
    node; a record with a field a gres.conf line cannot hold (see :func:`gpu_record_errors`) is Refused
    (ValueError naming the host and the field) before any text is made, so no node's lines change and
    the file in place keeps serving every node. Leaving only that node out instead would make its slurmd
    register fewer GPUs than slurm.conf promises and Slurm would drain it for a reason that names no field.
    So a node whose report gpu_discovery refused (and held) comes in ``kept`` instead (``{host: {"lines": [line,
    ...]}}``, module_utils/slurm_change.py ``kept_gpu_report``): its lines as the gres.conf in place has them, without
    their ``NodeName=``, folded with the others as before, so the file does not change because of it.
    """
    if autodetect:
        return "AutoDetect=nvml\n"
    detect = sorted({str(host).split(".", 1)[0] for host in autodetect_nodes or []})
    groups = {("AutoDetect=nvml",): detect} if detect else {}
    kept = dict(kept or {})
    for host in sorted(set(gpus_by_host) | set(kept)):
        if host.split(".", 1)[0] in detect:
            continue
        if host in kept:
            held = kept[host]
            body = tuple(_kept_lines(host, (held or {}).get("lines") if isinstance(held, dict) else held))
        else:
            check_gpu_records(gpus_by_host[host], host)
            body = tuple(gres_conf_lines(gpus_by_host[host] or [], cores=cores, links=links))
        if body:
            groups.setdefault(body, []).append(host)
    out = []
    for body, hosts in sorted(groups.items(), key=lambda kv: kv[1][0]):
        nodes = hostlist_fold(hosts)
        out.extend(f"NodeName={nodes} {line}" for line in body)
    return "".join(line + "\n" for line in out)


_KEPT_LINE = re.compile(r"Name=gpu( [A-Za-z]+=[A-Za-z0-9_./,-]+)*")


def _kept_lines(host, lines):
    """A held node's gres.conf lines as the file in place has them, checked again: they go back into the file."""
    if isinstance(lines, (str, bytes)) or not isinstance(lines, (list, tuple)):
        raise ValueError(f"host {host}: its kept gres.conf lines are no list: {lines!r}")
    for line in lines:
        if not isinstance(line, str) or _KEPT_LINE.fullmatch(line) is None:
            raise ValueError(f"host {host}: kept gres.conf line {line!r} is not {_KEPT_LINE.pattern!r}; "
                             f"no gres.conf is written")
    return lines


def gres_node_string(gpus):
    """slurm.conf ``NodeName ... Gres=`` value: ``gpu:h100:8`` (``""`` without GPUs).

    Mixed models give one entry per type, sorted: ``gpu:a100:4,gpu:h100:4``; GPUs with
    no type are counted as plain ``gpu:N``. A record that fails :func:`gpu_record_errors` is a
    ValueError naming the field: the value goes into slurm.conf.
    """
    check_gpu_records(gpus)
    counts = {}
    for gpu in gpus or []:
        key = gpu.get("type") or ""
        counts[key] = counts.get(key, 0) + 1
    parts = []
    for gtype in sorted(counts):
        parts.append(f"gpu:{gtype}:{counts[gtype]}" if gtype else f"gpu:{counts[gtype]}")
    return ",".join(parts)


def gres_gpu_count(gres):
    """Number of GPUs in a ``Gres=`` string (``gpu:h100:8,gpu:2`` -> 10)."""
    total = 0
    for entry in re.sub(r"\([^)]*\)", "", str(gres or "")).split(","):
        fields = entry.strip().split(":")
        if not fields or fields[0] != "gpu":
            continue
        count = fields[-1] if len(fields) > 1 else "1"
        try:
            total += int(count)
        except ValueError:
            total += 1  # "gpu:h100" means one
    return total


def check_gpu_count(host, configured, detected, variable="slurm_compute_gres"):
    """An error naming host and variable when fewer GPUs are detected than configured.

    ``configured``: an int or a ``Gres=`` string; ``detected``: an int or the GPU list.
    slurmd registering fewer GPUs than slurm.conf promises gets the node drained with
    "gres/gpu count reported lower than configured". Returns None when it is fine.
    """
    want = configured if isinstance(configured, int) else gres_gpu_count(configured)
    have = detected if isinstance(detected, int) else len(detected or [])
    if have < want:
        return (
            f"host {host}: {variable} configures {want} GPU(s) but {have} were detected; "
            f"slurmd would register fewer GPUs and Slurm would drain the node with "
            f"'gres/gpu count reported lower than configured'"
        )
    return None


def check_gpu_types(host, gpus, allowed=None, variable="slurm_gpu_types"):
    """Errors (list) for GPUs whose GRES type is unknown or not in ``allowed``."""
    errors = []
    for gpu in gpus or []:
        where = f"host {host}: GPU {gpu.get('index')} ({gpu.get('name')!r}, {gpu.get('file')})"
        if not gpu.get("type"):
            errors.append(f"{where} has no GRES type derivable from its name; set {variable}")
        elif allowed is not None and gpu["type"] not in allowed:
            errors.append(f"{where} has type {gpu['type']!r}, not one of {variable}: {sorted(allowed)}")
    return errors
