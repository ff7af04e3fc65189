"""Hand-over of an admin's drain to the gate, and a health check finding during a gate run (issue 37).

The hand-over: only by name, only a drain that is not the toolkit's, and never under running jobs. Before, there
was no way: a node an admin drained (as docs/node-stack.md told them to) never came
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


def test_a_pass_does_not_resume_a_node_the_health_check_drained_while_the_gate_measured_it():
    """gpu09 was in service when the run started; the health check drained it for an Xid during the run. The gate's
    PASS came from measurements before the fault: the node stays drained ("keep"). Found in review of f462426."""
    before = views()
    found = "gpufleet:gate,to=slurm,healthcheck:xid:_Xid_79_on_PCI:0000:05:00"
    after = dict(before, gpu09=node_view("gpu09", {**parse_scontrol_nodes(SHOW)["gpu09"], "flags": {"DRAIN"},
                                                    "reason": found}))
    assert gate_slurm_actions({"gpu09": {"verdict": "PASS"}}, after, "r2") == [
        {"node": "gpu09", "action": "resume", "reason": ""}]  # without the run's first view: the old behaviour
    assert gate_slurm_actions({"gpu09": {"verdict": "PASS"}}, after, "r2", before=before) == [
        {"node": "gpu09", "action": "keep", "reason": found}]
    # A node the health check drained before the run, and the gate restored to that reason: admitted on a PASS.
    assert gate_slurm_actions({"gpu09": {"verdict": "PASS"}}, after, "r2", before=after) == [
        {"node": "gpu09", "action": "resume", "reason": ""}]
