"""Hand-over of an admin's drain to the gate (issue 37): only by name, only a drain that is not the toolkit's, and never
under running jobs. Before, there was no way: a node an admin drained (as docs/node-stack.md told them to) never came
back through gate.yml, whose PASS resumes only the toolkit's holds."""

from ansible.module_utils.gate_rows import gate_adopt_drains, gate_slurm_actions
from ansible.module_utils.node_reason import parse_reason
from ansible.module_utils.pool_live import node_view
from ansible.module_utils.slurm_state import parse_scontrol_nodes

STAMP = " [admin@2026-11-28T10:00:00]"
SHOW = "\n".join([
    "NodeName=gpu07 CPUTot=8 State=IDLE+DRAIN Partitions=gpu Reason=driver 550 upgrade" + STAMP,
    "NodeName=gpu08 CPUTot=8 State=MIXED+DRAIN Partitions=gpu Reason=rma ticket 42" + STAMP,
    "NodeName=gpu09 CPUTot=8 State=IDLE Partitions=gpu",
    "NodeName=gpu10 CPUTot=8 State=IDLE+DRAIN Partitions=gpu Reason=gpufleet:gate,to=slurm,run=r1,nccl-low"
    " [root@2026-11-28T10:00:00]",
]) + "\n"

def views():
    return {name: node_view(name, node) for name, node in parse_scontrol_nodes(SHOW).items()}


def test_an_idle_admin_drain_named_by_the_operator_becomes_the_toolkit_s_hold_and_a_pass_admits_it():
    decided = gate_adopt_drains(["gpu07"], views(), "r2")
    assert decided["errors"] == [] and decided["left"] == []
    [adopted] = decided["adopt"]
    assert adopted["node"] == "gpu07"
    assert adopted["reason"].startswith("gpufleet:hold,to=slurm,run=r2,adopted:driver_550_upgrade")
    assert parse_reason(adopted["reason"])["kind"] == "hold"
    after = views()
    after["gpu07"] = node_view("gpu07", {**parse_scontrol_nodes(SHOW)["gpu07"], "reason": adopted["reason"]})
    assert gate_slurm_actions({"gpu07": {"verdict": "PASS"}}, after, "r2") == [
        {"node": "gpu07", "action": "resume", "reason": ""}]


def test_without_the_hand_over_the_admin_drain_stands():
    assert gate_slurm_actions({"gpu07": {"verdict": "PASS"}}, views(), "r2") == []


def test_a_node_running_jobs_or_unknown_to_slurm_refuses_the_whole_hand_over():
    decided = gate_adopt_drains(["gpu07", "gpu08", "gpu99", "gpu07"], views(), "r2")
    assert decided["errors"] == [
        "gate_adopt_drains: gpu08 still runs jobs under its admin's drain: hand it over once they end",
        "gate_adopt_drains: gpu99 is not a node Slurm knows",
        "gate_adopt_drains: 'gpu07' is not a node name, or is named twice",
    ]


def test_a_node_in_service_or_held_by_the_toolkit_is_left_and_said_so():
    decided = gate_adopt_drains(["gpu09", "gpu10"], views(), "r2")
    assert decided["adopt"] == [] and decided["errors"] == []
    assert [(x["node"], x["why"].split(":")[0]) for x in decided["left"]] == [
        ("gpu09", "not drained"), ("gpu10", "held by the toolkit already (gpufleet")]


def test_a_value_that_is_not_a_list_is_an_error():
    assert gate_adopt_drains("gpu07", views(), "r2")["errors"] == [
        "gate_adopt_drains must be a list of node names, got 'gpu07'"]
