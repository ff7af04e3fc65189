"""Gates fail closed (issue 13, part 1): every way a review found a bad node getting PASS.

Inputs are real captures (tests/fixtures) and format samples (tests/fixtures/formats, each with a
``#@`` header naming the format it follows). PASS needs a complete, positive reading; anything else
is FAIL (naming the GPU, port or test) or a clean ERROR, never a traceback.
"""

import json
import re

import gpu_gate
import nccl_gate
import pynvml
import pytest
import rdma_gate
import yaml
from ansible.module_utils import gate
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.dcgm import parse_dcgmi_diag
from ansible.module_utils.gate import ERROR, FAIL, PASS, FaultSeen, ParseError
from ansible.module_utils.gate_rows import gate_pair_rows, gate_verdict
from ansible.module_utils.nccl import parse_all_reduce_perf
from ansible.module_utils.nvidia_smi import parse_nvlink_status, parse_topo_matrix
from ansible.module_utils.rdma import parse_ibstat, parse_ibv_devinfo
from ansible.module_utils.testing import patch_module_args
from test_gate_modules import PATH_BINS, ROOT, Runner, a100, fake_nvml, verbatim

DCGM_R2 = "dcgmi_diag_r2_pass_a100x8_p4de_aws.txt"
DCGM_3X_CONT = "formats/dcgmi_diag_3x_r2_continuation_row_fails_gpu0.txt"
DCGM_4X = "formats/dcgmi_diag_4x_r2_gpu3_memory_fail.txt"
DCGM_4X_SKIP = "formats/dcgmi_diag_4x_r3_stress_all_skip.txt"
DCGM_JSON = "formats/dcgmi_diag_4x_r2_json_gpu5_memory_fail.json.txt"
GH200_GOOD = "nccl_all_reduce_perf_multinode_gh200_slingshot_good_cscs.txt"
A100_SINGLE = "nccl_all_reduce_perf_single_node_a100x8_oci.txt"
IB_GDR = "nccl_debug_info_transport_ib_gdrdma_good.txt"
IBSTAT8 = "formats/ibstat_ndr_x8_all_active.txt"
IBV_1X = "formats/ibv_devinfo_v_ndr_port_trained_1x.txt"
NVLINK = "nvidia_smi_nvlink_status_good_a100_azure.txt"
NVLINK_DOWN = "formats/nvidia_smi_nvlink_status_gpu3_all_links_inactive.txt"
NO_DRIVER = "formats/nvidia_smi_driver_not_loaded.txt"


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


def h100(i, **over):
    return a100(i, **{"name": "NVIDIA H100 80GB HBM3", "links": [1] * 18, **over})


def dcgm(text, level=2):
    return gate.dcgm_verdict(parse_dcgmi_diag(text), level)


# ------------------------------------------------------------------------------------- dcgmi diag


def test_dcgm_3x_continuation_row_fail_under_a_passing_row_fails_naming_gpu0(capture):
    result = dcgm(capture(DCGM_3X_CONT))
    assert result["verdict"] == FAIL
    assert result["reason"] == "dcgm: failed GPU Memory (GPU0)"


def test_dcgm_3x_continuation_rows_keep_the_warning_text_as_notes(capture):
    mem = next(t for t in parse_dcgmi_diag(capture(DCGM_3X_CONT))["tests"] if t["name"] == "GPU Memory")
    assert [e["entity"] for e in mem["entities"] if e["result"] == "Pass"] == [f"GPU{g}" for g in range(1, 8)]
    assert mem["notes"][0].startswith("Warning: GPU 0 Error using CUDA API")


def test_dcgm_4x_per_gpu_fail_line_fails_naming_the_gpu(capture):
    result = dcgm(capture(DCGM_4X))
    assert result["verdict"] == FAIL and result["reason"] == "dcgm: failed memory (GPU3)"


def test_dcgm_4x_per_gpu_fail_under_a_pass_test_row_still_fails(capture):
    text = capture(DCGM_4X).replace("| memory                    | Fail", "| memory                    | Pass")
    assert dcgm(text)["reason"] == "dcgm: failed memory (GPU3)"


def test_dcgm_4x_all_pass_passes(capture):
    text = capture(DCGM_4X).replace("Fail", "Pass")
    assert dcgm(text)["verdict"] == PASS


