"""slurm_node_info on a real scontrol capture: pools per node, partitions, fresh and unreadable Slurm."""

import json
import pathlib

import pytest
import slurm_node_info as module
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

CAPTURE = pathlib.Path(__file__).parent / "captures" / "scontrol_show_node_lab.txt"
NODES = "\n".join(line for line in CAPTURE.read_text().splitlines() if not line.startswith("#@"))
PARTITIONS = "PartitionName=gpu AllowGroups=ALL Default=YES Nodes=gpu[01-04] State=UP TotalCPUs=8\n" \
             "PartitionName=empty AllowGroups=ALL Nodes=(null) State=UP\n"


def run(args, capsys, monkeypatch, answers):
    def fake_run_command(self, argv, **kwargs):
        key = " ".join(argv[1:4])
        if key in answers:
            return answers[key]
        if argv[1:3] == ["show", "hostnames"]:
            return 0, "gpu01\ngpu02\ngpu03\ngpu04\n", ""
        raise AssertionError(f"unexpected command {argv}")

    monkeypatch.setattr(AnsibleModule, "run_command", fake_run_command)
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, required=False: f"/usr/bin/{name}")
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_reads_each_nodes_pool_and_the_partitions(capsys, monkeypatch, tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=lab\n")
    out = run({"config": str(conf)}, capsys, monkeypatch, {
        "show node -o": (0, NODES, ""),
        "show partition -o": (0, PARTITIONS, ""),
    })
    assert out["changed"] is False and out["fresh"] is False
    assert out["partitions"] == {"gpu": ["gpu01", "gpu02", "gpu03", "gpu04"], "empty": []}
    assert out["nodes"]["gpu02"]["admin_hold"] is True
    assert out["nodes"]["gpu03"]["pool"] == "k8s"
    assert "DRAIN" in out["nodes"]["gpu03"]["flags"]


def test_a_controller_without_slurm_conf_is_a_fresh_cluster(capsys, monkeypatch, tmp_path):
    out = run({"config": str(tmp_path / "absent.conf")}, capsys, monkeypatch, {})
    assert out["fresh"] is True and out["nodes"] == {}


def test_unreadable_slurm_fails_and_says_it_does_not_guess(capsys, monkeypatch, tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=lab\n")
    out = run({"config": str(conf)}, capsys, monkeypatch, {
        "show node -o": (1, "", "slurm_load_node error: Unable to contact slurm controller"),
    })
    assert out["failed"] is True
    assert "Unable to contact slurm controller" in out["msg"] and "not guessing" in out["msg"]
