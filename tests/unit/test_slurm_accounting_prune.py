"""prune removes only what this cluster's policy owns: scoped by cluster and partition, never a QOS in use.

The database is the lab's (real captures, Slurm 22.05.8, cluster molslurm). Where a test needs a second
cluster of the same slurmdbd (QOS are database-wide), its rows are written in the format of the lab's own
`show association` capture (format=Cluster,Account,User,Partition,ParentName,Share,QOS,DefaultQOS,GrpTRES,
MaxWall), as `sacctmgr show association` without a cluster filter prints every cluster's rows.
"""

import importlib.util
import json
import pathlib

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.slurm_accounting import plan, read_state
from ansible.module_utils.testing import patch_module_args
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# library/slurm_accounting.py by path: filter_plugins/ holds a file of the same name.
_SPEC = importlib.util.spec_from_file_location(
    "slurm_accounting_module", pathlib.Path(__file__).resolve().parents[2] / "library" / "slurm_accounting.py")
module = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(module)

CLUSTER = "molslurm"
NAMES = ("qos", "account", "user", "assoc")

# Another cluster of the same slurmdbd: account vision with user carol, both allowed QOS low.
OTHER_CLUSTER = """\
molslurm2|root||||1|normal|||
molslurm2|root|root|||1|normal|||
molslurm2|vision|||root|1|low,normal|normal||
molslurm2|vision|carol|||1|low,normal|normal||
"""


@pytest.fixture
def outputs(fixture_output):
    return {name: fixture_output(f"slurm_sacctmgr_show_{name}_22.05_lab.txt") for name in NAMES}


def deletes(result):
    return [(a["entity"], a["name"]) for a in result["actions"] if a["what"] == "delete"]


def test_prune_deletes_a_users_association_without_its_per_partition_ones(outputs):
    # bob has an association on research and one on research in partition gpu; the policy names neither.
    outputs["assoc"] += "molslurm|research|bob|||1|normal|||\n"
    policy = {"accounts": {"research": {}, "ml": {"parent": "research"}},
              "users": {"alice": {"accounts": ["ml", "research"], "default_account": "ml"}}, "prune": True}
    result = plan(policy, read_state(outputs, CLUSTER), CLUSTER)
    [action] = [a for a in result["actions"] if a["what"] == "delete" and a["entity"] == "user"]
    assert action["name"] == "bob"
    # Without partition='' sacctmgr deletes bob's association in partition gpu too.
    assert "partition=''" in action["argv"] and f"cluster={CLUSTER}" in action["argv"]
    assert result["unmanaged"]["partition_associations"] == ["bob@research@gpu"]


def test_every_user_association_command_is_scoped_by_cluster_and_partition(outputs):
    policy = {"accounts": {"research": {}, "ml": {"parent": "research", "max_wall": "4:00:00"}},
              "users": {"alice": {"accounts": ["research"], "default_account": "research", "fairshare": 5}},
              "prune": True}
    actions = plan(policy, read_state(outputs, CLUSTER), CLUSTER)["actions"]
    user_assocs = [a for a in actions if a["entity"] == "user" and "@" in a["name"]]
    assert [(a["what"], a["name"]) for a in user_assocs] == [("modify", "alice@research"), ("delete", "alice@ml")]
    for action in user_assocs:
        assert f"cluster={CLUSTER}" in action["argv"] and "partition=''" in action["argv"], action["argv"]


def test_prune_refuses_an_account_with_per_partition_associations_under_it(outputs):
    # research is no longer named; bob's association in partition gpu hangs off it.
    policy = {"accounts": {"ml": {"parent": "root"}},
              "users": {"alice": {"accounts": ["ml"], "default_account": "ml"}}, "prune": True}
    result = plan(policy, read_state(outputs, CLUSTER), CLUSTER)
    # Deleting the account deletes every association under it, per partition ones included.
    assert ("account", "research") not in deletes(result)
    [refusal] = [r for r in result["refused"] if "account research" in r]
    assert "bob@research@gpu" in refusal and f"cluster {CLUSTER}" in refusal
    assert refusal.startswith("cluster_slurm_accounting")


def test_prune_keeps_qos_used_by_this_clusters_associations(outputs):
    # ml keeps its QOS list (the policy does not set it), so it and alice@ml still allow high.
    policy = {"qos": {"low": {}}, "accounts": {"research": {}, "ml": {"parent": "research"}},
              "users": {"alice": {"accounts": ["ml", "research"], "default_account": "ml"}}, "prune": True}
    result = plan(policy, read_state(outputs, CLUSTER), CLUSTER)
    assert ("qos", "high") not in deletes(result)
    [refusal] = [r for r in result["refused"] if "QOS high" in r]
    for used_by in (f"cluster {CLUSTER}", "account ml", "user alice@ml"):
        assert used_by in refusal, refusal


def test_prune_keeps_qos_used_by_another_cluster(outputs):
    outputs["assoc"] += OTHER_CLUSTER
    outputs["user"] += "carol|\n"
    policy = {"qos": {"high": {}}, "accounts": {"research": {}, "ml": {"parent": "research"}},
              "users": {"alice": {"accounts": ["ml", "research"], "default_account": "ml"}}, "prune": True}
    result = plan(policy, read_state(outputs, CLUSTER), CLUSTER)
    # `delete qos` is database-wide: slurmdbd removes the QOS from every cluster's associations.
    assert ("qos", "low") not in deletes(result)
    [refusal] = [r for r in result["refused"] if "QOS low" in r]
    for used_by in ("cluster molslurm2", "account vision", "user carol@vision"):
        assert used_by in refusal, refusal
    # The other cluster's associations are never this plan's to delete.
    assert not any("vision" in name or "carol" in name for _, name in deletes(result))