def test_dcgm_json_output_fails_naming_gpu5(capture):
    result = dcgm(capture(DCGM_JSON))
    assert result["verdict"] == FAIL and result["reason"] == "dcgm: failed memory (GPU5)"
    assert result["figures"]["dcgm_version"] == "4.2.3"


def test_dcgm_json_all_pass_passes_and_runtime_error_is_an_error(capture):
    doc = json.loads(capture(DCGM_JSON))
    for test in doc["DCGM Diagnostic"]["test_categories"][2]["tests"]:
        test["test_summary"]["status"] = "Pass"
        for res in test["results"]:
            res["status"] = "Pass"
    assert dcgm(json.dumps(doc))["verdict"] == PASS
    broken = dcgm(json.dumps({"runtime_error": "Unable to connect to the host engine"}))
    assert broken["verdict"] == ERROR and "host engine" in broken["reason"]


def test_dcgm_json_3x_layout_with_gpu_ids_is_read(capture):
    doc = {"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]}]},
        {"category": "Integration", "tests": [{"name": "PCIe", "results": [
            {"gpu_ids": "0", "status": "Fail", "warnings": [{"warning": "PCIe replay"}]},
            {"gpu_ids": "1", "status": "Pass"}]}]},
        {"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [{"gpu_ids": "0,1", "status": "Pass"}]}]},
    ]}, "version": "3.3.3"}
    assert dcgm(json.dumps(doc))["reason"] == "dcgm: failed PCIe (GPU0)"


@pytest.mark.parametrize("cell", ["Not Run", "", "Passed", "Error"], ids=["not-run", "empty", "unknown", "error"])
def test_dcgm_result_word_not_known_is_an_error(capture, cell):
    row = "| Inforom                   | "
    text = capture(DCGM_R2).replace(row + "Pass   ", f"{row}{cell:<6} ")
    result = dcgm(text)
    assert result["verdict"] == ERROR and "Inforom" in result["reason"]


def test_dcgm_unknown_per_gpu_word_is_an_error(capture):
    text = capture(DCGM_4X).replace("Fail", "Pass").replace("GPU6: Pass", "GPU6: Not Run")
    result = dcgm(text)
    assert result["verdict"] == ERROR and "memory: 'Not Run'" in result["reason"]


def test_dcgm_deployment_row_named_error_is_an_error(capture):
    text = capture(DCGM_R2).replace(
        "| Inforom                   | Pass                                           |",
        "| Error                     | Unable to reach the host engine                |")
    result = dcgm(text)
    assert result["verdict"] == ERROR and "Error: Unable to reach the host engine" in result["reason"]


def test_dcgm_level_3_with_every_stress_test_skipped_is_an_error(capture):
    result = dcgm(capture(DCGM_4X_SKIP), level=3)
    assert result["verdict"] == ERROR and result["reason"] == "dcgm: every Stress test skipped"


def test_dcgm_everything_skipped_is_an_error(capture):
    text = re.sub(r"\b(Pass|Fail)\b", "Skip", capture(DCGM_4X))
    assert dcgm(text, level=1)["verdict"] == ERROR


def test_dcgm_metadata_and_deployment_only_is_an_error_at_level_2_and_at_level_1(capture):
    text = capture(DCGM_R2)
    cut = text[:text.index("+-----  Integration")] + "+" + "-" * 27 + "+" + "-" * 48 + "+\n"
    result = dcgm(cut, level=2)
    assert result["verdict"] == ERROR
    assert result["reason"] == "dcgm: level 2 output lacks the Integration, Hardware sections"
    # Level 1 asks for the Deployment checks only, and they exercise no GPU.
    assert dcgm(cut, level=1)["verdict"] == ERROR


def test_dcgm_level_3_needs_the_stress_section(capture):
    assert dcgm(capture(DCGM_R2), level=3)["reason"] == "dcgm: level 3 output lacks the Stress section"


def test_dcgm_gate_exit_226_with_a_failing_gpu_is_a_fail_and_with_passing_output_an_error(run, capture):
    failed = run(gpu_gate, {"checks": ["dcgm"], "dcgm_level": 2}, {"dcgmi": (226, capture(DCGM_3X_CONT), "")})
    assert failed["verdict"] == FAIL and "GPU0" in failed["reason"] and failed["figures"]["rc"] == 226
    errored = run(gpu_gate, {"checks": ["dcgm"], "dcgm_level": 2}, {"dcgmi": (226, capture(DCGM_R2), "")})
    assert errored["verdict"] == ERROR and errored["reason"] == "dcgm: exit 226 although the output reads as a pass"


