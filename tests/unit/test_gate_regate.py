"""The idle re-gate's pick (issue 37): idle nodes in service only, oldest verdict first, never below the minimum.

Views are built from a real `scontrol show node -o` capture of the lab (Slurm 22.05.8) the way slurm_node_info builds
them: gpu01 idle, gpu02 drained by an admin, gpu03 drained by the toolkit, gpu04 running a job (MIXED). Other states
are that capture's gpu01 line with its State (and Comment) changed.
"""
import pathlib

import pytest
from ansible.module_utils.gate_record import at_epoch
from ansible.module_utils.gate_regate import RegateError, regate_pick
from ansible.module_utils.pool_live import node_view
from ansible.module_utils.slurm_state import parse_scontrol_nodes
from conftest import without_provenance

CAPTURE = pathlib.Path(__file__).parent / "captures" / "scontrol_show_node_lab.txt"
NOW = at_epoch("20261128T120000Z")


def views(extra=()):
    """slurm_node_info's nodes for the capture plus gpu05.. as copies of gpu01 with (state, comment) changed."""
    lines = without_provenance(CAPTURE.read_text()).splitlines()
    idle = next(ln for ln in lines if ln.startswith("NodeName=gpu01 "))
    for i, (state, comment) in enumerate(extra, start=5):
        line = idle.replace("NodeName=gpu01 ", f"NodeName=gpu0{i} ").replace("State=IDLE ", f"State={state} ")
        lines.append(line + (f" Comment={comment}" if comment else ""))
    out = {}
    for name, node in parse_scontrol_nodes("\n".join(lines)).items():
        view = node_view(name, node)
        view.update(state=node["state"], flags=sorted(node["flags"]), comment=node["comment"], extra=node["extra"])
        out[name] = view
    return out


def record(at):
    return f"gpufleet:verdict=PASS,run=r-{at},at={at}"


def test_only_the_idle_node_in_service_is_picked_and_the_busy_and_drained_ones_say_why():
    plan = regate_pick(views(), ["gpu01", "gpu02", "gpu03", "gpu04"], 1.0, 0, NOW)
    assert plan["pick"] == ["gpu01"]
    why = {s["node"]: s["why"] for s in plan["skipped"]}
    assert why["gpu04"].startswith("running work") and why["gpu02"] == "not in service"
    assert why["gpu03"] == "not in service"


def test_the_pool_minimum_caps_the_pick():
    # In service: gpu01 and gpu04 (busy). A minimum of 2 leaves nothing to take; of 1, one node.
    assert regate_pick(views(), ["gpu01", "gpu04"], 1.0, 2, NOW)["pick"] == []
    assert regate_pick(views(), ["gpu01", "gpu04"], 1.0, 1, NOW)["pick"] == ["gpu01"]


def test_the_oldest_verdicts_go_first_and_the_share_is_a_fraction_of_the_pool():
    extra = [("IDLE", record("20261127T000000Z")), ("IDLE", record("20261120T000000Z")), ("IDLE", None),
             ("IDLE", record("20261128T110000Z"))]
    v = views(extra)
    nodes = ["gpu01", "gpu05", "gpu06", "gpu07", "gpu08"]
    # gpu01 and gpu07 have no record (first, by name), then gpu06 (8 days), gpu05 (1 day), gpu08 (1 hour).
    assert regate_pick(v, nodes, 1.0, 0, NOW)["pick"] == ["gpu01", "gpu07", "gpu06", "gpu05", "gpu08"]
    assert regate_pick(v, nodes, 0.4, 0, NOW)["pick"] == ["gpu01", "gpu07"]
    assert regate_pick(v, nodes, 0.01, 0, NOW)["pick"] == ["gpu01"]


def test_a_node_in_a_reservation_or_completing_is_never_picked():
    v = views([("IDLE+MAINT+RESERVED", None), ("IDLE+COMPLETING", None), ("IDLE+RESERVED", None)])
    plan = regate_pick(v, ["gpu05", "gpu06", "gpu07"], 1.0, 0, NOW)
    assert plan["pick"] == []


def test_a_node_slurm_does_not_show_is_never_picked():
    plan = regate_pick(views(), ["gpu01", "gpu09"], 1.0, 0, NOW)
    assert plan["pick"] == ["gpu01"]
    assert {"node": "gpu09", "why": "not in Slurm's view"} in plan["skipped"]


@pytest.mark.parametrize("fraction,minimum", [(0, 0), (1.5, 0), ("half", 0), (0.5, -1)])
def test_bad_inputs_name_the_variable(fraction, minimum):
    with pytest.raises(RegateError, match="health_gate_regate_"):
        regate_pick(views(), ["gpu01"], fraction, minimum, NOW)


def test_the_playbook_reserves_gates_single_node_only_through_slurm_and_releases():
    import yaml
    from conftest import ROOT

    plays = yaml.safe_load((ROOT / "playbooks/regate.yml").read_text())
    tasks_from = [p.get("tasks", [{}])[0].get("ansible.builtin.import_role", {}).get("tasks_from") for p in plays[1:]]
    assert tasks_from == ["regate_plan", None, "regate_release"]
    gate = plays[2]
    assert gate["hosts"] == "health_gate_regate"
    role = gate["roles"][0]
    assert role["role"] == "health_gate"
    assert role["health_gate_tcp"] is False and role["health_gate_nccl_pairs"] is False
    assert role["health_gate_srun_reservation"] == "{{ health_gate_regate_reservation }}"
    nccl = (ROOT / "roles/health_gate/tasks/nccl.yml").read_text()
    assert "'--reservation=' ~ health_gate_srun_reservation" in nccl
    assert 'delegate_to: "{{ health_gate_controller' in nccl
    plan = (ROOT / "roles/health_gate/tasks/regate_plan.yml").read_text()
    # Without IGNORE_JOBS Slurm refuses a reservation on a node with a job: the live guard of the pick.
    assert "Flags=MAINT" in plan and "IGNORE_JOBS" not in plan.upper().replace("WITHOUT IGNORE_JOBS", "")


def test_an_admins_note_in_the_comment_goes_after_the_recorded_nodes_never_first():
    v = views([("IDLE", "rack B12, see ticket 7"), ("IDLE", record("20261101T000000Z")), ("IDLE", None)])
    assert regate_pick(v, ["gpu05", "gpu06", "gpu07"], 1.0, 0, NOW)["pick"] == ["gpu07", "gpu06", "gpu05"]
    assert regate_pick(v, ["gpu05", "gpu06", "gpu07"], 0.3, 0, NOW)["pick"] == ["gpu07"]
