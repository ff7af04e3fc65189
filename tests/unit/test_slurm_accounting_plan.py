"""sacctmgr output (real captures from the lab, Slurm 22.05.8) read and compared with a policy, per entity."""

import pytest
from ansible.module_utils.slurm_accounting import AccountingError, parse_show, plan, read_state, unknown_tres

CLUSTER = "molslurm"


@pytest.fixture
def state(fixture_output):
    names = ("qos", "account", "user", "assoc")
    return read_state({name: fixture_output(f"slurm_sacctmgr_show_{name}_22.05_lab.txt") for name in names}, CLUSTER)


# The policy that the captured database was made from, by hand.
CAPTURED = {
    "qos": {
        "low": {},
        "high": {"description": "High priority", "priority": 100, "max_wall": "48:00:00",
                 "grp_tres": {"gres/gpu": 8, "cpu": 64}, "max_tres_per_user": {"gres/gpu": 4},
                 "max_tres_per_job": {"gres/gpu": 2}, "max_jobs_per_user": 10, "preempt": ["low"],
                 "preempt_mode": "requeue", "flags": ["DenyOnLimit"], "usage_factor": 2},
    },
    "accounts": {
        "research": {"description": "Research", "organization": "Lab Org"},
        "ml": {"parent": "research", "fairshare": 40, "qos": ["normal", "high"], "default_qos": "normal",
               "grp_tres": {"gres/gpu": 4}, "max_wall": "8:00:00"},
    },
    "users": {
        "alice": {"accounts": ["ml", "research"], "default_account": "ml"},
        "bob": {"accounts": ["research"], "default_account": "research"},
    },
}


def test_the_captures_read_as_entities(state):
    assert sorted(state["qos"]) == ["high", "low", "normal"]
    assert state["qos"]["high"]["GrpTRES"] == "cpu=64,gres/gpu=8"
    assert state["account_assocs"]["ml"]["ParentName"] == "research"
    assert state["user_assocs"][("alice", "ml")]["Share"] == "parent"
    assert state["users"]["alice"]["DefaultAccount"] == "ml"
    # bob's only association is per partition: it is reported, never managed.
    assert [row["User"] for row in state["partition_assocs"]] == ["bob"]


def test_the_policy_the_database_was_made_from_needs_nothing(state):
    result = plan({**CAPTURED, "users": {"alice": CAPTURED["users"]["alice"]}}, state, CLUSTER)
    assert result["actions"] == []
    assert result["unmanaged"]["partition_associations"] == ["bob@research@gpu"]


def test_a_changed_limit_is_one_modify_with_before_and_after(state):
    policy = {"qos": {"high": {"max_tres_per_user": {"gres/gpu": 2}, "max_wall": "1-00:00:00"}}}
    [action] = plan(policy, state, CLUSTER)["actions"]
    assert action["argv"] == ["sacctmgr", "--immediate", "modify", "qos", "where", "name=high", "set",
                              "MaxTRESPerUser=gres/gpu=2", "MaxWall=1-00:00:00"]
    assert action["changes"]["max_tres_per_user"] == {"before": "gres/gpu=4", "after": "gres/gpu=2"}


def test_a_tres_the_policy_leaves_out_is_cleared(state):
    [action] = plan({"qos": {"high": {"grp_tres": {"gres/gpu": 8}}}}, state, CLUSTER)["actions"]
    assert "GrpTRES=cpu=-1,gres/gpu=8" in action["argv"]


def test_new_entities_are_added_parents_first_then_users(state):
    policy = {
        "qos": {"gold": {"priority": 50, "preempt": ["low"]}},
        "accounts": {"vision": {"parent": "cv"}, "cv": {"parent": "ml", "fairshare": 10}, **CAPTURED["accounts"]},
        "users": {"carol": {"accounts": ["vision", "cv"], "default_account": "vision"}},
    }
    actions = plan(policy, state, CLUSTER)["actions"]
    summary = [(a["what"], a["entity"], a["name"]) for a in actions]
    assert summary == [
        ("add", "qos", "gold"), ("modify", "qos", "gold"),
        ("add", "account", "cv"), ("modify", "account", "cv"),
        ("add", "account", "vision"),
        ("add", "user", "carol@vision"), ("add", "user", "carol@cv"),
    ]
    assert actions[-2]["argv"][-1] == "defaultaccount=vision"


def test_a_moved_account_and_a_new_default_account(state):
    policy = {"accounts": {"ml": {"parent": "root"}, "research": {}},
              "users": {"alice": {"accounts": ["ml", "research"], "default_account": "research"}}}
    summary = [(a["name"], a["argv"][-1]) for a in plan(policy, state, CLUSTER)["actions"]]
    assert summary == [("ml", "parent=root"), ("alice", "defaultaccount=research")]


def test_unnamed_entities_are_reported_and_removed_only_with_prune(state):
    alice = {"accounts": ["research"], "default_account": "research"}
    policy = {"accounts": {"research": {}}, "users": {"alice": alice}}
    kept = plan(policy, state, CLUSTER)
    assert kept["unmanaged"] == {"qos": ["high", "low"], "accounts": ["ml"], "users": [],
                                 "user_associations": ["alice@ml"], "partition_associations": ["bob@research@gpu"]}
    assert [a for a in kept["actions"] if a["what"] == "delete"] == []
    pruned = plan({**policy, "prune": True}, state, CLUSTER)
    deletes = [(a["entity"], a["name"]) for a in pruned["actions"] if a["what"] == "delete"]
    # The user's default account moves off ml before its association on ml goes; root and normal stay.
    assert deletes == [("user", "alice@ml"), ("account", "ml"), ("qos", "high"), ("qos", "low")]
    assert pruned["actions"][0]["argv"][-1] == "defaultaccount=research"


def test_output_of_another_shape_is_refused():
    with pytest.raises(AccountingError, match="expected 3"):
        parse_show("ml|ml\n", ["Account", "Descr", "Org"])


def test_a_tres_slurmdbd_does_not_know_is_named(fixture_output):
    text = fixture_output("slurm_sacctmgr_show_tres_22.05_lab.txt")
    policy = {"qos": {"high": {"grp_tres": {"gres/gpu": 8, "cpu": 64}, "max_tres_per_user": {"gres/mps": 100}}},
              "accounts": {"ml": {"grp_tres": {"fs/disk": 10}}}}
    assert unknown_tres(policy, text) == ["gres/mps"]
    assert unknown_tres(policy, "cpu|\nmem|\n") == ["fs/disk", "gres/gpu", "gres/mps"]