def test_dcgm_gate_missing_dcgmi_is_an_error_by_default(run):
    result = run(gpu_gate, {"checks": ["dcgm"]}, bins={"timeout": "/usr/bin/timeout"})
    assert result["verdict"] == ERROR and result["reason"] == "dcgm: dcgmi not found"


def test_dcgm_level_is_set_from_the_role():
    defaults = yaml.safe_load((ROOT / "roles/health_gate/defaults/main.yml").read_text())
    task = yaml.safe_load((ROOT / "roles/health_gate/tasks/gpu.yml").read_text())[0]
    assert defaults["health_gate_gpu_dcgm_level"] == 2
    assert task["gpu_gate"]["dcgm_level"] == "{{ health_gate_gpu_dcgm_level }}"


def test_dcgm_gate_runs_the_level_the_role_passes(run, capture):
    result = run(gpu_gate, {"checks": ["dcgm"], "dcgm_level": 3}, {"dcgmi": (0, capture(DCGM_4X_SKIP), "")})
    assert result["_calls"][0]["args"][4:] == ["/usr/bin/dcgmi", "diag", "-r", "3"]
    assert result["verdict"] == ERROR and "Stress" in result["reason"]


# ------------------------------------------------------------------------------------------- NCCL


def _table_rows(text):
    return [line for line in text.splitlines() if re.match(r"^\s+\d+\s+\d+\s+float", line)]


def _set_wrong(text, value, which=None):
    """Set the #wrong cells (the last token of each block) of the result rows."""
    rows = _table_rows(text)
    for i, line in enumerate(rows):
        if which is not None and i not in which:
            continue
        tokens = line.split()
        tokens[8] = tokens[12] = value
        text = text.replace(line, "  ".join(tokens), 1)
    return text


def nccl(text, minimum=98.0):
    return gate.nccl_verdict(parse_all_reduce_perf(text), minimum)


def test_nccl_c0_every_wrong_na_is_an_error(capture):
    result = nccl(_set_wrong(capture(GH200_GOOD), "N/A"))
    assert result["verdict"] == ERROR and result["reason"] == "nccl: results not checked (#wrong N/A: run with -c 1)"


def test_nccl_na_cell_does_not_hide_a_known_wrong(capture):
    text = _set_wrong(capture(GH200_GOOD), "N/A", which={0, 1})
    text = _set_wrong(text, "3", which={5})
    result = nccl(text)
    assert result["verdict"] == FAIL and result["reason"] == "nccl: 6 wrong results"


def test_nccl_some_cells_na_is_an_error(capture):
    result = nccl(_set_wrong(capture(GH200_GOOD), "N/A", which={2}))
    assert result["verdict"] == ERROR and result["reason"] == "nccl: 2 #wrong cells N/A (results not all checked)"


def test_nccl_bitwise_mismatches_failed_is_a_fail(capture):
    text = capture(GH200_GOOD).replace("# Out of bounds values : 0 OK",
                                       "# Out of bounds values : 0 OK\n# Bitwise mismatches : 4 FAILED")
    assert nccl(text)["reason"] == "nccl: 4 wrong results"


@pytest.mark.parametrize("line", [
    "nid001234:12345:12399 [0] NCCL WARN NET/OFI Request completed with error",
    "# error: Test NCCL failure common.cu:1025 'unhandled system error'",
], ids=["nccl-warn", "hash-error"])
def test_nccl_fault_line_after_the_table_is_a_fail(capture, line):
    text = capture(GH200_GOOD).rstrip("\n") + "\n" + line + "\n"
    result = nccl(text)
    assert result["verdict"] == FAIL and result["reason"].startswith("nccl: fault reported with the results: ")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_nccl_non_finite_busbw_is_a_clean_error(capture, value):
    line = _table_rows(capture(GH200_GOOD))[-1]
    tokens = line.split()
    tokens[7] = value
    with pytest.raises(ParseError, match="not a finite number"):
        parse_all_reduce_perf(capture(GH200_GOOD).replace(line, "  ".join(tokens)))


