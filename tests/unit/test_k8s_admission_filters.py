"""Filters that feed k8s_pool_labels and health_gate: this run's gate verdicts and the GPU count per inventory host."""

import pytest
from ansible.errors import AnsibleFilterError
from k8s import k8s_gate_verdicts, k8s_gpu_admission_errors, k8s_pool_admissions

HOLD = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}
KW = {"k8s_pool": "kubernetes", "label_key": "gpufleet.io/pool", "hold_taint": HOLD}


def node(name):
    return {"metadata": {"name": name, "labels": {}}, "spec": {"taints": [HOLD], "unschedulable": True},
            "status": {"allocatable": {"nvidia.com/gpu": "2"}}}


def test_gate_verdicts_keep_only_nodes_the_gate_judged():
    hostvars = {"gpu01": {"health_gate_verdict": {"verdict": "PASS", "node": "gpu01"}},
                "gpu02": {"cluster_gpu_count": 2}, "gpu03": {"health_gate_verdict": {"verdict": "FAIL"}}}
    verdicts = k8s_gate_verdicts(["gpu01", "gpu02", "gpu03"], hostvars, "health_gate_verdict")
    assert verdicts == {"gpu01": "PASS", "gpu03": "FAIL"}


def test_pass_without_a_gpu_count_names_the_host_and_the_variable():
    with pytest.raises(AnsibleFilterError, match="gpu01: host variable cluster_gpu_count"):
        k8s_pool_admissions(["gpu01"], [node("gpu01")], {"gpu01": {}}, "cluster_gpu_count", [], {"gpu01": "PASS"},
                            **KW)
    with pytest.raises(AnsibleFilterError, match="gpu01: host variable cluster_gpu_count"):
        k8s_gpu_admission_errors(node("gpu01"), "gpu01", {"gpu01": {}}, "cluster_gpu_count")


def test_modelled_node_outside_the_inventory_needs_no_count_without_a_verdict():
    out = k8s_pool_admissions(["model"], [node("model")], {"gpu01": {}}, "cluster_gpu_count", [], {}, **KW)
    assert out["nodes"]["model"]["cordon"] and not out["nodes"]["model"]["admitted"]


def test_pass_with_the_count_but_no_validator_stays_held():
    errors = k8s_gpu_admission_errors(node("gpu01"), "gpu01", {"gpu01": {"cluster_gpu_count": 2}}, "cluster_gpu_count")
    assert errors == ["gpu01: no GPU Operator validator pod on the node"]


def test_node_names_prefer_the_variable_then_the_registered_hostname_then_the_inventory_name():
    from k8s import k8s_node_names

    hostvars = {"gpu01": {"cluster_k8s_node_name": "GPU01.lab.example"},
                "gpu02": {"ansible_facts": {"nodename": "gpu02.lab.example", "hostname": "gpu02"}},
                "GPU03": {}}
    assert k8s_node_names(["gpu01", "gpu02", "GPU03", "model"], hostvars) == {
        "gpu01": "gpu01.lab.example", "gpu02": "gpu02.lab.example", "GPU03": "gpu03", "model": "model"}


def test_a_node_registered_under_its_fqdn_is_found_from_the_short_inventory_name_unless_ambiguous():
    live = [node("gpu01.lab.example"), node("gpu02.a.example"), node("gpu02.b.example")]
    out = k8s_pool_admissions(["gpu01", "gpu02"], live, {}, "cluster_gpu_count", [], {}, {}, **KW)
    assert out["nodes"]["gpu01"]["name"] == "gpu01.lab.example"
    assert out["unregistered"] == ["gpu02"]