def test_prune_deletes_a_qos_only_the_pruned_associations_used(outputs):
    policy = {"qos": {"low": {}}, "accounts": {"research": {}},
              "users": {"alice": {"accounts": ["research"], "default_account": "research"}}, "prune": True}
    result = plan(policy, read_state(outputs, CLUSTER), CLUSTER)
    assert deletes(result) == [("user", "alice@ml"), ("account", "ml"), ("qos", "high")]
    assert result["refused"] == []


def test_a_default_account_change_is_scoped_to_the_cluster(outputs):
    policy = {"accounts": {"research": {}, "ml": {"parent": "research"}},
              "users": {"alice": {"accounts": ["ml", "research"], "default_account": "research"}}}
    [action] = plan(policy, read_state(outputs, CLUSTER), CLUSTER)["actions"]
    assert action["changes"] == {"default_account": {"before": "ml", "after": "research"}}
    # Without cluster= sacctmgr sets the default account on every cluster of the database.
    assert f"cluster={CLUSTER}" in action["argv"], action["argv"]


class FakeSacctmgr:
    """run_command for the module: the lab's show outputs, and a record of every command."""

    def __init__(self, outputs, tres):
        self.outputs, self.tres, self.calls = outputs, tres, []

    def __call__(self, argv, **_kwargs):
        self.calls.append(list(argv))
        if "show" in argv:
            kind = argv[argv.index("show") + 1]
            return 0, (self.tres if kind == "tres" else self.outputs[kind if kind != "association" else "assoc"]), ""
        return 0, "", ""


def run_module(monkeypatch, capsys, fake, **args):
    monkeypatch.setattr(AnsibleModule, "run_command", fake)
    with patch_module_args({"cluster": CLUSTER, **args}), pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_module_reads_this_clusters_defaults_and_every_clusters_qos_use(monkeypatch, capsys, outputs,
                                                                       fixture_output):
    fake = FakeSacctmgr(outputs, fixture_output("slurm_sacctmgr_show_tres_22.05_lab.txt"))
    rc, _ = run_module(monkeypatch, capsys, fake, policy={"qos": {"low": {}, "high": {}}})
    assert rc == 0
    shows = {argv[argv.index("show") + 1]: argv for argv in fake.calls if "show" in argv}
    # The default account is per cluster; QOS are used by the associations of every cluster.
    assert f"cluster={CLUSTER}" in shows["user"]
    assert not any(arg.startswith("cluster=") for arg in shows["association"])


def test_module_fails_before_any_change_when_prune_is_refused(monkeypatch, capsys, outputs, fixture_output):
    outputs["assoc"] += OTHER_CLUSTER
    fake = FakeSacctmgr(outputs, fixture_output("slurm_sacctmgr_show_tres_22.05_lab.txt"))
    policy = {"qos": {"high": {}}, "accounts": {"research": {}, "ml": {"parent": "research"}},
              "users": {"alice": {"accounts": ["ml", "research"], "default_account": "ml"}}, "prune": True}
    rc, out = run_module(monkeypatch, capsys, fake, policy=policy)
    assert rc == 1 and out["failed"]
    assert "QOS low" in out["msg"] and "molslurm2" in out["msg"]
    assert [argv for argv in fake.calls if "--immediate" in argv] == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(qos=st.sets(st.sampled_from(["high", "low"])), named=st.sets(st.sampled_from(["research", "ml"])),
       alice=st.sets(st.sampled_from(["research", "ml"])), other_cluster=st.booleans())
def test_prune_never_deletes_beyond_this_clusters_policy(outputs, qos, named, alice, other_cluster):
    if other_cluster:
        outputs = {**outputs, "assoc": outputs["assoc"] + OTHER_CLUSTER}
    accounts = {name: ({"parent": "research"} if name == "ml" and "research" in named else {}) for name in named}
    users = {}
    if alice & named:
        member = sorted(alice & named)
        users["alice"] = {"accounts": member, "default_account": member[0]}
    policy = {"qos": {name: {} for name in qos}, "accounts": accounts, "users": users, "prune": True}
    state = read_state(outputs, CLUSTER)
    result = plan(policy, state, CLUSTER)
    for action in result["actions"]:
        if action["entity"] == "user" and ("@" in action["name"] or action["what"] == "delete"):
            assert f"cluster={CLUSTER}" in action["argv"] and "partition=''" in action["argv"], action["argv"]
        if action["entity"] == "account" and action["what"] == "delete":
            assert f"cluster={CLUSTER}" in action["argv"]
    gone = {name for entity, name in deletes(result) if entity == "account"}
    # bob's association in partition gpu hangs off research: research never goes.
    assert "research" not in gone
    deleted_qos = {name for entity, name in deletes(result) if entity == "qos"}
    other_rows = [row for row in state["assocs"] if row["Cluster"] != CLUSTER]
    assert not any(name in row["QOS"].split(",") for row in other_rows for name in deleted_qos)
    # Every QOS the policy leaves out is either deleted or refused by name.
    for name in result["unmanaged"]["qos"]:
        assert name in deleted_qos or any(f"QOS {name}," in r for r in result["refused"])
