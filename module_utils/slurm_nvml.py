# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Can Slurm's gpu/nvml plugin work on this node? (``AutoDetect=nvml`` in gres.conf)

slurmd loads gpu/nvml only when gres.conf asks for ``AutoDetect=nvml``; it first dlopen()s the NVML
library by name and falls back to gpu/generic (0 GPUs, the node drains) when that fails
(src/common/gpu.c at slurm-22-05-8-1, src/interfaces/gpu.c at slurm-24-11-5-1):

* up to 24.05.4 it tries only ``libnvidia-ml.so`` (the unversioned name, which Debian's
  libnvidia-ml1 does not ship: it comes with the development package);
* from 24.05.5 (commit "Try loading libnvidia-ml.so.1 if failed with libnvidia-ml.so") it tries
  ``libnvidia-ml.so`` then ``libnvidia-ml.so.1``.

The plugin then asks NVML for the GPUs (nvmlInit, nvmlDeviceGetCount). The node may say
``AutoDetect=nvml`` only when all of it holds: the plugin file is installed, one of the names the
installed Slurm tries opens, NVML initialises and counts at least one GPU. Anything else, or
anything not understood, keeps the explicit gres.conf lines (fail safe).
"""

import ctypes
import os
import re

# NVML return codes (nvml.h) that explain why nvmlInit failed.
NVML_ERRORS = {
    1: "NVML_ERROR_UNINITIALIZED",
    2: "NVML_ERROR_INVALID_ARGUMENT",
    3: "NVML_ERROR_NOT_SUPPORTED",
    4: "NVML_ERROR_NO_PERMISSION",
    6: "NVML_ERROR_NOT_FOUND",
    9: "NVML_ERROR_DRIVER_NOT_LOADED (driver not loaded)",
    12: "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    17: "NVML_ERROR_GPU_IS_LOST",
    18: "NVML_ERROR_RESET_REQUIRED",
    999: "NVML_ERROR_UNKNOWN",
}

# First Slurm release whose gpu interface falls back to libnvidia-ml.so.1.
VERSIONED_FALLBACK = (24, 5, 5)


def _version_tuple(version):
    """``22.05.8-4+deb12u2`` / ``24.11.5`` -> (22, 5, 8); None when no X.Y.Z is found."""
    match = re.match(r"^\s*(?:\d+:)?(\d+)\.(\d+)\.(\d+)", str(version or ""))
    return tuple(int(part) for part in match.groups()) if match else None


def nvml_library_names(slurm_version):
    """The names the installed Slurm dlopen()s for NVML, in its order.

    An unknown version gets the older, stricter list (fail safe: a node that needs the unversioned
    name and lacks it is not allowed AutoDetect).
    """
    parsed = _version_tuple(slurm_version)
    if parsed is not None and parsed >= VERSIONED_FALLBACK:
        return ["libnvidia-ml.so", "libnvidia-ml.so.1"]
    return ["libnvidia-ml.so"]


def find_plugin(plugin_dirs, name="gpu_nvml.so", exists=os.path.isfile):
    """First ``<dir>/gpu_nvml.so`` that exists, or ``""``."""
    for directory in plugin_dirs or []:
        path = os.path.join(directory, name)
        if exists(path):
            return path
    return ""


def _nvml_error(code):
    return NVML_ERRORS.get(code, f"NVML error {code}")


def probe_nvml(names, loader):
    """Open NVML by the first of ``names`` that loads, initialise it and count the GPUs.

    ``loader(name)`` returns an object with ``nvmlInit_v2()``, ``nvmlDeviceGetCount_v2(ptr)`` and
    ``nvmlShutdown()`` (ctypes.CDLL) or raises OSError. Returns ``{library, error, init_rc, count}``:
    ``library`` is the name that opened (``""`` when none did), ``init_rc`` NVML's return code
    (None when not reached), ``count`` the GPUs NVML counted (None when not reached).
    """
    errors = []
    for name in names:
        try:
            lib = loader(name)
        except OSError as exc:
            errors.append(f"{name}: {exc}")
            continue
        return _init_and_count(name, lib)
    return {"library": "", "error": "; ".join(errors) or "no library name to try", "init_rc": None, "count": None}


def _init_and_count(name, lib):
    init_rc = int(lib.nvmlInit_v2())
    if init_rc != 0:
        return {"library": name, "error": f"nvmlInit: {_nvml_error(init_rc)}", "init_rc": init_rc, "count": None}
    try:
        count = ctypes.c_uint(0)
        count_rc = int(lib.nvmlDeviceGetCount_v2(ctypes.byref(count)))
        if count_rc != 0:
            return {"library": name, "error": f"nvmlDeviceGetCount: {_nvml_error(count_rc)}", "init_rc": 0,
                    "count": None}
        return {"library": name, "error": "", "init_rc": 0, "count": int(count.value)}
    finally:
        lib.nvmlShutdown()


def autodetect_verdict(plugin, probe, slurm_version):
    """``(autodetect, reason)``: may this node say ``AutoDetect=nvml``? Fails safe to False."""
    if not plugin:
        return False, "gpu_nvml.so is not installed"
    if _version_tuple(slurm_version) is None:
        return False, f"Slurm version {slurm_version!r} not understood"
    if not probe or not probe.get("library"):
        names = " or ".join(nvml_library_names(slurm_version))
        detail = (probe or {}).get("error") or "not tried"
        return False, f"Slurm {slurm_version} opens {names} and none loads ({detail})"
    if probe.get("init_rc") != 0 or probe.get("error"):
        detail = probe.get("error") or probe.get("init_rc")
        return False, f"NVML through {probe['library']} does not initialise: {detail}"
    if not isinstance(probe.get("count"), int) or probe["count"] < 1:
        return False, f"NVML through {probe['library']} counts {probe.get('count')} GPUs"
    return True, f"gpu_nvml.so at {plugin}; NVML through {probe['library']} counts {probe['count']} GPUs"