def test_nccl_wrong_cell_nan_is_a_clean_error(capture):
    with pytest.raises(ParseError, match="#wrong 'nan' is not a count"):
        parse_all_reduce_perf(_set_wrong(capture(GH200_GOOD), "nan", which={3}))


def test_nccl_gate_srun_exit_1_with_a_full_passing_table_is_an_error(run, capture):
    args = {"command": ["srun", "-N2", "all_reduce_perf"], "mode": "pair", "profile": "gh200_x4"}
    result = run(nccl_gate, args, {"srun": (1, capture(IB_GDR, GH200_GOOD), "srun: error: task 3 exited 1")})
    assert result["verdict"] == ERROR and result["reason"] == "nccl: exit 1 although the output reads as a pass"


def test_nccl_gate_nan_in_the_table_is_an_error_not_a_traceback(run, capture):
    line = _table_rows(capture(A100_SINGLE))[-1]
    tokens = line.split()
    tokens[7] = "nan"
    text = capture(A100_SINGLE).replace(line, "  ".join(tokens))
    result = run(nccl_gate, {"command": ["all_reduce_perf"], "min_busbw_gbps": 185, "expect_transport": "any"},
                 {"all_reduce_perf": (0, text, "")})
    assert result["verdict"] == ERROR and "not a finite number" in result["reason"]


# ----------------------------------------------------------------------------------------- NVLink


def test_nvlink_count_comes_from_the_profile_by_default_12_of_18_fails(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml([h100(i, links=[1] * 12) for i in range(8)]))
    result = run(gpu_gate, {"checks": ["nvlink"]})
    assert result["verdict"] == FAIL and result["figures"]["profile"] == "h100_sxm_x8"
    assert result["reason"].startswith("nvlink: GPU0 12/18 links active")


def test_nvlink_without_any_expectation_is_an_error(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml([a100(i, name="NVIDIA L40S") for i in range(2)]))
    result = run(gpu_gate, {"checks": ["nvlink"]})
    assert result["verdict"] == ERROR and result["reason"].startswith("nvlink: no expected link count")


def test_nvlink_gpu_header_without_links_fails(capture):
    text = capture(NVLINK)
    header = text.splitlines()[0]
    gpus = parse_nvlink_status(text + header.replace("GPU 7:", "GPU 6:").replace("7ce8", "0000") + "\n")
    result = gate.nvlink_verdict(gpus, 12)
    assert result["verdict"] == FAIL and result["reason"] == "nvlink: GPU6 no NVLink reported (0/12)"


def test_nvlink_output_cut_after_gpu5_fails_naming_the_missing_gpus(capture):
    text = "".join(capture(NVLINK).replace("GPU 7:", f"GPU {g}:") for g in range(6))
    result = gate.nvlink_verdict(parse_nvlink_status(text), 12, expected_gpus=8)
    assert result["verdict"] == FAIL and result["reason"] == "nvlink: GPU6, GPU7 not reported (6 of 8 GPUs)"


def test_nvlink_all_links_inactive_is_a_fail_naming_the_gpu(capture):
    gpus = parse_nvlink_status(capture(NVLINK_DOWN))
    assert gpus[3]["all_inactive"] and gpus[3]["links"] == {}
    result = gate.nvlink_verdict(gpus, 12, expected_gpus=4)
    assert result["verdict"] == FAIL and result["reason"] == "nvlink: GPU3 all links inactive"


def test_nvlink_all_inactive_through_the_module(run, capture):
    result = run(gpu_gate, {"checks": ["nvlink"], "nvlink_source": "nvidia_smi", "expected_nvlinks": 12,
                            "expected_count": 4}, {"nvidia-smi": (0, capture(NVLINK_DOWN), "")})
    assert result["verdict"] == FAIL and result["reason"] == "nvlink: GPU3 all links inactive"


@pytest.mark.parametrize("value", ["1.2.3 GB/s", "fast", "25 Gb/s", "nan GB/s"])
def test_nvlink_malformed_speed_is_a_clean_error(run, capture, value):
    text = capture(NVLINK).replace("Link 3: 25 GB/s", f"Link 3: {value}")
    with pytest.raises(ParseError):
        parse_nvlink_status(text)
    result = run(gpu_gate, {"checks": ["nvlink"], "nvlink_source": "nvidia_smi", "expected_nvlinks": 12,
                            "expected_count": 1}, {"nvidia-smi": (0, text, "")})
    assert result["verdict"] == ERROR and result["reason"].startswith("nvlink: nvidia-smi nvlink -s: GPU7 link 3")


