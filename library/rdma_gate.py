#!/usr/bin/python
"""Health gate: RDMA port state and rate, and optionally a pairwise ib_write_bw run."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_gate
short_description: Gate a node on its RDMA ports (Active/LinkUp at the expected rate) and ib_write_bw
description:
  - Read-only health gate. Parses C(ibstat) (or C(ibv_devinfo -v)) and checks that every expected
    HCA port is Active and LinkUp at the expected rate. Returns a verdict, C(PASS), C(FAIL)
    (hardware or fabric fault) or C(ERROR) (the test itself broke, that is tool missing, timeout or
    unparsable output; retried, never blamed on the node), with the figures and a short reason.
  - When O(ib_write_bw_command) is given, also runs that client command (the server side is started
    on the partner by the caller) and compares the average bandwidth of the largest message size
    with O(min_ib_write_bw_gbps).
  - "Gates fail closed (docs/health-gates.md): the expected rate, port count and link layer come
    from the options, else from the profile (named by O(profile) or selected by O(gpu_model) and
    O(gpu_count)); no expected rate, or neither O(devices) nor an expected port count, is an ERROR.
    A non-zero exit of the status tool with passing output is an ERROR; a port missing, down, slow
    (a 1X-trained port) or on the wrong link layer is a FAIL naming it."
  - The module never fails the task on a FAIL or ERROR verdict; read RV(verdict).
author: gpufleet
version_added: "0.1.0"
options:
  tool:
    description: Which port-status tool to parse.
    type: str
    choices: [ibstat, ibv_devinfo]
    default: ibstat
  status_command:
    description:
      - Command (argv) that prints the port status. Defaults to C([ibstat]) or C([ibv_devinfo, -v])
        according to O(tool). Point it at a launcher or a test double as needed.
    type: list
    elements: str
  devices:
    description:
      - CAs (C(mlx5_0)) or single ports (C(mlx5_0:1)) that must be Active/LinkUp. When empty, every
        port found on the expected link layer must be, and there must be O(expected_ports) of them.
    type: list
    elements: str
    default: []
  link_layer:
    description:
      - Link layer the fabric ports must have (an Ethernet port on an InfiniBand fabric is a FAIL).
        With O(devices) empty, only ports of this layer are counted. Falls back to the profile's
        C(link_layer).
    type: str
    choices: [InfiniBand, Ethernet]
  expected_ports:
    description:
      - With O(devices) empty, how many ports on the link layer the node must have (7 of 8 is a
        FAIL). Falls back to the profile's C(rdma_ports).
    type: int
  gpu_model:
    description: GPU model name (as NVML reports it), to select the profile when O(profile) is not set.
    type: str
  gpu_count:
    description: Number of GPUs, to select the profile when O(profile) is not set.
    type: int
  expected_rate_gbps:
    description: Minimum port rate in Gb/s (ibstat's C(Rate)). Falls back to the profile's C(nic_rate_gbps).
    type: float
  profile:
    description: Name of a threshold profile (shipped defaults merged with O(profiles)).
    type: str
  profiles:
    description: Site threshold profiles merged over the shipped ones (module_utils/gate_profiles.py).
    type: dict
    default: {}
  ib_write_bw_command:
    description:
      - Client command (argv) of a pairwise C(ib_write_bw) run, e.g.
        C([ib_write_bw, -d, mlx5_0, --report_gbits, -D, "5", partner-host]). Not run when omitted.
    type: list
    elements: str
  min_ib_write_bw_gbps:
    description: Minimum average ib_write_bw in Gb/s. Falls back to the profile's C(ib_write_bw_min_gbps).
    type: float
  sysfs_class_dir:
    description:
      - The kernel's RDMA class directory. C(ibstat) with no output and exit 0 while this directory is
        absent or empty is a FAIL (no HCA); empty output with devices present stays an ERROR.
    type: path
    default: /sys/class/infiniband
  timeout:
    description: Seconds before a command counts as hung (an ERROR).
    type: int
    default: 120
attributes:
  check_mode:
    support: full
    details: The module changes nothing; it runs the same read-only probes in check mode.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Gate the HDR ports of an A100 node
  rdma_gate:
    devices: [mlx5_0, mlx5_1, mlx5_2, mlx5_3]
    expected_rate_gbps: 200
  register: rdma_gate_result

- name: Pairwise ib_write_bw against a partner already running the server side
  rdma_gate:
    devices: [mlx5_0]
    profile: a100_sxm_x8
    ib_write_bw_command: [ib_write_bw, -d, mlx5_0, --report_gbits, -D, "5", "{{ partner }}"]
"""

