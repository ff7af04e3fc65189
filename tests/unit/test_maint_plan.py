"""The maintenance wave planner and the upgrade rules (module_utils/maint_plan.py); each test names its rule."""
import json

import maint_plan as module
import pytest
from ansible.module_utils.maint_plan import (
    change_reboots,
    drifted,
    k8s_upgrade_errors,
    k8s_upgrade_phases,
    plan_waves,
    rollout_stops,
    slurm_upgrade_errors,
    slurm_upgrade_phases,
    validate,
    validate_change,
    wave_check,
)
from ansible.module_utils.testing import patch_module_args
from hypothesis import given
from hypothesis import strategies as st

POOLS = {"pools": {"slurm": {"min": 2, "target": 6}, "k8s": {"min": 1, "target": 2}}, "max_unavailable": 4}


def fleet(slurm=6, k8s=2, leaves=None):
    nodes = []
    for i in range(slurm):
        nodes.append({"name": f"s{i:02d}", "pool": "slurm", "leaf": (leaves or {}).get(i)})
    for i in range(k8s):
        nodes.append({"name": f"k{i:02d}", "pool": "k8s"})
    return nodes


def select(nodes, names=None):
    return [dict(n, selected=names is None or n["name"] in names) for n in nodes]


def test_rule_wave_never_exceeds_max_unavailable():
    out = plan_waves(select(fleet(20, 0)), {"share": "100%", "max_unavailable": 3},
                     {"pools": {"slurm": {"min": 0, "target": 20}}})
    assert all(len(w) <= 3 for w in out["waves"])
    assert sum(len(w) for w in out["waves"]) == 20


def test_rule_share_defaults_to_ten_percent_of_each_pool():
    out = plan_waves(select(fleet(20, 0)), None, {"pools": {"slurm": {"min": 0, "target": 20}}, "max_unavailable": 8})
    assert out["pools"]["slurm"]["share"] == 2
    assert all(len(w) == 2 for w in out["waves"])
    assert len(out["waves"]) == 10


def test_rule_share_lets_a_small_pool_take_one_node_at_a_time():
    out = plan_waves(select(fleet(4, 0)), None, {"pools": {"slurm": {"min": 0, "target": 4}}, "max_unavailable": 4})
    assert out["pools"]["slurm"]["per_wave"] == 1
    assert [len(w) for w in out["waves"]] == [1, 1, 1, 1]


def test_rule_wave_never_takes_a_pool_below_its_minimum():
    # 3 slurm nodes, minimum 2: one node out at a time even with a 100% share.
    out = plan_waves(select(fleet(3, 0)), {"share": "100%"},
                     {"pools": {"slurm": {"min": 2, "target": 3}}, "max_unavailable": 3})
    assert out["pools"]["slurm"]["per_wave"] == 1
    assert [len(w) for w in out["waves"]] == [1, 1, 1]


def test_rule_node_that_would_break_the_minimum_is_left_out_with_the_reason():
    nodes = select(fleet(2, 0))
    nodes[0]["in_service"] = False  # an admin's drain: one node in service, minimum 1
    out = plan_waves(nodes, {"share": "100%"}, {"pools": {"slurm": {"min": 1, "target": 2}}})
    assert out["waves"] == [["s00"]]  # the node already out costs nothing
    assert out["left_out"] == [{"node": "s01", "reason": "taking it out would leave pool slurm below its "
                                                          "minimum of 1 (1 in service)"}]


def test_rule_pools_are_limited_separately():
    out = plan_waves(select(fleet(4, 4)), {"share": "25%"},
                     {"pools": {"slurm": {"min": 1, "target": 4}, "k8s": {"min": 1, "target": 4}},
                      "max_unavailable": 4})
    for wave in out["waves"]:
        assert sum(1 for n in wave if n.startswith("s")) <= 1
        assert sum(1 for n in wave if n.startswith("k")) <= 1
    assert len(out["waves"]) == 4


def test_rule_whole_leaves_go_together_where_the_limits_allow():
    leaves = {0: "leafA", 1: "leafB", 2: "leafA", 3: "leafB", 4: "leafA", 5: "leafB"}
    out = plan_waves(select(fleet(6, 0, leaves)), {"share": "50%"},
                     {"pools": {"slurm": {"min": 0, "target": 6}}, "max_unavailable": 3})
    assert out["waves"] == [["s00", "s02", "s04"], ["s01", "s03", "s05"]]


def test_rule_leaf_larger_than_a_wave_is_split_into_the_fewest_waves():
    leaves = dict.fromkeys(range(5), "leafA")
    out = plan_waves(select(fleet(5, 0, leaves)), {"share": "100%"},
                     {"pools": {"slurm": {"min": 0, "target": 5}}, "max_unavailable": 2})
    assert [len(w) for w in out["waves"]] == [2, 2, 1]


