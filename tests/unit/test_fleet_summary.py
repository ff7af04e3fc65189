"""The fleet summary: built from real captures of the lab, unknown is never healthy, renderers are honest."""
import datetime
import json
import pathlib
import re

import pytest
from ansible.module_utils.fleet_summary import (
    NEVER,
    FleetSummaryError,
    build_summary,
    format_age,
    gate_report_inputs,
    gpu_view,
    host_facts,
    list_reports,
    newest_files,
    render_html,
    render_json,
    render_table,
    run_time,
)
from ansible.module_utils.k8s_state import POOL_LABEL
from ansible.module_utils.pool_live import node_view
from ansible.module_utils.slurm_state import parse_scontrol_nodes
from conftest import without_provenance
from hypothesis import given, settings
from hypothesis import strategies as st

CAPTURES = pathlib.Path(__file__).parent / "captures"
NODES = ["gpu01", "gpu02", "gpu03", "gpu04"]
LEAVES = {"gpu01": "leaf1", "gpu02": "leaf1", "gpu03": "leaf2", "gpu04": "leaf2"}
H100 = [{"minor": 0, "name": "NVIDIA H100 80GB HBM3"}, {"minor": 1, "name": "NVIDIA H100 80GB HBM3"}]
# 2026-11-23T21:07:24Z: ten minutes after the PASS report's run (20261123T205724).
NOW = run_time("20261123T205724") + 600


def capture(name):
    path = CAPTURES / name
    if not path.is_file():
        pytest.fail(f"tests/unit/captures/{name} is missing")
    return without_provenance(path.read_text())


def slurm_result(text=None):
    """What slurm_node_info returns for the lab capture (its own node_view, state and flags)."""
    nodes = {}
    for name, node in parse_scontrol_nodes(text or capture("scontrol_show_node_lab.txt")).items():
        view = node_view(name, node)
        view["state"] = node["state"]
        view["flags"] = sorted(node["flags"])
        view["comment"], view["extra"] = node["comment"], node["extra"]
        nodes[name] = view
    return {"changed": False, "fresh": False, "nodes": nodes, "partitions": {"gpu": list(nodes)}}


def hosts(gpus=None):
    hv = {n: {"gpu_discovery_gpus": H100 if gpus is None else gpus, "cluster_gpu_count": 2,
              "cluster_leaf_switch": LEAVES[n]} for n in NODES}
    return host_facts(NODES, hv, "gpu_discovery_gpus")


def report(name, mtime=NOW - 600):
    """A real lab report of this fleet (cluster gpulab), as health_gate writes it now."""
    return with_cluster(name, "gpulab", mtime)


def by_name(summary):
    return {row["name"]: row for row in summary["nodes"]}


def test_lab_capture_gives_pool_state_serving_and_reason_per_node():
    rows = by_name(build_summary(NODES, slurm=slurm_result(), hosts=hosts(), now=NOW, cluster="gpulab"))
    assert rows["gpu01"]["pool"] == "slurm" and rows["gpu01"]["in_service"] == "yes"
    assert rows["gpu01"]["state"] == "slurm IDLE"
    # An admin's drain: still in the Slurm pool, not serving, the admin's words shown.
    assert rows["gpu02"]["state"] == "slurm IDLE+DRAIN" and rows["gpu02"]["in_service"] == "no"
    assert rows["gpu02"]["reason"] == "admin: replacing fan"
    # Drained by the toolkit on its way to Kubernetes; no Kubernetes in the inventory: parked.
    assert rows["gpu03"]["pool"] == "parked" and rows["gpu03"]["in_service"] == "no"
    assert rows["gpu03"]["reason"] == "gpufleet:move to=k8s run=r1 leaving_slurm"
    assert rows["gpu04"]["state"] == "slurm MIXED" and rows["gpu04"]["in_service"] == "yes"
    assert rows["gpu01"]["leaf"] == "leaf1" and rows["gpu04"]["leaf"] == "leaf2"
    assert rows["gpu01"]["gpus"]["text"] == "2x H100 80GB HBM3" and rows["gpu01"]["gpus"]["ok"] is True


