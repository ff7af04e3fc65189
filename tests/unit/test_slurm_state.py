"""Slurm live-state parsing: `scontrol show node -o` lines, states and flags, reasons, and the pool view."""
import pathlib

import pytest
from ansible.module_utils.node_reason import make_reason, may_resume
from ansible.module_utils.slurm_state import (
    node_pool_state,
    parse_scontrol_nodes,
    parse_sinfo_reasons,
    parse_state,
)

LAB_CAPTURE = pathlib.Path(__file__).parent / "captures" / "scontrol_show_node_lab.txt"

# Lines in the layout of Slurm 23.02's `scontrol show node -o` (slurm_sprint_node_table, one_liner).
HEAD = ("Arch=x86_64 CoresPerSocket=16 CPUAlloc={alloc} CPUEfctv=64 CPUTot=64 CPULoad=0.05 "
        "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100:8(S:0-1) NodeAddr={n} NodeHostName={n} "
        "Version=23.02.6 OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)  "
        "RealMemory=1031000 AllocMem=0 FreeMem=1010000 Sockets=2 Boards=1 State={state} ThreadsPerCore=2 "
        "TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A {parts}BootTime=2026-11-20T08:00:00 "
        "SlurmdStartTime=2026-11-20T08:01:00 LastBusyTime=2026-11-21T09:00:00 ResumeAfterTime=None "
        "CfgTRES=cpu=64,mem=1031000M,billing=64,gres/gpu=8 AllocTRES={tres} CapWatts=n/a CurrentWatts=0 "
        "AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s")


def line(name, state, alloc=0, tres="", parts="Partitions=gpu ", tail=""):
    return f"NodeName={name} " + HEAD.format(n=name, alloc=alloc, state=state, parts=parts, tres=tres) + tail


OUR = make_reason("move", "leaving slurm", run_id="r7", target="k8s")
TEXT = "\n".join([
    line("gpu01", "IDLE"),
    line("gpu02", "MIXED+DRAIN", alloc=16, tres="cpu=16,gres/gpu=2",
         tail=f" Reason={OUR} [root@2026-11-21T10:00:00]"),
    line("gpu03", "IDLE+DRAIN", tail=" Reason=bad fan ticket=1234 see [notes] [admin@2026-11-21T10:00:00]"),
    line("gpu04", "DOWN*+DRAIN", parts="", tail=" Reason=Not responding [slurm@2026-11-21T09:58:12]"),
    line("gpu05", "IDLE+DRAIN+DYNAMIC_NORM+INVALID_REG",
         tail=" Reason=gres/gpu count reported lower than configured [slurm@2026-04-14T06:39:53]"),
    line("gpu06", "ALLOCATED+COMPLETING+DRAIN", alloc=64, tres="cpu=64,gres/gpu=8",
         tail=" Reason=gpufleet:hold,gate [root@2026-11-21T10:00:00] Comment=rack 7"),
    "",
])


@pytest.fixture(scope="module")
def nodes():
    return parse_scontrol_nodes(TEXT)


def test_parses_every_node_in_input_order(nodes):
    assert list(nodes) == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "gpu06"]


def test_values_with_spaces_stay_whole(nodes):
    os_value = "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
    assert nodes["gpu01"]["fields"]["OS"] == os_value
    assert nodes["gpu03"]["reason"] == "bad fan ticket=1234 see [notes]"
    assert nodes["gpu03"]["reason_user"] == "admin"
    assert nodes["gpu03"]["reason_time"] == "2026-11-21T10:00:00"
    assert nodes["gpu06"]["reason"] == "gpufleet:hold,gate"
    assert nodes["gpu06"]["fields"]["Comment"] == "rack 7"


def test_state_splits_into_base_and_flags(nodes):
    assert (nodes["gpu02"]["state"], nodes["gpu02"]["flags"]) == ("MIXED", {"DRAIN"})
    assert (nodes["gpu04"]["state"], nodes["gpu04"]["flags"]) == ("DOWN", {"DRAIN", "NOT_RESPONDING"})
    assert nodes["gpu05"]["flags"] == {"DRAIN", "DYNAMIC_NORM", "INVALID_REG"}


def test_fields_the_executor_reads(nodes):
    n = nodes["gpu02"]
    assert n["partitions"] == ["gpu"]
    assert n["gres"] == "gpu:a100:8(S:0-1)"
    assert n["cpu_alloc"] == 16
    assert n["alloc_tres"] == "cpu=16,gres/gpu=2"
    assert nodes["gpu01"]["alloc_tres"] is None
    assert nodes["gpu01"]["reason"] is None
    assert nodes["gpu04"]["partitions"] == []


@pytest.mark.parametrize(("name", "busy"), [("gpu01", False), ("gpu02", True), ("gpu03", False),
                                            ("gpu04", False), ("gpu06", True)])
def test_busy_means_jobs_running(nodes, name, busy):
    assert nodes[name]["busy"] is busy


def test_pool_state_of_an_idle_node_in_a_partition_is_in_service(nodes):
    assert node_pool_state(nodes["gpu01"]) == {"in_service": True, "drained_by_us": False, "draining": False,
                                               "idle": True, "held_by_admin": False, "reason_parsed": None}


