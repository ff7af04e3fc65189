#!/usr/bin/python
"""Health gate: GPU inventory, memory errors, NVLink and DCGM diagnostics on one node."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_gate
short_description: Gate a node on its GPUs (count, model, ECC, retired pages, NVLink, DCGM)
description:
  - Read-only health gate. Checks the GPUs of one node and returns a verdict, C(PASS), C(FAIL)
    (hardware fault, the node stays out) or C(ERROR) (the test itself broke, retry; never blamed
    on the node), with the figures behind it and a short reason.
  - C(inventory) compares GPU count and model with the expectation, from O(gpus) when given
    (the shape M(nvidia_gpu_info) returns) or else through NVML.
  - C(memory) reads through NVML the volatile uncorrectable ECC count, pending page retirement,
    the number of retired pages (double-bit) and row-remapping pending/failure.
  - C(nvlink) counts active NVLink links per GPU, through NVML or by parsing C(nvidia-smi nvlink -s).
  - C(dcgm) runs C(dcgmi diag -r N) (text table of DCGM 3.x or 4.x, or C(-j) JSON) and fails on any
    test or GPU that reports Fail, naming both. An unknown result word, an C(Error) row, a section
    the level runs that is missing or all C(Skip), no GPU test that ran (every Integration, Hardware
    and Stress test skipped, or only the Deployment checks, which is all level 1 runs), or a non-zero
    exit with passing output is an ERROR.
  - "Gates fail closed (docs/health-gates.md): PASS needs a complete, positive reading. Expected
    counts come from O(expected_count) / O(expected_nvlinks), else from the profile (named by
    O(profile) or selected by the GPU model and count); a check with nothing to judge against is an
    ERROR."
  - "No NVIDIA driver (NVML reports driver or library not found, or nvidia-smi cannot communicate
    with the driver) is a FAIL, reason C(driver not loaded): a node that should have
    GPUs but has no working driver cannot take GPU work and a retry will not fix it. A missing
    nvidia-ml-py binding or any other NVML failure is an ERROR."
  - The module never fails the task on a FAIL or ERROR verdict; read RV(verdict).
author: gpufleet
version_added: "0.1.0"
requirements:
  - nvidia-ml-py (pynvml) on the node for the NVML checks
options:
  checks:
    description: Which checks to run.
    type: list
    elements: str
    choices: [inventory, memory, nvlink, dcgm]
    default: [inventory, memory, nvlink, dcgm]
  gpus:
    description:
      - Precomputed GPU list (list of dicts with at least C(index) and C(name), as returned by
        M(nvidia_gpu_info)). When given, C(inventory) uses it instead of NVML.
    type: list
    elements: dict
  expected_count:
    description:
      - Number of GPUs the node must have. When omitted, the profile's C(gpu_count); with neither,
        the C(inventory) check is an ERROR.
    type: int
  expected_model:
    description: Case-insensitive regular expression every GPU name must match (C(A100-SXM)).
    type: str
  expected_nvlinks:
    description:
      - Active NVLink links each GPU must have (0 for parts without NVLink). When omitted, the
        profile's C(nvlinks_per_gpu); with neither, the C(nvlink) check is an ERROR.
    type: int
  profile:
    description:
      - Name of a threshold profile (from the shipped defaults merged with O(profiles)). When
        omitted, the profile is selected by the GPU model and count (O(gpus) or NVML).
    type: str
  profiles:
    description: Site threshold profiles merged over the shipped ones (see module_utils/gate_profiles.py).
    type: dict
    default: {}
  nvlink_source:
    description: Where NVLink state comes from.
    type: str
    choices: [nvml, nvidia_smi]
    default: nvml
  nvlink_command:
    description: Command (argv) that prints C(nvidia-smi nvlink -s) output, for O(nvlink_source=nvidia_smi).
    type: list
    elements: str
    default: [nvidia-smi, nvlink, -s]
  max_retired_pages:
    description: Retired (double-bit ECC) pages at or above which a GPU fails.
    type: int
    default: 60
  dcgm_level:
    description:
      - Level passed to C(dcgmi diag -r). The output must hold every section this level runs
        (1 Deployment; 2 adds Integration and Hardware; 3 and 4 add Stress) and a GPU test that ran,
        so level 1, which runs only the Deployment (software) checks, is always an ERROR.
    type: int
    choices: [1, 2, 3, 4]
    default: 2
  dcgm_required:
    description:
      - When true, a missing dcgmi is an ERROR. False skips the dcgm check when dcgmi is absent
        (an explicit opt-out; leave C(dcgm) out of O(checks) instead where DCGM is not installed).
    type: bool
    default: true
  dcgmi_command:
    description: Command (argv) to run instead of C(dcgmi diag -r <dcgm_level>) (a launcher or test double).
    type: list
    elements: str
  timeout:
    description: Seconds before a command (dcgmi, nvidia-smi) counts as hung (an ERROR).
    type: int
    default: 900
attributes:
  check_mode:
    support: full
    details: The module changes nothing; it runs the same read-only probes in check mode.
  diff_mode:
    support: none
notes:
  - Thresholds live as data in module_utils/gate_profiles.py; sites override through O(profiles).
"""

