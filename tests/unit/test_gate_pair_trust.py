"""Issue 36: a pair is judged on both nodes' own GPU reports, and a killed gate run never puts a held node into
service (module_utils/gate_rows.py gate_pair_profile, module_utils/gate_resv.py, roles/health_gate nccl_pair.yml)."""

import base64
import json

import pytest
import yaml
from conftest import FIXTURES, ROOT, without_provenance

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
HOLD = "gpufleet:hold,to=slurm,run=verify,maintenance"
# Real `scontrol show reservation -o` lines (Slurm 22.05, the lab): the held pair reservation a killed gate run
# left (molecule/health_gate), and a maintenance reservation (renamed where a test needs another name).
KILLED_LINE = without_provenance(
    (FIXTURES / "slurm_scontrol_show_reservation_oneline_gate_held_killed_22.05_lab.txt").read_text()).strip()
RESV_LINE = without_provenance(
    (FIXTURES / "slurm_scontrol_show_reservation_oneline_maint_inactive_22.05_lab.txt").read_text()).strip()


def _report(model, count):
    return {"gpus": [{"minor": i, "name": model} for i in range(count)], "count": count}


def _profile(pair, reports):
    from ansible.module_utils.gate_rows import gate_pair_profile

    return gate_pair_profile(pair, reports)


def test_a_pair_whose_reports_agree_is_judged_on_their_common_profile():
    assert _profile(["gpu01", "gpu02"], {"gpu01": _report(H100, 2), "gpu02": _report(H100, 2)}) == {
        "gpu_model": H100, "gpu_count": 2}


def test_nodes_that_disagree_on_the_gpu_model_are_an_error_naming_both_and_the_field():
    result = _profile(["gpu01", "gpu02"], {"gpu01": _report(H100, 2), "gpu02": _report(A100, 2)})
    assert result == {"error": f"nccl_pair: gpu01 and gpu02 disagree on gpu_model: {H100!r} and {A100!r}"}


def test_nodes_that_disagree_on_the_gpu_count_are_an_error_naming_both_and_the_field():
    result = _profile(["gpu01", "gpu02"], {"gpu01": _report(H100, 8), "gpu02": _report(H100, 4)})
    assert result == {"error": "nccl_pair: gpu01 and gpu02 disagree on gpu_count: 8 and 4"}


@pytest.mark.parametrize("reports,why", [
    ({"gpu01": _report(H100, 2)}, "no GPU report from gpu02"),
    ({"gpu01": _report(H100, 2), "gpu02": _report(H100, 0)}, "gpu02 reports no GPU"),
    ({"gpu01": {"gpus": [{"name": H100}, {"name": A100}], "count": 2}, "gpu02": _report(H100, 2)},
     "gpu01 reports more than one gpu_model"),
    ({"gpu01": {"gpus": [{"name": H100}], "count": "two"}, "gpu02": _report(H100, 2)}, "gpu01 reports a gpu_count"),
])
def test_a_pair_without_two_sound_reports_is_an_error(reports, why):
    result = _profile(["gpu01", "gpu02"], reports)
    assert result["error"].startswith("nccl_pair: gpu01,gpu02: ") and why in result["error"]


def test_reports_come_from_this_run_s_nodes_and_from_the_partner_itself():
    from ansible.module_utils.gate_rows import gate_gpu_reports

    hostvars = {"gpu01": {"__health_gate_gpus": [{"name": H100}], "__health_gate_gpu_count": 1}, "gpu09": {}}
    partner = [{"item": "gpu09", "gpus": [{"name": A100}], "count": 1},
               {"item": "gpu10", "failed": False, "msg": "no NVML"}]
    assert gate_gpu_reports(["gpu01", "gpu09"], hostvars, partner) == {
        "gpu01": {"gpus": [{"name": H100}], "count": 1}, "gpu09": {"gpus": [{"name": A100}], "count": 1}}


def _tasks(name):
    return yaml.safe_load((ROOT / "roles" / "health_gate" / "tasks" / name).read_text())


def _flat(tasks):
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _flat(task.get(key) or [])


def test_the_pair_test_takes_its_profile_from_both_nodes_not_the_first_one():
    (gate,) = [t for t in _flat(_tasks("nccl_pair.yml")) if "nccl_gate" in t]
    args = gate["nccl_gate"]
    for key in ("gpu_count", "gpu_model"):
        assert "__health_gate_pair[0]" not in str(args[key]), f"nccl_pair.yml takes {key} from the first node alone"
        assert "__health_gate_pair_profile" in str(args[key])


