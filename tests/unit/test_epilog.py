"""The epilog (issue 37): a job that leaves a compute process or GPU memory behind drains its node.

Captures: nvidia_gpu_exporter's collected H100 80GB HBM3 output (driver 590.48.01), idle (no compute process,
memory.used 0 MiB) and under load (three compute processes, memory in use): the load capture is what a node shows
when a job's processes outlive it.
"""

import io
import json

import pytest
from ansible.module_utils.gate import ERROR, FAIL, PASS, ParseError
from ansible.module_utils.node_health import (
    Runner,
    epilog_check,
    job_gpus,
    leftover_verdict,
    main,
    parse_compute_apps,
    parse_gpu_memory,
    read_minors,
)

APPS_LOAD = "nvidia_smi_query_compute_apps_h100_80gb_590.48.01_load_exporter.txt"
APPS_IDLE = "nvidia_smi_query_compute_apps_h100_80gb_590.48.01_idle_exporter.txt"
GPU_LOAD = "nvidia_smi_query_gpu_h100_80gb_590.48.01_load_exporter.txt"
GPU_IDLE = "nvidia_smi_query_gpu_h100_80gb_590.48.01_healthy_exporter.txt"


def test_the_real_load_capture_reads_three_processes_and_the_idle_one_none(fixture_output):
    apps = parse_compute_apps(fixture_output(APPS_LOAD))
    assert [(a["pid"], a["name"], a["used_mib"]) for a in apps] == [
        (11327, "/root/tools/memhog", 2566), (11328, "/root/tools/memhog", 1542), (11345, "./gpu_burn", 15690)]
    assert {a["uuid"] for a in apps} == {"GPU-00000000-0000-0000-0000-000000000000"}
    assert parse_compute_apps(fixture_output(APPS_IDLE)) == []


def test_the_real_gpu_captures_read_memory_used(fixture_output):
    idle = parse_gpu_memory(fixture_output(GPU_IDLE))
    assert idle == [{"index": 0, "uuid": "GPU-00000000-0000-0000-0000-000000000000", "bus": "0000:00:09.0",
                     "used_mib": 0}]
    assert parse_gpu_memory(fixture_output(GPU_LOAD))[0]["used_mib"] > 1024


def test_a_leftover_process_is_a_fail_naming_the_gpu_the_pid_and_the_memory(fixture_output):
    result = leftover_verdict(parse_compute_apps(fixture_output(APPS_LOAD)), parse_gpu_memory(fixture_output(GPU_LOAD)))
    assert result["verdict"] == FAIL
    assert result["reason"] == "epilog: GPU0 pid 11327 (/root/tools/memhog) holds 2566 MiB (+2 more)"


def test_a_clean_gpu_passes_and_memory_with_no_process_fails_above_the_threshold(fixture_output):
    idle = parse_gpu_memory(fixture_output(GPU_IDLE))
    assert leftover_verdict([], idle)["verdict"] == PASS
    held = [dict(idle[0], used_mib=5000)]
    result = leftover_verdict([], held, max_used_mib=1024)
    assert result["verdict"] == FAIL and result["reason"] == (
        "epilog: GPU0 5000 MiB in use with no process (> 1024 MiB)")
    assert leftover_verdict([], [dict(idle[0], used_mib=1024)], max_used_mib=1024)["verdict"] == PASS


def test_a_process_on_a_gpu_the_list_does_not_hold_is_an_error_never_clean(fixture_output):
    apps = parse_compute_apps(fixture_output(APPS_LOAD))
    other = [{"index": 0, "uuid": "GPU-11111111-0000-0000-0000-000000000000", "used_mib": 0}]
    assert leftover_verdict(apps, other)["verdict"] == ERROR


def test_unreadable_output_is_an_error(fixture_output):
    header = fixture_output(APPS_IDLE).splitlines()[0]
    for text in ("", "pid, process_name\n", header + "\nGPU-0, two, python, 10 MiB\n",
                 header.replace("used_gpu_memory [MiB]", "used_gpu_memory") + "\n" + "a, b, c\n"):
        try:
            parse_compute_apps(text)
        except ParseError:
            continue
        raise AssertionError(f"{text!r} parsed")


class Readings:
    """Test double of nvidia-smi for the epilog: each call answers with the next capture of its query."""

    def __init__(self, apps, gpus):
        self.apps, self.gpus, self.calls = list(apps), list(gpus), []

    def run(self, argv, timeout):
        argv = argv[4:] if argv[0] == "timeout" else argv
        self.calls.append(argv)
        queue = self.apps if any(a.startswith("--query-compute-apps") for a in argv) else self.gpus
        return 0, queue.pop(0) if len(queue) > 1 else queue[0], ""

    @staticmethod
    def which(name):
        return name


def test_a_process_that_ends_within_the_grace_leaves_the_node_clean(fixture_output):
    clock = iter(range(100))
    reads = Readings([fixture_output(APPS_LOAD), fixture_output(APPS_LOAD), fixture_output(APPS_IDLE)],
                     [fixture_output(GPU_LOAD), fixture_output(GPU_LOAD), fixture_output(GPU_IDLE)])
    runner = Runner(60, run=reads.run, which=reads.which, clock=lambda: next(clock))
    result = epilog_check({"grace": 20}, runner, sleep=lambda s: None)
    assert result["verdict"] == PASS
    assert sum(1 for c in reads.calls if any(a.startswith("--query-compute-apps") for a in c)) == 3