def test_pass_report_gives_verdict_figures_and_age():
    summary = build_summary(NODES, slurm=slurm_result(), hosts=hosts(), now=NOW, cluster="gpulab",
                            gate_reports=[report("gate_report_lab_pass.json.txt")])
    gate = by_name(summary)["gpu03"]["gate"]
    assert gate["verdict"] == "PASS" and gate["run_id"] == "20261123T205724"
    assert gate["age"] == "10m" and gate["age_s"] == 600
    figures = {f["gate"]: f["figure"] for f in gate["figures"]}
    assert figures["gpu"] == "2 GPUs" and figures["tcp(gpu04)"].endswith("Gb/s")
    line = next(ln for ln in render_table(summary) if ln.startswith("gpu03"))
    assert "PASS" in line and "gpu 2 GPUs" in line and "10m" in line


def test_newest_report_decides_and_error_shows_the_failing_gate():
    older = report("gate_report_lab_pass.json.txt")
    newer = report("gate_report_lab_error.json.txt")
    # The ERROR run id (20261123T205551) is older than the PASS run: the PASS decides.
    gate = gate_of("gpu01", [newer, older])
    assert gate["verdict"] == "PASS"
    summary = build_summary(NODES, slurm=slurm_result(), gate_reports=[newer], now=NOW, cluster="gpulab")
    gate = by_name(summary)["gpu01"]["gate"]
    assert gate["verdict"] == "ERROR" and gate["gate"] == "gpu" and "pynvml" in gate["reason"]
    line = next(ln for ln in render_table(summary) if ln.startswith("gpu01"))
    assert "ERROR" in line and "gpu: nvidia-ml-py (pynvml) is not installed" in line


def test_no_report_at_all_is_never_gated():
    rows = by_name(build_summary(NODES, slurm=slurm_result(), hosts=hosts(), now=NOW))
    assert {r["gate"]["verdict"] for r in rows.values()} == {NEVER}


def test_a_gate_reason_in_slurm_without_a_report_is_a_fail_with_its_figure():
    text = capture("scontrol_show_node_lab.txt").replace(
        "Reason=admin: replacing fan [root@2026-11-22T00:03:32]",
        "Reason=gpufleet:gate,to=slurm,run=20261123T2100,nccl:busbw_5.5GB/s_below_98GB/s [root@2026-11-23T21:00:01]")
    summary = build_summary(NODES, slurm=slurm_result(text), now=NOW, cluster="gpulab",
                            gate_reports=[report("gate_report_lab_pass.json.txt")])
    gate = by_name(summary)["gpu02"]["gate"]
    assert gate["verdict"] == "FAIL" and gate["gate"] == "nccl" and gate["figure"].startswith("busbw_5.5GB/s")
    assert gate["source"] == "slurm reason" and gate["age"] == "7m"


# --- unknown is never healthy -------------------------------------------------------------------

def test_unreadable_slurm_shows_unknown_pool_and_serving_never_yes():
    failed = {"changed": False, "failed": False, "failed_when_result": False,
              "msg": "cannot read Slurm's nodes (scontrol show node -o, rc=1): Unable to contact slurm controller"}
    summary = build_summary(NODES, slurm=failed, hosts=hosts(), now=NOW)
    for row in summary["nodes"]:
        assert row["pool"] == "unknown" and row["in_service"] == "unknown", row
        assert row["state"] == "slurm unknown"
    assert summary["sources"]["slurm"].startswith("unreadable: cannot read Slurm's nodes")


def test_unreachable_controller_shows_unknown():
    summary = build_summary(NODES, slurm={"unreachable": True, "msg": "Failed to connect"}, now=NOW)
    assert {r["in_service"] for r in summary["nodes"]} == {"unknown"}
    assert "unreachable" in summary["sources"]["slurm"]


def test_unreadable_kubernetes_makes_a_parked_node_unknown_not_parked():
    k8s = {"failed": False, "msg": "kubeconfig not found"}
    rows = by_name(build_summary(NODES, slurm=slurm_result(), k8s=k8s, now=NOW))
    assert rows["gpu03"]["pool"] == "unknown" and rows["gpu03"]["in_service"] == "unknown"
    # A node Slurm serves is serving whatever Kubernetes says.
    assert rows["gpu01"]["in_service"] == "yes"


