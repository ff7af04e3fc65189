"""slurm.conf defaults derived from node facts: RealMemory buckets, the system reserve, per-GPU
CPUs and memory, the memory-default exclusivity and the task plugin order per Slurm version."""

import pytest
from ansible.module_utils.hostlist import hostlist_expand
from ansible.module_utils.slurm_conf import (
    SlurmConfDataError,
    config_lines,
    entity_lines,
    node_entities,
    nodes_from_facts,
    per_gpu_defaults,
    real_memory_step,
    resolve_mem_defaults,
    task_plugins,
)
from hypothesis import given
from hypothesis import strategies as st

# An 8-GPU H100 server as Ansible reports it: 2 sockets x 56 cores x 2 threads, about 2 TiB.
H100 = {
    "ansible_processor_count": 2,
    "ansible_processor_cores": 56,
    "ansible_processor_threads_per_core": 2,
    "ansible_memtotal_mb": 2063810,
    "gpu_discovery_gres": "gpu:h100:8",
}


def fleet(memtotals, **over):
    hosts = [f"gpu{i:02d}" for i in range(1, len(memtotals) + 1)]
    hv = {h: dict(H100, ansible_memtotal_mb=m, **over) for h, m in zip(hosts, memtotals, strict=True)}
    return hosts, hv


def test_real_memory_step_is_one_percent_as_a_power_of_two_at_least_one_gib():
    assert real_memory_step(2063810) == 16384
    assert real_memory_step(257000) == 2048
    assert real_memory_step(24105) == 1024
    assert real_memory_step(2063810, step_mb=4096) == 4096


def test_identical_servers_with_memtotal_drift_render_one_nodename_line():
    # 32 servers of one model whose MemTotal differs by firmware and kernel (up to ~1 GiB).
    hosts, hv = fleet([2063810 - 37 * i for i in range(32)])
    nodes = nodes_from_facts(hosts, hv, {}, "gpu_discovery_gres")
    lines = entity_lines(node_entities(nodes), "NodeName", "slurm_common_nodes")
    assert lines == [
        "NodeName=gpu[01-32] CoreSpecCount=2 CoresPerSocket=56 CPUs=224 Features=h100 Gres=gpu:h100:8 "
        "MemSpecLimit=20480 RealMemory=2048000 Sockets=2 ThreadsPerCore=2"
    ]


def test_real_memory_never_exceeds_memtotal_and_keeps_its_value_under_small_drift():
    before = nodes_from_facts(*fleet([2063810]), {}, "gpu_discovery_gres")[0]["RealMemory"]
    after = nodes_from_facts(*fleet([2063810 - 900]), {}, "gpu_discovery_gres")[0]["RealMemory"]
    assert before == after == 2048000
    assert before <= 2063810 - 900


def test_core_reserve_leaves_every_gpu_a_core():
    # A small lab node: 2 cores and 2 GPUs keep no core back.
    hosts, hv = fleet([24105], ansible_processor_count=1, ansible_processor_cores=2,
                      ansible_processor_threads_per_core=1, gpu_discovery_gres="gpu:h100:2")
    node = nodes_from_facts(hosts, hv, {}, "gpu_discovery_gres")[0]
    assert node["CoreSpecCount"] is None
    assert node["RealMemory"] == 23552
    assert node["MemSpecLimit"] == 2048
    assert per_gpu_defaults([node]) == {"DefCpuPerGPU": 1, "DefMemPerGPU": 10752}


def test_per_gpu_defaults_for_the_h100_server_use_whole_cores_after_the_reserve():
    nodes = nodes_from_facts(*fleet([2063810]), {}, "gpu_discovery_gres")
    # (224 CPUs - 2 reserved cores x 2 threads) / 8 GPUs = 27.5 -> 26 (13 whole cores);
    # (2048000 - 20480 MiB) / 8 GPUs = 253440.
    assert per_gpu_defaults(nodes) == {"DefCpuPerGPU": 26, "DefMemPerGPU": 253440}


def test_per_gpu_defaults_take_the_smallest_node_and_skip_nodes_without_gpus():
    big = {"NodeName": "a", "CPUs": 224, "ThreadsPerCore": 2, "RealMemory": 2048000, "MemSpecLimit": 20480,
           "CoreSpecCount": 2, "Gres": "gpu:h100:8"}
    small = {"NodeName": "b", "CPUs": 64, "ThreadsPerCore": 1, "RealMemory": 512000, "MemSpecLimit": 5120,
             "Gres": "gpu:a100:4"}
    cpu_only = {"NodeName": "c", "CPUs": 8, "ThreadsPerCore": 1, "RealMemory": 1000}
    assert per_gpu_defaults([big, small, cpu_only]) == {"DefCpuPerGPU": 16, "DefMemPerGPU": 126720}
    assert per_gpu_defaults([cpu_only]) == {"DefCpuPerGPU": None, "DefMemPerGPU": None}