RETURN = r"""
verdict:
  description: PASS, FAIL or ERROR.
  returned: always
  type: str
  sample: FAIL
reason:
  description: Short reason for FAIL/ERROR; empty on PASS.
  returned: always
  type: str
  sample: "rdma: mlx5_1/1 Down/Disabled"
figures:
  description: ports (ca, port, state, physical_state, rate_gbps, link_layer), active,
    expected_rate_gbps, and ib_write_bw_gbps / ib_write_bw_min_gbps when the pairwise test ran.
  returned: always
  type: dict
checks:
  description: Verdict of each check that ran (C(ports), C(ib_write_bw)).
  returned: always
  type: dict
raw_tail:
  description: Last lines of the ib_write_bw output (or of the status output when it could not be parsed).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gate import (
    ERROR,
    FAIL,
    ProfileError,
    combine,
    exit_checked,
    ib_write_bw_verdict,
    merge_profiles,
    profile_for,
    rdma_ports_verdict,
    run_parsed,
    tail,
    verdict,
)
from ansible.module_utils.gate_profiles import DEFAULT_PROFILES
from ansible.module_utils.rdma import no_hca_reason, parse_ib_write_bw, parse_ibstat, parse_ibv_devinfo


def _sysfs_devices(path):
    """Entries of the kernel's RDMA class directory; None where it does not exist."""
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return None


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            tool=dict(type="str", choices=["ibstat", "ibv_devinfo"], default="ibstat"),
            status_command=dict(type="list", elements="str"),
            devices=dict(type="list", elements="str", default=[]),
            link_layer=dict(type="str", choices=["InfiniBand", "Ethernet"]),
            expected_ports=dict(type="int"),
            expected_rate_gbps=dict(type="float"),
            gpu_model=dict(type="str"),
            gpu_count=dict(type="int"),
            profile=dict(type="str"),
            profiles=dict(type="dict", default={}),
            ib_write_bw_command=dict(type="list", elements="str"),
            min_ib_write_bw_gbps=dict(type="float"),
            timeout=dict(type="int", default=120),
            sysfs_class_dir=dict(type="path", default="/sys/class/infiniband"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    results, raw = {}, []
    wanted = {"rate": p["expected_rate_gbps"], "min_bw": p["min_ib_write_bw_gbps"],
              "ports": p["expected_ports"], "layer": p["link_layer"]}
    profile_error = None
    if any(v is None for v in wanted.values()):
        try:
            profiles = merge_profiles(DEFAULT_PROFILES, p["profiles"])
            _name, profile = profile_for(profiles, p["profile"], p["gpu_model"], p["gpu_count"])
        except ProfileError as exc:
            if p["profile"]:
                module.exit_json(changed=False, checks={}, raw_tail=[], **verdict(ERROR, f"rdma: {exc}"))
            profile, profile_error = {}, str(exc)
        for key, pkey in (("rate", "nic_rate_gbps"), ("min_bw", "ib_write_bw_min_gbps"),
                          ("ports", "rdma_ports"), ("layer", "link_layer")):
            if wanted[key] is None:
                wanted[key] = profile.get(pkey)
    if p["tool"] == "ibstat":
        argv, parser = p["status_command"] or ["ibstat"], parse_ibstat
    else:
        argv, parser = p["status_command"] or ["ibv_devinfo", "-v"], parse_ibv_devinfo
    ports, error, rc, out, err = run_parsed(module.run_command, module.get_bin_path, argv, parser,
                                            "rdma", timeout=p["timeout"])
    no_hca = no_hca_reason(p["tool"], out, rc, _sysfs_devices(p["sysfs_class_dir"])) if error else None
    if no_hca:
        results["ports"] = verdict(FAIL, f"rdma: {no_hca}")
        raw = tail(out + "\n" + err)
    elif error:
        results["ports"] = error
        raw = tail(out + "\n" + err)
    else:
        results["ports"] = exit_checked(
            rdma_ports_verdict(ports, p["devices"], wanted["rate"], wanted["layer"], wanted["ports"]), rc, "rdma")
        if results["ports"]["verdict"] == ERROR and profile_error:
            results["ports"]["reason"] += f" ({profile_error})"
    if p["ib_write_bw_command"]:
        if wanted["min_bw"] is None:
            results["ib_write_bw"] = verdict(ERROR, "rdma: no ib_write_bw threshold "
                                                    "(set min_ib_write_bw_gbps)")
        else:
            parsed, error, rc, out, err = run_parsed(
                module.run_command, module.get_bin_path, p["ib_write_bw_command"], parse_ib_write_bw,
                "rdma: ib_write_bw", timeout=p["timeout"])
            results["ib_write_bw"] = error or exit_checked(ib_write_bw_verdict(parsed, wanted["min_bw"]), rc,
                                                           "rdma: ib_write_bw")
            raw = tail(out + "\n" + err)
    figures = {}
    for result in results.values():
        figures.update(result["figures"])
    module.exit_json(changed=False, checks=results, raw_tail=raw, **combine(results.values(), figures))


def main():
    run_module()


if __name__ == "__main__":
    main()
