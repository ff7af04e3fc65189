"""The health gate runs where no Slurm controller acts: a Kubernetes-only site, or the Kubernetes pool's gate play
(playbooks/k8s.yml, gate.yml) with health_gate_controller null.

ansible-core 2.19 templates delegate_to before `when`, so the Slurm tasks the role skips must still name a host:
before, `delegate_to: "{{ health_gate_controller }}"` stopped the gate with "Empty hostname produced from
delegate_to" on the first of them (molecule/k8s_cluster found it). Here two local nodes with declared GPUs run the
GPU inventory check: one passes, one expects another model and fails; the report says so, and Slurm is never asked.
"""

import json
import pathlib
import sys

from conftest import run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
H100 = [{"minor": 0, "name": "NVIDIA H100 80GB HBM3"}, {"minor": 1, "name": "NVIDIA H100 80GB HBM3"}]


def test_the_gate_judges_nodes_with_no_slurm_controller(tmp_path):
    node = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "cluster_gpu_count": 2,
            "gpu_discovery_gpus": H100, "gpu_discovery_count": 2}
    inventory = {"all": {"children": {"gpu_nodes": {"hosts": {
        "kgpu1": node, "kgpu2": dict(node, health_gate_gpu_expected_model="^NVIDIA H200")}}}}}
    # The local nodes have no HCA: their H100s select h100_sxm_x8, whose fabric ports turn the RDMA gate on by profile.
    play = [{"hosts": "gpu_nodes", "gather_facts": False, "roles": [{
        "role": "health_gate", "health_gate_controller": None, "health_gate_gpu_checks": ["inventory"],
        "health_gate_tcp": False, "health_gate_nccl": False, "health_gate_rdma": False,
        "health_gate_report_dir": str(tmp_path / "reports")}]}]
    # gate.yml's second gate play (the Kubernetes pool's) in the same run, under an operator's fixed run id: its
    # report must not overwrite the first play's (before, both wrote gate-<run>.json and the last one won)
    play.append(dict(play[0], hosts="kgpu1", roles=[dict(play[0]["roles"][0], health_gate_pool="k8s")]))
    result = run_plays(tmp_path, play, inventory, "-e", "health_gate_run_id=fixed-run", sort_keys=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "slurm_node_info" not in result.stdout
    reports = {p.name: json.loads(p.read_text()) for p in (tmp_path / "reports").glob("gate-*.json")}
    assert sorted(reports) == ["gate-fixed-run-k8s.json", "gate-fixed-run.json"], result.stdout[-3000:]
    nodes = reports["gate-fixed-run.json"]["nodes"]
    assert {name: row["verdict"] for name, row in nodes.items()} == {"kgpu1": "PASS", "kgpu2": "FAIL"}
    k8s_nodes = reports["gate-fixed-run-k8s.json"]["nodes"]
    assert {name: row["verdict"] for name, row in k8s_nodes.items()} == {"kgpu1": "PASS"}
