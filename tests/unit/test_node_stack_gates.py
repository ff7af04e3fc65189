"""The gates on a node the node stack made in the lab: driver userspace without a kernel module, no HCA.

Captures from the lab's bookworm containers (tests/fixtures/*_debian12*.txt): the broken driver must be a
FAIL ("driver not loaded"), no HCA a FAIL with its reason; neither an ERROR nor a PASS.
"""

import json
import re
import types

import gpu_gate
import pynvml
import pytest
import rdma_gate
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.gate import FaultSeen, ParseError
from ansible.module_utils.nvidia_smi import check_driver, parse_nvlink_status
from ansible.module_utils.rdma import no_hca_reason, parse_ibstat
from ansible.module_utils.testing import patch_module_args

NO_HCA = "ibstat_no_hca_debian12_container.txt"
NO_DEVINFO = "ibv_devinfo_no_hca_debian12_container.txt"
SMI = "nvidia_smi_no_kernel_module_debian12_535.txt"
NVML = "nvml_init_driver_not_loaded_debian12_535.txt"
MPIRUN = "mpirun_version_openmpi_4.1.4_debian12.txt"
BINS = {"timeout": "/usr/bin/timeout", "ibstat": "/usr/sbin/ibstat", "ibv_devinfo": "/usr/bin/ibv_devinfo",
        "nvidia-smi": "/usr/bin/nvidia-smi"}


@pytest.fixture
def run(monkeypatch, capsys):
    def _run(module, args, replies):
        def run_command(self, argv, **kwargs):
            program = argv[4] if argv[0] == "/usr/bin/timeout" else argv[0]
            for name, reply in replies.items():
                if program.endswith(name):
                    return reply
            raise AssertionError(f"unexpected command {argv}")

        monkeypatch.setattr(AnsibleModule, "run_command", run_command)
        monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: BINS.get(name))
        with patch_module_args(args), pytest.raises(SystemExit):
            module.main()
        return json.loads(capsys.readouterr().out)

    return _run


# ------------------------------------------------------------------------------------- no HCA


def test_the_no_hca_capture_is_empty_and_exit_0(fixture_output, fixture_text):
    assert fixture_output(NO_HCA) == ""
    assert "exit status 0 and NO output" in fixture_text(NO_HCA)


def test_empty_ibstat_alone_is_still_a_parse_error(fixture_output):
    with pytest.raises(ParseError, match="empty output"):
        parse_ibstat(fixture_output(NO_HCA))


@pytest.mark.parametrize("sysfs", [None, []], ids=["no-class-dir", "empty-class-dir"])
def test_rdma_gate_without_hca_fails_with_the_reason(run, fixture_output, tmp_path, sysfs):
    class_dir = tmp_path / "infiniband"
    if sysfs is not None:
        class_dir.mkdir()
    result = run(rdma_gate, {"expected_ports": 1, "expected_rate_gbps": 200, "link_layer": "InfiniBand",
                             "sysfs_class_dir": str(class_dir)}, {"ibstat": (0, fixture_output(NO_HCA), "")})
    assert result["verdict"] == "FAIL"
    assert result["reason"] == "rdma: no HCA: ibstat lists no CA and /sys/class/infiniband has no RDMA device"


def test_empty_ibstat_with_devices_in_sysfs_is_an_error_not_a_fail(run, fixture_output, tmp_path):
    (tmp_path / "infiniband" / "mlx5_0").mkdir(parents=True)
    result = run(rdma_gate, {"expected_ports": 1, "expected_rate_gbps": 200,
                             "sysfs_class_dir": str(tmp_path / "infiniband")},
                 {"ibstat": (0, fixture_output(NO_HCA), "")})
    assert result["verdict"] == "ERROR" and "empty output" in result["reason"]


@pytest.mark.parametrize("rc,out,sysfs", [(1, "", None), (0, "CA 'mlx5_0'\n", None), (0, "", ["mlx5_0"])])
def test_no_hca_is_claimed_only_on_empty_exit_0_and_an_empty_rdma_class(rc, out, sysfs):
    assert no_hca_reason("ibstat", out, rc, sysfs) is None
    assert no_hca_reason("ibv_devinfo", "", 0, None) is None


def test_ibv_devinfo_without_rdma_support_is_an_error_not_a_pass(run, fixture_output):
    text = fixture_output(NO_DEVINFO)
    assert text.strip() == "Failed to get IB devices list: Function not implemented"
    result = run(rdma_gate, {"tool": "ibv_devinfo", "expected_ports": 1, "expected_rate_gbps": 200},
                 {"ibv_devinfo": (255, "", text)})
    assert result["verdict"] == "ERROR"
    assert result["reason"] == "rdma: exit 255 without results: Failed to get IB devices list: Function not implemented"


# --------------------------------------------------------------------------- driver not loaded


def test_nvidia_smi_without_kernel_module_is_driver_not_loaded(fixture_output):
    text = fixture_output(SMI)
    with pytest.raises(FaultSeen, match=r"^driver not loaded \(NVIDIA-SMI has failed"):
        check_driver(text)
    with pytest.raises(FaultSeen, match="driver not loaded"):
        parse_nvlink_status(text)


def test_gpu_gate_nvlink_through_nvidia_smi_fails_on_the_broken_driver(run, fixture_output):
    result = run(gpu_gate, {"checks": ["nvlink"], "nvlink_source": "nvidia_smi", "expected_nvlinks": 0},
                 {"nvidia-smi": (9, fixture_output(SMI), "")})
    assert result["verdict"] == "FAIL" and "driver not loaded" in result["reason"]


def _nvml_raising(fixture_output):
    """An NVML double whose nvmlInit fails exactly as the lab's libnvidia-ml1 did (class and code)."""
    name, message, code = (part.strip() for part in fixture_output(NVML).strip().split("|"))
    error_class = getattr(pynvml, name)
    assert error_class().value == int(code) == pynvml.NVML_ERROR_DRIVER_NOT_LOADED
    assert str(error_class()) == message
    nvml = types.SimpleNamespace(**{k: getattr(pynvml, k) for k in dir(pynvml) if k.startswith(("NVML_", "NVMLError"))})

    def init():
        raise error_class()

    nvml.nvmlInit = init
    nvml.nvmlShutdown = lambda: None
    return nvml


def test_gpu_gate_through_nvml_fails_on_the_broken_driver(run, fixture_output, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", _nvml_raising(fixture_output))
    result = run(gpu_gate, {"checks": ["memory"], "expected_count": 1}, {})
    assert result["verdict"] == "FAIL"
    assert result["reason"] == "gpu: NVIDIA driver not loaded (NVML: Driver Not Loaded)"


def test_mpirun_version_line_is_what_the_scenario_checks(fixture_output):
    assert re.search(r"^mpirun \(Open MPI\) [0-9.]+", fixture_output(MPIRUN), re.M)
