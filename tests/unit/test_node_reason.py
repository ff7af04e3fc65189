"""The toolkit's reason tag: round trips, shell-safe text, and only our drains are resumed."""
import re

import pytest
from ansible.module_utils.node_reason import MAX_LEN, TAG, is_ours, make_reason, may_resume, parse_reason
from hypothesis import given
from hypothesis import strategies as st

SAFE = re.compile(r"^[A-Za-z0-9._:/+%@,=-]+$")
tokens = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,20}\Z")


def test_make_reason_puts_tag_kind_and_target_in_the_first_20_characters():
    reason = make_reason("move", "leaving slurm", run_id="r42", target="k8s")
    assert reason == "gpufleet:move,to=k8s,run=r42,leaving_slurm"
    assert reason[:20] == "gpufleet:move,to=k8s"


@given(kind=st.sampled_from(["move", "hold", "gate"]), detail=st.text(max_size=200),
       run_id=st.none() | tokens, target=st.none() | tokens)
def test_reason_round_trips_and_stays_short_and_shell_safe(kind, detail, run_id, target):
    reason = make_reason(kind, detail, run_id=run_id, target=target)
    assert len(reason) <= MAX_LEN
    assert SAFE.match(reason), reason
    parsed = parse_reason(reason)
    assert parsed["kind"] == kind
    assert parsed["target"] == target
    assert parsed["run_id"] == run_id


def test_detail_with_quotes_semicolons_and_newlines_is_cleaned():
    reason = make_reason("gate", "nccl `rm -rf`; \"busbw\" $HOME\nlow")
    assert reason == "gpufleet:gate,nccl_-rm_-rf--_-busbw-_-HOME_low"


@pytest.mark.parametrize("bad", ["k 8s", "k8s;rm", "", "a" * 41, "-x"])
def test_make_reason_rejects_targets_that_are_not_plain_tokens(bad):
    with pytest.raises(ValueError, match="to="):
        make_reason("move", "x", target=bad)


def test_make_reason_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        make_reason("evict", "x")


@pytest.mark.parametrize("reason", [
    "gres/gpu count reported lower than configured",  # Slurm's own
    "bad fan, ticket 1234",  # an admin's
    "gpufleet: manual note",  # our prefix but no kind: an admin imitating us is not ours
    "gpufleet:evict,to=k8s",  # unknown kind
    "Not responding",
    "",
    None,
])
def test_parse_reason_returns_none_for_reasons_we_did_not_write(reason):
    assert parse_reason(reason) is None
    assert not is_ours(reason)


def test_parse_reason_ignores_slurm_user_and_time_stamp():
    parsed = parse_reason("gpufleet:hold,run=r1,gate-failed [root@2026-11-21T10:00:00]")
    assert parsed == {"kind": "hold", "target": None, "run_id": "r1", "detail": "gate-failed"}


def test_slurm_truncated_reason_from_sinfo_r_is_not_ours():
    assert not is_ours("gres/gpu count repor")
    assert TAG == "gpufleet:"


def test_may_resume_only_a_drain_with_our_reason():
    ours = make_reason("gate", "pending", target="slurm")
    assert may_resume({"flags": {"DRAIN"}, "reason": ours})
    assert not may_resume({"flags": {"DRAIN"}, "reason": "bad fan"})
    assert not may_resume({"flags": set(), "reason": ours})  # not drained: nothing to resume
    assert not may_resume({"flags": {"DRAIN"}, "reason": None})


def test_may_resume_kubernetes_node_only_when_our_annotation_holds_it():
    ours = make_reason("move", "joining", target="k8s")
    assert may_resume({"unschedulable": True, "hold_taint": False, "reason": ours})
    assert may_resume({"unschedulable": False, "hold_taint": True, "reason": ours})
    assert not may_resume({"unschedulable": True, "hold_taint": False, "reason": None})  # admin cordon
    assert not may_resume({"unschedulable": False, "hold_taint": False, "reason": ours})
    assert may_resume({"unschedulable": True, "hold_taint": True, "reason": None})  # set at registration
    assert not may_resume({"unschedulable": True, "hold_taint": True, "reason": "RMA 42"})  # admin wins


def test_may_resume_refuses_to_guess_on_unknown_state():
    with pytest.raises(ValueError, match="neither"):
        may_resume({"reason": make_reason("move", "x")})
