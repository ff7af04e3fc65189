"""The maintenance filters and report (filter_plugins/maint.py, module_utils/maint_report.py)."""
import json

import maint as filters
from ansible.module_utils.maint_report import build, render_html, render_json


def test_planner_nodes_mark_unfinished_and_out_of_service_nodes():
    views = {"g1": {"pool": "slurm", "in_partition": True, "drained": True, "down": False,
                    "ours": {"kind": "maint", "detail": "drain"}},
             "g2": {"pool": None, "in_partition": True, "drained": False, "down": False, "ours": None},
             "g3": {"pool": "slurm", "in_partition": True, "drained": False, "down": True, "ours": None}}
    hv = {"g1": {"cluster_leaf_switch": "leaf1"}, "g2": {}, "g3": {}}
    nodes = {n["name"]: n for n in filters.maint_planner_nodes(["g3", "g1", "g2"], views, hv)}
    assert nodes["g1"] == {"name": "g1", "pool": "slurm", "leaf": "leaf1", "in_service": False, "unfinished": True}
    assert nodes["g2"]["pool"] == "slurm" and nodes["g2"]["in_service"] is True
    assert nodes["g3"]["in_service"] is False and nodes["g3"]["unfinished"] is False


def test_schedule_orders_waves_and_leaves_kubernetes_nodes_out_with_the_reason():
    plan = {"waves": [["g1", "k1"], ["g2"]], "left_out": [{"node": "g9", "reason": "minimum"}]}
    nodes = [{"name": "g1", "pool": "slurm"}, {"name": "k1", "pool": "k8s"}, {"name": "g2", "pool": "slurm"}]
    out = filters.maint_schedule(plan, nodes)
    assert out["order"] == ["g1", "g2"]
    assert out["serial"] == [1, 1]
    assert [x["node"] for x in out["left_out"]] == ["g9", "k1"]
    assert "Kubernetes-pool node" in out["left_out"][1]["reason"]
    assert out["lines"] == [f"  left out: k1: {out['left_out'][1]['reason']}"]
    assert filters.maint_schedule({"waves": []}, [])["serial"] == [1]


def test_versions_and_apt_names():
    facts = {"libfoo": [{"version": "1.0"}]}
    assert filters.maint_versions(facts, ["libfoo", "libbar"]) == {"libfoo": "1.0", "libbar": None}
    assert filters.maint_apt_names({"b": "2", "a": "1:1.0"}) == ["a=1:1.0", "b=2"]


def test_pick_takes_the_first_key_each_host_has():
    hvs = [{"a": {"node": "g1"}, "b": {"node": "old"}}, {"b": {"node": "g2"}}, {}]
    assert filters.maint_pick(hvs, ["a", "b"]) == [{"node": "g1"}, {"node": "g2"}]


def test_input_errors_name_the_variable_and_skip_without_inputs():
    assert filters.maint_input_errors(None, None, ["g1"]) == []
    errors = filters.maint_input_errors({"change": {"kind": "reboot"}, "nodes": ["g7"]}, None, ["g1"])
    assert errors == ["maint_nodes: g7 is not a host of the GPU fleet (group gpu_nodes)"]


RECORDS = [
    {"node": "g1", "wave": ["g1", "g2"], "outcome": "resumed", "verdict": "PASS",
     "events": [{"event": "start", "at": "2026-11-24T03:00:00Z"},
                {"event": "in_service", "at": "2026-11-24T03:05:00Z"}],
     "before": {"libfoo": "1"}, "after": {"libfoo": "2"}},
    {"node": "g2", "wave": ["g1", "g2"], "outcome": "failed", "verdict": "FAIL",
     "reason": "gpufleet:gate,to=slurm,run=r,gpu:model", "events": []},
    {"node": "g3", "outcome": "pending", "reason": "jobs still running", "events": []},
]


def test_report_counts_outcomes_and_lists_what_was_left_out_and_why():
    plan = {"waves": [["g1", "g2"], ["g3"]], "left_out": [{"node": "g4", "reason": "minimum"}], "share": "50%"}
    report = build(plan, RECORDS, "r1", "lab")
    assert report["counts"]["resumed"] == 1 and report["counts"]["failed"] == 1 and report["counts"]["pending"] == 1
    assert report["left_out"] == [{"node": "g4", "reason": "minimum"}, {"node": "g3", "reason": "jobs still running"}]
    assert json.loads(render_json(report))["nodes"]["g1"]["after"] == {"libfoo": "2"}


def test_report_html_is_self_contained_and_escapes_reasons():
    records = [*RECORDS, {"node": "g5", "outcome": "error", "reason": "<script>x</script>", "events": []}]
    page = render_html(build({"waves": [["g1"]]}, records, "r1", "lab"))
    assert page.startswith("<!DOCTYPE html>")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'class="v FAIL"' in page and "libfoo 1" in page
    assert "http" not in page