# -------------------------------------------------------------------------------- driver not loaded


def test_nvidia_smi_without_the_driver_is_a_fail_driver_not_loaded(run, capture):
    with pytest.raises(FaultSeen, match="driver not loaded"):
        parse_nvlink_status(capture(NO_DRIVER))
    with pytest.raises(FaultSeen, match="driver not loaded"):
        parse_topo_matrix(capture(NO_DRIVER))
    result = run(gpu_gate, {"checks": ["nvlink"], "nvlink_source": "nvidia_smi", "expected_nvlinks": 12},
                 {"nvidia-smi": (9, capture(NO_DRIVER), "")})
    assert result["verdict"] == FAIL and result["reason"].startswith("nvlink: driver not loaded")


def test_nvml_driver_not_loaded_is_a_fail_driver_not_loaded(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml(init_error=pynvml.NVMLError_DriverNotLoaded()))
    result = run(gpu_gate, {"checks": ["inventory", "memory", "nvlink"]})
    assert result["verdict"] == FAIL and "driver not loaded" in result["reason"]


# ------------------------------------------------------------------------------------------- RDMA


def rdma(run, text, rc=0, **args):
    return run(rdma_gate, {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, **args},
               {"ibstat": (rc, text, ""), "ibv_devinfo": (rc, text, "")})


def test_rdma_eight_ndr_ports_pass_against_the_profile(run, capture):
    result = rdma(run, capture(IBSTAT8))
    assert result["verdict"] == PASS
    assert result["figures"]["expected_rate_gbps"] == 400 and result["figures"]["expected_ports"] == 8


def test_rdma_rate_from_the_profile_200_of_400_fails(run, capture):
    text = capture(IBSTAT8).replace("Rate: 400\n\t\tBase lid: 103", "Rate: 200\n\t\tBase lid: 103")
    result = rdma(run, text)
    assert result["verdict"] == FAIL and result["reason"] == "rdma: mlx5_3/1 rate 200.00 Gb/s < 400.00 Gb/s"


def test_rdma_port_trained_1x_fails_naming_the_width(run, capture):
    result = rdma(run, capture(IBV_1X), tool="ibv_devinfo", devices=["mlx5_0", "mlx5_1"])
    assert result["verdict"] == FAIL and result["reason"] == "rdma: mlx5_1/1 rate 100.00 Gb/s < 400.00 Gb/s (1X)"


def test_rdma_ethernet_port_on_an_infiniband_fabric_fails(run, capture):
    blocks = capture(IBSTAT8).split("CA '")
    blocks[6] = blocks[6].replace("Link layer: InfiniBand", "Link layer: Ethernet")
    text = "CA '".join(blocks)
    result = rdma(run, text)
    assert result["verdict"] == FAIL and result["reason"] == "rdma: 7 of 8 InfiniBand ports (mlx5_5/1 is Ethernet)"
    named = rdma(run, text, devices=["mlx5_5"])
    assert named["reason"] == "rdma: mlx5_5/1 link layer Ethernet, expected InfiniBand"


def test_rdma_ibstat_exit_255_listing_7_of_8_hcas_fails(run, capture):
    text = capture(IBSTAT8)
    text = text[:text.index("CA 'mlx5_7'")]
    result = rdma(run, text, rc=255)
    assert result["verdict"] == FAIL and result["reason"] == "rdma: 7 of 8 InfiniBand ports"
    assert result["figures"]["rc"] == 255


def test_rdma_ibstat_exit_255_with_all_ports_up_is_an_error(run, capture):
    result = rdma(run, capture(IBSTAT8), rc=255)
    assert result["verdict"] == ERROR and result["reason"] == "rdma: exit 255 although the output reads as a pass"


def test_rdma_role_passes_what_selects_the_profile_and_the_overrides():
    defaults = yaml.safe_load((ROOT / "roles/health_gate/defaults/main.yml").read_text())
    task = yaml.safe_load((ROOT / "roles/health_gate/tasks/rdma.yml").read_text())[0]["rdma_gate"]
    assert defaults["health_gate_rdma_expected_ports"] is None and defaults["health_gate_rdma_link_layer"] is None
    assert {"gpu_model", "gpu_count", "expected_ports", "link_layer", "expected_rate_gbps"} <= set(task)


