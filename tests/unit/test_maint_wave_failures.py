"""A wave's failures count every node of the wave: one that never returns from its reboot is a failure.

Ansible drops a node whose reboot times out (or whose step fails) from the play, so counting the hosts
still running missed it. The count reads each node's latest record (module_utils/maint_plan.py
wave_failures): a node that started its wave and has no outcome counts as an ERROR. A wave with no node
left to count it is caught before the next wave, and by the report (rollout_stop).
"""

import pathlib

import ansible.module_utils.maint_plan as mp
import maint as filters
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load(rel):
    return yaml.safe_load((ROOT / rel).read_text())


def _task(tasks, name):
    return next(t for t in tasks if t.get("name") == name)


KEYS = ["maint_record_record", "maint_reboot_record", "maint_executor_record"]
WAVE = ["gpu01", "gpu02"]


def _started(node, *events, outcome=None):
    return {"node": node, "wave": WAVE, "outcome": outcome, "reason": None,
            "events": [{"event": e, "at": f"2026-11-24T03:0{i}:00Z"} for i, e in enumerate(("start", *events))]}


def test_a_node_that_never_returned_from_its_reboot_counts_as_a_failure():
    # gpu01 came back and PASSed; gpu02's reboot timed out: Ansible dropped it from the play with maint_reboot's
    # record (changed, no outcome) as its last one.
    hostvars = {
        "gpu01": {"maint_executor_record": _started("gpu01", "drain", "idle"),
                  "maint_record_record": _started("gpu01", "drain", "idle", "changed", "rebooted", "gated",
                                                  outcome="resumed")},
        "gpu02": {"maint_executor_record": _started("gpu02", "drain", "idle"),
                  "maint_reboot_record": _started("gpu02", "drain", "idle", "changed")},
    }
    records = filters.maint_node_records(WAVE, hostvars, KEYS)
    failures = filters.maint_wave_failures(WAVE, records)
    assert [f["node"] for f in failures] == ["gpu02"]
    assert "no outcome" in failures[0]["reason"]
    assert mp.rollout_stops(len(failures), 0)
    assert "gpu02" in filters.maint_rollout_stop(records, 0)


def test_failed_and_error_outcomes_count_pending_and_left_out_do_not():
    records = {"a": _started("a", outcome="failed"), "b": _started("b", outcome="error"),
               "c": _started("c", outcome="pending"), "d": _started("d", outcome="left_out"),
               "e": _started("e", outcome="resumed"), "f": None}
    assert [f["node"] for f in mp.wave_failures(sorted(records), records)] == ["a", "b"]


def test_a_wave_no_node_started_has_no_failure_and_stops_nothing():
    # Check mode, or a wave the rollout never reached: no record at all.
    assert mp.wave_failures(WAVE, {}) == []
    assert mp.rollout_stop({}, 0) == ""


def test_the_rollout_stop_names_the_wave_and_its_failed_nodes():
    records = {"gpu01": _started("gpu01", outcome="resumed"), "gpu02": _started("gpu02", "drain", "changed")}
    assert mp.rollout_stop(records, 0) == (
        "wave gpu01,gpu02 had 1 FAIL/ERROR nodes (gpu02: stopped in its wave with no outcome (never back from its "
        "reboot, or a step failed)), above the failure threshold 0")
    assert mp.rollout_stop(records, 1) == ""
    # The report hands it a list of records (maint_pick): the same answer.
    assert mp.rollout_stop(list(records.values()), 0) == mp.rollout_stop(records, 0)


OUTCOMES = st.sampled_from([None, "failed", "error", "resumed", "pending", "left_out", "absent"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(OUTCOMES, min_size=1, max_size=4), min_size=1, max_size=4), st.integers(0, 3))
def test_property_a_node_that_stopped_mid_wave_always_counts(waves, threshold):
    records, expected_stop = {}, False
    for w, outcomes in enumerate(waves):
        names = [f"w{w}n{i}" for i in range(len(outcomes))]
        for name, outcome in zip(names, outcomes, strict=True):
            if outcome != "absent":
                records[name] = {"node": name, "wave": names, "outcome": outcome, "events": [{"event": "start"}]}
        counted = {f["node"] for f in mp.wave_failures(names, records)}
        stopped_mid = {n for n, o in zip(names, outcomes, strict=True) if o is None}
        assert stopped_mid <= counted
        assert counted == {n for n, o in zip(names, outcomes, strict=True) if o in (None, "failed", "error")}
        expected_stop = expected_stop or mp.rollout_stops(len(counted), threshold)
    assert bool(mp.rollout_stop(records, threshold)) == expected_stop


# --- the wiring ---------------------------------------------------------------------------------------------------


def test_wave_failures_are_counted_over_the_waves_records_not_the_hosts_still_running():
    for role in ("maint_record", "maint_k8s_result"):
        count = str(_task(load(f"roles/{role}/tasks/main.yml"), "Count the wave's failures"))
        assert "maint_wave_failures" in count and "ansible_play_batch" not in count, role
        assert f"__{role}_failures" in count, role


def test_a_wave_starts_only_when_no_earlier_wave_passed_the_threshold():
    # A wave whose other nodes all ended early has no node left to count its failures at its end: the next
    # wave looks back over the records before any role of it runs; the report reads them the same way.
    for rel, wave_play in (("playbooks/maintain.yml", "Maintain the nodes, wave by wave"),
                           ("playbooks/maintain_k8s.yml", "Maintain the Kubernetes-pool nodes, wave by wave")):
        play = next(p for p in load(rel) if p.get("name") == wave_play)
        find = _task(play["pre_tasks"], "Find an earlier wave past the failure threshold")
        assert "maint_rollout_stop(__maint_plan.failure_threshold)" in str(find), rel
        stop = _task(play["pre_tasks"], "Stop before this wave when an earlier wave passed the failure threshold")
        assert stop["ansible.builtin.meta"] == "end_play", rel
    report = load("roles/maint_report/defaults/main.yml")["maint_report_stopped"]
    assert "maint_report_records | maint_rollout_stop(" in report
