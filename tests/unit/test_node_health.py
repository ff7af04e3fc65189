"""Health between jobs (issue 37): node_health reads what breaks GPUs, on real captures, judged by the gate's rules.

The captures are real tool output (tests/fixtures, each with its provenance): nvidia-smi --query-gpu CSV from
nvidia_gpu_exporter's collected captures (healthy H100, H100 with MIG on, L40S, a GeForce without ECC), kernel logs
with Xids from public issue threads, ibstat from gpud's test data. No real CSV of a faulty GPU was found: the fault
rows below are the real H100 row with one value changed, and say so.
"""

import io
import json

import pytest
from ansible.module_utils.gate import ERROR, FAIL, PASS, FaultSeen, ParseError
from ansible.module_utils.node_health import (
    Runner,
    check,
    drain_reason,
    main,
    parse_gpu_query,
    parse_xids,
    xid_verdict,
)

H100 = "nvidia_smi_query_gpu_h100_80gb_590.48.01_healthy_exporter.txt"
H100_MIG = "nvidia_smi_query_gpu_h100_mig_on_590.48.01_remap_na_exporter.txt"
L40S = "nvidia_smi_query_gpu_l40s_595.80_healthy_exporter.txt"
NO_ECC = "nvidia_smi_query_gpu_rtx2080super_595.71.05_no_ecc_exporter.txt"
XID79 = "kernel_log_syslog_xid79_fallen_off_bus_k80.txt"
XID48 = "kernel_log_dmesg_iso_xid48_xid63_xid94.txt"
XID31 = "kernel_log_xid31_mmu_fault_app_error_515.txt"
OFF_BUS = "kernel_log_dmesg_fallen_off_bus_no_xid_570.txt"
XID119 = "kernel_log_dmesg_T_xid119_gsp_timeout.txt"
NDR_OK = "ibstat_h100_8x_ndr400_all_active_gpud.txt"
HDR = "ibstat_a100_8x_hdr200_cx6_ibpanic_gpud.txt"
PORTS_DOWN = "ibstat_cx7_ndr400_three_eth_ports_down_gpud.txt"
FATAL = [48, 56, 57, 58, 62, 63, 64, 65, 69, 73, 74, 79, 80, 81, 92, 94, 95, 119, 120]


def with_value(text, field, value):
    """The capture's header and its row with one field's value replaced (a fault no real capture shows)."""
    header, row = [line for line in text.splitlines() if line.strip()][:2]
    names = [name.split(" [")[0] for name in header.split(", ")]
    cells = row.split(", ")
    cells[names.index(field)] = value
    return f"{header}\n{', '.join(cells)}\n"


class Commands:
    """Test double of the node's commands: answers by reading (gpu, nvlink: nvidia-smi; else the program's name) with
    a capture's output or an (rc, out) pair; a reading not given is a command not found."""

    def __init__(self, outputs):
        self.outputs, self.calls = outputs, []

    @staticmethod
    def reading(argv):
        argv = argv[4:] if argv[0] == "timeout" else argv  # run_parsed's coreutils wrapper: timeout -k 10 N
        return argv, ("nvlink" if argv[1:2] == ["nvlink"] else "gpu") if argv[0] == "nvidia-smi" else argv[0]

    def run(self, argv, timeout):
        argv, name = self.reading(argv)
        self.calls.append(argv)
        answer = self.outputs[name]
        return answer if isinstance(answer, tuple) else (0, answer, "")

    def which(self, name):
        known = {"nvidia-smi": "gpu" in self.outputs or "nvlink" in self.outputs, "timeout": True}
        return name if known.get(name, name in self.outputs) else None


def run_check(config, outputs, seen=()):
    commands = Commands(outputs)
    runner = Runner(30, run=commands.run, which=commands.which, clock=lambda: 0.0)
    return check(config, runner, set(seen)), commands


# ---- the GPU query ------------------------------------------------------------------------------------------------