def test_corrupt_report_makes_ungated_nodes_unknown_not_never_gated():
    broken = {"name": "gate-x.json", "mtime": NOW, "text": capture("gate_report_lab_pass.json.txt")[:300]}
    summary = build_summary(NODES, slurm=slurm_result(), gate_reports=[broken], now=NOW)
    assert {r["gate"]["verdict"] for r in summary["nodes"]} == {"UNKNOWN"}
    assert summary["sources"]["gate_reports"]["unreadable"][0].startswith("gate-x.json: not JSON")
    assert "unreadable" in render_table(summary)[1]


def test_reports_not_all_read_make_ungated_nodes_unknown():
    summary = build_summary(NODES, slurm=slurm_result(), gate_reports=[], now=NOW, gate_reports_complete=False)
    assert {r["gate"]["verdict"] for r in summary["nodes"]} == {"UNKNOWN"}


@pytest.mark.parametrize("word", ["Pass", "OK", "", None, "PASSED"])
def test_a_verdict_word_that_is_not_known_is_unknown_never_pass(word):
    doc = json.loads(capture("gate_report_lab_pass.json.txt"))
    doc["nodes"]["gpu01"]["verdict"] = word
    doc["cluster"] = "gpulab"
    reports = [{"name": "gate-w.json", "mtime": NOW, "text": json.dumps(doc)}]
    gate = gate_of("gpu01", reports)
    assert gate["verdict"] == "UNKNOWN"


def test_a_failed_read_of_the_report_files_marks_every_file_unreadable():
    files = [{"path": "/r/gate-1.json", "mtime": 1.0}, {"path": "/r/gate-2.json", "mtime": 2.0}]
    assert [r["error"] for r in gate_report_inputs(files, [], "permission denied")] == ["permission denied"] * 2
    assert "error" in gate_report_inputs(files, ["{}"])[0]
    assert gate_report_inputs(files, ["a", "b"])[1] == {"name": "gate-2.json", "mtime": 2.0, "text": "b"}


def test_gpus_without_discovery_facts_are_unknown_and_a_short_count_shows():
    assert gpu_view({})["text"] == "unknown" and gpu_view({})["ok"] is None
    short = gpu_view({"gpus": H100[:1], "expected": 2})
    assert short["text"] == "1/2x H100 80GB HBM3" and short["ok"] is False
    facts = host_facts(["gpu01"], {"gpu01": {"cluster_gpu_count": 2}}, "gpu_discovery_gpus")
    assert facts["gpu01"]["gpus"] is None


@given(slurm=st.sampled_from(["read", "failed", "unreachable", "none"]),
       k8s=st.sampled_from(["none", "failed", "empty"]),
       gates=st.sampled_from(["none", "pass", "corrupt"]), facts=st.booleans())
def test_property_no_unreadable_source_ever_reads_as_healthy(slurm, k8s, gates, facts):
    slurm_in = {"read": slurm_result(), "failed": {"failed": False, "msg": "no"},
                "unreachable": {"unreachable": True, "msg": "x"}, "none": None}[slurm]
    k8s_in = {"none": None, "failed": {"failed": False, "msg": "no"}, "empty": {"resources": []}}[k8s]
    gates_in = {"none": [], "pass": [report("gate_report_lab_pass.json.txt")],
                "corrupt": [{"name": "g.json", "mtime": NOW, "text": "{"}]}[gates]
    summary = build_summary(NODES, slurm=slurm_in, k8s=k8s_in, hosts=hosts() if facts else {},
                            gate_reports=gates_in, now=NOW, cluster="gpulab")
    for row in summary["nodes"]:
        if slurm in ("failed", "unreachable"):
            assert row["in_service"] == "unknown" and row["pool"] == "unknown", row
        if gates == "corrupt":
            assert row["gate"]["verdict"] == "UNKNOWN"
        if gates != "pass":
            assert row["gate"]["verdict"] != "PASS"
        if not facts:
            assert row["gpus"]["text"] == "unknown"


