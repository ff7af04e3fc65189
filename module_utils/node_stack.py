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

from ansible.module_utils.k8s_state import node_state

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


# Driver packages whose version is the installed driver's, per package manager (anchored regular
# expressions). Ubuntu's names carry the branch and the flavour (nvidia-driver-535, nvidia-driver-550-server,
# nvidia-driver-550-server-open, libnvidia-compute-535, nvidia-utils-535-server, nvidia-dkms-535-server);
# Debian's do not (nvidia-driver, libnvidia-ml1, nvidia-kernel-dkms, libcuda1 at 535.x); RHEL's come from
# NVIDIA's CUDA repository. Every branch is read, so a branch change (535 -> 550) reads the 535 installed.
# Packages versioned on their own (nvidia-persistenced, nvidia-settings) are not listed.
DRIVER_PACKAGES = {
    "apt": (r"nvidia-driver", r"libnvidia-ml1", r"libcuda1", r"nvidia-kernel-dkms", r"nvidia-open-kernel-dkms",
            r"nvidia-driver-\d+(-server)?(-open)?", r"libnvidia-compute-\d+(-server)?", r"nvidia-utils-\d+(-server)?",
            r"nvidia-dkms-\d+(-server)?(-open)?"),
    "dnf": (r"nvidia-driver", r"nvidia-driver-cuda", r"nvidia-driver-cuda-libs", r"nvidia-driver-libs",
            r"nvidia-driver-NVML", r"kmod-nvidia-latest-dkms", r"kmod-nvidia-open-dkms"),
}
_DRIVER_VERSION_RE = re.compile(r"^(?:\d+:)?(\d+\.\d+(?:\.\d+)?)(?:[-~+].*)?$")


def _driver_upstream(version):
    match = _DRIVER_VERSION_RE.match(str(version).strip()) if version is not None else None
    return match.group(1) if match else None


# /proc/driver/nvidia/version, written by the loaded nvidia kernel module: "NVRM version: <id>" then "GCC version:
# <compiler>"; the id names the module, then the driver version as a word of its own ("NVIDIA UNIX x86_64 Kernel
# Module  550.54.15  <build date>", "NVIDIA UNIX Open Kernel Module for x86_64  550.127.05  Release Build ...").
MODULE_VERSION_FILE = "/proc/driver/nvidia/version"
_MODULE_LINE_RE = re.compile(r"^NVRM version:.*?Kernel Module(?P<rest>.*)$", re.MULTILINE)
_MODULE_VERSION_RE = re.compile(r"^\d+\.\d+(?:\.\d+)?$")


def loaded_module(present, text) -> dict:
    """The loaded nvidia kernel module from :data:`MODULE_VERSION_FILE`: ``{"loaded", "version", "reason"}``.

    *present*: whether the file exists (True: the module is loaded; False: it is not; None: that could not be
    read); *text*: its content, None where it could not be read. ``loaded`` is True, False or None (unknown);
    ``version`` is the driver version of the loaded module, None where it cannot be read.

    Work at risk: none (read-only). A module that is loaded but whose version cannot be read keeps ``version``
    None with ``loaded`` True, and whether a module is loaded that cannot be read is ``loaded`` None: neither
    reads as "no module".
    """
    if present is False:
        return {"loaded": False, "version": None,
                "reason": f"no nvidia kernel module loaded ({MODULE_VERSION_FILE} absent)"}
    if present is not True:
        return {"loaded": None, "version": None,
                "reason": f"whether an nvidia kernel module is loaded could not be read ({MODULE_VERSION_FILE})"}
    match = _MODULE_LINE_RE.search(text) if isinstance(text, str) else None
    version = next((w for w in match.group("rest").split() if _MODULE_VERSION_RE.match(w)), None) if match else None
    if version is None:
        what = "could not be read" if not isinstance(text, str) else f"holds no version I can read ({text[:120]!r})"
        return {"loaded": True, "version": None,
                "reason": f"an nvidia kernel module is loaded but {MODULE_VERSION_FILE} {what}"}
    return {"loaded": True, "version": version, "reason": f"nvidia kernel module {version} loaded"}


def _with_module(found, module):
    """:func:`installed_driver`'s packages-only result *found*, with the loaded kernel module read in."""
    if module is None or found["state"] != "none":
        return found
    loaded = module.get("loaded") if isinstance(module, dict) else None
    if loaded is False:
        return found
    if loaded is True and module.get("version"):
        version = str(module["version"])
        return {"state": "installed", "version": version, "packages": {}, "source": "module",
                "reason": f"driver {version} from the loaded kernel module and no driver package (a runfile install)"}
    why = module.get("reason") if isinstance(module, dict) else f"unreadable kernel module reading {module!r}"
    return {"state": "unknown", "version": None, "packages": {},
            "reason": f"no driver package, and {why or 'the kernel module could not be read'}"}