def test_a_real_healthy_h100_reads_its_memory_health_figures(fixture_output):
    gpus = parse_gpu_query(fixture_output(H100))
    assert gpus == [{"index": 0, "pci_bus_id": "00000000:00:09.0", "name": "NVIDIA H100 80GB HBM3",
                     "ecc_uncorrected_volatile": 0, "retired_pages_dbe": None, "retired_pages_pending": None,
                     "remap_pending": False, "remap_failure": False}]


@pytest.mark.parametrize("name", [H100, H100_MIG, L40S])
def test_real_healthy_gpus_pass_the_memory_check(fixture_output, name):
    result, _ = run_check({"checks": ["gpus", "memory"], "expected_gpus": 1}, {"gpu": fixture_output(name)})
    assert result["verdict"] == PASS, result


def test_a_gpu_without_ecc_cannot_be_judged_and_is_a_finding(fixture_output):
    result, _ = run_check({"checks": ["memory"]}, {"gpu": fixture_output(NO_ECC)})
    assert result["verdict"] == ERROR
    assert result["reasons"] == ["gpu: ECC counters not supported on any GPU (ECC off?); memory health cannot "
                                 "be judged"]


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("ecc.errors.uncorrected.volatile.total", "2", "gpu: GPU0 2 uncorrectable ECC errors (volatile)"),
    ("remapped_rows.pending", "Yes", "gpu: GPU0 row remap pending (reset needed)"),
    ("remapped_rows.failure", "Yes", "gpu: GPU0 row remapping failed"),
    ("retired_pages.pending", "Yes", "gpu: GPU0 page retirement pending (reset needed)"),
])
def test_a_memory_fault_is_a_fail_naming_the_gpu_and_the_reading(fixture_output, field, value, reason):
    result, _ = run_check({"checks": ["memory"]}, {"gpu": with_value(fixture_output(H100), field, value)})
    assert (result["verdict"], result["reasons"]) == (FAIL, [reason])
    assert drain_reason(result["reasons"]).startswith("gpufleet:gate,to=slurm,healthcheck:gpu:_GPU0_")


def test_a_value_nvidia_smi_prints_for_a_gpu_in_trouble_is_a_fault(fixture_output):
    with pytest.raises(FaultSeen, match=r"GPU0 remapped_rows\.pending reads \[Unknown Error\]"):
        parse_gpu_query(with_value(fixture_output(H100), "remapped_rows.pending", "[Unknown Error]"))


@pytest.mark.parametrize(("text", "match"), [
    ("", "empty output"),
    ("index, name\n0, NVIDIA H100\n", "no column pci.bus_id"),
    ("No devices were found\n", "no column index"),
])
def test_output_the_parser_does_not_know_is_never_healthy(text, match):
    with pytest.raises(ParseError, match=match):
        parse_gpu_query(text)


def test_a_cut_row_and_an_odd_value_are_parse_errors(fixture_output):
    header, row = [line for line in fixture_output(H100).splitlines() if line.strip()][:2]
    with pytest.raises(ParseError, match="fields, the header"):
        parse_gpu_query(f"{header}\n{row.rsplit(', ', 3)[0]}\n")
    with pytest.raises(ParseError, match="is not Yes, No or N/A"):
        parse_gpu_query(with_value(fixture_output(H100), "remapped_rows.failure", "Maybe"))
    with pytest.raises(ParseError, match="deprecated in this driver"):
        parse_gpu_query(with_value(fixture_output(H100), "remapped_rows.failure",
                                   "[Requested functionality has been deprecated]"))


def test_the_wrong_gpu_count_is_a_finding(fixture_output):
    result, _ = run_check({"checks": ["gpus"], "expected_gpus": 8}, {"gpu": fixture_output(H100)})
    assert (result["verdict"], result["reasons"]) == (FAIL, ["gpu: 1 GPUs, expected 8"])


def test_nvml_that_does_not_answer_in_time_is_a_finding(fixture_output):
    result, _ = run_check({"checks": ["gpus", "memory"], "expected_gpus": 1}, {"gpu": (124, "", "")})
    assert result["verdict"] == ERROR
    assert result["reasons"] == ["gpu: timed out after 29 s", "gpu: timed out after 29 s"]