EXAMPLES = r"""
- name: Gate the GPUs of a DGX A100
  gpu_gate:
    expected_count: 8
    expected_model: A100-SXM
    expected_nvlinks: 12
    dcgm_level: 2
  register: gpu_gate_result

- name: Gate the lab's fake GPUs on inventory only, from discovered facts
  gpu_gate:
    checks: [inventory]
    gpus: "{{ nvidia_gpu_info_result.gpus }}"
    expected_count: 2
"""

RETURN = r"""
verdict:
  description: PASS, FAIL or ERROR.
  returned: always
  type: str
  sample: FAIL
reason:
  description: Short reason for FAIL/ERROR, one clause per failing check joined by C(; ); empty on PASS.
  returned: always
  type: str
  sample: "gpu: 7 GPUs, expected 8; nvlink: GPU3 link 5 inactive"
figures:
  description: The numbers behind the verdict (gpu_count, gpu_models, ecc_uncorrected_volatile,
    nvlinks_active, dcgm_failed, driver_version, ...).
  returned: always
  type: dict
checks:
  description: Verdict of each check that ran, keyed by check name.
  returned: always
  type: dict
  sample: {"inventory": {"verdict": "PASS", "reason": "", "figures": {"gpu_count": 8}}}
skipped:
  description: Checks that did not run and why.
  returned: always
  type: dict
  sample: {"dcgm": "dcgmi not found"}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.dcgm import parse_dcgmi_diag
from ansible.module_utils.gate import (
    ERROR,
    FAIL,
    ProfileError,
    combine,
    dcgm_verdict,
    exit_checked,
    gpu_health_verdict,
    gpu_inventory_verdict,
    merge_profiles,
    nvlink_verdict,
    profile_for,
    run_parsed,
    select_profile,
    verdict,
)
from ansible.module_utils.gate_profiles import DEFAULT_PROFILES
from ansible.module_utils.nvidia_smi import parse_nvlink_status
from ansible.module_utils.nvml_health import NvmlUnavailable, snapshot

try:
    import pynvml
except ImportError:  # reported as an ERROR when an NVML check is asked for
    pynvml = None


def nvml_snapshot(with_nvlink):
    """Return (snapshot, None) or (None, verdict) when NVML cannot be read."""
    if pynvml is None:
        return None, verdict(ERROR, "gpu: nvidia-ml-py (pynvml) is not installed on the node")
    try:
        return snapshot(pynvml, with_nvlink=with_nvlink), None
    except NvmlUnavailable as exc:
        return None, verdict(FAIL if exc.driver_missing else ERROR, f"gpu: {exc}")
    except pynvml.NVMLError as exc:
        lost = isinstance(exc, getattr(pynvml, "NVMLError_GpuIsLost", ()))
        return None, verdict(FAIL if lost else ERROR, f"gpu: NVML: {exc}")


def run_module():
    """Run the requested checks and exit with the combined verdict.

    Work at risk: a PASS lets health_gate admit the node to jobs. Refused: every check fails closed (see the
    module's description): a check that cannot judge is an ERROR, and dcgm at level 1 (no GPU test) is one.
    """
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type="list", elements="str", choices=["inventory", "memory", "nvlink", "dcgm"],
                        default=["inventory", "memory", "nvlink", "dcgm"]),
            gpus=dict(type="list", elements="dict"),
            expected_count=dict(type="int"),
            expected_model=dict(type="str"),
            expected_nvlinks=dict(type="int"),
            profile=dict(type="str"),
            profiles=dict(type="dict", default={}),
            nvlink_source=dict(type="str", choices=["nvml", "nvidia_smi"], default="nvml"),
            nvlink_command=dict(type="list", elements="str", default=["nvidia-smi", "nvlink", "-s"]),
            max_retired_pages=dict(type="int", default=60),
            dcgm_level=dict(type="int", choices=[1, 2, 3, 4], default=2),
            dcgm_required=dict(type="bool", default=True),
            dcgmi_command=dict(type="list", elements="str"),
            timeout=dict(type="int", default=900),
        ),
        supports_check_mode=True,
    )
    p = module.params
    checks = list(dict.fromkeys(p["checks"]))
    results, skipped, figures = {}, {}, {}
    try:
        profiles = merge_profiles(DEFAULT_PROFILES, p["profiles"])
        if p["profile"]:
            select_profile(profiles, name=p["profile"])
    except ProfileError as exc:
        module.exit_json(changed=False, checks={}, skipped={}, **verdict(ERROR, f"gpu: {exc}"))

    needs_nvml = ("memory" in checks or ("inventory" in checks and p["gpus"] is None)
                  or ("nvlink" in checks and p["nvlink_source"] == "nvml"))
    snap, nvml_error = (None, None)
    if needs_nvml:
        snap, nvml_error = nvml_snapshot(with_nvlink="nvlink" in checks and p["nvlink_source"] == "nvml")
        if snap:
            figures["driver_version"] = snap["driver_version"]
    seen = p["gpus"] if p["gpus"] is not None else (snap or {}).get("gpus")
    profile_cache = {}

    def expectation(given, key):
        """The module option, else the profile's key; None when neither says (an ERROR later)."""
        if given is not None:
            return given
        if "profile" not in profile_cache:
            model = next((str(g.get("name")) for g in seen or [] if g.get("name")), None)
            try:
                profile_cache["name"], profile_cache["profile"] = profile_for(
                    profiles, p["profile"], model, len(seen) if seen is not None else None)
            except ProfileError as exc:
                profile_cache["name"], profile_cache["profile"] = None, {}
                profile_cache["error"] = str(exc)
        return profile_cache["profile"].get(key)

    expected_count = expectation(p["expected_count"], "gpu_count")
    expected_nvlinks = expectation(p["expected_nvlinks"], "nvlinks_per_gpu") if "nvlink" in checks else None
    if profile_cache.get("name"):
        figures["profile"] = profile_cache["name"]

    def nvml_or_error(check):
        if nvml_error:
            results[check] = nvml_error
        return snap

    if "inventory" in checks:
        if p["gpus"] is None and nvml_or_error("inventory") is None:
            pass
        else:
            results["inventory"] = gpu_inventory_verdict(seen, expected_count, p["expected_model"])
            if p["gpus"] is not None and snap and len(snap["gpus"]) != len(p["gpus"]):
                results["inventory"] = combine([results["inventory"], verdict(
                    FAIL, f"gpu: NVML sees {len(snap['gpus'])} GPUs, discovery saw {len(p['gpus'])}")],
                    results["inventory"]["figures"])
    if "memory" in checks and nvml_or_error("memory"):
        results["memory"] = gpu_health_verdict(snap["gpus"], p["max_retired_pages"])
    if "nvlink" in checks:
        if p["nvlink_source"] == "nvml":
            if nvml_or_error("nvlink"):
                results["nvlink"] = nvlink_verdict(snap["gpus"], expected_nvlinks, expected_count)
        else:
            parsed, error, rc, _out, _err = run_parsed(
                module.run_command, module.get_bin_path, p["nvlink_command"], parse_nvlink_status,
                "nvlink", timeout=p["timeout"])
            results["nvlink"] = error or exit_checked(
                nvlink_verdict(parsed, expected_nvlinks, expected_count), rc, "nvlink")
    if "dcgm" in checks:
        argv = p["dcgmi_command"] or ["dcgmi", "diag", "-r", str(p["dcgm_level"])]
        if not p["dcgmi_command"] and not module.get_bin_path("dcgmi"):
            if p["dcgm_required"]:
                results["dcgm"] = verdict(ERROR, "dcgm: dcgmi not found")
            else:
                skipped["dcgm"] = "dcgmi not found"
        else:
            parsed, error, rc, _out, _err = run_parsed(
                module.run_command, module.get_bin_path, argv, parse_dcgmi_diag, "dcgm", timeout=p["timeout"])
            results["dcgm"] = error or exit_checked(dcgm_verdict(parsed, p["dcgm_level"]), rc, "dcgm")
    if profile_cache.get("error"):
        for check, result in results.items():
            if result["verdict"] == ERROR and "no expected" in result["reason"]:
                result["reason"] += f" ({profile_cache['error']})"
                results[check] = result
    for result in results.values():
        figures.update(result["figures"])
    if not results:  # every asked-for check was skipped: that proves nothing
        why = ", ".join(f"{k}: {v}" for k, v in skipped.items())
        overall = verdict(ERROR, f"gpu: no check ran ({why})", figures)
    else:
        overall = combine(results.values(), figures)
    module.exit_json(changed=False, checks=results, skipped=skipped, **overall)


def main():
    run_module()


if __name__ == "__main__":
    main()