def test_holds_are_recorded_before_the_reservation_and_a_held_pair_s_reservation_has_no_end():
    names = [t.get("name", "") for t in _flat(_tasks("nccl_pair.yml"))]
    record = names.index("nccl_pair | Record the holds the test lifts")
    reserve = names.index("nccl_pair | Reserve the pair")
    resume = names.index("nccl_pair | Let the nodes held by this toolkit run inside the reservation")
    assert record < reserve < resume
    (task,) = [t for t in _flat(_tasks("nccl_pair.yml")) if t.get("name") == "nccl_pair | Reserve the pair"]
    duration = next(a for a in task["ansible.builtin.command"]["argv"] if str(a).startswith("Duration="))
    assert "gate_resv_minutes" in duration and "__health_gate_pair_held" in duration


def test_every_gate_run_cleans_up_after_a_killed_one_before_it_reads_slurm():
    names = [t.get("name", "") for t in _tasks("start.yml")]
    assert names.index("start | Clean up after a killed gate run") < names.index(
        "start | Read Slurm's view of the nodes and their partners")


def test_a_held_pair_s_reservation_has_no_end_and_an_in_service_pair_s_ends():
    from ansible.module_utils.gate_resv import reservation_minutes, reservation_name

    assert reservation_minutes(True, 120) == "UNLIMITED"
    assert reservation_minutes(False, 120) == "7"
    assert reservation_minutes(False, 120, 1) == "1"
    assert reservation_minutes(True, 120, 1) == "UNLIMITED"
    with pytest.raises(ValueError, match="resv_minutes"):
        reservation_minutes(False, 120, 0)
    assert reservation_name("r1", ["gpu01", "gpu03"], True) == "gpufleet-gate-held-r1-gpu01-gpu03"
    assert reservation_name("r1", ["gpu01", "gpu03"]) == "gpufleet-gate-r1-gpu01-gpu03"


def _resv(name, nodes="gpu[01-02]"):
    return RESV_LINE.replace("gpufleet-maint-20261124T063036-gpu01", name).replace("Nodes=gpu[01-02]", f"Nodes={nodes}")


def _view(reason=None):
    return {"drained": reason is not None, "reason": reason}


def _slurp(name, record):
    raw = record if isinstance(record, str) else json.dumps(record)
    return {"item": {"path": f"/var/lib/gpufleet/gate-reservations/{name}.json"},
            "content": base64.b64encode(raw.encode()).decode()}


def _stale(text, slurped, views):
    from ansible.module_utils.gate_resv import stale_gate_holds_from

    return stale_gate_holds_from(text, slurped, views)


KILLED = "gpufleet-gate-held-verify-killed-gpu01-gpu03"


def test_the_capture_is_the_held_pair_s_reservation_with_slurm_s_year_for_unlimited():
    from ansible.module_utils.gate_resv import reservation_name
    from ansible.module_utils.maint_resv import parse_reservations

    (resv,) = parse_reservations(KILLED_LINE).values()
    assert resv["name"] == reservation_name("verify-killed", ["gpu01", "gpu03"], held=True)
    assert (resv["name"], resv["nodes"], resv["state"]) == (KILLED, ["gpu01", "gpu03"], "ACTIVE")
    assert "Duration=365-00:00:00" in KILLED_LINE and resv["end"] == "2027-11-28T12:06:41"


def test_a_killed_run_s_resumed_node_is_held_again_with_its_recorded_reason_and_its_partner_is_left():
    # gpu01 was held and resumed by the killed test; gpu03 was in service before it (in no record).
    plan = _stale(KILLED_LINE, [_slurp(KILLED, {"run": "verify-killed", "nodes": {"gpu01": HOLD}})],
                  {"gpu01": _view(), "gpu03": _view()})
    assert plan == {"restore": [{"node": "gpu01", "reservation": KILLED, "reason": HOLD}],
                    "delete": [KILLED], "records": [KILLED]}


def test_an_admin_s_drain_made_after_the_kill_stands():
    plan = _stale(KILLED_LINE, [_slurp(KILLED, {"run": "verify-killed", "nodes": {"gpu01": HOLD, "gpu03": HOLD}})],
                  {"gpu01": _view("bad fan, ticket 42"), "gpu03": _view()})
    assert [r["node"] for r in plan["restore"]] == ["gpu03"]


