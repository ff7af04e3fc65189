"""Filters that feed k8s_pool_labels and health_gate: this run's gate verdicts and the GPU count per inventory host."""

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given, settings
from hypothesis import strategies as st
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
    model = out["nodes"]["model"]
    assert HOLD["key"] in [t["key"] for t in model["taints_add"]] and not model["admitted"]


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


def test_two_hosts_reporting_one_hostname_are_refused_naming_both_hosts():
    # cloned images: both kernels still say the image's hostname
    from k8s import k8s_node_names

    hostvars = {"gpu01": {"ansible_facts": {"nodename": "ubuntu-2204"}},
                "gpu02": {"ansible_facts": {"nodename": "ubuntu-2204"}}}
    with pytest.raises(AnsibleFilterError, match=r"gpu01 and gpu02 .*ubuntu-2204.*ansible_facts.nodename"):
        k8s_node_names(["gpu01", "gpu02"], hostvars)


def test_a_host_reporting_another_inventory_hosts_name_is_refused_even_alone():
    # gpu02 claims gpu01's hostname: its drain/uncordon would land on gpu01's Node
    from k8s import k8s_node_names

    hostvars = {"gpu01": {"ansible_facts": {"nodename": "gpu01.lab.example"}},
                "gpu02": {"ansible_facts": {"nodename": "gpu01.lab.example"}}}
    with pytest.raises(AnsibleFilterError, match=r"gpu02: ansible_facts.nodename .*gpu01"):
        k8s_node_names(["gpu02"], hostvars)


@pytest.mark.parametrize("reported", ["gpu01\nNodeName=ALL", "gpu01 #", 'gpu01"', "gpu_01", "-gpu01", "a" * 254])
def test_a_reported_hostname_that_is_no_dns_subdomain_is_refused_naming_the_field(reported):
    from k8s import k8s_node_names

    with pytest.raises(AnsibleFilterError, match=r"gpu01: ansible_facts.nodename"):
        k8s_node_names(["gpu01"], {"gpu01": {"ansible_facts": {"nodename": reported}}})


def test_node_names_are_unchanged_for_a_fleet_whose_hosts_report_their_own_names():
    from k8s import k8s_node_names

    hostvars = {f"gpu0{i}": {"ansible_facts": {"nodename": f"gpu0{i}"}} for i in range(1, 5)}
    assert k8s_node_names(list(hostvars), hostvars) == {h: h for h in hostvars}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["gpu01", "gpu02", "gpu03", "gpu01.lab.example", "ubuntu-2204", None]),
                min_size=3, max_size=3))
def test_any_mix_of_reported_hostnames_never_maps_a_host_to_another_hosts_node(reported):
    from k8s import k8s_node_names

    hosts = ["gpu01", "gpu02", "gpu03"]
    hostvars = {h: {"ansible_facts": {"nodename": r}} if r else {} for h, r in zip(hosts, reported, strict=True)}
    try:
        names = k8s_node_names(hosts, hostvars)
    except AnsibleFilterError:
        return
    shorts = [names[h].split(".")[0] for h in hosts]
    assert len(set(shorts)) == len(hosts), names
    assert all(s == h or s not in hosts for h, s in zip(hosts, shorts, strict=True)), names
