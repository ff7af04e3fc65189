"""gpu_gate, rdma_gate and nccl_gate entry points, driven with patch_module_args on real captures."""

import json
import pathlib
import types

import gpu_gate
import nccl_gate
import pynvml
import pytest
import rdma_gate
import yaml
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
REPLAY = ROOT / "tests" / "doubles" / "replay_capture"
GH200_BAD = "nccl_all_reduce_perf_multinode_gh200_bad_cxi_hook_disabled_cscs.txt"
GH200_GOOD = "nccl_all_reduce_perf_multinode_gh200_slingshot_good_cscs.txt"
A100_SINGLE = "nccl_all_reduce_perf_single_node_a100x8_oci.txt"
SOCKET = "nccl_debug_info_net_socket_fallback_bad.txt"
IB_GDR = "nccl_debug_info_transport_ib_gdrdma_good.txt"
IBSTAT = "ibstat_hdr_cx6_one_active_one_disabled.txt"
WRITE_BW = "ib_write_bw_client_roce_100g_cx5_deepops.txt"
NVLINK = "nvidia_smi_nvlink_status_good_a100_azure.txt"
DCGMI = "dcgmi_diag_r2_pass_a100x8_p4de_aws.txt"
PATH_BINS = {"timeout": "/usr/bin/timeout", "all_reduce_perf": "/opt/nccl-tests/all_reduce_perf",
             "ibstat": "/usr/sbin/ibstat", "ibv_devinfo": "/usr/bin/ibv_devinfo",
             "ib_write_bw": "/usr/bin/ib_write_bw", "nvidia-smi": "/usr/bin/nvidia-smi",
             "dcgmi": "/usr/bin/dcgmi", "srun": "/usr/bin/srun"}


def verbatim(text):
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#@"))


class Runner:
    """Stands in for AnsibleModule.run_command: answers each command (by its program name) with a
    reply ``(rc, stdout, stderr)`` and records what it was asked to run."""

    def __init__(self, replies):
        self.replies = replies
        self.calls = []

    def __call__(self, args, **kwargs):
        self.calls.append({"args": list(args), "environ_update": kwargs.get("environ_update")})
        program = args[4] if args[0] == "/usr/bin/timeout" else args[0]
        for name, reply in self.replies.items():
            if program.endswith(name):
                return reply
        raise AssertionError(f"unexpected command {args}")


@pytest.fixture
def capture(fixture_text):
    return lambda *names: "".join(verbatim(fixture_text(n)) for n in names)


@pytest.fixture
def run(monkeypatch, capsys):
    """Run a module's main() with args; commands answered by ``replies``; return its JSON result."""

    def _run(module, args, replies=None, bins=PATH_BINS):
        runner = Runner(replies or {})
        monkeypatch.setattr(AnsibleModule, "run_command", lambda self, args, **kw: runner(args, **kw))
        monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: bins.get(name))
        with patch_module_args(args), pytest.raises(SystemExit):
            module.main()
        result = json.loads(capsys.readouterr().out)
        result["_calls"] = runner.calls
        return result

    return _run


# ------------------------------------------------------------------------------------ nccl_gate


def test_nccl_pair_socket_fallback_and_low_busbw_fail_with_both_reasons(run, capture):
    result = run(nccl_gate, {"mode": "pair", "gpu_model": "NVIDIA GH200 120GB", "gpu_count": 4,
                             "command": ["srun", "-N2", "all_reduce_perf", "-b", "8", "-e", "128M"]},
                 {"srun": (0, capture(SOCKET, GH200_BAD), "")})
    assert result["verdict"] == "FAIL"
    assert result["reason"] == ("nccl: busbw 5.48 GB/s < 98.00 GB/s; "
                                "nccl: transport socket (13 channels), expected IB")
    f = result["figures"]
    assert (f["profile"], f["min_busbw_gbps"], f["transport"], f["wrong"]) == ("gh200_x4", 98.0, "socket", 0)
    assert f["avg_busbw_gbps"] == pytest.approx(1.58767)
    assert result["changed"] is False
    assert result["raw_tail"][-1] == "# Collective test concluded: all_reduce_perf"


