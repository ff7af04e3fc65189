"""Admission never touches a cordon, and rests only on what a node's kubelet cannot write.

Issue 33 ("every admission pass uncordons every admitted node", which reverted an admin's cordon and maintenance's)
and issue 36 (a kubelet may set gpufleet.io/admitted on its own Node, so a node could admit itself). The hold is
the taint alone (NodeRestriction forbids a kubelet to change taints) and the admission record is a
node-restriction.kubernetes.io/ label (NodeRestriction forbids a kubelet to set those).

These runs play k8s_pool_labels on localhost with k8s_pool_labels_apply=false: the role reads its modelled Nodes
(k8s_pool_labels_model) instead of a cluster and writes the Node patches it would apply under tmp_path. The lab
proof on a real API server is molecule/k8s_cluster's verify.
"""

import pathlib
import sys

import yaml
from conftest import ansible_env, run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
ADMITTED = "node-restriction.kubernetes.io/gpufleet-admitted"
HOLD = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}
POOL = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}


def render(tmp, model_nodes, verdicts):
    hosts = sorted(n["metadata"]["name"] for n in model_nodes)
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": sys.executable}},
                         "children": {"k8s_agent": {"hosts": {h: {"cluster_gpu_count": 2} for h in hosts}}}}}
    play = [{
        "name": "Render the admission", "hosts": "localhost", "gather_facts": False,
        "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
        "tasks": [{"name": "Admit", "ansible.builtin.import_role": {"name": "k8s_pool_labels"}, "vars": {
            "k8s_pool_labels_apply": False, "k8s_pool_labels_manifest_dir": str(tmp / "out"),
            "k8s_pool_labels_verdicts": verdicts,
            "k8s_pool_labels_model": {"nodes": model_nodes, "validator_pods": [
                {"metadata": {"name": f"nvidia-operator-validator-{h}"}, "spec": {"nodeName": h},
                 "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
                for h in hosts]}}}],
    }]
    result = run_plays(tmp, play, inventory, env=ansible_env(ANSIBLE_LOCALHOST_WARNING="false"))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    docs = [d for d in yaml.safe_load_all((tmp / "out" / "nodes.yaml").read_text()) if d]
    return {d["metadata"]["name"]: d for d in docs}


def node(name, *, cordoned, admitted, taints):
    labels = {"gpufleet.io/pool": "kubernetes", **({ADMITTED: "true"} if admitted else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"unschedulable": cordoned, "taints": taints},
            "status": {"allocatable": {"nvidia.com/gpu": "2"}}}


def test_no_admission_patch_carries_a_cordon_so_an_admins_cordon_stands(tmp_path):
    nodes = [
        # admitted earlier, then cordoned by an admin: the admission record holds, the cordon stands
        node("gpu01", cordoned=True, admitted=True, taints=[POOL]),
        # held for its gate and cordoned by an admin too; its gate passes now
        node("gpu02", cordoned=True, admitted=False, taints=[POOL, HOLD]),
        # held, never cordoned, no verdict: stays held by the taint alone
        node("gpu03", cordoned=False, admitted=False, taints=[POOL, HOLD]),
    ]
    patches = render(tmp_path, nodes, {"gpu02": "PASS"})
    assert sorted(patches) == ["gpu01", "gpu02", "gpu03"]
    for name, patch in patches.items():
        assert "unschedulable" not in patch["spec"], (name, patch)
    assert patches["gpu01"]["metadata"]["labels"][ADMITTED] == "true"
    assert patches["gpu02"]["metadata"]["labels"][ADMITTED] == "true"
    assert "gpufleet.io/hold" not in [t["key"] for t in patches["gpu02"]["spec"]["taints"]]
    assert patches["gpu03"]["metadata"]["labels"][ADMITTED] is None
    assert "gpufleet.io/hold" in [t["key"] for t in patches["gpu03"]["spec"]["taints"]]


def test_the_old_kubelet_settable_label_admits_nothing(tmp_path):
    # gpufleet.io/admitted is a label any node's kubelet may set on its own Node: it is no admission record.
    forged = node("gpu01", cordoned=False, admitted=False, taints=[POOL, HOLD])
    forged["metadata"]["labels"]["gpufleet.io/admitted"] = "true"
    patches = render(tmp_path, [forged], {})
    assert patches["gpu01"]["metadata"]["labels"][ADMITTED] is None
    assert "gpufleet.io/hold" in [t["key"] for t in patches["gpu01"]["spec"]["taints"]]