def test_rule_unfinished_nodes_go_first_and_count_as_in_service():
    nodes = select(fleet(4, 0), names=["s03"])
    nodes[1].update(unfinished=True, in_service=False)
    out = plan_waves(nodes, {"share": "100%"}, {"pools": {"slurm": {"min": 3, "target": 4}}, "max_unavailable": 2})
    # 3 in service + the unfinished one back after its wave: one node out at a time, the unfinished first.
    assert out["waves"] == [["s01"], ["s03"]]
    assert out["left_out"] == []


def test_rule_only_selected_nodes_are_maintained():
    out = plan_waves(select(fleet(4, 0), names=["s01"]), None, None)
    assert out["waves"] == [["s01"]]


def test_rule_max_unavailable_defaults_to_the_pool_policy():
    out = plan_waves(select(fleet(2, 0)), None, {"pools": {"slurm": {"min": 0, "target": 2}}, "max_unavailable": 5})
    assert out["max_unavailable"] == 5
    assert plan_waves(select(fleet(2, 0)), None, None)["max_unavailable"] == 1


@given(st.integers(1, 30), st.integers(0, 30), st.integers(1, 6), st.sampled_from(["10%", "25%", "50%", 1, 2]),
       st.lists(st.integers(0, 3), min_size=30, max_size=30))
def test_property_no_wave_breaks_a_limit_and_every_node_is_planned_or_left_out(n, mn, mu, share, leafs):
    mn = min(mn, n)
    nodes = [{"name": f"n{i:02d}", "pool": "slurm", "leaf": f"l{leafs[i]}", "selected": True} for i in range(n)]
    out = plan_waves(nodes, {"share": share, "max_unavailable": mu}, {"pools": {"slurm": {"min": mn, "target": n}}})
    planned = [x for w in out["waves"] for x in w]
    assert len(planned) == len(set(planned))
    assert set(planned) | {x["node"] for x in out["left_out"]} == {x["name"] for x in nodes}
    for wave in out["waves"]:
        assert len(wave) <= mu
        assert n - len(wave) >= mn


def test_rule_failure_threshold_stops_the_rollout_when_exceeded():
    assert not rollout_stops(0, 0)
    assert rollout_stops(1, 0)
    assert not rollout_stops(1, 1)
    assert rollout_stops(2, 1)


def test_rule_wave_goes_on_only_while_the_live_minimum_holds():
    views = {"s00": {"drained": True, "ours": {"kind": "maint"}}, "s01": {}, "s02": {}}
    pool_of = dict.fromkeys(views, "slurm")
    out = wave_check(["s01", "s02"], views, {"pools": {"slurm": {"min": 1, "target": 3}}}, pool_of)
    assert out["go"] == ["s01"]
    assert out["left_out"][0]["node"] == "s02"
    assert "minimum is 1" in out["left_out"][0]["reason"]


def test_rule_drift_selects_nodes_whose_installed_version_differs():
    facts = {"libfoo": [{"version": "1.0"}]}
    assert drifted(facts, {"libfoo": "1.0"}) == {}
    assert drifted(facts, {"libfoo": "2.0"}) == {"libfoo": {"installed": "1.0", "wanted": "2.0"}}
    assert drifted({}, {"libbar": "1"}) == {"libbar": {"installed": None, "wanted": "1"}}


def test_rule_change_is_data_and_bad_change_names_the_variable():
    assert validate_change({"kind": "packages", "packages": {"libfoo": "1.0"}}) == []
    assert validate_change({"kind": "reboot"}) == []
    assert any("maint_change.kind" in e for e in validate_change({"kind": "firmware"}))
    assert validate_change({"kind": "version_lock"}) == []
    assert any("maint_change.packages.libfoo" in e
               for e in validate_change({"kind": "packages", "packages": {"libfoo": 1.0}}))
    assert any("maint_change.tasks" in e for e in validate_change({"kind": "tasks", "tasks": "x.sh"}))
    assert any("maint_change.bogus" in e for e in validate_change({"kind": "reboot", "bogus": 1}))


def test_rule_reboot_defaults_per_kind():
    assert change_reboots({"kind": "reboot"})
    assert not change_reboots({"kind": "tasks", "tasks": "site.yml"})
    assert not change_reboots({"kind": "packages", "packages": {"a": "1"}})
    assert change_reboots({"kind": "packages", "packages": {"a": "1"}, "reboot": True})


def test_rule_bad_input_names_host_and_variable():
    errors = validate({"share": "150%", "failure_threshold": -1, "colour": 1}, None,
                      {"kind": "reboot"}, ["gpu09"], ["gpu01"])
    assert any(e.startswith("cluster_maintenance.share") for e in errors)
    assert any(e.startswith("cluster_maintenance.failure_threshold") for e in errors)
    assert any(e.startswith("cluster_maintenance.colour: unknown key") for e in errors)
    assert "maint_nodes: gpu09 is not a host of the GPU fleet (group gpu_nodes)" in errors
    assert any("maint_nodes" in e for e in validate(None, None, {"kind": "reboot"}, [], ["gpu01"]))


