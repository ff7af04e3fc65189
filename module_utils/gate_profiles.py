"""Default health-gate threshold profiles, as data.

Each profile has a ``match`` (``gpu_model``: a case-insensitive regex searched in the NVML name,
``gpu_count``, optionally ``nic_rate_gbps``) and the thresholds the gates use:

* ``gpu_count``, ``nvlinks_per_gpu``             -> gpu_gate
* ``nic_rate_gbps``, ``ib_write_bw_min_gbps``    -> rdma_gate (port rate, pairwise ib_write_bw, Gb/s)
* ``rdma_ports``, ``link_layer``                 -> rdma_gate (how many fabric ports on which layer)
* ``nccl_single_min_busbw_gbps``,
  ``nccl_pair_min_busbw_gbps``, ``nccl_min_size`` -> nccl_gate (GB/s of out-of-place busbw at large sizes)

A key set to None means "no expectation": the check that needs it is an ERROR (gates fail closed),
until the site sets it.

The shipped figures are about 80 % of a published good run on that hardware (``source`` says which;
the runs are the captures in ``tests/fixtures``). They are a starting point: a site measures its
own acceptance run and overrides them. Sites override through the modules' ``profiles`` parameter
(the gate role passes inventory data there): a profile of the same name is merged key by key, a new
name is added. Example ``group_vars``::

    health_gate_profiles:
      a100_sxm_x8:
        nccl_pair_min_busbw_gbps: 170     # our HDR fabric measures 205
      l40s_x4:
        match: {gpu_model: "L40S", gpu_count: 4}
        nccl_single_min_busbw_gbps: 20
"""

DEFAULT_PROFILES = {
    "a100_sxm_x8": {
        "match": {"gpu_model": r"A100[- ]SXM", "gpu_count": 8},
        "gpu_count": 8,
        "nvlinks_per_gpu": 12,
        "nic_rate_gbps": 200,
        "rdma_ports": 8,
        "link_layer": "InfiniBand",
        "ib_write_bw_min_gbps": 180.0,
        "nccl_single_min_busbw_gbps": 185.0,
        "nccl_pair_min_busbw_gbps": 150.0,
        "nccl_min_size": 1 << 30,
        "source": "single: OCI BM.GPU4.8 232 GB/s at 10 GiB; pair: DeepOps 4x DGX A100 191 GB/s at 4 GiB",
    },
    "h100_sxm_x8": {
        "match": {"gpu_model": r"H100 80GB HBM3|H100[- ]SXM", "gpu_count": 8},
        "gpu_count": 8,
        "nvlinks_per_gpu": 18,
        "nic_rate_gbps": 400,
        "rdma_ports": 8,
        "link_layer": "InfiniBand",
        "ib_write_bw_min_gbps": 360.0,
        "nccl_single_min_busbw_gbps": 360.0,
        "nccl_pair_min_busbw_gbps": 370.0,
        "nccl_min_size": 1 << 30,
        "source": "pair: OCI 2x BM.GPU.H100.8 RoCE 465 GB/s at 16 GiB; single: estimate, measure your own",
    },
    "gh200_x4": {
        "match": {"gpu_model": r"GH200", "gpu_count": 4},
        "gpu_count": 4,
        "nvlinks_per_gpu": None,
        "nic_rate_gbps": 200,
        "rdma_ports": None,
        "link_layer": None,
        "ib_write_bw_min_gbps": None,
        "nccl_single_min_busbw_gbps": None,
        "nccl_pair_min_busbw_gbps": 98.0,
        "nccl_min_size": 1 << 30,
        "source": "pair: CSCS Alps 2x4 GH200 Slingshot 122.6 GB/s at 128 MiB",
    },
}
