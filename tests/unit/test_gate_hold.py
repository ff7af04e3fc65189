"""Holds before a gate: an ERROR node in service, a node's first slurmd start, the nodes waiting for a gate."""

from ansible.module_utils.gate_hold import gate_error_holds, slurm_first_start_holds, slurm_gate_pending
from ansible.module_utils.node_reason import parse_reason
from ansible.module_utils.pool_live import node_view
from ansible.module_utils.slurm_state import parse_scontrol_nodes
from gate_hold import FilterModule
from hypothesis import given
from hypothesis import strategies as st

ERROR_ROW = {"node": "n", "gate": "nccl", "verdict": "ERROR", "reason": "nccl: exit 1 without results"}
PASS_ROW = {"node": "n", "gate": "", "verdict": "PASS", "reason": ""}
FAIL_ROW = {"node": "n", "gate": "nccl", "verdict": "FAIL", "reason": "nccl: busbw 5.5 GB/s < 98 GB/s"}

# `scontrol show node -o` lines in the shape Slurm 22.05 prints them (fields cut to those the parser
# reads): a node never registered, one in service, one held by the toolkit, one an admin drained.
SCONTROL = "\n".join([
    "NodeName=new1 Arch=(null) CoresPerSocket=1 CPUAlloc=0 CPUTot=2 Gres=gpu:h100:2 NodeAddr=new1 "
    "NodeHostName=new1 RealMemory=1 AllocMem=0 State=UNKNOWN* Partitions=gpu BootTime=None SlurmdStartTime=None "
    "CfgTRES=cpu=2 AllocTRES=",
    "NodeName=run1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=2 Gres=gpu:h100:2 NodeAddr=run1 "
    "NodeHostName=run1 RealMemory=1 AllocMem=0 State=IDLE Partitions=gpu CfgTRES=cpu=2 AllocTRES=",
    "NodeName=held1 Arch=(null) CoresPerSocket=1 CPUAlloc=0 CPUTot=2 Gres=gpu:h100:2 NodeAddr=held1 "
    "NodeHostName=held1 RealMemory=1 AllocMem=0 State=UNKNOWN+DRAIN* Partitions=gpu CfgTRES=cpu=2 AllocTRES= "
    "Reason=gpufleet:hold,to=slurm,first_start [root@2026-11-23T10:00:00]",
    "NodeName=adm1 Arch=(null) CoresPerSocket=1 CPUAlloc=0 CPUTot=2 Gres=gpu:h100:2 NodeAddr=adm1 "
    "NodeHostName=adm1 RealMemory=1 AllocMem=0 State=DOWN+DRAIN* Partitions=gpu CfgTRES=cpu=2 AllocTRES= "
    "Reason=replacing_a_fan [root@2026-11-23T10:00:00]",
])


def _views():
    return {name: node_view(name, node) for name, node in parse_scontrol_nodes(SCONTROL).items()}


def test_filters_are_exported():
    assert set(FilterModule().filters()) == {"gate_error_holds", "slurm_first_start_holds", "slurm_gate_pending"}


def test_an_error_on_a_node_in_service_holds_it_with_the_hold_reason_blaming_nobody():
    (action,) = gate_error_holds({"run1": dict(ERROR_ROW, node="run1")}, _views(), "r7")
    assert action == {"node": "run1", "action": "hold", "reason": "gpufleet:hold,to=slurm,run=r7,gate_error:nccl"}
    parsed = parse_reason(action["reason"])
    # A hold, not a gate drain: the pool view does not count the node as failed.
    assert parsed["kind"] == "hold" and parsed["target"] == "slurm"


def test_an_error_on_a_drained_node_keeps_its_reason_and_pass_or_fail_add_no_hold():
    verdicts = {"held1": dict(ERROR_ROW, node="held1"), "adm1": dict(ERROR_ROW, node="adm1"),
                "run1": dict(PASS_ROW, node="run1")}
    assert gate_error_holds(verdicts, _views(), "r") == []
    assert gate_error_holds({"run1": dict(FAIL_ROW, node="run1")}, _views(), "r") == []


def test_an_error_on_a_node_slurm_does_not_know_is_left_out():
    assert gate_error_holds({"k8s1": dict(ERROR_ROW, node="k8s1")}, _views(), "r") == []


def test_first_start_holds_only_a_listed_node_that_never_answered():
    holds = slurm_first_start_holds(["new1", "run1", "held1", "adm1", "unknown"], _views())
    assert holds == {"new1": "gpufleet:hold,to=slurm,first_start"}
    assert parse_reason(holds["new1"])["kind"] == "hold"


def test_an_adopted_node_in_service_is_never_held():
    assert slurm_first_start_holds(["run1"], _views()) == {}


def test_gate_pending_lists_the_nodes_held_for_the_pool_only():
    views = _views()
    views["moved"] = {"drained": True, "reason": "gpufleet:move,to=k8s,run=r1,left_slurm"}
    views["gated"] = {"drained": True, "reason": "gpufleet:gate,to=slurm,run=r1,nccl:x"}
    views["other"] = {"drained": True, "reason": "gpufleet:hold,to=k8s,run=r1,joining"}
    views["errored"] = {"drained": True, "reason": "gpufleet:hold,to=slurm,run=r1,gate_error:nccl"}
    nodes = ["new1", "run1", "held1", "adm1", "moved", "gated", "other", "errored", "absent"]
    assert slurm_gate_pending(nodes, views) == ["errored", "held1"]


@given(st.sampled_from(["ERROR", "PASS", "FAIL"]), st.booleans(), st.one_of(st.none(), st.text(max_size=30)))
def test_an_error_never_leaves_a_node_in_service(verdict, drained, reason):
    views = {"n": {"drained": drained, "reason": reason}}
    actions = gate_error_holds({"n": dict(ERROR_ROW, verdict=verdict)}, views, "r")
    in_service_after = not drained and not actions
    assert not (verdict == "ERROR" and in_service_after)
    assert all(a["action"] == "hold" for a in actions)
