"""The accounting policy (cluster_slurm_accounting) checked from the inventory alone, for preflight."""

import pytest
from ansible.module_utils.slurm_accounting import time_seconds, validate

GOOD = {
    "qos": {
        "high": {"priority": 100, "grp_tres": {"gres/gpu": 8}, "preempt": ["low"], "max_wall": "2-00:00:00"},
        "low": {"priority": 0, "usage_factor": 0.5},
    },
    "accounts": {
        "research": {"fairshare": 60, "qos": ["normal", "high", "low"], "default_qos": "normal"},
        "ml": {"parent": "research", "fairshare": 40, "grp_tres": {"gres/gpu": 4}},
    },
    "users": {"alice": {"accounts": ["ml", "research"], "default_account": "ml"}},
    "prune": False,
}


def with_change(section, name, **spec):
    policy = {key: (dict(value) if isinstance(value, dict) else value) for key, value in GOOD.items()}
    policy[section] = {**policy[section], name: spec}
    return policy


def test_a_sound_policy_has_no_errors():
    assert validate(GOOD) == []
    assert validate(None) == []


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (with_change("users", "bob", accounts=["physics"], default_account="physics"),
         "user bob names unknown account 'physics'"),
        (with_change("users", "bob", accounts=["ml"], default_account="research"),
         "user bob default_account 'research' is not one of its accounts"),
        (with_change("users", "bob", accounts=["ml"]), "user bob needs default_account"),
        (with_change("qos", "mid", preempt=["nosuch"]), "qos mid preempts unknown QOS 'nosuch'"),
        (with_change("qos", "mid", preempt=["mid"]), "qos mid preempts itself"),
        (with_change("accounts", "bio", parent="nosuch"), "account bio has unknown parent account 'nosuch'"),
        (with_change("accounts", "bio", qos=["gold"]), "account bio names unknown QOS 'gold'"),
        (with_change("accounts", "bio", qos=["high"], default_qos="low"),
         "account bio default_qos 'low' is not in its qos list"),
        (with_change("accounts", "bio", grp_tres={"gres/gpu": "many"}), "account bio grp_tres: count for gres/gpu"),
        (with_change("qos", "mid", max_wall="two days"), "qos mid max_wall: not a Slurm time"),
        (with_change("qos", "Mid"), "qos name 'Mid' must be lower-case"),
        (with_change("qos", "mid", maxwall="1:00:00"), "qos mid: unknown key 'maxwall'"),
        ({**GOOD, "partitions": {}}, "unknown key 'partitions'"),
    ],
)
def test_each_bad_reference_is_named(policy, expected):
    errors = validate(policy)
    assert any(expected in error for error in errors), errors
    assert all(error.startswith("cluster_slurm_accounting") for error in errors)


def test_a_parent_loop_is_refused():
    policy = {"accounts": {"a": {"parent": "b"}, "b": {"parent": "a"}}}
    assert any("parent chain loops" in error for error in validate(policy))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 1800), ("30:15", 1815), ("8:00:00", 28800), ("2-00:00:00", 172800), ("1-12", 129600),
     ("1-02:30", 95400), ("UNLIMITED", None), ("", None)],
)
def test_slurm_time_formats(text, seconds):
    assert time_seconds(text) == seconds