@given(
    sockets=st.integers(1, 4),
    cores=st.integers(1, 96),
    threads=st.sampled_from([1, 2, 4]),
    gpus=st.integers(1, 16),
    memtotal=st.integers(2048, 8 * 1024 * 1024),
    reserve_cores=st.integers(0, 8),
)
def test_default_gpu_jobs_fill_a_node_without_exceeding_it(sockets, cores, threads, gpus, memtotal, reserve_cores):
    hv = {"n1": {"ansible_processor_count": sockets, "ansible_processor_cores": cores,
                 "ansible_processor_threads_per_core": threads, "ansible_memtotal_mb": memtotal,
                 "gpu_discovery_gres": f"gpu:x:{gpus}"}}
    node = nodes_from_facts(["n1"], hv, {"cores": reserve_cores}, "gpu_discovery_gres")[0]
    assert 0 < node["RealMemory"] <= memtotal
    spec_cores = node["CoreSpecCount"] or 0
    assert spec_cores <= reserve_cores and spec_cores < sockets * cores
    d = per_gpu_defaults([node])
    assert d["DefCpuPerGPU"] >= 1 and d["DefMemPerGPU"] >= 1
    if sockets * cores - spec_cores >= gpus:
        # One default job per GPU fits at once, in whole cores.
        assert d["DefCpuPerGPU"] % threads == 0
        assert d["DefCpuPerGPU"] * gpus <= (sockets * cores - spec_cores) * threads
    if node["RealMemory"] - (node["MemSpecLimit"] or 0) >= gpus:
        assert d["DefMemPerGPU"] * gpus + (node["MemSpecLimit"] or 0) <= node["RealMemory"]


def test_missing_facts_name_the_host():
    with pytest.raises(SlurmConfDataError, match="host gpu07: facts ansible_memtotal_mb are missing"):
        nodes_from_facts(["gpu07"], {"gpu07": {k: v for k, v in H100.items() if k != "ansible_memtotal_mb"}}, {},
                         "gpu_discovery_gres")


@pytest.mark.parametrize(
    ("reserve", "message"),
    [
        ({"cpus": 2}, "unknown key cpus"),
        ({"cores": -1}, "cores must be a whole number >= 0"),
        ({"mem_pct": "5"}, "mem_pct must be a whole number >= 0"),
        ({"mem_step_mb": 0}, "mem_step_mb must be null or >= 1"),
    ],
)
def test_bad_reserve_names_the_variable(reserve, message):
    with pytest.raises(SlurmConfDataError, match=f"variable slurm_common_reserve: {message}"):
        nodes_from_facts(*fleet([2063810]), reserve, "gpu_discovery_gres")


def test_a_site_defmempercpu_drops_the_derived_defmempergpu():
    config = {"DefCpuPerGPU": 26, "DefMemPerGPU": 253440, "DefMemPerCPU": 512}
    lines = config_lines(resolve_mem_defaults(config))
    assert lines == ["DefCpuPerGPU=26", "DefMemPerCPU=512"]
    assert config_lines(resolve_mem_defaults({"DefMemPerGPU": 100, "DefMemPerCPU": None})) == ["DefMemPerGPU=100"]


def test_defmempercpu_with_defmempernode_is_refused():
    with pytest.raises(SlurmConfDataError, match="DefMemPerCPU and DefMemPerNode are both set"):
        resolve_mem_defaults({"DefMemPerCPU": 512, "DefMemPerNode": 4096})


@pytest.mark.parametrize(
    ("version", "plugins"),
    [
        ("22.05.8", "task/affinity,task/cgroup"),
        ("23.02.0", "task/affinity,task/cgroup"),
        ("23.02.7", "task/cgroup,task/affinity"),
        ("24.11.5", "task/cgroup,task/affinity"),
    ],
)
def test_task_plugins_follow_the_order_the_version_s_man_page_recommends(version, plugins):
    assert task_plugins(version) == plugins


def test_nodes_fold_back_to_every_host():
    hosts, hv = fleet([2063810, 2063000, 1031000])
    entities = node_entities(nodes_from_facts(hosts, hv, {}, "gpu_discovery_gres"))
    # Same layout and GPUs make one shape, whatever the memory: all three get the smallest MemTotal.
    assert len(entities) == 1
    assert hostlist_expand(entities[0]["NodeName"]) == hosts
