"""The gate's verdict in the fleet: the Slurm field record and the Node labels, written and read strictly."""
import pytest
from ansible.module_utils.gate_record import (
    LABEL_AT,
    LABEL_FAILED,
    LABEL_RUN,
    LABEL_VERDICT,
    RecordError,
    at_epoch,
    fleet_record,
    k8s_labels,
    parse_k8s_labels,
    parse_slurm_text,
    slurm_record_writes,
    slurm_text,
    stamp,
    verdict_record,
)
from ansible.module_utils.gate_rows import gate_verdict

AT = "20261128T181502Z"
FAIL_ROW = {"node": "gpu01", "gate": "nccl_pair", "verdict": "FAIL", "figure": "5.5 GB/s", "threshold": "98",
            "partner": "gpu02", "reason": "nccl_pair: busbw 5.50 GB/s < 98.00 GB/s"}


def test_a_verdict_round_trips_through_both_stores():
    record = verdict_record(gate_verdict([FAIL_ROW]), "20261128T181000", AT)
    text = slurm_text(record)
    assert text == "gpufleet:verdict=FAIL,run=20261128T181000,at=20261128T181502Z,gate=nccl_pair"
    assert " " not in text
    assert parse_slurm_text(text) == record
    labels = k8s_labels(record)
    assert labels == {LABEL_VERDICT: "FAIL", LABEL_RUN: "20261128T181000", LABEL_AT: AT, LABEL_FAILED: "nccl_pair"}
    assert parse_k8s_labels(labels) == record
    # Every label value is a valid Kubernetes label value (63 characters, alphanumeric ends, [-_.] inside).
    assert all(len(v) <= 63 and v[0].isalnum() and v[-1].isalnum() for v in labels.values())


def test_a_pass_carries_no_gate_and_removes_the_failed_label():
    record = verdict_record(gate_verdict([dict(FAIL_ROW, verdict="PASS")]), "r1", AT)
    assert record["gate"] is None and slurm_text(record).endswith(f"at={AT}")
    assert k8s_labels(record)[LABEL_FAILED] is None


def test_the_time_is_utc_and_strict():
    assert stamp(at_epoch(AT)) == AT
    for bad in ("2026-11-28T18:15:02Z", "20261128T181502", "20261328T181502Z", None):
        with pytest.raises(RecordError):
            at_epoch(bad)


@pytest.mark.parametrize("verdict,run_id,gate,match", [
    ("OK", "r1", None, "verdict"),
    ("PASS", "r 1", None, "run id"),
    ("PASS", "", None, "run id"),
    ("FAIL", "r1", "NCCL pair", "gate"),
])
def test_a_record_that_cannot_be_written_names_the_field(verdict, run_id, gate, match):
    with pytest.raises(RecordError, match=match):
        slurm_text({"verdict": verdict, "run_id": run_id, "at": AT, "gate": gate})


def test_text_that_is_not_ours_is_no_record_and_ours_malformed_is_an_error():
    assert parse_slurm_text(None) is None
    assert parse_slurm_text("rack 7, see ticket 12") is None
    assert parse_slurm_text("gpufleet:gate,to=slurm,run=r1") is None  # a reason, not a verdict record
    for bad in ("gpufleet:verdict=PASS", "gpufleet:verdict=PASS,run=r1,at=" + AT + ",run=r2",
                "gpufleet:verdict=PASS,run=r1,at=" + AT + ",note"):
        with pytest.raises(RecordError):
            parse_slurm_text(bad)
    assert parse_k8s_labels({"gpufleet.io/pool": "k8s"}) is None
    with pytest.raises(RecordError, match="without"):
        parse_k8s_labels({LABEL_VERDICT: "PASS"})


def views(**comments):
    return {node: {"name": node, "comment": text, "extra": None} for node, text in comments.items()}


def test_the_writer_keeps_an_admins_note_and_replaces_only_its_own_record():
    verdicts = {n: gate_verdict([dict(FAIL_ROW, node=n, verdict="PASS")]) for n in ("gpu01", "gpu02", "gpu03",
                                                                                 "gpu04", "gpu05")}
    old = "gpufleet:verdict=FAIL,run=r0,at=20261127T000000Z,gate=gpu"
    plan = slurm_record_writes(verdicts, views(gpu01=None, gpu02=old, gpu03="RMA ticket 42",
                                               gpu04="gpufleet:verdict=broken"), "r1", AT)
    actions = {row["node"]: row["action"] for row in plan}
    assert actions == {"gpu01": "write", "gpu02": "write", "gpu03": "skip", "gpu04": "write", "gpu05": "skip"}
    why = {row["node"]: row["why"] for row in plan}
    assert "admin's note" in why["gpu03"] and "RMA ticket 42" in why["gpu03"]
    assert why["gpu05"] == "not a Slurm node"
    assert {row["text"] for row in plan} == {f"gpufleet:verdict=PASS,run=r1,at={AT}"}


def test_the_writer_uses_comment_only_never_extra_which_a_node_sets_itself():
    """Since Slurm 23.11 slurmd sets its node's Extra at registration (slurmd --extra): a record there could be the
    node's own, so neither the writer nor the reader takes that field."""
    verdicts = {"gpu01": gate_verdict([dict(FAIL_ROW, verdict="PASS")])}
    extra_held = {"gpu01": {"comment": None, "extra": "gpufleet:verdict=PASS,run=r0,at=" + AT}}
    assert slurm_record_writes(verdicts, extra_held, "r1", AT, field="comment")[0]["action"] == "write"
    for field in ("extra", "reason"):
        with pytest.raises(RecordError, match="health_gate_verdict_slurm_field"):
            slurm_record_writes(verdicts, extra_held, "r1", AT, field=field)
    assert fleet_record(extra_held["gpu01"], {}) is None


@pytest.mark.parametrize("run_id", ["night-", "r.", "_r", "-r"])
def test_a_run_id_that_is_no_kubernetes_label_value_is_refused_before_anything_is_written(run_id):
    with pytest.raises(RecordError, match="run id"):
        slurm_text({"verdict": "PASS", "run_id": run_id, "at": AT})


def test_the_fleet_record_is_the_newer_of_the_two_stores():
    older = "gpufleet:verdict=FAIL,run=r0,at=20261127T000000Z,gate=gpu"
    labels = k8s_labels({"verdict": "PASS", "run_id": "r1", "at": AT})
    rec = fleet_record({"comment": older}, labels)
    assert (rec["verdict"], rec["run_id"], rec["source"]) == ("PASS", "r1", "k8s labels")
    assert fleet_record({"comment": "admin text"}, {}) is None
    assert "error" in fleet_record({"comment": "gpufleet:verdict=PASS"}, labels)


def test_writing_the_record_is_run_output_not_a_change():
    """A limited re-gate of a node in service changes nothing (pools lab, verify_back.yml: changed=0); the record the
    gate writes into the fleet is the run's output, as its report is, in Slurm and on the Node."""
    import yaml
    from conftest import ROOT

    def tasks(path):
        out = []
        for task in yaml.safe_load((ROOT / path).read_text()):
            out.append(task)
            out.extend(task.get("block") or [])
        return {t["name"]: t for t in out}

    admit = tasks("roles/health_gate/tasks/admit.yml")
    k8s = tasks("roles/health_gate/tasks/k8s.yml")
    assert admit["admit | Write each node's verdict record into Slurm"]["changed_when"] is False
    assert k8s["k8s | Record the verdict on the node"]["changed_when"] is False
