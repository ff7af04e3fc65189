"""A small NVML wrapper for the GPU gate: one snapshot of health figures per GPU.

The NVML binding (``pynvml`` from nvidia-ml-py) is passed in, so tests hand in a double and the
module hands in the real one. A figure NVML does not support on this part (ECC off, no row
remapping before Ampere, no NVLink) is ``None``, never 0.
"""

from __future__ import annotations


class NvmlUnavailable(Exception):
    """NVML could not start. ``driver_missing`` is True when the NVIDIA driver/library is absent
    (a node that should have GPUs: FAIL), False for other NVML failures (the test broke: ERROR)."""

    def __init__(self, message: str, driver_missing: bool):
        super().__init__(message)
        self.driver_missing = driver_missing


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(nvml, call, *args):
    """Call NVML; ``None`` where the part or driver does not support the query."""
    unsupported = tuple(
        getattr(nvml, name) for name in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound",
                                         "NVMLError_InvalidArgument") if hasattr(nvml, name)
    )
    try:
        return call(*args)
    except unsupported:
        return None


def _nvlinks(nvml, handle) -> tuple[int | None, list[int] | None]:
    active, inactive, seen = 0, [], False
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        state = _optional(nvml, nvml.nvmlDeviceGetNvLinkState, handle, link)
        if state is None:
            continue
        seen = True
        if state == nvml.NVML_FEATURE_ENABLED:
            active += 1
        else:
            inactive.append(link)
    return (active, inactive) if seen else (None, None)


def snapshot(nvml, with_nvlink: bool = True) -> dict:
    """Return ``{"driver_version", "gpus": [{"index", "minor", "name", "uuid",
    "ecc_uncorrected_volatile", "retired_pages_pending", "retired_pages_dbe", "remap_pending",
    "remap_failure", "nvlinks_active", "nvlinks_inactive"}]}``.

    Raises NvmlUnavailable when NVML cannot initialise.
    """
    missing = tuple(getattr(nvml, n) for n in ("NVMLError_DriverNotLoaded", "NVMLError_LibraryNotFound")
                    if hasattr(nvml, n))
    try:
        nvml.nvmlInit()
    except missing as exc:
        raise NvmlUnavailable(f"NVIDIA driver not loaded (NVML: {exc})", driver_missing=True) from exc
    except nvml.NVMLError as exc:
        raise NvmlUnavailable(f"NVML init failed: {exc}", driver_missing=False) from exc
    try:
        gpus = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            remap = _optional(nvml, nvml.nvmlDeviceGetRemappedRows, handle)
            pending = _optional(nvml, nvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)
            dbe = _optional(nvml, nvml.nvmlDeviceGetRetiredPages, handle,
                            nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
            active, inactive = _nvlinks(nvml, handle) if with_nvlink else (None, None)
            gpus.append({
                "index": index,
                "minor": _optional(nvml, nvml.nvmlDeviceGetMinorNumber, handle),
                "name": _text(nvml.nvmlDeviceGetName(handle)),
                "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
                "ecc_uncorrected_volatile": _optional(
                    nvml, nvml.nvmlDeviceGetTotalEccErrors, handle,
                    nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC),
                "retired_pages_pending": None if pending is None else pending == nvml.NVML_FEATURE_ENABLED,
                "retired_pages_dbe": None if dbe is None else len(dbe),
                "remap_pending": None if remap is None else bool(remap[2]),
                "remap_failure": None if remap is None else bool(remap[3]),
                "nvlinks_active": active,
                "nvlinks_inactive": inactive,
            })
        return {"driver_version": _text(nvml.nvmlSystemGetDriverVersion()), "gpus": gpus}
    finally:
        nvml.nvmlShutdown()