def test_nccl_pair_good_run_over_ib_passes(run, capture):
    result = run(nccl_gate, {"mode": "pair", "profile": "gh200_x4", "require_gdr": True,
                             "command": ["srun", "all_reduce_perf"]},
                 {"srun": (0, capture(IB_GDR, GH200_GOOD), "")})
    assert result["verdict"] == "PASS" and result["reason"] == ""
    assert result["figures"]["busbw_large_gbps"] == pytest.approx(115.13)
    assert result["figures"]["gdr"] is True and result["figures"]["channels"] == {"ib": 12}


def test_nccl_transport_lines_on_stderr_are_read_too(run, capture):
    result = run(nccl_gate, {"mode": "pair", "min_busbw_gbps": 98, "command": ["srun", "x"]},
                 {"srun": (0, capture(GH200_GOOD), capture(SOCKET))})
    assert result["verdict"] == "FAIL" and "transport socket" in result["reason"]


def test_nccl_default_command_and_environment(run, capture):
    args = {"gpu_count": 8, "gpu_model": "NVIDIA A100-SXM4-40GB", "env": {"NCCL_IB_HCA": "mlx5"}}
    result = run(nccl_gate, args, {"all_reduce_perf": (0, capture(A100_SINGLE), "")})
    assert result["verdict"] == "PASS"
    (call,) = result["_calls"]
    assert call["args"] == ["/usr/bin/timeout", "-k", "10", "600", "/opt/nccl-tests/all_reduce_perf",
                            "-b", "8", "-e", "8G", "-f", "2", "-g", "8"]
    assert call["environ_update"] == {"NCCL_IB_HCA": "mlx5", "NCCL_DEBUG": "INFO"}
    assert result["command"] == ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8"]


def test_nccl_missing_binary_is_an_error(run):
    bins = {k: v for k, v in PATH_BINS.items() if k != "all_reduce_perf"}
    result = run(nccl_gate, {"gpu_count": 8, "min_busbw_gbps": 100}, bins=bins)
    assert result["verdict"] == "ERROR" and result["reason"] == "nccl: command not found: all_reduce_perf"
    assert result["_calls"] == []


def test_nccl_timeout_is_an_error(run):
    result = run(nccl_gate, {"command": ["srun", "x"], "min_busbw_gbps": 100, "timeout": 30},
                 {"srun": (124, "", "")})
    assert result["verdict"] == "ERROR" and result["reason"] == "nccl: timed out after 30 s"


def test_nccl_nonzero_exit_without_results_is_an_error_not_a_fail(run, capture):
    result = run(nccl_gate, {"mode": "pair", "command": ["srun", "x"], "min_busbw_gbps": 100},
                 {"srun": (1, capture(SOCKET), "srun: error: node2: task 8: Exited with exit code 3")})
    assert result["verdict"] == "ERROR"
    assert result["reason"] == ("nccl: exit 1 without results: "
                                "srun: error: node2: task 8: Exited with exit code 3")


def test_nccl_truncated_output_with_zero_exit_is_an_error(run, capture):
    text = capture(GH200_GOOD)
    result = run(nccl_gate, {"command": ["srun", "x"], "min_busbw_gbps": 100},
                 {"srun": (0, text[: text.index("# Out of bounds")], "")})
    assert result["verdict"] == "ERROR" and "truncated" in result["reason"]


def test_nccl_without_a_matching_profile_is_an_error_and_runs_nothing(run):
    result = run(nccl_gate, {"gpu_count": 8, "gpu_model": "NVIDIA L40S"})
    assert result["verdict"] == "ERROR"
    assert result["reason"] == ("nccl: no threshold profile matches 8x NVIDIA L40S "
                                "(set profile or min_busbw_gbps)")
    assert result["_calls"] == []


def test_nccl_profile_without_the_mode_threshold_is_an_error(run):
    result = run(nccl_gate, {"gpu_count": 4, "gpu_model": "NVIDIA GH200 120GB", "mode": "single"})
    assert result["verdict"] == "ERROR" and "has no nccl_single_min_busbw_gbps" in result["reason"]


def test_nccl_site_profiles_override_the_shipped_threshold(run, capture):
    result = run(nccl_gate, {"mode": "pair", "profile": "gh200_x4", "command": ["srun", "x"],
                             "profiles": {"gh200_x4": {"nccl_pair_min_busbw_gbps": 5}}},
                 {"srun": (0, capture(IB_GDR, GH200_BAD), "")})
    assert result["verdict"] == "PASS" and result["figures"]["min_busbw_gbps"] == 5.0