def installed_driver(packages, manager, module=None) -> dict:
    """The installed driver from Ansible's package facts: ``{"state", "version", "packages", "reason"}``.

    ``state`` is ``installed`` (``version`` is the upstream version, ``535.183.06`` from
    ``535.183.06-0ubuntu0.22.04.1``), ``none`` (the facts were read and hold no driver package of
    :data:`DRIVER_PACKAGES`) or ``unknown``: no package facts, no package data for *manager*, a version
    that is not a driver version, or driver packages at different versions (a change half done).
    ``packages`` maps each driver package found to its upstream version (None where unreadable).

    *module*: :func:`loaded_module`'s result (None: not read, the packages alone decide). A driver with no
    package whose kernel module is loaded - NVIDIA's runfile installs no package - is ``installed`` at the
    module's version with ``source`` ``module``; with no package and a module loaded whose version cannot be
    read, or whether one is loaded unknown, the driver is ``unknown``.

    Work at risk: none (read-only). Its caller must never read ``unknown`` as ``none``: only ``none``
    lets :func:`driver_change_decision` install without asking any scheduler, and a loaded module is never
    ``none``.
    """
    return _with_module(_packaged_driver(packages, manager), module)


def _packaged_driver(packages, manager) -> dict:
    """:func:`installed_driver` from the package facts alone."""
    if manager not in DRIVER_PACKAGES:
        return {"state": "unknown", "version": None, "packages": {},
                "reason": f"no driver package data for package manager {manager!r} (known: "
                          f"{', '.join(sorted(DRIVER_PACKAGES))})"}
    if not isinstance(packages, dict):
        return {"state": "unknown", "version": None, "packages": {},
                "reason": "the installed packages could not be read (no package facts)"}
    patterns = [re.compile(f"^{p}$") for p in DRIVER_PACKAGES[manager]]
    found = {}
    for name in sorted(map(str, packages)):
        if not any(p.match(name) for p in patterns):
            continue
        entries = packages[name] if isinstance(packages[name], list) else [packages[name]]
        versions = {_driver_upstream(e.get("version")) if isinstance(e, dict) else None for e in entries}
        found[name] = versions.pop() if len(versions) == 1 else None
    if not found:
        return {"state": "none", "version": None, "packages": {}, "reason": "no driver package installed"}
    odd = sorted(n for n, v in found.items() if v is None)
    if odd:
        return {"state": "unknown", "version": None, "packages": found,
                "reason": f"driver package(s) {', '.join(odd)} carry no driver version I can read"}
    versions = sorted(set(found.values()))
    if len(versions) > 1:
        by = ", ".join(f"{n} {v}" for n, v in sorted(found.items()))
        return {"state": "unknown", "version": None, "packages": found,
                "reason": f"driver packages at different versions ({by}): a change half done"}
    return {"state": "installed", "version": versions[0], "packages": found,
            "reason": f"driver {versions[0]} ({', '.join(sorted(found))})"}


GPU_RESOURCE = "nvidia.com/gpu"
_ENDED_PHASES = ("Succeeded", "Failed")


def _requests_gpu(container):
    resources = (container or {}).get("resources") or {}
    for key in ("requests", "limits"):
        value = (resources.get(key) or {}).get(GPU_RESOURCE)
        if value is None:
            continue
        try:
            if int(str(value).strip()) > 0:
                return True
        except ValueError:
            return True  # a quantity I cannot read: counted as GPUs in use
    return False