def test_a_held_reservation_whose_record_is_lost_holds_every_node_of_it_fail_closed():
    plan = _stale(KILLED_LINE, [], {"gpu01": _view(), "gpu03": _view()})
    assert [(r["node"], r["reason"]) for r in plan["restore"]] == [
        ("gpu01", "gpufleet:hold,to=slurm,gate_killed"), ("gpu03", "gpufleet:hold,to=slurm,gate_killed")]
    assert plan["delete"] == [KILLED]


def test_a_record_that_cannot_be_read_counts_as_lost():
    plan = _stale(KILLED_LINE, [_slurp(KILLED, "{not json")], {"gpu01": _view(), "gpu03": _view()})
    assert [r["node"] for r in plan["restore"]] == ["gpu01", "gpu03"]


def test_a_recorded_reason_that_is_not_a_hold_of_ours_becomes_the_toolkit_s_hold():
    plan = _stale(KILLED_LINE, [_slurp(KILLED, {"run": "verify-killed", "nodes": {"gpu01": "admin said so"}})],
                  {"gpu01": _view(), "gpu03": _view()})
    assert plan["restore"] == [{"node": "gpu01", "reservation": KILLED,
                                "reason": "gpufleet:hold,to=slurm,run=verify-killed,gate_killed"}]


def test_an_in_service_pair_s_reservation_is_deleted_and_holds_nobody():
    name = "gpufleet-gate-killed-gpu01-gpu02"
    plan = _stale(_resv(name), [], {"gpu01": _view(), "gpu02": _view()})
    assert plan == {"restore": [], "delete": [name], "records": []}


def test_other_reservations_are_left_alone_and_a_record_without_its_reservation_is_removed():
    text = _resv("gpufleet-maint-r1-gpu01") + "\n" + _resv("site-maintenance")
    plan = _stale(text, [_slurp("gpufleet-gate-held-old-gpu01-gpu02", {"run": "old", "nodes": {"gpu01": HOLD}})],
                  {"gpu01": _view(), "gpu02": _view()})
    assert plan == {"restore": [], "delete": [], "records": ["gpufleet-gate-held-old-gpu01-gpu02"]}


def test_no_reservation_at_all_changes_nothing():
    assert _stale("No reservations in the system\n", [], {}) == {"restore": [], "delete": [], "records": []}


def _always(name):
    (pair,) = [t for t in _tasks("nccl_pair.yml") if "always" in t]
    return next(t for t in pair["always"] if t.get("name") == name), pair["block"]


def _holds(conditions, **variables):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    templar = Templar(loader=DataLoader(), variables=variables)
    conditions = conditions if isinstance(conditions, list) else [conditions]
    return all(templar.evaluate_conditional(trust_as_template(str(c))) for c in conditions)


def test_a_pair_that_fails_before_its_reservation_exists_deletes_nothing_and_fails_no_other_host():
    """The always section runs whatever failed. Before, a failure before "Reserve the pair" (the hold record's
    directory or file on a full /var/lib) ran "Delete the reservation" on one never made: a run_once failure,
    which ansible-core 2.19 makes fatal for every host of the gate run. Now the pair notes its reservation, the
    delete runs only for it and never fails the run, and the record of the holds goes only once the
    reservation is gone (else the next run's clean-up finds both)."""
    delete, block = _always("nccl_pair | Delete the reservation")
    remove, _ = _always("nccl_pair | Remove the record of the holds")
    assert block[0]["ansible.builtin.set_fact"] == {"__health_gate_resv_made": False}
    names = [t.get("name") for t in block]
    reserve = names.index("nccl_pair | Reserve the pair")
    assert names.index("nccl_pair | Note that the reservation exists") == reserve + 1
    assert str(delete.get("failed_when")).lower() == "false"
    held = {"__health_gate_pair_held": [{"key": "gpu01", "value": {"reason": "gpufleet:hold,to=slurm"}}]}
    assert not _holds(delete["when"], __health_gate_resv_made=False)
    assert _holds(delete["when"], __health_gate_resv_made=True)
    assert _holds(remove["when"], __health_gate_resv_made=False, **held)
    assert _holds(remove["when"], __health_gate_resv_made=True, __health_gate_resv_delete={"rc": 0}, **held)
    assert not _holds(remove["when"], __health_gate_resv_made=True, __health_gate_resv_delete={"rc": 1}, **held)