def test_nccl_needs_a_command_or_a_gpu_count(run):
    result = run(nccl_gate, {"min_busbw_gbps": 100})
    assert result["failed"] is True and "command" in result["msg"] and "gpu_count" in result["msg"]


def test_nccl_runs_in_check_mode(run, capture):
    result = run(nccl_gate, {"_ansible_check_mode": True, "gpu_count": 8, "min_busbw_gbps": 185},
                 {"all_reduce_perf": (0, capture(A100_SINGLE), "")})
    assert result["verdict"] == "PASS" and result["changed"] is False


def test_nccl_gate_runs_the_replay_double_for_real(monkeypatch, capsys):
    """No stubs: the module runs tests/doubles/replay_capture through run_command and coreutils timeout."""
    args = {"mode": "pair", "min_busbw_gbps": 98, "timeout": 60,
            "command": [str(REPLAY), "--fixtures", str(FIXTURES), SOCKET, GH200_BAD]}
    with patch_module_args(args), pytest.raises(SystemExit):
        nccl_gate.main()
    result = json.loads(capsys.readouterr().out)
    assert result["verdict"] == "FAIL" and result["figures"]["rc"] == 0
    assert result["reason"].startswith("nccl: busbw 5.48 GB/s < 98.00 GB/s")


def test_replay_double_exit_code_without_results_gives_error(monkeypatch, capsys):
    args = {"mode": "pair", "min_busbw_gbps": 98,
            "command": [str(REPLAY), "--fixtures", str(FIXTURES), "--rc", "3", SOCKET]}
    with patch_module_args(args), pytest.raises(SystemExit):
        nccl_gate.main()
    result = json.loads(capsys.readouterr().out)
    assert result["verdict"] == "ERROR" and result["reason"].startswith("nccl: exit 3 without results")