def test_a_missing_nvidia_smi_is_a_finding_not_a_skip():
    result, _ = run_check({"checks": ["gpus"], "expected_gpus": 1}, {})
    assert result["reasons"] == ["gpu: command not found: nvidia-smi"]


# ---- Xids ---------------------------------------------------------------------------------------------------------

def test_xid_79_in_a_real_syslog_is_fatal_and_names_the_gpu(fixture_output):
    events = parse_xids(fixture_output(XID79))
    # Each GPU's "GPU has fallen off the bus" line right after its Xid 79 is that Xid's, not a second fault.
    assert [(e["xid"], e["pci"]) for e in events] == [(79, "PCI:0000:05:00"), (79, "PCI:0000:06:00")]
    result = xid_verdict(events, set(), FATAL)
    assert (result["verdict"], result["reason"]) == (FAIL, "xid: Xid 79 on PCI:0000:05:00 (+1 more)")


def test_a_gpu_fallen_off_the_bus_without_an_xid_line_counts_as_79(fixture_output):
    events = parse_xids(fixture_output(OFF_BUS))
    assert [(e["xid"], e["pci"]) for e in events] == [(79, "PCI:0000:b3:00.0")]


@pytest.mark.parametrize(("name", "verdict_", "reason"), [
    (XID48, FAIL, "xid: Xid 48 on PCI:0000:19:00 (+10 more)"),
    (XID119, FAIL, "xid: Xid 119 on PCI:0000:9b:00 (+4 more)"),
    (XID31, PASS, ""),
])
def test_real_kernel_logs_against_the_fatal_list(fixture_output, name, verdict_, reason):
    result = xid_verdict(parse_xids(fixture_output(name)), set(), FATAL)
    assert (result["verdict"], result["reason"]) == (verdict_, reason)


def test_an_acknowledged_xid_is_not_new_and_a_later_one_is(fixture_output):
    events = parse_xids(fixture_output(XID79))
    seen = {e["key"] for e in events}
    assert xid_verdict(events, seen, FATAL)["verdict"] == PASS
    later = parse_xids(fixture_output(XID79).replace("44643.002804", "99999.000001"))
    assert xid_verdict(later, seen, FATAL)["reason"] == "xid: Xid 79 on PCI:0000:05:00"


def test_an_xid_line_not_in_the_driver_s_form_is_never_no_xid():
    with pytest.raises(ParseError, match="not in the driver's form"):
        parse_xids("[ 12.3] NVRM: Xid (PCI:0000:05:00) seventy-nine\n")


# ---- NVLink and fabric ports: on by the gate profile ----------------------------------------------------------------

def test_fabric_ports_are_judged_against_the_named_profile(fixture_output):
    config = {"checks": ["ib"], "profile": "lab", "profiles": {"lab": {"nic_rate_gbps": 400, "rdma_ports": 8,
                                                                        "link_layer": "InfiniBand"}}}
    good, _ = run_check(config, {"gpu": fixture_output(H100), "ibstat": fixture_output(NDR_OK)})
    assert good["verdict"] == PASS, good
    half, _ = run_check(config, {"gpu": fixture_output(H100), "ibstat": fixture_output(HDR)})
    assert half["verdict"] == FAIL
    assert half["reasons"][0].startswith("rdma: mlx5_0/1 rate 200")
    assert "< 400" in half["reasons"][0]


def test_a_port_down_is_a_finding(fixture_output):
    config = {"checks": ["ib"], "ib_devices": ["mlx5_8"], "profile": "lab",
              "profiles": {"lab": {"nic_rate_gbps": 100, "link_layer": "Ethernet"}}}
    result, _ = run_check(config, {"gpu": fixture_output(H100), "ibstat": fixture_output(PORTS_DOWN)})
    assert result["verdict"] == FAIL, result


def test_without_a_profile_for_the_hardware_nvlink_and_ib_are_not_judged_and_say_so(fixture_output):
    result, commands = run_check({"checks": ["nvlink", "ib"]}, {"gpu": fixture_output(L40S)})
    assert (result["verdict"], result["unjudged"]) == (PASS, ["nvlink", "ib"])
    assert [c[-1] for c in commands.calls] == ["--format=csv"]