@pytest.mark.parametrize(("current", "target", "ok"), [
    ("22.05.8", "23.02.1", True),     # next release
    ("22.05.8", "23.11.0", True),     # two releases (up to 24.05: two previous)
    ("22.05.8", "24.05.3", False),    # three releases before 24.11: refused
    ("23.02.7", "24.11.1", True),     # 24.11 accepts the three previous: 23.02, 23.11, 24.05
    ("22.05.8", "24.11.1", False),    # four: refused
    ("24.05.1", "24.05.4", True),     # maintenance release
    ("24.11.1", "24.05.4", False),    # downgrade
    ("21.03.1", "22.05.1", False),    # not a major release
])
def test_rule_slurm_upgrade_window_follows_the_upgrade_guide(current, target, ok):
    assert (slurm_upgrade_errors(current, target) == []) is ok


def test_rule_slurm_refusal_says_which_release_to_go_through():
    (err,) = slurm_upgrade_errors("22.05.8", "24.11.1")
    # 24.05 itself takes only 23.11 and 23.02 (upgrade guide, "Compatibility Window"): from 22.05 the step is 23.11.
    assert "23.02, 23.11, 24.05" in err and "through 23.11 first" in err


def test_rule_slurm_upgrade_order_is_dbd_then_ctld_then_slurmd_waves():
    phases = slurm_upgrade_phases(["db1"], ["ctl1"], ["g1", "g2", "g3"], [["g1", "g2"], ["g3"]])
    assert [p["phase"] for p in phases] == ["slurmdbd", "slurmctld", "slurmd", "slurmd"]
    assert phases[0]["backup_database"] is True
    assert phases[2]["nodes"] == ["g1", "g2"]


@pytest.mark.parametrize(("current", "target", "ok"), [
    ("1.30.4", "1.31.0", True), ("v1.30.4+k3s1", "v1.30.9+k3s1", True),
    ("1.29.0", "1.31.0", False), ("1.31.0", "1.30.0", False), ("1.31.0", "2.0.0", False)])
def test_rule_kubernetes_never_skips_a_minor(current, target, ok):
    assert (k8s_upgrade_errors(current, target) == []) is ok


def test_rule_kubernetes_control_plane_one_node_at_a_time_then_workers_in_waves():
    phases = k8s_upgrade_phases(["cp2", "cp1"], ["w1", "w2", "w3"], [["w1", "w2"], ["w3"]])
    assert [(p["phase"], p["nodes"]) for p in phases] == [
        ("control_plane", ["cp1"]), ("control_plane", ["cp2"]), ("workers", ["w1", "w2"]), ("workers", ["w3"])]


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_module_selects_drifted_nodes_and_changes_nothing(capsys):
    rc, out = run({"nodes": [{"name": "g1", "pool": "slurm"}, {"name": "g2", "pool": "slurm"}],
                   "change": {"kind": "packages", "packages": {"libfoo": "2"}},
                   "installed": {"g1": {"libfoo": [{"version": "1"}]}, "g2": {"libfoo": [{"version": "2"}]}}},
                  capsys)
    assert rc == 0 and out["changed"] is False
    assert out["waves"] == [["g1"]]
    assert out["drift"] == {"g1": {"libfoo": {"installed": "1", "wanted": "2"}}}
    assert out["reboot"] is False


def test_module_fails_with_every_error_and_refuses_a_slurm_skip(capsys):
    rc, out = run({"nodes": [{"name": "g1"}], "change": {"kind": "reboot"}, "requested": ["g7"],
                   "slurm_upgrade": {"installed": "22.05.8", "target": "24.11.1"}}, capsys)
    assert rc == 1
    assert "maint_nodes: g7 is not a host of the GPU fleet (group gpu_nodes)" in out["errors"]
    assert any(e.startswith("slurm_upgrade.target: Slurm 24.11") for e in out["errors"])


def test_rule_maint_reason_is_ours_and_a_gate_pass_resumes_it():
    from ansible.module_utils.gate_rows import gate_slurm_actions
    from ansible.module_utils.node_reason import make_reason, parse_reason
    reason = make_reason("maint", "applied", run_id="20261124T0300", target="slurm")
    assert reason == "gpufleet:maint,to=slurm,run=20261124T0300,applied"
    assert parse_reason(reason)["kind"] == "maint"
    view = {"gpu01": {"drained": True, "reason": reason}}
    assert gate_slurm_actions({"gpu01": {"verdict": "PASS"}}, view, "r1") == [
        {"node": "gpu01", "action": "resume", "reason": ""}]
    (fail,) = gate_slurm_actions({"gpu01": {"verdict": "FAIL", "gate": "gpu", "figure": "1"}}, view, "r1")
    assert fail["action"] == "drain" and fail["reason"].startswith("gpufleet:gate,to=slurm")


def test_rule_wave_leaves_a_node_drained_by_someone_else_as_it_is():
    views = {"s00": {"drained": True, "reason": "admin replacing a fan", "ours": None}, "s01": {}}
    out = wave_check(["s00", "s01"], views, None, dict.fromkeys(views, "slurm"))
    assert out["go"] == ["s01"]
    assert out["left_out"][0]["reason"].startswith("drained with 'admin replacing a fan', not by maintenance")