def test_rdma_without_a_rate_or_port_count_is_an_error(run, capture):
    result = run(rdma_gate, {}, {"ibstat": (0, capture(IBSTAT8), "")})
    assert result["verdict"] == ERROR
    assert "no expected port count" in result["reason"] and "no expected port rate" in result["reason"]


@pytest.mark.parametrize(("old", "new"), [("Number of ports: 1", "Number of ports: two"),
                                          ("Rate: 400", "Rate: fast"), ("Rate: 400", "Rate: nan")])
def test_rdma_malformed_numbers_are_a_clean_error(run, capture, old, new):
    text = capture(IBSTAT8).replace(old, new, 1)
    with pytest.raises(ParseError):
        parse_ibstat(text)
    assert rdma(run, text)["verdict"] == ERROR


def test_rdma_malformed_ibv_devinfo_width_is_a_clean_error(capture):
    with pytest.raises(ParseError, match="not a rate"):
        parse_ibv_devinfo(capture(IBV_1X).replace("1X (1)", "one (1)"))


# ------------------------------------------------------------------------------------ GPUs / NVML


def test_no_gpus_seen_and_no_expected_count_is_an_error(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml([]))
    result = run(gpu_gate, {"checks": ["inventory"]})
    assert result["verdict"] == ERROR and result["reason"].startswith("gpu: 0 GPUs seen, no expected count")


def test_gpu_count_comes_from_the_profile_7_of_8_fails(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml([h100(i) for i in range(7)]))
    result = run(gpu_gate, {"checks": ["inventory"]})
    assert result["verdict"] == FAIL and result["reason"] == "gpu: 7 GPUs, expected 8"


def test_ecc_unsupported_on_every_gpu_is_an_error(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml([a100(i, ecc=None) for i in range(8)]))
    result = run(gpu_gate, {"checks": ["memory"]})
    assert result["verdict"] == ERROR and "ECC counters not supported on any GPU" in result["reason"]


def test_ecc_unreadable_on_one_gpu_only_fails_naming_it(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml([a100(0), a100(1, ecc=None)]))
    result = run(gpu_gate, {"checks": ["memory"]})
    assert result["verdict"] == FAIL and result["reason"].startswith("gpu: GPU1 ECC counters unreadable")


def test_nvml_sees_6_where_discovery_said_8_fails(run, monkeypatch):
    monkeypatch.setattr(gpu_gate, "pynvml", fake_nvml([a100(i) for i in range(6)]))
    discovered = [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "uuid": f"GPU-{i}"} for i in range(8)]
    result = run(gpu_gate, {"checks": ["inventory", "memory"], "gpus": discovered, "expected_count": 8})
    assert result["verdict"] == FAIL and "gpu: NVML sees 6 GPUs, discovery saw 8" in result["reason"]


def test_health_of_no_gpu_is_an_error():
    assert gate.gpu_health_verdict([])["verdict"] == ERROR


# ------------------------------------------------------------------------ per-node aggregation


def test_node_without_a_pairing_partner_gets_an_error_row_not_a_pass():
    first = [{"nodes": ["gpu01", "gpu02"], "verdict": PASS, "reason": "", "figure": "9Gb/s", "threshold": "1Gb/s"}]
    rows = gate_pair_rows(first, [], [], "tcp", ["gpu01", "gpu03"])
    assert [(r["node"], r["verdict"]) for r in rows] == [("gpu01", PASS), ("gpu03", ERROR)]
    assert rows[1]["reason"] == "tcp: not tested (no pair for this node)"
    assert gate_verdict(rows[1:])["verdict"] == ERROR


def test_node_with_no_rows_at_all_is_an_error():
    assert gate_verdict([])["verdict"] == ERROR
    assert gate_verdict(None)["reason"] == "gate: no gate ran on this node"


def test_row_with_an_unknown_verdict_is_an_error():
    row = {"node": "n", "gate": "gpu", "verdict": "OK", "reason": "", "figure": "", "threshold": ""}
    assert gate_verdict([row])["verdict"] == ERROR