def test_a_named_profile_that_does_not_exist_is_a_finding(fixture_output):
    result, _ = run_check({"checks": ["ib"], "profile": "nope"}, {"gpu": fixture_output(H100)})
    assert result["verdict"] == ERROR
    assert result["reasons"][0].startswith("profile: profile 'nope' is not defined")


# ---- the program: check, then ack once the node is drained ----------------------------------------------------------

def test_check_reports_an_xid_once_it_is_acknowledged_and_fails_closed_on_a_bad_configuration(tmp_path, monkeypatch,
                                                                                               fixture_output):
    commands = Commands({"dmesg": fixture_output(XID79)})
    monkeypatch.setattr("ansible.module_utils.node_health._run", commands.run)
    monkeypatch.setattr("ansible.module_utils.node_health.shutil.which", commands.which)
    config = json.dumps({"checks": ["xid"], "fatal_xids": FATAL})

    def program(*argv, stdin=config):
        out = io.StringIO()
        rc = main(list(argv), stdin=io.StringIO(stdin), stdout=out)
        return rc, out.getvalue().splitlines()

    state = str(tmp_path / "state")
    rc, lines = program("check", state)
    assert rc == 1
    assert lines == ["gpufleet:gate,to=slurm,healthcheck:xid:_Xid_79_on_PCI:0000:05:00_-+1_more-",
                     "xid: Xid 79 on PCI:0000:05:00 (+1 more)"]
    assert program("check", state)[0] == 1  # not acknowledged yet (the drain may have failed): still a finding
    assert program("ack", state) == (0, [])
    assert program("check", state) == (0, [])
    rc, lines = program("check", state, stdin="[1, 2]")
    assert rc == 1
    assert lines[0] == "gpufleet:gate,to=slurm,healthcheck:internal_error_ValueError"
    assert program("nonsense", state)[0] == 1


# ---- found in review: time, order, keys -----------------------------------------------------------------------------

def test_with_no_time_left_a_reading_is_not_started_and_is_a_finding(fixture_output):
    clock = iter([0.0, 0.0, 40.0, 40.0, 40.0])
    commands = Commands({"dmesg": fixture_output(XID31), "gpu": fixture_output(H100)})
    runner = Runner(30, run=commands.run, which=commands.which, clock=lambda: next(clock))
    result = check({"checks": ["xid", "memory"]}, runner, set())
    assert result["reasons"] == ["gpu: no time left in the health check's budget"]
    assert [c[0] for c in commands.calls] == ["dmesg"]


def test_the_kernel_log_is_read_before_nvidia_smi_which_a_lost_gpu_hangs(fixture_output):
    result, commands = run_check({"checks": ["memory", "xid"], "fatal_xids": FATAL},
                                 {"dmesg": fixture_output(XID79), "gpu": (124, "", "")})
    assert [c[0] for c in commands.calls] == ["dmesg", "nvidia-smi"]
    assert result["reasons"] == ["xid: Xid 79 on PCI:0000:05:00 (+1 more)", "gpu: timed out after 29 s"]
    assert len(result["pending"]) == 2


def test_a_named_profile_with_nvidia_smi_failing_reports_the_gpu_error_for_nvlink(fixture_output):
    result, _ = run_check({"checks": ["nvlink"], "profile": "h100_sxm_x8"}, {"gpu": (15, "", ""), "nvlink": "x"})
    assert result["verdict"] == ERROR
    assert result["reasons"] == ["gpu: exit 15 without results"]


def test_the_same_line_after_a_reboot_is_a_new_fault(fixture_output):
    first = {e["key"] for e in parse_xids(fixture_output(XID79), boot="boot-a")}
    assert xid_verdict(parse_xids(fixture_output(XID79), boot="boot-a"), first, FATAL)["verdict"] == PASS
    assert xid_verdict(parse_xids(fixture_output(XID79), boot="boot-b"), first, FATAL)["verdict"] == FAIL
