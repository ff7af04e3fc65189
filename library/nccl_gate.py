#!/usr/bin/python
"""Health gate: NCCL all_reduce_perf bus bandwidth, correctness and transport."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_gate
short_description: Gate a node (or a pair) on nccl-tests all_reduce_perf bandwidth and transport
description:
  - Read-only health gate. Runs C(all_reduce_perf) (or the launcher argv given in O(command), such as
    C(srun -w a,b --reservation=... all_reduce_perf ...)) with C(NCCL_DEBUG=INFO), and returns a
    verdict, C(PASS), C(FAIL) (hardware or fabric) or C(ERROR) (the test itself broke, that is command
    missing, timeout, unparsable output, a non-zero exit, results not checked (C(-c 0), C(#wrong)
    N/A) or no threshold), with the figures and a short reason. A non-zero exit with a full table is
    an ERROR when the table passes and stays a FAIL when it shows a fault (gates fail closed, see
    docs/health-gates.md).
  - The bandwidth verdict uses the mean out-of-place bus bandwidth of the large messages (sizes of
    at least O(min_size), or the two largest sizes when the sweep stopped below it), not the
    C(Avg bus bandwidth) line, which small, latency-bound messages dominate.
  - Any wrong result (C(#wrong) > 0, or out-of-bounds values in the legacy format) is a FAIL.
  - The transport check FAILs a Socket fallback where IB is expected (from the C(via NET/...) lines).
  - The threshold is O(min_busbw_gbps) when given, else C(nccl_<mode>_min_busbw_gbps) of the profile
    named by O(profile) or selected from O(gpu_model), O(gpu_count) and O(nic_rate_gbps).
  - The module never fails the task on a FAIL or ERROR verdict; read RV(verdict).
author: gpufleet
version_added: "0.1.0"
options:
  command:
    description:
      - Command (argv) to run; its output must be C(all_reduce_perf)'s. Defaults to
        C(all_reduce_perf -b 8 -e 8G -f 2 -g <gpu_count>) found on PATH.
    type: list
    elements: str
  mode:
    description: C(single) (one node, intra-node transports) or C(pair) (two nodes over the network).
    type: str
    choices: [single, pair]
    default: single
  env:
    description: Extra environment for the command. C(NCCL_DEBUG=INFO) is added unless set here.
    type: dict
    default: {}
  gpu_count:
    description: GPUs per node; used for the default command and for profile selection.
    type: int
  gpu_model:
    description: GPU name as NVML reports it (C(NVIDIA A100-SXM4-80GB)), for profile selection.
    type: str
  nic_rate_gbps:
    description: Port rate of the node's NICs in Gb/s, for profile selection.
    type: float
  profile:
    description: Name of a threshold profile; skips automatic selection.
    type: str
  profiles:
    description: Site threshold profiles merged over the shipped ones (module_utils/gate_profiles.py).
    type: dict
    default: {}
  min_busbw_gbps:
    description: Minimum large-message bus bandwidth in GB/s; overrides the profile.
    type: float
  min_size:
    description: Smallest message size (bytes) counted as large. Defaults to the profile's
      C(nccl_min_size), else 1 GiB.
    type: int
  expect_transport:
    description: Network transport the run must use. C(ib) covers the IB verbs transport and IB plugins
      (C(NET/IB), C(NET/IBext_*)), over InfiniBand or RoCE.
    type: str
    choices: [ib, socket, any]
    default: ib
  require_gdr:
    description: FAIL when the IB transport runs without GPUDirect RDMA.
    type: bool
    default: false
  timeout:
    description: Seconds before the run counts as hung (an ERROR).
    type: int
    default: 600
  tail_lines:
    description: How many trailing output lines to return in RV(raw_tail).
    type: int
    default: 30
attributes:
  check_mode:
    support: full
    details: The module changes nothing; it runs the same benchmark in check mode.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Single-node NCCL gate on an 8-GPU node
  nccl_gate:
    mode: single
    gpu_count: 8
    gpu_model: "NVIDIA A100-SXM4-80GB"
  register: nccl_gate_result

- name: Pairwise NCCL gate inside a Slurm reservation (the playbook picks the pair)
  nccl_gate:
    mode: pair
    profile: h100_sxm_x8
    command: [srun, -N2, "-w", "node1,node2", "--reservation=gpufleet-gate", --ntasks-per-node=8,
              all_reduce_perf, -b, "8", -e, 8G, -f, "2", -g, "1"]

- name: Lab run against a replayed capture (test double, never a real gate)
  nccl_gate:
    mode: pair
    min_busbw_gbps: 98
    command: [/usr/local/bin/replay_capture, nccl_debug_info_net_socket_fallback_bad.txt,
              nccl_all_reduce_perf_multinode_gh200_bad_cxi_hook_disabled_cscs.txt]
"""

