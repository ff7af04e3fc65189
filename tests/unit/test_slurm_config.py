"""slurm_config writes only what differs and honours check mode; slurm_apply_plan classifies its changes."""

import json
import os
import stat

import pytest
import slurm_config as module
from ansible.module_utils.slurm_change import apply_plan as slurm_apply_plan  # filter slurm_apply_plan
from ansible.module_utils.slurm_change import plan_apply
from ansible.module_utils.testing import patch_module_args

CONF = """\
ClusterName=lab
SlurmctldHost=ctl1
NodeName=gpu[01-02] CPUs=4 Gres=gpu:tesla:2
PartitionName=gpu Nodes=gpu[01-02] Default=YES State=UP
"""
TOPOLOGY = "SwitchName=leaf1 Nodes=gpu[01-02]\n"


def run(capsys, tmp_path, files, check=False, diff=False):
    args = {"dir": str(tmp_path),
            "files": [{"name": name, "content": text} for name, text in files.items()],
            "_ansible_check_mode": check, "_ansible_diff": diff}
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_a_first_write_creates_the_files_and_asks_for_nothing(capsys, tmp_path):
    out = run(capsys, tmp_path, {"slurm.conf": CONF, "topology.conf": TOPOLOGY})
    assert out["changed"] is True
    assert out["created"] == ["slurm.conf", "topology.conf"] == out["written"]
    assert out["changes"] == []
    assert (tmp_path / "slurm.conf").read_text() == CONF
    assert stat.S_IMODE(os.stat(tmp_path / "slurm.conf").st_mode) == 0o644


def test_the_same_content_again_changes_nothing(capsys, tmp_path):
    run(capsys, tmp_path, {"slurm.conf": CONF})
    out = run(capsys, tmp_path, {"slurm.conf": CONF})
    assert out["changed"] is False and out["written"] == [] and out["changes"] == []


def test_a_partition_change_reconfigures(capsys, tmp_path):
    run(capsys, tmp_path, {"slurm.conf": CONF})
    new = CONF.replace("Default=YES", "Default=YES MaxTime=60")
    out = run(capsys, tmp_path, {"slurm.conf": new})
    assert out["written"] == ["slurm.conf"] and out["created"] == []
    assert out["changes"] == [{"name": "slurm.conf", "before": CONF, "after": new}]
    plan = slurm_apply_plan(out["changes"], "22.05.8", ["slurmd"])
    assert plan["action"] == "reconfigure" and plan["restart"] == [] and plan["reasons"]


def test_adding_a_node_on_22_05_restarts_only_the_daemons_this_host_runs(capsys, tmp_path):
    run(capsys, tmp_path, {"slurm.conf": CONF})
    grown = CONF.replace("gpu[01-02]", "gpu[01-03]")
    out = run(capsys, tmp_path, {"slurm.conf": grown})
    plan = slurm_apply_plan(out["changes"], "22.05.8", ["slurmd"])
    assert plan["action"] == "restart" and plan["restart"] == ["slurmd"]
    assert slurm_apply_plan(out["changes"], "23.11.4", ["slurmd"])["action"] == "reconfigure"


def test_check_mode_reports_the_change_and_writes_nothing(capsys, tmp_path):
    run(capsys, tmp_path, {"slurm.conf": CONF})
    out = run(capsys, tmp_path, {"slurm.conf": CONF.replace("Default=YES", "Default=NO")}, check=True, diff=True)
    assert out["changed"] is True and out["changes"][0]["before"] == CONF
    assert (tmp_path / "slurm.conf").read_text() == CONF
    assert "Default=NO" in out["diff"][0]["after"] and "Default=YES" in out["diff"][0]["before"]


def test_check_mode_on_a_fresh_host_needs_no_directory(capsys, tmp_path):
    out = run(capsys, tmp_path / "absent", {"slurm.conf": CONF}, check=True)
    assert out["changed"] is True and out["created"] == ["slurm.conf"]


def test_a_mode_fix_alone_changes_the_file_but_asks_for_nothing(capsys, tmp_path):
    run(capsys, tmp_path, {"slurm.conf": CONF})
    os.chmod(tmp_path / "slurm.conf", 0o600)
    out = run(capsys, tmp_path, {"slurm.conf": CONF})
    assert out["changed"] is True and out["written"] == [] and out["changes"] == []
    assert stat.S_IMODE(os.stat(tmp_path / "slurm.conf").st_mode) == 0o644


def test_plan_apply_falls_back_to_reconfigure_for_a_restart_needed_elsewhere():
    change = {"action": "restart", "daemons": ["slurmctld"], "reasons": ["node added"]}
    assert plan_apply([change], ["slurmd"]) == {
        "action": "reconfigure",
        "restart": [],
        "order": None,
        "reasons": ["node added"],
        "needs_no_jobs": [],
    }
    assert plan_apply([change], ["slurmctld"])["restart"] == ["slurmctld"]
    assert plan_apply([], ["slurmd"])["action"] == "none"