def test_a_process_that_outlives_the_grace_drains_through_main(fixture_output, monkeypatch):
    apps, gpus = fixture_output(APPS_LOAD), fixture_output(GPU_LOAD)
    reads = Readings([apps], [gpus])
    monkeypatch.setattr("ansible.module_utils.node_health._run", reads.run)
    monkeypatch.setattr("ansible.module_utils.node_health.shutil.which", reads.which)
    monkeypatch.setattr("ansible.module_utils.node_health.time.sleep", lambda s: None)
    out = io.StringIO()
    rc = main(["epilog"], stdin=io.StringIO(json.dumps({"job": "4242", "grace": 0, "timeout": 20})), stdout=out)
    lines = out.getvalue().splitlines()
    assert rc == 1
    assert lines[0] == "gpufleet:gate,to=slurm,epilog:job_4242:GPU0_pid_11327_2566MiB_+2"
    assert lines[1].startswith("epilog: GPU0 pid 11327")


def test_a_missing_nvidia_smi_is_a_finding_never_clean(monkeypatch):
    monkeypatch.setattr("ansible.module_utils.node_health.shutil.which", lambda name: None)
    out = io.StringIO()
    rc = main(["epilog"], stdin=io.StringIO(json.dumps({"job": "7", "grace": 0})), stdout=out)
    assert rc == 1 and out.getvalue().startswith("gpufleet:gate,to=slurm,epilog:")


def test_the_job_comes_from_the_command_line_and_only_a_number_is_named(fixture_output, monkeypatch):
    reads = Readings([fixture_output(APPS_LOAD)], [fixture_output(GPU_LOAD)])
    monkeypatch.setattr("ansible.module_utils.node_health._run", reads.run)
    monkeypatch.setattr("ansible.module_utils.node_health.shutil.which", reads.which)
    for job, head in (("77", "epilog:job_77:GPU0"), ("x;y", "epilog:GPU0")):
        out = io.StringIO()
        assert main(["epilog", job], stdin=io.StringIO('{"grace": 0}'), stdout=out) == 1
        assert out.getvalue().startswith(f"gpufleet:gate,to=slurm,{head}_pid_11327")


def two_gpus(fixture_output, second_used=0):
    """The real idle H100 row and a second GPU (index 1, its own uuid and address) built from it: a node of two."""
    gpu = parse_gpu_memory(fixture_output(GPU_IDLE))[0]
    return [gpu, dict(gpu, index=1, uuid="GPU-11111111-0000-0000-0000-000000000000", bus="0000:00:0a.0",
                      used_mib=second_used)]


def test_on_a_shared_node_only_the_jobs_own_gpus_are_judged(fixture_output):
    """Job A (GPU id 1) ends while job B's processes run on GPU0: A's epilog leaves the node in service."""
    apps = parse_compute_apps(fixture_output(APPS_LOAD))  # on GPU0
    gpus = two_gpus(fixture_output)
    assert leftover_verdict(apps, gpus, only=job_gpus(gpus, [1]))["verdict"] == PASS
    assert leftover_verdict(apps, gpus, only=job_gpus(gpus, [0]))["verdict"] == FAIL
    assert leftover_verdict(apps, gpus)["verdict"] == FAIL


def test_slurm_gpu_ids_are_ranks_of_the_device_minors_where_the_driver_gives_them(fixture_output):
    gpus = two_gpus(fixture_output)
    # The driver numbered the second GPU (by PCI order) minor 0: Slurm's id 0 is that GPU.
    minors = {"0000:00:09.0": 1, "0000:00:0a.0": 0}
    assert [g["index"] for g in job_gpus(gpus, [0], minors)] == [1]
    assert [g["index"] for g in job_gpus(gpus, [0])] == [0]
    with pytest.raises(ParseError, match="names GPU 2"):
        job_gpus(gpus, [2])


def test_the_driver_minors_are_read_from_proc(tmp_path):
    for bus, minor in (("0000:3b:00.0", 0), ("0000:86:00.0", 1)):
        (tmp_path / bus).mkdir()
        (tmp_path / bus / "information").write_text(f"Model: \t\t NVIDIA H100 80GB HBM3\nDevice Minor: \t {minor}\n")
    assert read_minors(str(tmp_path)) == {"0000:3b:00.0": 0, "0000:86:00.0": 1}
    assert read_minors(str(tmp_path / "none")) == {}


def test_a_job_without_gpus_is_not_judged_and_bad_ids_are_a_finding(fixture_output, monkeypatch):
    reads = Readings([fixture_output(APPS_LOAD)], [fixture_output(GPU_LOAD)])
    monkeypatch.setattr("ansible.module_utils.node_health._run", reads.run)
    monkeypatch.setattr("ansible.module_utils.node_health.shutil.which", reads.which)
    out = io.StringIO()
    assert main(["epilog", "7", "none"], stdin=io.StringIO('{"grace": 0}'), stdout=out) == 0
    assert reads.calls == []
    assert main(["epilog", "7", "0;rm"], stdin=io.StringIO('{"grace": 0}'), stdout=out) == 1
    assert main(["epilog", "7", "0"], stdin=io.StringIO('{"grace": 0}'), stdout=out) == 1
