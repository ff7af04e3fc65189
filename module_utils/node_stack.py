# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU node stack's version lock: known incompatibilities as data, and the decisions the
node-stack roles take (may the driver change here, can a package be installed here).

Pure functions: preflight (filter_plugins/node_stack.py) and the unit tests call them directly.

The lock is ``cluster_node_stack_versions`` (playbooks/vars/node_stack_versions.yml). A site
overrides one component per host through the owning role's variable (``nvidia_driver_version``,
``dcgm_version``, ...); :func:`effective_versions` applies those overrides so preflight checks what
each host will really get.
"""

from __future__ import annotations

import re

# Lowest driver that runs each CUDA major through CUDA's minor-version compatibility
# (CUDA Toolkit release notes, "CUDA Driver" table: 11.x >= 450.80.02, 12.x >= 525.60.13,
# 13.x >= 580.65.06).
CUDA_MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}

# Known incompatibilities, each checked by :func:`compat_errors`. ``source`` says where the rule
# comes from; ``kind`` picks the check.
COMPAT_RULES = [
    {"name": "fabric_manager_equals_driver", "kind": "equal", "a": "fabric_manager.version",
     "b": "driver.version",
     "source": "NVIDIA Fabric Manager user guide: the service checks the loaded driver's version at start "
               "and aborts on any other version; the package must match the driver exactly"},
    {"name": "imex_equals_driver", "kind": "equal", "a": "imex.version", "b": "driver.version",
     "source": "NVIDIA IMEX packages (nvidia-imex-<branch>) are versioned with, and shipped for, one driver"},
    {"name": "driver_version_in_branch", "kind": "branch", "a": "driver.version", "b": "driver.branch",
     "source": "a driver version belongs to its branch (550.163.01 is R550)"},
    {"name": "open_modules_min_driver", "kind": "open_min", "a": "driver.kernel_modules",
     "b": "driver.version", "min": "515.43.04",
     "source": "NVIDIA open GPU kernel modules exist from R515 (515.43.04); Blackwell needs them"},
    {"name": "dcgm3_min_driver", "kind": "dcgm_min", "major": 3, "min": "450.80.02",
     "source": "DCGM 3.x release notes: a minimum R450 datacenter driver (>= 450.80.02)"},
    {"name": "dcgm4_cuda_driver", "kind": "dcgm4_cuda",
     "source": "DCGM 4.x ships one package per CUDA major (datacenter-gpu-manager-4-cuda<major>); the "
               "driver must run that CUDA major (CUDA_MIN_DRIVER)"},
    {"name": "exporter_pairs_host_engine", "kind": "exporter",
     "source": "DCGM Exporter tags are <dcgm-version>-<exporter-version>; run it against the DCGM version "
               "it is paired with (DCGM Exporter install guide); 4.7.1 and earlier 4.7 mix fails"},
    {"name": "cuda_min_driver", "kind": "cuda_min",
     "source": "CUDA minor-version compatibility: a CUDA major needs CUDA_MIN_DRIVER[major]"},
    {"name": "nccl_built_for_cuda_major", "kind": "same_major", "a": "nccl.cuda", "b": "cuda.version",
     "source": "NCCL packages are built per CUDA version (libnccl2=<v>+cuda<x.y>); one CUDA major per node"},
]

# Role variables a site may set per host, and the lock key each one overrides.
OVERRIDES = {
    "nvidia_driver_version": "driver.version",
    "nvidia_driver_branch": "driver.branch",
    "nvidia_driver_kernel_modules": "driver.kernel_modules",
    "nvidia_driver_fabric_manager_version": "fabric_manager.version",
    "nvidia_driver_imex_version": "imex.version",
    "dcgm_version": "dcgm.version",
    "dcgm_cuda_major": "dcgm.cuda_major",
    "dcgm_exporter_version": "dcgm.exporter",
    "nccl_tests_cuda_version": "cuda.version",
    "nccl_tests_nccl_cuda": "nccl.cuda",
}

_VERSION_RE = re.compile(r"^\d+(\.\d+)*$")


def version_tuple(text) -> tuple[int, ...]:
    """``"550.163.01"`` -> ``(550, 163, 1)``; anything else raises ValueError naming the text."""
    value = str(text).strip()
    if not _VERSION_RE.match(value):
        raise ValueError(f"not a dotted version: {text!r}")
    return tuple(int(p) for p in value.split("."))


def lookup(tree, dotted):
    """``lookup({"a": {"b": 1}}, "a.b")`` -> 1; None where any step is missing."""
    node = tree
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _set(tree, dotted, value):
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def effective_versions(lock: dict, host_vars: dict) -> dict:
    """The lock with this host's role-variable overrides (:data:`OVERRIDES`) applied."""
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in (lock or {}).items()}
    for var, dotted in OVERRIDES.items():
        if var in host_vars and host_vars[var] is not None:
            _set(merged, dotted, host_vars[var])
    return merged