def test_replay_double_prints_the_verbatim_capture_and_exits_as_asked(fixture_text):
    import subprocess

    done = subprocess.run([str(REPLAY), "--fixtures", str(FIXTURES), "--rc", "5", IBSTAT],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 5
    assert done.stdout == verbatim(fixture_text(IBSTAT)) and "#@" not in done.stdout
    missing = subprocess.run([str(REPLAY), "--fixtures", str(FIXTURES), "no_such_capture.txt"],
                             capture_output=True, text=True, check=False)
    assert missing.returncode == 2 and "cannot read capture 'no_such_capture.txt'" in missing.stderr


# ------------------------------------------------------------------------------------ rdma_gate


def test_rdma_every_port_expected_fails_on_the_disabled_one(run, capture):
    result = run(rdma_gate, {}, {"ibstat": (0, capture(IBSTAT), "")})
    assert result["verdict"] == "FAIL" and result["reason"] == "rdma: mlx5_1/1 Down/Disabled"
    assert result["_calls"][0]["args"][4:] == ["/usr/sbin/ibstat"]


def test_rdma_named_port_at_profile_rate_passes(run, capture):
    result = run(rdma_gate, {"devices": ["mlx5_0"], "profile": "a100_sxm_x8"},
                 {"ibstat": (0, capture(IBSTAT), "")})
    assert result["verdict"] == "PASS" and result["figures"]["expected_rate_gbps"] == 200


def test_rdma_pairwise_ib_write_bw_against_threshold(run, capture):
    replies = {"ibstat": (0, capture(IBSTAT), ""), "ib_write_bw": (0, capture(WRITE_BW), "")}
    args = {"devices": ["mlx5_0"], "expected_rate_gbps": 200,
            "ib_write_bw_command": ["ib_write_bw", "-d", "mlx5_0", "peer"]}
    passed = run(rdma_gate, {**args, "min_ib_write_bw_gbps": 90}, replies)
    assert passed["verdict"] == "PASS" and passed["figures"]["ib_write_bw_gbps"] == 92.4
    failed = run(rdma_gate, {**args, "min_ib_write_bw_gbps": 95}, replies)
    assert failed["reason"] == "rdma: ib_write_bw 92.40 Gb/s < 95.00 Gb/s"
    assert failed["checks"]["ports"]["verdict"] == "PASS"


def test_rdma_ib_write_bw_without_threshold_is_an_error(run, capture):
    result = run(rdma_gate, {"devices": ["mlx5_0"], "ib_write_bw_command": ["ib_write_bw", "peer"]},
                 {"ibstat": (0, capture(IBSTAT), "")})
    assert result["verdict"] == "ERROR" and "min_ib_write_bw_gbps" in result["reason"]


def test_rdma_unknown_profile_is_an_error(run):
    result = run(rdma_gate, {"profile": "nope"})
    assert result["verdict"] == "ERROR" and result["reason"].startswith("rdma: profile 'nope' is not defined")
    assert result["_calls"] == []


def test_rdma_missing_ibstat_is_an_error(run):
    result = run(rdma_gate, {}, bins={"timeout": "/usr/bin/timeout"})
    assert result["verdict"] == "ERROR" and result["reason"] == "rdma: command not found: ibstat"


def test_rdma_ibv_devinfo_runs_verbose(run, capture):
    result = run(rdma_gate, {"tool": "ibv_devinfo", "devices": ["mlx4_0:1"], "expected_rate_gbps": 40},
                 {"ibv_devinfo": (0, capture("ibv_devinfo_two_connectx3_hcas_port2_down.txt"), "")})
    # The capture was taken without -v: no rate, so the port cannot be judged against 40 Gb/s.
    assert result["verdict"] == "ERROR" and "needs -v" in result["reason"]
    assert result["_calls"][0]["args"][4:] == ["/usr/bin/ibv_devinfo", "-v"]


# ------------------------------------------------------------------------------------- gpu_gate


def fake_nvml(gpus=None, init_error=None):
    """An NVML double with the real binding's constants and exception classes."""
    nvml = types.SimpleNamespace(**{k: getattr(pynvml, k) for k in dir(pynvml)
                                    if k.startswith(("NVML_", "NVMLError"))})
    gpus = gpus or []

    def init():
        if init_error:
            raise init_error

    def need(value):
        if value is None:
            raise pynvml.NVMLError_NotSupported()
        return value

    nvml.nvmlInit = init
    nvml.nvmlShutdown = lambda: None
    nvml.nvmlSystemGetDriverVersion = lambda: "535.104.12"
    nvml.nvmlDeviceGetCount = lambda: len(gpus)
    nvml.nvmlDeviceGetHandleByIndex = lambda i: gpus[i]
    nvml.nvmlDeviceGetName = lambda h: h["name"]
    nvml.nvmlDeviceGetUUID = lambda h: h["uuid"]
    nvml.nvmlDeviceGetMinorNumber = lambda h: h["minor"]
    nvml.nvmlDeviceGetTotalEccErrors = lambda h, kind, counter: need(h.get("ecc"))
    nvml.nvmlDeviceGetRetiredPagesPendingStatus = lambda h: need(h.get("pending"))
    nvml.nvmlDeviceGetRetiredPages = lambda h, cause: need(h.get("retired"))
    nvml.nvmlDeviceGetRemappedRows = lambda h: need(h.get("remap"))

    def link_state(h, link):
        if link >= len(h.get("links", [])):
            raise pynvml.NVMLError_NotSupported()
        return h["links"][link]

    nvml.nvmlDeviceGetNvLinkState = link_state
    return nvml


def a100(i, **over):
    gpu = {"name": "NVIDIA A100-SXM4-80GB", "uuid": f"GPU-{i}", "minor": i, "ecc": 0, "pending": 0,
           "retired": [], "remap": (0, 0, 0, 0), "links": [1] * 12}
    gpu.update(over)
    return gpu


def test_gpu_gate_healthy_node_through_nvml_passes(run, monkeypatch, capture):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml([a100(i) for i in range(8)]))
    result = run(gpu_gate, {"expected_count": 8, "expected_model": "A100-SXM", "profile": "a100_sxm_x8"},
                 {"dcgmi": (0, capture(DCGMI), "")})
    assert result["verdict"] == "PASS"
    assert set(result["checks"]) == {"inventory", "memory", "nvlink", "dcgm"} and result["skipped"] == {}
    assert result["figures"]["driver_version"] == "535.104.12"
    assert result["figures"]["nvlinks_active"]["GPU0"] == 12


def test_gpu_gate_reports_ecc_remap_and_nvlink_faults(run, monkeypatch):
    gpus = [a100(0), a100(1, ecc=3), a100(2, remap=(0, 1, 1, 0)), a100(3, links=[1] * 11 + [0])]
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml(gpus))
    result = run(gpu_gate, {"expected_count": 4, "checks": ["inventory", "memory", "nvlink"]})
    assert result["verdict"] == "FAIL"
    assert result["reason"] == ("gpu: GPU1 3 uncorrectable ECC errors (volatile), GPU2 row remap pending "
                                "(reset needed); nvlink: GPU3 link 11 inactive")


