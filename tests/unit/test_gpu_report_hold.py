"""A node whose own GPU report is refused is held, and nothing else in the fleet changes (issue 36).

Each node reports its GPUs, and the records reach the one gres.conf and slurm.conf every Slurm host reads. Before,
a record with a field no config line can hold (a line break in a device file: ``NodeName=ALL ...``) failed the
node at ``Record the GPUs`` with a filter error naming no hold, and the cluster's files were then rendered without
the node: its ``Gres=`` and gres.conf lines gone, a change every Slurm host applies because of a node that reported
nothing valid. Now gpu_discovery holds the node (drained where Slurm lists it, the reason naming the fields) and
takes it out of the run, and slurm_common renders its part of both files as the files in place have it
(module_utils/slurm_change.py ``kept_gpu_report``).
"""

import json
import os
import pathlib
import re
import sys

import pytest
from ansible.module_utils.gres import gpu_report_errors, gres_conf_cluster, refused_gpu_fields
from ansible.module_utils.slurm_change import kept_gpu_report
from conftest import ansible_env, run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
LYING_NODE = ROOT / "tests" / "doubles" / "lying_node"
INJECTED = "/dev/nvidia1\nNodeName=ALL Name=gpu File=/dev/null"


def gpu(index, minor, gtype="h100", cores="0-1", file=None):
    return {"index": index, "minor": minor, "type": gtype, "file": file or f"/dev/nvidia{minor}", "cores": cores,
            "nvlinks": []}


GOOD = [gpu(0, 0), gpu(1, 1, cores="2-3")]
SLURM_CONF = """ClusterName=lab
SlurmctldHost=ctl1
NodeName=gpu[01-03] CPUs=4 RealMemory=7000 Gres=gpu:h100:2 Features=h100 State=UNKNOWN
PartitionName=gpu Nodes=gpu[01-03] Default=YES
"""


def test_the_refused_fields_are_named_each_once():
    assert refused_gpu_fields(GOOD) == []
    assert refused_gpu_fields([gpu(0, 0), gpu(1, 1, file=INJECTED)]) == ["file"]
    assert refused_gpu_fields([gpu(0, 0, cores="0-1 # x", gtype="h 100"), gpu(1, "1")]) == ["cores", "type"]
    assert refused_gpu_fields(["not a record"]) == ["record"]
    assert refused_gpu_fields({"minor": 0}) == ["record"]
    errors = gpu_report_errors([gpu(1, 1, file=INJECTED)])
    assert len(errors) == 1 and "field file" in errors[0] and "NodeName=ALL" in errors[0]


def test_the_files_in_place_give_back_the_held_nodes_part_unchanged():
    in_place = gres_conf_cluster({"gpu01": GOOD, "gpu02": GOOD, "gpu03": [gpu(0, 0, "a100")]})
    kept = kept_gpu_report("gpu02", SLURM_CONF, in_place)
    assert kept == {"gres": "gpu:h100:2", "lines": ["Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-1",
                                                    "Name=gpu Type=h100 File=/dev/nvidia1 Cores=2-3"]}
    # the held node's report is not used; its kept lines fold with gpu01's as before, byte for byte
    assert gres_conf_cluster({"gpu01": GOOD, "gpu03": [gpu(0, 0, "a100")]}, kept={"gpu02": kept}) == in_place
    # a node the files do not know yet keeps nothing
    assert kept_gpu_report("gpu09", SLURM_CONF, in_place) == {"gres": None, "lines": []}


def test_kept_lines_are_checked_again_before_they_go_back():
    bad = ["Name=gpu File=/dev/nvidia0\nNodeName=ALL Name=gpu", "Name=gpu File=/dev/nvidia0 # x", "AutoDetect=off"]
    for line in bad:
        with pytest.raises(ValueError, match="gpu02"):
            gres_conf_cluster({"gpu01": GOOD}, kept={"gpu02": {"lines": [line]}})


def _recap(out):
    return {m.group(1): {"ok": int(m.group(2)), "failed": int(m.group(3))}
            for m in re.finditer(r"^(\S+)\s+: ok=(\d+)\s+changed=\d+\s+unreachable=\d+\s+failed=(\d+)", out, re.M)}


