"""Pure NVML helpers (module_utils/nvml.py): GRES type, CPU affinity -> Slurm cores, NVLink, override."""

import os
import stat
import types

import pytest
from ansible.module_utils.nvml import (
    check_device_node,
    collect_nvml,
    collect_override,
    cpus_from_mask,
    format_id_ranges,
    gres_type_from_name,
    normalize_bus_id,
    nvlink_peers,
    parse_id_ranges,
    read_cpu_topology,
    slurm_core_ids,
    synthetic_uuid,
)


@pytest.mark.parametrize(
    "name, gtype",
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("Tesla V100-SXM2-16GB", "v100"),
        ("NVIDIA A100 80GB PCIe", "a100"),
        ("NVIDIA H100 NVL", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA A10G", "a10g"),
        ("Tesla T4", "t4"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx6000ada"),
        (b"NVIDIA H100 80GB HBM3".decode(), "h100"),
    ],
)
def test_gres_type_from_name(name, gtype):
    assert gres_type_from_name(name) == gtype


@pytest.mark.parametrize("name", ["", None, "NVIDIA", "  "])
def test_gres_type_from_name_is_none_when_nothing_identifies_the_model(name):
    assert gres_type_from_name(name) is None


def test_gres_type_never_contains_slurm_separators():
    assert gres_type_from_name("Weird:GPU,X 9") == "weirdgpux9"


def test_cpus_from_mask_reads_each_64_bit_word():
    # CPUs 0-47 and 96-143 (socket 0 of an 8x H100 box, see nvidia_smi_topo_m fixture).
    words = [(1 << 48) - 1, ((1 << 64) - 1) ^ ((1 << 32) - 1), (1 << 16) - 1]
    assert cpus_from_mask(words) == list(range(0, 48)) + list(range(96, 144))


def test_cpus_from_mask_empty():
    assert cpus_from_mask([]) == []
    assert cpus_from_mask([0, 0]) == []


def make_sysfs(root, layout):
    """layout: {cpu: (package, core_id)}; offline CPUs have no topology dir."""
    for cpu, pair in layout.items():
        d = root / f"cpu{cpu}"
        d.mkdir(parents=True)
        if pair is None:
            continue
        (d / "topology").mkdir()
        (d / "topology" / "physical_package_id").write_text(f"{pair[0]}\n")
        (d / "topology" / "core_id").write_text(f"{pair[1]}\n")
    (root / "cpufreq").mkdir()
    (root / "online").write_text("0-191\n")


def h100_box_layout():
    """2 sockets x 48 cores x 2 threads, Linux numbering like the topo -m fixture.

    CPUs 0-47 = socket 0 first threads, 48-95 socket 1, 96-143 socket 0 siblings,
    144-191 socket 1 siblings. Physical core_ids have gaps (as on many Xeons):
    0-23 then 32-55 in each package.
    """
    core_ids = list(range(0, 24)) + list(range(32, 56))
    layout = {}
    for pkg in (0, 1):
        for i, core in enumerate(core_ids):
            layout[pkg * 48 + i] = (pkg, core)
            layout[96 + pkg * 48 + i] = (pkg, core)
    return layout


def test_read_cpu_topology_reads_fabricated_sysfs(tmp_path):
    layout = h100_box_layout()
    layout[192] = None  # offline CPU without topology
    make_sysfs(tmp_path, layout)
    topo = read_cpu_topology(str(tmp_path))
    assert len(topo) == 192
    assert topo[0] == (0, 0) and topo[24] == (0, 32) and topo[144] == (1, 0)


def test_read_cpu_topology_missing_dir_gives_empty():
    assert read_cpu_topology("/nonexistent/cpu") == {}


def test_slurm_core_ids_number_cores_socket_by_socket_and_merge_hyperthreads(tmp_path):
    make_sysfs(tmp_path, h100_box_layout())
    topo = read_cpu_topology(str(tmp_path))
    socket0 = list(range(0, 48)) + list(range(96, 144))
    socket1 = list(range(48, 96)) + list(range(144, 192))
    assert slurm_core_ids(socket0, topo) == list(range(0, 48))
    assert slurm_core_ids(socket1, topo) == list(range(48, 96))
    # CPU 24 has physical core_id 32 but is the 25th core of socket 0.
    assert slurm_core_ids([24, 120], topo) == [24]


def test_slurm_core_ids_ignore_cpus_without_topology():
    assert slurm_core_ids([0, 99], {0: (0, 0), 1: (0, 1)}) == [0]


def test_id_ranges_round_trip():
    assert format_id_ranges([5, 0, 1, 2, 2]) == "0-2,5"
    assert parse_id_ranges("0-2,5") == [0, 1, 2, 5]
    assert parse_id_ranges([3, 1]) == [1, 3]
    assert format_id_ranges([]) == "" and parse_id_ranges("") == []


def test_normalize_bus_id_handles_nvml_8_digit_domain_and_bytes():
    assert normalize_bus_id(b"00000000:1B:00.0") == "0000:1b:00.0"
    assert normalize_bus_id("0000:1b:00.0") == "0000:1b:00.0"


def test_nvlink_peers_maps_remote_bus_ids_to_gpu_indices_and_leaves_switches_unknown():
    gpus = [
        {
            "index": 0,
            "pci_bus_id": "0000:07:00.0",
            "nvlinks": [
                {"link": 0, "remote_pci_bus_id": "00000000:0F:00.0"},
                {"link": 1, "remote_pci_bus_id": "0000:c5:00.0"},
            ],
        },
        {
            "index": 1,
            "pci_bus_id": "0000:0f:00.0",
            "nvlinks": [{"link": 0, "remote_pci_bus_id": "0000:07:00.0"}],
        },
    ]
    nvlink_peers(gpus)
    assert [link["peer_index"] for link in gpus[0]["nvlinks"]] == [1, None]
    assert gpus[1]["nvlinks"][0]["peer_index"] == 0


def test_synthetic_uuid_is_deterministic_and_distinct():
    a = synthetic_uuid("gpu01", 0)
    assert a == synthetic_uuid("gpu01", 0)
    assert a != synthetic_uuid("gpu01", 1) != synthetic_uuid("gpu02", 0)
    assert a.startswith("GPU-") and len(a) == 40


def fake_stat(nodes):
    """nodes: {path: (mode_kind, major, minor)}"""

    def _stat(path):
        if path not in nodes:
            raise FileNotFoundError(path)
        kind, major, minor = nodes[path]
        return types.SimpleNamespace(st_mode=kind | 0o666, st_rdev=os.makedev(major, minor))

    return _stat


def test_check_device_node_accepts_nvidia_char_device():
    assert check_device_node("/dev/nvidia3", fake_stat({"/dev/nvidia3": (stat.S_IFCHR, 195, 3)})) is None


@pytest.mark.parametrize(
    "node, message",
    [
        (None, "does not exist"),
        ((stat.S_IFREG, 0, 0), "not a character device"),
        ((stat.S_IFCHR, 1, 3), "major 1, not 195"),
        ((stat.S_IFCHR, 195, 4), "minor 4"),
    ],
)
def test_check_device_node_explains_what_is_wrong(node, message):
    nodes = {} if node is None else {"/dev/nvidia3": node}
    assert message in check_device_node("/dev/nvidia3", fake_stat(nodes))


LAB_DEVS = fake_stat({f"/dev/nvidia{i}": (stat.S_IFCHR, 195, i) for i in range(2)})


def test_collect_override_fills_every_key_and_marks_uuids_synthetic():
    gpus, errors = collect_override(
        "gpu01",
        [
            {"minor": 0, "name": "NVIDIA H100 80GB HBM3"},
            {"minor": 1, "name": "NVIDIA H100 80GB HBM3", "cores": "8-15"},
        ],
        stat_fn=LAB_DEVS,
    )
    assert errors == []
    assert [g["file"] for g in gpus] == ["/dev/nvidia0", "/dev/nvidia1"]
    assert gpus[0]["type"] == "h100" and gpus[0]["synthetic"] is True
    assert gpus[0]["uuid"] == synthetic_uuid("gpu01", 0)
    assert gpus[0]["cores"] == "" and gpus[1]["cores"] == "8-15"
    assert gpus[1]["cpu_affinity"] == list(range(8, 16))


def test_collect_override_refuses_gpus_without_device_nodes():
    gpus, errors = collect_override(
        "gpu01", [{"minor": 5, "name": "NVIDIA H100 80GB HBM3"}], stat_fn=LAB_DEVS
    )
    assert gpus == []
    assert errors == ["override[0]: /dev/nvidia5 does not exist"]


def test_collect_override_rejects_duplicates_and_missing_names():
    _gpus, errors = collect_override(
        "h", [{"minor": 0, "name": "X1"}, {"minor": 0, "name": "X1"}, {"minor": 1}], stat_fn=LAB_DEVS
    )
    assert "declared twice" in errors[0] and "needs 'minor' and 'name'" in errors[1]


class FakeNVML:
    """Just enough of pynvml for collect_nvml: 2 NVLinked A100s, socket 0 and 1."""

    NVML_NVLINK_MAX_LINKS = 4
    NVML_FEATURE_ENABLED = 1

    class NVMLError(Exception):
        pass

    def __init__(self, count=2, init_error=None):
        self.count = count
        self.init_error = init_error
        self.shutdown = False

    def nvmlInit(self):
        if self.init_error:
            raise self.NVMLError(self.init_error)

    def nvmlShutdown(self):
        self.shutdown = True

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA A100-SXM4-80GB"

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-0000000{h}-aaaa-bbbb-cccc-dddddddddddd"

    def nvmlDeviceGetMinorNumber(self, h):
        return [2, 0][h]

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(total=85899345920)

    def nvmlDeviceGetCpuAffinity(self, h, words):
        return [0x0F] if h == 0 else [0xF0]

    def nvmlDeviceGetPciInfo(self, h):
        return types.SimpleNamespace(busId=[b"00000000:07:00.0", b"00000000:0F:00.0"][h])

    def nvmlDeviceGetMigMode(self, h):
        raise self.NVMLError("Not Supported")

    def nvmlDeviceGetNvLinkState(self, h, link):
        if link >= 3:
            raise self.NVMLError("Invalid Argument")
        return 1

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        return types.SimpleNamespace(busId=[b"00000000:0F:00.0", b"00000000:07:00.0"][h])


TOPO8 = {cpu: (cpu // 4, cpu % 4) for cpu in range(8)}  # 2 sockets x 4 cores, no SMT


def test_collect_nvml_builds_records():
    nvml = FakeNVML()
    result = collect_nvml(nvml, topology=TOPO8)
    assert result["reason"] == "" and result["driver_version"] == "550.54.15"
    gpu0, gpu1 = result["gpus"]
    assert (gpu0["minor"], gpu0["file"], gpu0["type"], gpu0["memory_mib"]) == (
        2,
        "/dev/nvidia2",
        "a100",
        81920,
    )
    assert gpu0["cores"] == "0-3" and gpu1["cores"] == "4-7"
    assert [link["peer_index"] for link in gpu0["nvlinks"]] == [1, 1, 1]
    assert gpu0["mig_mode"] is None and gpu0["synthetic"] is False
    assert nvml.shutdown


def test_collect_nvml_without_library_or_driver_returns_reason_not_crash():
    assert "not installed" in collect_nvml(None)["reason"]
    result = collect_nvml(FakeNVML(init_error="Driver Not Loaded"), topology=TOPO8)
    assert result["gpus"] == [] and "Driver Not Loaded" in result["reason"]


def test_collect_nvml_with_zero_gpus_says_so():
    result = collect_nvml(FakeNVML(count=0), topology=TOPO8)
    assert result["gpus"] == [] and result["reason"] == "NVML reports no GPU"