RETURN = r"""
verdict:
  description: PASS, FAIL or ERROR.
  returned: always
  type: str
  sample: FAIL
reason:
  description: Short reason for FAIL/ERROR (clauses joined by C(; )); empty on PASS.
  returned: always
  type: str
  sample: "nccl: busbw 5.5 GB/s < 98 GB/s"
figures:
  description:
    - busbw_large_gbps (the figure judged), busbw_peak_gbps, avg_busbw_gbps (the Avg line, for
      reference), sizes_used, wrong, min_busbw_gbps, profile, format (current/legacy), transport
      (ib/socket/mixed/other/null), gdr, channels (count per transport kind), rc.
  returned: always
  type: dict
  sample: {"busbw_large_gbps": 5.48, "avg_busbw_gbps": 1.58767, "wrong": 0, "transport": "ib"}
command:
  description: The argv that was run (without the timeout wrapper).
  returned: always
  type: list
  elements: str
raw_tail:
  description: The last O(tail_lines) non-empty lines of the output.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gate import (
    ERROR,
    NCCL_DEFAULT_MIN_SIZE,
    ParseError,
    ProfileError,
    combine,
    exit_checked,
    merge_profiles,
    nccl_verdict,
    run_parsed,
    select_profile,
    tail,
    transport_check,
    verdict,
)
from ansible.module_utils.gate_profiles import DEFAULT_PROFILES
from ansible.module_utils.nccl import parse_all_reduce_perf, parse_transports


def threshold(p):
    """Return (min_busbw_gbps, min_size, profile_name) or raise ProfileError."""
    key = f"nccl_{p['mode']}_min_busbw_gbps"
    name, profile = None, {}
    if p["profile"] or p["min_busbw_gbps"] is None:
        name, profile = select_profile(merge_profiles(DEFAULT_PROFILES, p["profiles"]), p["gpu_model"],
                                       p["gpu_count"], p["nic_rate_gbps"], name=p["profile"])
    minimum = p["min_busbw_gbps"] if p["min_busbw_gbps"] is not None else profile.get(key)
    if minimum is None:
        raise ProfileError(f"profile {name!r} has no {key}")
    min_size = p["min_size"] or profile.get("nccl_min_size") or NCCL_DEFAULT_MIN_SIZE
    return float(minimum), int(min_size), name


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            command=dict(type="list", elements="str"),
            mode=dict(type="str", choices=["single", "pair"], default="single"),
            env=dict(type="dict", default={}),
            gpu_count=dict(type="int"),
            gpu_model=dict(type="str"),
            nic_rate_gbps=dict(type="float"),
            profile=dict(type="str"),
            profiles=dict(type="dict", default={}),
            min_busbw_gbps=dict(type="float"),
            min_size=dict(type="int"),
            expect_transport=dict(type="str", choices=["ib", "socket", "any"], default="ib"),
            require_gdr=dict(type="bool", default=False),
            timeout=dict(type="int", default=600),
            tail_lines=dict(type="int", default=30),
        ),
        required_one_of=[("command", "gpu_count")],
        supports_check_mode=True,
    )
    p = module.params
    argv = p["command"] or ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", str(p["gpu_count"])]
    try:
        minimum, min_size, profile_name = threshold(p)
    except ProfileError as exc:
        module.exit_json(changed=False, command=argv, raw_tail=[],
                         **verdict(ERROR, f"nccl: {exc} (set profile or min_busbw_gbps)"))

    env = {str(k): str(v) for k, v in p["env"].items()}
    env.setdefault("NCCL_DEBUG", "INFO")
    perf, error, rc, out, err = run_parsed(module.run_command, module.get_bin_path, argv,
                                           parse_all_reduce_perf, "nccl", timeout=p["timeout"],
                                           environ_update=env, parse_stderr=True)
    raw = tail(out + "\n" + err, p["tail_lines"])
    figures = {"profile": profile_name, "min_busbw_gbps": minimum, "rc": rc}
    if error:
        module.exit_json(changed=False, command=argv, raw_tail=raw, **combine([error], figures))

    try:
        transports = parse_transports(out + "\n" + err)
    except ParseError:
        transports = {"net": None, "gdr": None, "channels": {}}
    checks = [
        exit_checked(nccl_verdict(perf, minimum, min_size), rc, "nccl"),
        transport_check(transports, p["expect_transport"], p["mode"], p["require_gdr"]),
    ]
    for check in checks:
        figures.update(check["figures"])
    figures["channels"] = transports.get("channels", {})
    module.exit_json(changed=False, command=argv, raw_tail=raw, **combine(checks, figures))


def main():
    run_module()


if __name__ == "__main__":
    main()