def test_a_lying_node_is_held_and_the_cluster_files_stay_as_they_are(tmp_path):
    """gpu02 reports a device file that would add a ``NodeName=ALL`` line. It alone leaves the run, with the field
    named; gpu01 and gpu03 go on; gres.conf and gpu02's NodeName entry render as the files in place have them."""
    etc = tmp_path / "etc"
    etc.mkdir()
    in_place = gres_conf_cluster({"gpu01": GOOD, "gpu02": GOOD, "gpu03": GOOD})
    (etc / "gres.conf").write_text(in_place)
    (etc / "slurm.conf").write_text(SLURM_CONF)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    lying = [gpu(0, 0), gpu(1, 1, cores="2-3", file=INJECTED)]
    group_vars = dict(local, cluster_gpu_count=2, __slurm_common_config_dir=str(etc))
    inventory = {"all": {"vars": group_vars, "children": {
        "slurm_controller": {"hosts": {"ctl1": {}}},
        "gpu_nodes": {"hosts": {"gpu01": {"gpu_discovery_override": GOOD},
                                "gpu02": {"gpu_discovery_override": lying},
                                "gpu03": {"gpu_discovery_override": GOOD}}}}}}
    out = tmp_path / "out"
    plays = [
        {"name": "discover", "hosts": "gpu_nodes", "gather_facts": False,
         "roles": [{"role": "gpu_discovery", "gpu_discovery_controller": None}]},
        {"name": "render", "hosts": "slurm_controller:gpu_nodes", "gather_facts": False,
         "pre_tasks": [{"ansible.builtin.import_role": {"name": "slurm_common", "tasks_from": "node_data"}}],
         "tasks": [
             {"ansible.builtin.file": {"path": str(out), "state": "directory", "mode": "0700"}, "run_once": True},
             {"ansible.builtin.template": {"src": str(ROOT / "roles/slurm_common/templates/etc/slurm/gres.conf.j2"),
                                           "dest": str(out / "gres.conf"), "mode": "0644"}, "run_once": True},
             {"ansible.builtin.copy": {"content": "{{ slurm_common_nodes | to_json }}", "dest": str(out / "nodes.json"),
                                       "mode": "0644"}, "run_once": True},
             {"ansible.builtin.copy": {"content": "{{ ansible_play_hosts | to_json }}", "dest": str(out / "hosts.json"),
                                       "mode": "0644"}, "run_once": True}]},
    ]
    env = ansible_env(ANSIBLE_LIBRARY=f"{LYING_NODE}{os.pathsep}{ROOT / 'library'}")
    result = run_plays(tmp_path, plays, inventory, env=env)
    text = result.stdout + result.stderr
    recap = _recap(result.stdout)
    assert recap["gpu02"]["failed"] == 1, text[-4000:]
    assert "host gpu02: its GPU report (test-double) is refused, field(s) file" in text, text[-4000:]
    assert "The node is held" in text
    assert [recap[h]["failed"] for h in ("ctl1", "gpu01", "gpu03")] == [0, 0, 0], text[-4000:]
    assert json.loads((out / "hosts.json").read_text()) == ["ctl1", "gpu01", "gpu03"]
    # the cluster's files do not change because of gpu02: its lines and its Gres= are the ones in place
    rendered = (out / "gres.conf").read_text()
    assert "NodeName=ALL" not in rendered
    assert rendered.splitlines()[-len(in_place.splitlines()):] == in_place.splitlines(), rendered
    nodes = {n["NodeName"]: n for n in json.loads((out / "nodes.json").read_text())}
    assert nodes["gpu02"].get("Gres") == "gpu:h100:2", nodes
    assert nodes["gpu02"]["Gres"] == nodes["gpu01"]["Gres"]


def test_most_nodes_short_of_gpus_stop_the_run_before_any_drain_is_tried(tmp_path):
    """The wiring of the majority rule (issue 36, finding 6): with cluster_gpu_count 2 and every node reporting one
    GPU, the inventory is wrong. The run must stop on the majority task, naming cluster_gpu_count, before the drain
    task reads Slurm (here a controller with no Slurm: reaching the drain would fail differently)."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    one = [gpu(0, 0)]
    inventory = {"all": {"vars": dict(local, cluster_gpu_count=2), "children": {
        "slurm_controller": {"hosts": {"ctl1": {}}},
        "gpu_nodes": {"hosts": {h: {"gpu_discovery_override": one} for h in ("gpu01", "gpu02", "gpu03")}}}}}
    plays = [{"hosts": "gpu_nodes", "gather_facts": False, "roles": ["gpu_discovery"]}]
    env = ansible_env(ANSIBLE_LIBRARY=f"{LYING_NODE}{os.pathsep}{ROOT / 'library'}")
    result = run_plays(tmp_path, plays, inventory, env=env)
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Stop when most nodes disagree" in text and "cluster_gpu_count" in text, text[-3000:]
    assert "Read Slurm's view of the node" not in text and "slurm_node_info" not in text, text[-3000:]
    assert [_recap(result.stdout)[h]["failed"] for h in ("gpu01", "gpu02", "gpu03")] == [1, 1, 1]