def test_our_drain_with_jobs_running_is_draining_and_resumable(nodes):
    state = node_pool_state(nodes["gpu02"])
    assert state["draining"] and state["drained_by_us"] and not state["in_service"] and not state["idle"]
    assert state["reason_parsed"]["target"] == "k8s"
    assert may_resume(nodes["gpu02"])


@pytest.mark.parametrize("name", ["gpu03", "gpu04", "gpu05"])
def test_admin_and_slurm_drains_are_never_resumed(nodes, name):
    state = node_pool_state(nodes[name])
    assert state["held_by_admin"] and not state["drained_by_us"] and not state["in_service"]
    assert not may_resume(nodes[name])


def test_reason_without_user_stamp_is_read_to_the_end():
    n = parse_scontrol_nodes(line("gpu09", "IDLE+DRAIN", tail=" Reason=gpufleet:move,to=slurm"))["gpu09"]
    assert n["reason"] == "gpufleet:move,to=slurm" and n["reason_user"] is None


@pytest.mark.parametrize(("raw", "base", "flags"), [
    ("IDLE", "IDLE", set()),
    ("IDLE~", "IDLE", {"POWERED_DOWN"}),
    ("DRAINING", "DRAINING", {"DRAIN"}),
    ("DRAINED", "DRAINED", {"DRAIN"}),
    ("MIXED+COMPLETING", "MIXED", {"COMPLETING"}),
    ("IDLE+CLOUD+POWERED_DOWN", "IDLE", {"CLOUD", "POWERED_DOWN"}),
    ("alloc", "ALLOCATED", set()),
])
def test_parse_state_variants(raw, base, flags):
    assert parse_state(raw) == (base, flags)


def test_draining_derived_state_counts_as_busy():
    n = parse_scontrol_nodes(line("gpu10", "DRAINING"))["gpu10"]
    assert n["busy"] and node_pool_state(n)["draining"]


@pytest.mark.parametrize(("text", "match"), [
    ("Node gpu01 not found", "NodeName="),
    (line("gpu01", "SLEEPING"), "unknown Slurm base state 'SLEEPING'"),
    (line("gpu01", "IDLE") + "\n" + line("gpu01", "IDLE"), "appears twice"),
    ("NodeName=gpu01 Arch=x86_64", "no State="),
    (line("gpu01", "IDLE").replace("CPUAlloc=0", "CPUAlloc=lots"), "CPUAlloc='lots'"),
])
def test_unreadable_input_raises_naming_the_line(text, match):
    with pytest.raises(ValueError, match=match):
        parse_scontrol_nodes(text)


def test_sinfo_r_capture_shows_slurms_own_truncated_reason(fixture_text):
    rows = parse_sinfo_reasons(fixture_text("slurm_sinfo_R_gres_gpu_count_reported_lower.txt"))
    assert [r["nodelist"] for r in rows] == ["slinky-0", "slinky-1"]
    assert rows[0] == {"reason": "gres/gpu count repor", "user": "slurm", "timestamp": "2026-04-14T06:39:53",
                       "nodelist": "slinky-0"}
    # A reason Slurm set (and sinfo cut to 20 characters) is never taken for ours.
    assert not may_resume({"flags": {"DRAIN"}, "reason": rows[0]["reason"]})


@pytest.mark.skipif(not LAB_CAPTURE.is_file(),
                    reason="tests/unit/captures/scontrol_show_node_lab.txt not captured yet")
def test_lab_capture_parses_every_line():
    text = LAB_CAPTURE.read_text()
    expected = [ln.split()[0].split("=", 1)[1] for ln in text.splitlines() if ln.startswith("NodeName=")]
    nodes = parse_scontrol_nodes("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))
    assert list(nodes) == expected and expected
    for node in nodes.values():
        state = node_pool_state(node)
        assert state["idle"] is not node["busy"]
        assert node["cpu_total"] is None or node["cpu_total"] > 0


def test_comment_and_extra_are_free_text_that_never_overwrite_a_field():
    """Slurm 22.05+ prints Comment= and Extra= after the reason (slurm_sprint_node_table); an admin's note such as
    ``see State=DOWN`` must not replace the node's State, and both texts come back whole."""
    text = line("gpu07", "IDLE", tail=(" Reason=fan [admin@2026-11-21T10:00:00] Comment=see State=DOWN Partitions=x"
                                       " Extra=rack=7 row 3 ReservationName=r1"))
    node = parse_scontrol_nodes(text)["gpu07"]
    assert (node["state"], node["flags"]) == ("IDLE", set())
    assert node["partitions"] == ["gpu"]
    assert node["comment"] == "see State=DOWN Partitions=x"
    assert node["extra"] == "rack=7 row 3"
    assert node["fields"]["ReservationName"] == "r1"
    bare = parse_scontrol_nodes(line("gpu08", "IDLE", tail=" Comment=gpufleet:verdict=PASS,run=r1"))["gpu08"]
    assert bare["comment"] == "gpufleet:verdict=PASS,run=r1"
    assert bare["extra"] is None and bare["reason"] is None