def test_kubernetes_node_with_the_pool_label_is_in_the_k8s_pool():
    obj = {"kind": "Node", "metadata": {"name": "gpu03", "labels": {POOL_LABEL: "kubernetes"}},
           "spec": {"unschedulable": True, "taints": [{"key": "gpufleet.io/hold", "effect": "NoSchedule"}]},
           "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    rows = by_name(build_summary(NODES, slurm=slurm_result(), k8s={"resources": [obj]}, now=NOW))
    assert rows["gpu03"]["pool"] == "k8s"
    assert "k8s Ready+cordoned+held" in rows["gpu03"]["state"] and rows["gpu03"]["in_service"] == "no"


def test_bad_input_names_the_problem():
    with pytest.raises(FleetSummaryError, match="nodes must be a list"):
        build_summary("gpu01")
    with pytest.raises(FleetSummaryError, match="build_summary"):
        render_table({"nodes": []})


# --- renderers ----------------------------------------------------------------------------------

def full_summary():
    text = capture("scontrol_show_node_lab.txt").replace("admin: replacing fan", "admin <script>alert(1)</script>")
    return build_summary(NODES, slurm=slurm_result(text), hosts=hosts(), now=NOW, cluster="gpulab",
                         gate_reports=[with_cluster("gate_report_lab_pass.json.txt", "gpulab")])


def test_json_round_trips():
    summary = full_summary()
    assert json.loads(render_json(summary)) == summary
    assert json.loads(render_json(summary))["schema"] == "gpufleet.fleet_summary/1"


def test_html_is_self_contained_and_escaped():
    page = render_html(full_summary())
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(script|link|img|iframe|object)\b|\b(src|href)=|@import|url\(", page, re.I)
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<style>" in page
    assert "&lt;script&gt;" in page


def test_html_groups_nodes_by_leaf_and_has_a_legend():
    page = render_html(full_summary())
    assert page.index("leaf leaf1 (2 nodes)") < page.index(">gpu01<") < page.index("leaf leaf2 (2 nodes)")
    assert page.index("leaf leaf2 (2 nodes)") < page.index(">gpu03<")
    for word in ("pool (fill):", "gate (outline):", ">slurm<", ">parked<", ">PASS<", ">FAIL<", ">never gated<"):
        assert word in page


def test_table_has_headline_sources_header_and_one_line_per_node():
    lines = render_table(full_summary())
    assert lines[0].startswith("gpulab: 4 nodes, 2 in service | pools: parked 1, slurm 3 | gate: PASS 4")
    assert lines[1] == "sources: slurm read; kubernetes skipped; gate reports 1 read"
    assert lines[2].split() == ["node", "leaf", "pool", "scheduler", "serving", "gpus", "gate", "figures", "age"]
    assert [ln.split()[0] for ln in lines[3:]] == NODES


@pytest.mark.parametrize(("seconds", "text"), [(None, "unknown"), (-5, "0s"), (59, "59s"), (600, "10m"),
                                               (3600, "1h"), (3720, "1h 2m"), (90000, "1d 1h")])
def test_format_age(seconds, text):
    assert format_age(seconds) == text


def test_run_time_reads_the_toolkit_stamps_only():
    assert run_time("20261123T205724") == run_time("20261123T2057") + 24
    assert run_time("r42") is None and run_time("verify-error") is None and run_time(None) is None


def test_newest_files_keeps_the_newest_first():
    files = [{"path": "/r/gate-a.json", "mtime": 3.0}, {"path": "/r/gate-b.json", "mtime": 9.0},
             {"path": "/r/gate-c.json", "mtime": 5.0}]
    assert [f["path"] for f in newest_files(files, 2)] == ["/r/gate-b.json", "/r/gate-c.json"]


def test_list_reports_says_what_find_would(tmp_path):
    assert list_reports(tmp_path / "none") == {"exists": False, "isdir": False, "files": [], "skipped": {}}
    (tmp_path / "plain").write_text("x")
    assert list_reports(tmp_path / "plain")["isdir"] is False
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "gate-a.json").write_text("{}")
    (reports / "gate-b.json").write_text("{}")
    (reports / ".gate-hidden.json").write_text("{}")
    (reports / "pool-a.json").write_text("{}")
    (reports / "gate-dir.json").mkdir()
    (reports / "gate-link.json").symlink_to(reports / "gate-a.json")
    out = list_reports(reports, "gate-*.json")
    assert out["exists"] and out["isdir"] and out["skipped"] == {}
    assert sorted(pathlib.Path(f["path"]).name for f in out["files"]) == ["gate-a.json", "gate-b.json"]
    assert all(isinstance(f["mtime"], float) for f in out["files"])


def test_list_reports_counts_an_unreadable_directory_as_skipped(tmp_path, monkeypatch):
    import ansible.module_utils.fleet_summary as module

    def refuse(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(module.os, "scandir", refuse)
    out = list_reports(tmp_path)
    assert out["isdir"] and out["files"] == [] and str(tmp_path) in out["skipped"]


def with_cluster(name, cluster, mtime=NOW - 600):
    """The real lab report, as health_gate now writes it: with the cluster it belongs to."""
    doc = json.loads(capture(name))
    doc["cluster"] = cluster
    return {"name": name.replace(".json.txt", ".json"), "mtime": mtime, "text": json.dumps(doc)}


def test_a_report_of_another_cluster_is_set_aside_not_read_as_this_fleets_verdict():
    # One reports/ directory serves several inventories (the lab and the molecule scenarios did):
    # another cluster's PASS must never stand for this fleet's nodes of the same names.
    other = with_cluster("gate_report_lab_pass.json.txt", "molpools")
    summary = build_summary(NODES, slurm=slurm_result(), hosts=hosts(), gate_reports=[other], now=NOW,
                            cluster="gpulab")
    assert {r["gate"]["verdict"] for r in summary["nodes"]} == {NEVER}
    assert summary["sources"]["gate_reports"]["other_clusters"] == 1
    assert "1 of other clusters set aside" in render_table(summary)[1]


def test_a_report_of_this_cluster_is_read():
    own = with_cluster("gate_report_lab_pass.json.txt", "gpulab")
    summary = build_summary(NODES, slurm=slurm_result(), hosts=hosts(), gate_reports=[own], now=NOW,
                            cluster="gpulab")
    assert by_name(summary)["gpu03"]["gate"]["verdict"] == "PASS"


def test_a_report_that_names_no_cluster_is_unreadable_when_the_cluster_is_known():
    # The capture as the lab wrote it, before health_gate named the cluster in its reports.
    bare = {"name": "gate_report_lab_pass.json", "mtime": NOW - 600, "text": capture("gate_report_lab_pass.json.txt")}
    summary = build_summary(NODES, slurm=slurm_result(), hosts=hosts(), now=NOW, cluster="gpulab",
                            gate_reports=[bare])
    assert {r["gate"]["verdict"] for r in summary["nodes"]} == {"UNKNOWN"}
    assert summary["sources"]["gate_reports"]["unreadable"] == ["gate_report_lab_pass.json: names no cluster"]


# --- the newest readable verdict decides, and only from the past --------------------------------

def own(name, mtime=NOW - 600, **fields):
    """A real lab report as health_gate writes it (with its cluster, file named for its run), *fields* changed."""
    doc = json.loads(capture(name))
    doc["cluster"] = "gpulab"
    doc.update(fields)
    return {"name": f"gate-{doc['run_id']}.json", "mtime": mtime, "text": json.dumps(doc)}


def gate_of(node, reports, slurm=None, cluster="gpulab"):
    summary = build_summary(NODES, slurm=slurm or slurm_result(), gate_reports=reports, now=NOW, cluster=cluster)
    return by_name(summary)[node]["gate"]


def test_a_report_dated_in_the_future_never_outranks_the_real_newest_one():
    # A controller whose clock ran a day ahead wrote a PASS; the real newest run (20261123T205551) found
    # gpu01 in ERROR. The future stamp must not make its PASS the newest verdict.
    real = own("gate_report_lab_error.json.txt", mtime=NOW - 700)
    future = own("gate_report_lab_pass.json.txt", mtime=NOW + 86400, run_id="20261124T205724")
    gate = gate_of("gpu01", [future, real])
    assert gate["verdict"] == "UNKNOWN", gate
    assert "future" in gate["reason"] and "gate-20261124T205724.json" in gate["reason"]
    summary = build_summary(NODES, slurm=slurm_result(), gate_reports=[future, real], now=NOW, cluster="gpulab")
    assert "1 dated in the future (gate-20261124T205724.json)" in render_table(summary)[1]


def test_a_report_with_no_run_stamp_and_a_future_file_time_never_outranks_the_real_one():
    real = own("gate_report_lab_error.json.txt", mtime=NOW - 700)
    future = own("gate_report_lab_pass.json.txt", mtime=NOW + 3600, run_id="r42")
    assert gate_of("gpu01", [future, real])["verdict"] == "UNKNOWN"


def test_an_unreadable_newest_report_is_unknown_not_the_older_pass():
    # The newest run's report was cut off mid-write (disk full); the run before passed every node.
    older = own("gate_report_lab_pass.json.txt", mtime=NOW - 600)
    cut = {"name": "gate-20261123T210200.json", "mtime": NOW - 240, "text": older["text"][:300]}
    gate = gate_of("gpu03", [cut, older])
    assert gate["verdict"] == "UNKNOWN", gate
    assert "gate-20261123T210200.json" in gate["reason"]
    # An unreadable report older than the verdict leaves that verdict standing.
    old_cut = {"name": "gate-20261123T205551.json", "mtime": NOW - 700, "text": older["text"][:300]}
    assert gate_of("gpu03", [old_cut, older])["verdict"] == "PASS"


def test_a_gate_drain_whose_run_id_is_not_a_stamp_shows_fail_over_the_report_pass():
    # health_gate_run_id set to "r42": the drain's time cannot be known, and the node is drained by the gate
    # now, so the drain's FAIL stands over the older report's PASS.
    text = capture("scontrol_show_node_lab.txt").replace(
        "Reason=admin: replacing fan [root@2026-11-22T00:03:32]",
        "Reason=gpufleet:gate,to=slurm,run=r42,nccl:busbw_5.5GB/s_below_98GB/s [root@2026-11-23T21:00:01]")
    gate = gate_of("gpu02", [own("gate_report_lab_pass.json.txt")], slurm=slurm_result(text))
    assert gate["verdict"] == "FAIL" and gate["source"] == "slurm reason", gate
    assert gate["run_id"] == "r42" and gate["gate"] == "nccl"


def test_without_a_cluster_name_no_report_counts_not_even_another_clusters_pass():
    # cluster_name unset: the molecule scenario's PASS for gpu01..04 in the shared reports/ cannot be told
    # from this fleet's, so it never stands as this fleet's verdict.
    other = with_cluster("gate_report_lab_pass.json.txt", "molpools")
    summary = build_summary(NODES, slurm=slurm_result(), gate_reports=[other], now=NOW, cluster="")
    assert {r["gate"]["verdict"] for r in summary["nodes"]} == {"UNKNOWN"}
    assert "cluster_name" in summary["sources"]["gate_reports"]["unreadable"][0]


def maint_slurm(state):
    """The lab capture with gpu01 in the state scontrol prints while an active MAINT reservation holds it
    (tests/fixtures/slurm_scontrol_show_reservation_multiline_maint_active_22.05_lab.txt: gpu[01-02])."""
    text = capture("scontrol_show_node_lab.txt")
    assert text.splitlines()[0].startswith("NodeName=gpu01 ") and text.count("State=IDLE ") == 1
    return slurm_result(text.replace("State=IDLE ", f"State={state} "))


# scontrol show node prints the flag as MAINTENANCE (node_state_flags, slurm_protocol_defs.c at
# slurm-22-05-8-1 and slurm-24-11-5-1).
@pytest.mark.parametrize("state", ["IDLE+MAINTENANCE+RESERVED", "MIXED+MAINTENANCE+RESERVED"])
def test_a_node_in_a_maint_reservation_is_not_serving(state):
    rows = by_name(build_summary(NODES, slurm=maint_slurm(state), now=NOW, cluster="gpulab"))
    assert rows["gpu01"]["in_service"] == "no", rows["gpu01"]
    assert rows["gpu04"]["in_service"] == "yes"


def stamped(kind, offset):
    """One report of a mix: a run started *offset* seconds from NOW, its file written a minute later."""
    at = NOW + offset
    stamp = datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y%m%dT%H%M%S")
    if kind == "cut":
        text = own("gate_report_lab_pass.json.txt")["text"][:300]
        return {"name": f"gate-{stamp}.json", "mtime": at + 60, "text": text}
    name = "gate_report_lab_error.json.txt" if kind == "error" else "gate_report_lab_pass.json.txt"
    report = own(name, mtime=at + 60, run_id=stamp)
    if kind == "other":
        report = {**report, "text": report["text"].replace('"cluster": "gpulab"', '"cluster": "molpools"')}
    return report


@settings(max_examples=150, deadline=None)
@given(mix=st.lists(st.tuples(st.sampled_from(["pass", "error", "cut", "other"]), st.integers(-24, 24)),
                    min_size=1, max_size=5, unique_by=lambda r: r[1]))
def test_property_pass_shows_only_when_the_newest_report_is_a_readable_pass_from_the_past(mix):
    # Any mix of this cluster's PASS and ERROR reports, cut-off reports and another cluster's PASS,
    # dated up to two hours either side of now (five-minute steps): gpu01 is PASS exactly when the newest
    # report of this cluster is a readable PASS whose run began before now.
    reports = [stamped(kind, steps * 300) for kind, steps in mix]
    ours = [(steps, kind) for kind, steps in mix if kind != "other"]
    newest = max(ours) if ours else None
    expected = newest is not None and newest[1] == "pass" and newest[0] <= 0
    assert (gate_of("gpu01", reports)["verdict"] == "PASS") is expected, mix


# --- the verdict in the fleet (gate_record.py): any controller reads it -------------------------------------

def with_comment(node, comment):
    """The lab capture with *comment* on *node*: Slurm 22.05 prints Comment= after the reason
    (slurm_sprint_node_table), at the end of the line here."""
    lines = capture("scontrol_show_node_lab.txt").splitlines()
    return "\n".join(ln + f" Comment={comment}" if ln.startswith(f"NodeName={node} ") else ln for ln in lines)


def test_a_fresh_controller_reads_the_verdict_from_slurms_comment():
    record = "gpufleet:verdict=FAIL,run=20261123T2100,at=20261123T210005Z,gate=nccl_pair"
    summary = build_summary(NODES, slurm=slurm_result(with_comment("gpu01", record)), now=NOW, cluster="gpulab")
    gate = by_name(summary)["gpu01"]["gate"]
    assert (gate["verdict"], gate["gate"], gate["run_id"]) == ("FAIL", "nccl_pair", "20261123T2100")
    assert gate["source"] == "slurm comment" and "gate-20261123T2100.json" in gate["reason"]
    assert gate["age"] == "7m"
    # The same fleet with no record: never gated.
    plain = build_summary(NODES, slurm=slurm_result(), now=NOW, cluster="gpulab")
    assert by_name(plain)["gpu01"]["gate"]["verdict"] == NEVER


def test_an_admins_comment_is_not_a_verdict():
    summary = build_summary(NODES, slurm=slurm_result(with_comment("gpu01", "PASS see ticket 7")), now=NOW,
                            cluster="gpulab")
    assert by_name(summary)["gpu01"]["gate"]["verdict"] == NEVER


@pytest.mark.parametrize("record", [
    "gpufleet:verdict=PASS,run=r1",                                   # no time
    "gpufleet:verdict=OK,run=r1,at=20261123T210005Z",                 # not a verdict word
    "gpufleet:verdict=PASS,run=r1,at=20261123T210005Z,gate=x,x=y",    # a key we never write
    "gpufleet:verdict=PASS,run=r 1,at=20261123T210005Z",              # not one token
])
def test_a_malformed_record_of_ours_is_unknown_never_pass(record):
    summary = build_summary(NODES, slurm=slurm_result(with_comment("gpu01", record)), now=NOW, cluster="gpulab")
    gate = by_name(summary)["gpu01"]["gate"]
    assert gate["verdict"] == "UNKNOWN" and "fleet record unreadable" in gate["reason"]


def test_the_report_of_the_same_run_keeps_its_detail_and_a_newer_record_wins_over_an_older_report():
    passed = report("gate_report_lab_pass.json.txt")
    same = "gpufleet:verdict=PASS,run=20261123T205724,at=20261123T205800Z"
    gate = by_name(build_summary(NODES, slurm=slurm_result(with_comment("gpu03", same)), now=NOW, cluster="gpulab",
                                 gate_reports=[passed]))["gpu03"]["gate"]
    assert gate["verdict"] == "PASS" and gate["figures"] and gate["source"] != "slurm comment"
    newer = "gpufleet:verdict=FAIL,run=20261123T210200,at=20261123T210300Z,gate=gpu"
    gate = by_name(build_summary(NODES, slurm=slurm_result(with_comment("gpu03", newer)), now=NOW, cluster="gpulab",
                                 gate_reports=[passed]))["gpu03"]["gate"]
    assert (gate["verdict"], gate["run_id"], gate["source"]) == ("FAIL", "20261123T210200", "slurm comment")
    disagree = "gpufleet:verdict=FAIL,run=20261123T205724,at=20261123T205800Z,gate=gpu"
    gate = by_name(build_summary(NODES, slurm=slurm_result(with_comment("gpu03", disagree)), now=NOW,
                                 cluster="gpulab", gate_reports=[passed]))["gpu03"]["gate"]
    assert gate["verdict"] == "UNKNOWN" and "same run" in gate["reason"]


def test_a_record_dated_in_the_future_is_unknown():
    record = "gpufleet:verdict=PASS,run=r9,at=20301123T210005Z"
    gate = by_name(build_summary(NODES, slurm=slurm_result(with_comment("gpu01", record)), now=NOW,
                                 cluster="gpulab"))["gpu01"]["gate"]
    assert gate["verdict"] == "UNKNOWN" and "future" in gate["reason"]


def test_the_k8s_labels_are_read_and_must_agree_with_slurm_on_one_run():
    labels = {POOL_LABEL: "kubernetes",
              "node-restriction.kubernetes.io/gpufleet-gate-verdict": "PASS",
              "node-restriction.kubernetes.io/gpufleet-gate-run": "20261123T2100",
              "node-restriction.kubernetes.io/gpufleet-gate-at": "20261123T210005Z"}
    obj = {"kind": "Node", "metadata": {"name": "gpu01", "labels": labels},
           "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    gate = by_name(build_summary(NODES, slurm=slurm_result(), k8s={"resources": [obj]}, now=NOW,
                                 cluster="gpulab"))["gpu01"]["gate"]
    assert (gate["verdict"], gate["source"]) == ("PASS", "k8s labels")
    fail = "gpufleet:verdict=FAIL,run=20261123T2100,at=20261123T210005Z,gate=gpu"
    gate = by_name(build_summary(NODES, slurm=slurm_result(with_comment("gpu01", fail)), k8s={"resources": [obj]},
                                 now=NOW, cluster="gpulab"))["gpu01"]["gate"]
    assert gate["verdict"] == "UNKNOWN" and "disagree" in gate["reason"]
    half = dict(labels)
    del half["node-restriction.kubernetes.io/gpufleet-gate-run"]
    obj["metadata"]["labels"] = half
    gate = by_name(build_summary(NODES, slurm=slurm_result(), k8s={"resources": [obj]}, now=NOW,
                                 cluster="gpulab"))["gpu01"]["gate"]
    assert gate["verdict"] == "UNKNOWN"


def test_the_verdict_field_is_checked():
    with pytest.raises(FleetSummaryError, match="must be one of comment"):
        build_summary(NODES, slurm=slurm_result(), now=NOW, cluster="gpulab", verdict_field="notes")


def test_an_older_record_never_turns_an_unknown_view_into_a_verdict():
    """A report dated in the future that names the node makes it UNKNOWN; an older PASS record leaves it so."""
    future = with_cluster("gate_report_lab_pass.json.txt", "gpulab")
    future["text"] = future["text"].replace("20261123T205724", "20301123T205724")
    old = "gpufleet:verdict=PASS,run=r-old,at=20261115T000000Z"
    gate = by_name(build_summary(NODES, slurm=slurm_result(with_comment("gpu03", old)), now=NOW, cluster="gpulab",
                                 gate_reports=[future]))["gpu03"]["gate"]
    assert gate["verdict"] == "UNKNOWN"