def _check(rule, v) -> str | None:
    kind = rule["kind"]
    if kind == "equal":
        a, b = lookup(v, rule["a"]), lookup(v, rule["b"])
        if a is None or b is None:
            return None
        return None if str(a) == str(b) else f"{rule['a']} {a} must equal {rule['b']} {b}"
    if kind == "branch":
        a, b = lookup(v, rule["a"]), lookup(v, rule["b"])
        if a is None or b is None:
            return None
        return None if str(a).split(".")[0] == str(b) else f"{rule['a']} {a} is not in {rule['b']} {b}"
    if kind == "open_min":
        mods, drv = lookup(v, rule["a"]), lookup(v, rule["b"])
        if mods != "open" or drv is None:
            return None
        if version_tuple(drv) < version_tuple(rule["min"]):
            return f"driver.kernel_modules open needs driver >= {rule['min']}, lock has {drv}"
        return None
    drv = lookup(v, "driver.version")
    dcgm = lookup(v, "dcgm.version")
    if kind == "dcgm_min":
        if dcgm is None or drv is None or version_tuple(dcgm)[0] != rule["major"]:
            return None
        if version_tuple(drv) < version_tuple(rule["min"]):
            return f"dcgm.version {dcgm} needs driver >= {rule['min']}, driver.version is {drv}"
        return None
    if kind == "dcgm4_cuda":
        if dcgm is None or drv is None or version_tuple(dcgm)[0] != 4:
            return None
        major = lookup(v, "dcgm.cuda_major")
        if major is None:
            return f"dcgm.version {dcgm} needs dcgm.cuda_major (DCGM 4 ships one package per CUDA major)"
        need = CUDA_MIN_DRIVER.get(int(major))
        if need is None:
            return f"dcgm.cuda_major {major} is not one of {sorted(CUDA_MIN_DRIVER)}"
        if version_tuple(drv) < version_tuple(need):
            return (f"dcgm.version {dcgm} for CUDA {major} needs driver >= {need}, "
                    f"driver.version is {drv}")
        return None
    if kind == "exporter":
        exporter = lookup(v, "dcgm.exporter")
        if exporter is None or dcgm is None:
            return None
        paired = str(exporter).split("-")[0]
        if version_tuple(paired)[:2] != version_tuple(dcgm)[:2]:
            return (f"dcgm.exporter {exporter} is paired with DCGM {paired}, the host engine "
                    f"(dcgm.version) is {dcgm}")
        if version_tuple(dcgm)[:2] == (4, 7) and version_tuple(paired) != version_tuple(dcgm):
            return f"dcgm.exporter {exporter} and host engine {dcgm}: DCGM 4.7.x needs the same patch on both sides"
        return None
    if kind == "cuda_min":
        cuda = lookup(v, "cuda.version")
        if cuda is None or drv is None:
            return None
        need = CUDA_MIN_DRIVER.get(version_tuple(cuda)[0])
        if need is None:
            return f"cuda.version {cuda}: no known minimum driver for CUDA {version_tuple(cuda)[0]}"
        if version_tuple(drv) < version_tuple(need):
            return f"cuda.version {cuda} needs driver >= {need}, driver.version is {drv}"
        return None
    if kind == "same_major":
        a, b = lookup(v, rule["a"]), lookup(v, rule["b"])
        if a is None or b is None:
            return None
        if version_tuple(a)[0] != version_tuple(b)[0]:
            return f"{rule['a']} {a} and {rule['b']} {b} are different CUDA majors"
        return None
    raise ValueError(f"unknown rule kind {kind!r}")