def test_gpu_gate_unknown_profile_is_an_error(run):
    result = run(gpu_gate, {"profile": "nope", "checks": ["nvlink"]})
    assert result["verdict"] == "ERROR" and result["reason"].startswith("gpu: profile 'nope' is not defined")


def test_gpu_gate_no_driver_is_a_fail(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml(init_error=pynvml.NVMLError_DriverNotLoaded()))
    result = run(gpu_gate, {"checks": ["inventory", "memory"], "expected_count": 8})
    assert result["verdict"] == "FAIL" and result["reason"].startswith("gpu: NVIDIA driver not loaded")


def test_gpu_gate_without_the_nvml_binding_is_an_error(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", None)
    result = run(gpu_gate, {"checks": ["memory"]})
    assert result["verdict"] == "ERROR" and "nvidia-ml-py" in result["reason"]


def test_gpu_gate_precomputed_gpus_drive_inventory_without_nvml(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml(init_error=AssertionError("NVML must not be used")))
    gpus = [{"index": 0, "minor": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-0"},
            {"index": 1, "minor": 1, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-1"}]
    assert run(gpu_gate, {"checks": ["inventory"], "gpus": gpus, "expected_count": 2})["verdict"] == "PASS"
    result = run(gpu_gate, {"checks": ["inventory"], "gpus": gpus[:1], "expected_count": 2})
    assert result["verdict"] == "FAIL" and result["reason"] == "gpu: 1 GPUs, expected 2"


def test_gpu_gate_nvlink_from_nvidia_smi_output(run, capture):
    replies = {"nvidia-smi": (0, capture(NVLINK), "")}
    assert run(gpu_gate, {"checks": ["nvlink"], "nvlink_source": "nvidia_smi", "profile": "a100_sxm_x8",
                          "expected_count": 1}, replies)["verdict"] == "PASS"
    args = {"checks": ["nvlink"], "nvlink_source": "nvidia_smi", "expected_nvlinks": 18}
    result = run(gpu_gate, args, replies)
    assert result["reason"] == "nvlink: GPU7 12/18 links active"


def test_gpu_gate_dcgm_runs_when_dcgmi_is_present(run, capture):
    result = run(gpu_gate, {"checks": ["dcgm"], "dcgm_level": 2}, {"dcgmi": (0, capture(DCGMI), "")})
    assert result["verdict"] == "PASS" and result["figures"]["dcgm_version"] == "3.3.3"
    assert result["_calls"][0]["args"][4:] == ["/usr/bin/dcgmi", "diag", "-r", "2"]


def test_gpu_gate_missing_dcgmi_skips_or_errors_as_asked(run):
    bins = {"timeout": "/usr/bin/timeout"}
    skipped = run(gpu_gate, {"checks": ["dcgm"], "dcgm_required": False}, bins=bins)
    assert skipped["verdict"] == "ERROR" and skipped["reason"] == "gpu: no check ran (dcgm: dcgmi not found)"
    required = run(gpu_gate, {"checks": ["dcgm"]}, bins=bins)
    assert required["verdict"] == "ERROR" and required["reason"] == "dcgm: dcgmi not found"


# ------------------------------------------------------------------------------- documentation


def argument_spec(module, monkeypatch):
    seen = {}

    def record(self, argument_spec, **kwargs):
        seen.update(argument_spec)
        raise RuntimeError("recorded")

    monkeypatch.setattr(AnsibleModule, "__init__", record)
    with pytest.raises(RuntimeError, match="recorded"):
        module.main()
    return seen


@pytest.mark.parametrize("module", [gpu_gate, rdma_gate, nccl_gate], ids=lambda m: m.__name__)
def test_documentation_matches_the_argument_spec(module, monkeypatch):
    spec = argument_spec(module, monkeypatch)
    options = yaml.safe_load(module.DOCUMENTATION)["options"]
    assert set(options) == set(spec)
    for name, arg in spec.items():
        doc = options[name]
        assert doc["type"] == arg["type"], name
        assert doc.get("default") == arg.get("default"), name
        assert doc.get("choices") == arg.get("choices"), name
        assert doc.get("elements") == arg.get("elements"), name
    assert yaml.safe_load(module.RETURN)["verdict"]["type"] == "str"