def gpu_pods(pods) -> list[str]:
    """``namespace/name`` of the pods (Pod objects bound to one node) that hold its GPUs: not ended
    (phase other than Succeeded or Failed) with a container or init container that requests or limits
    ``nvidia.com/gpu`` (Kubernetes defaults an extended resource's request to its limit).

    Work at risk: none (read-only). A GPU quantity it cannot read counts as GPUs in use.
    """
    out = []
    for p in pods or []:
        if not isinstance(p, dict) or ((p.get("status") or {}).get("phase")) in _ENDED_PHASES:
            continue
        spec = p.get("spec") or {}
        if any(_requests_gpu(c) for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])):
            meta = p.get("metadata") or {}
            out.append(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
    return sorted(out)


def k8s_gpu_use(node_result, pods_result) -> dict:
    """What Kubernetes shows of one node, from two registered ``kubernetes.core.k8s_info`` results: the
    Node by name and the pods with ``spec.nodeName`` set to it.

    Returns ``{"read", "known", "pool", "cordoned", "gpu_pods", "reason"}``. ``read`` is False where
    either result failed or is missing: the caller counts such a node busy. ``known`` is False where the
    API has no such Node (then no pod can run there). ``pool`` is the Node's pool label read as
    module_utils/k8s_state.py does.

    Work at risk: none (read-only). An unreadable answer is ``read: False``, never "no pods".
    """
    for what, result in (("the Node", node_result), ("its pods", pods_result)):
        if not isinstance(result, dict) or result.get("failed") or not isinstance(result.get("resources"), list):
            msg = result.get("msg") if isinstance(result, dict) else None
            return {"read": False, "known": None, "pool": None, "cordoned": None, "gpu_pods": [],
                    "reason": f"Kubernetes could not be read for {what}" + (f" ({msg})" if msg else "")}
    nodes = node_result["resources"]
    if not nodes:
        return {"read": True, "known": False, "pool": None, "cordoned": None,
                "gpu_pods": gpu_pods(pods_result["resources"]), "reason": "Kubernetes has no such Node"}
    try:
        state = node_state(nodes[0])
    except ValueError as exc:
        return {"read": False, "known": None, "pool": None, "cordoned": None, "gpu_pods": [],
                "reason": f"Kubernetes could not be read for the Node ({exc})"}
    return {"read": True, "known": True, "pool": state["pool"], "cordoned": state["unschedulable"],
            "gpu_pods": gpu_pods(pods_result["resources"]), "reason": f"Node {state['name']}"}


def _installed_state(installed):
    """``(state, version, reason)`` from an :func:`installed_driver` result or a version string ('' or None: none)."""
    if isinstance(installed, dict):
        state = installed.get("state")
        if state not in ("installed", "none", "unknown") or (state == "installed" and not installed.get("version")):
            return "unknown", None, f"unreadable driver reading {installed!r}"
        return state, installed.get("version"), installed.get("reason") or ""
    if installed in (None, ""):
        return "none", None, "no driver installed"
    return "installed", str(installed), ""


def driver_change_decision(installed, wanted, view=None, scheduler=True, declared_drained=False, k8s=None) -> dict:
    """May the driver packages on this node go from ``installed`` to ``wanted``?

    ``installed`` is :func:`installed_driver`'s result (or a version string; '' or None: none installed).
    ``view`` is the node's live Slurm view (module_utils/pool_live.node_view) or None where Slurm does not
    know the node; ``scheduler`` is False where the inventory has no Slurm controller (then only
    ``declared_drained`` - the operator says the node is out of service - allows a change). ``k8s`` is
    :func:`k8s_gpu_use`'s result where the inventory has a Kubernetes server, None where it has none.

    Returns ``{"action": "install"|"keep"|"change"|"refuse", "reason"}``. A first install (no driver
    package at all) and keeping the version always go ahead; a change, or a driver that cannot be read,
    goes ahead only on a node taken out of service in every scheduler that can run work on it: drained
    in Slurm with no job left (or unknown to Slurm), and, where Kubernetes is asked, no pod holding
    ``nvidia.com/gpu`` on it and, in the Kubernetes pool, cordoned. Otherwise it is refused.

    A driver installed without packages (NVIDIA's runfile, read from its loaded kernel module) takes the
    change path even at the locked version: the locked packages go in over it.

    Work at risk: ``installed`` and the scheduler views decide whether a driver is replaced under running
    jobs. A driver that cannot be read is never "none" (it takes the change path, never the install one),
    nor is a runfile driver whose kernel module is loaded (Guarded: the change path, never install or keep);
    Slurm busy, pods using the GPUs, a Kubernetes-pool node still schedulable, a Kubernetes answer that
    could not be read, or a Kubernetes-pool node no Kubernetes server can show, each refuse the change
    with the reason; the caller fails naming the host and ``nvidia_driver_version``.
    """
    state, version, read = _installed_state(installed)
    # A runfile driver (a loaded module, no package): the locked packages go in over it, a change even at its version.
    runfile = state == "installed" and isinstance(installed, dict) and installed.get("source") == "module"
    if state == "none":
        return {"action": "install", "reason": "no driver installed"}
    if state == "installed" and version == str(wanted) and not runfile:
        return {"action": "keep", "reason": f"driver {version} is the locked version"}
    if runfile:
        change = f"driver {version} (loaded kernel module, no package: a runfile install) -> packages {wanted}"
    elif state == "installed":
        change = f"driver {version} -> {wanted}"
    else:
        change = f"installed driver unknown ({read}) -> {wanted}"
    view_pool = (view or {}).get("pool")
    if k8s is not None:
        if not k8s.get("read"):
            return {"action": "refuse", "reason": f"{change}: {k8s.get('reason') or 'Kubernetes could not be read'}; "
                                                  "a node whose state cannot be read is counted busy"}
        if k8s.get("gpu_pods"):
            return {"action": "refuse", "reason": f"{change}: pods use its GPUs in Kubernetes "
                                                  f"({', '.join(k8s['gpu_pods'])}); cordon and drain it "
                                                  "(kubectl drain, or pools.yml) and wait for them to end"}
        if (k8s.get("pool") == "k8s" or view_pool == "k8s") and k8s.get("known") and not k8s.get("cordoned"):
            return {"action": "refuse", "reason": f"{change}: the node is in service in the Kubernetes pool "
                                                  "(not cordoned); cordon and drain it first"}
    elif view_pool == "k8s" and not declared_drained:
        return {"action": "refuse", "reason": f"{change}: a Kubernetes-pool node, and no Kubernetes server "
                                              "(group k8s_server) can show that no pod uses its GPUs; drain it "
                                              "and set nvidia_driver_node_drained: true"}
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