def compat_errors(versions: dict, rules=None) -> list[str]:
    """Every broken rule as ``"<rule name>: <what is wrong>"``; a malformed version is an error too."""
    errors = []
    for rule in COMPAT_RULES if rules is None else rules:
        try:
            problem = _check(rule, versions)
        except ValueError as exc:
            problem = str(exc)
        if problem:
            errors.append(f"{rule['name']}: {problem}")
    return errors


def fleet_compat_errors(lock: dict, hostvars: dict, hosts) -> list[str]:
    """Check the lock itself, then every host whose overrides change it. Messages name the host and
    the variable behind a host's own problem."""
    if not isinstance(lock, dict) or not lock:
        return ["version lock: cluster_node_stack_versions is missing or empty"]
    errors = [f"version lock: {e}" for e in compat_errors(lock)]
    for host in sorted(hosts):
        hv = hostvars.get(host, {})
        given = sorted(var for var in OVERRIDES if hv.get(var) is not None)
        if not given:
            continue
        lock_seen = set(compat_errors(lock))
        for err in compat_errors(effective_versions(lock, hv)):
            if err not in lock_seen:
                errors.append(f"host {host}: {err} (host overrides: {', '.join(given)})")
    return errors


_UNMET_RE = re.compile(r"^\s*(\S+)\s*:\s*(?:PreDepends|Depends|Conflicts|Breaks):.*$", re.M)


def apt_simulate_verdict(rc: int, text: str) -> dict:
    """Read ``apt-get install --simulate <pkg>``: ``{"installable", "reason"}``.

    Exit 0 with an ``Inst`` or ``Conf`` line, or a note that the package is already the newest
    version, is installable. Exit 100 with an "unmet dependencies" block is not, and the reason is
    the first unmet line (bookworm's slurm-wlm-nvml-plugin pins an older basic-plugins). Anything
    else raises ValueError: the probe itself broke.
    """
    if rc == 0 and (re.search(r"^(Inst|Conf) ", text, re.M) or "is already the newest version" in text):
        return {"installable": True, "reason": ""}
    if rc == 100:
        unmet = _UNMET_RE.search(text)
        if unmet:
            return {"installable": False, "reason": " ".join(unmet.group(0).split())}
        missing = re.search(r"^E: (Unable to locate package .*|Package '.*' has no installation candidate)$",
                            text, re.M)
        if missing:
            return {"installable": False, "reason": missing.group(1)}
    raise ValueError(f"apt-get --simulate: exit {rc} without a result I understand")


def driver_change_decision(installed, wanted, view=None, scheduler=True, declared_drained=False) -> dict:
    """May the driver packages on this node go from ``installed`` to ``wanted``?

    ``installed`` is the installed driver version (None: none installed). ``view`` is the node's
    live Slurm view (module_utils/pool_live.node_view) or None where Slurm does not know the node;
    ``scheduler`` is False where the inventory has no Slurm controller (then only
    ``declared_drained`` - the operator says the node is out of service - allows a change).

    Returns ``{"action": "install"|"keep"|"change"|"refuse", "reason"}``. A first install and
    keeping the version always go ahead; a change goes ahead only on a node taken out of service
    (drained in Slurm with no job left, or unknown to Slurm) and is otherwise refused.
    """
    if not installed:
        return {"action": "install", "reason": "no driver installed"}
    if str(installed) == str(wanted):
        return {"action": "keep", "reason": f"driver {installed} is the locked version"}
    change = f"driver {installed} -> {wanted}"
    if not scheduler:
        if declared_drained:
            return {"action": "change", "reason": f"{change}: the inventory declares the node drained"}
        return {"action": "refuse", "reason": f"{change}: no Slurm controller can show the node is idle; "
                                              "drain it and set nvidia_driver_node_drained: true"}
    if view is None:
        return {"action": "change", "reason": f"{change}: Slurm does not know the node (not in service)"}
    if view.get("busy"):
        return {"action": "refuse", "reason": f"{change}: the node runs jobs; drain it (pools.yml or "
                                              "scontrol) and wait for them to end"}
    if not view.get("drained"):
        return {"action": "refuse", "reason": f"{change}: the node is in service (not drained); drain it first"}
    return {"action": "change", "reason": f"{change}: the node is drained and idle"}
