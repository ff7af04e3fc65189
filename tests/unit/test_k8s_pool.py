"""Pool wiring: GPU totals, ClusterQueue quota that must follow the pool, taints, node state."""

from fractions import Fraction

import pytest
from ansible.module_utils.k8s_pool import (
    clusterqueue_gpu_quota,
    excluded_resources,
    fabric_label_keys,
    format_quantity,
    gpu_admission_errors,
    leave_labels,
    merge_taints,
    node_admission,
    parse_gpu_quantity,
    parse_quantity,
    pod_ready,
    pool_admissions,
    pool_allocatable_quota,
    pool_gpu_total,
    quota_errors,
)
from hypothesis import given
from hypothesis import strategies as st

HOLD = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}
# The admission record: a node-restriction.kubernetes.io/ label, which a node's kubelet cannot set.
ADMITTED = "node-restriction.kubernetes.io/gpufleet-admitted"


def cq(quotas, name="gpu"):
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"resourceGroups": [{
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": f"f{i}", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": q}]}
                        for i, q in enumerate(quotas)],
        }]},
    }


@pytest.mark.parametrize(("text", "value"), [
    ("7500m", Fraction(15, 2)), ("8", 8), (64, 64), ("31Gi", 31 * 2**30), ("32847812Ki", 32847812 * 1024),
    ("1.5G", 1_500_000_000), ("1e3", 1000), ("1E3", 1000), ("2E", 2 * 10**18), ("500u", Fraction(1, 2000)),
    ("0.5", Fraction(1, 2)), (".5Mi", 2**19),
])
def test_parse_quantity_reads_kubernetes_quantities_exactly(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["31 GiB", "31GB", "-1", "1.2.3", "", "Gi", "1KI", True, None, "0x10"])
def test_parse_quantity_refuses_what_is_no_kubernetes_quantity(text):
    with pytest.raises(ValueError, match="no Kubernetes quantity"):
        parse_quantity(text)


def test_format_quantity_gives_digits_or_millis_and_never_rounds_up():
    assert [format_quantity(v) for v in (0, 16, Fraction(31, 2), Fraction(1, 3))] == ["0", "16", "15500m", "333m"]


@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["m", "", "Ki", "Mi", "Gi", "k"])), max_size=6))
def test_the_allocatable_quota_is_the_exact_sum_of_the_nodes(amounts):
    nodes = [f"gpu{i:02d}" for i in range(len(amounts))]
    allocatable = {n: {"cpu": f"{a}{u}"} for n, (a, u) in zip(nodes, amounts, strict=True)}
    total = sum((parse_quantity(v["cpu"]) for v in allocatable.values()), Fraction(0))
    quota = pool_allocatable_quota(nodes, allocatable, ["cpu"])["cpu"]
    assert parse_quantity(quota) <= total < parse_quantity(quota) + Fraction(1, 1000)


def test_the_allocatable_quota_is_zero_without_nodes_and_names_a_node_it_cannot_read():
    assert pool_allocatable_quota([], {}, ["cpu", "memory"]) == {"cpu": "0", "memory": "0"}
    with pytest.raises(ValueError, match="gpu02: allocatable memory is not reported"):
        pool_allocatable_quota(["gpu01", "gpu02"], {"gpu01": {"cpu": "1", "memory": "1Gi"}, "gpu02": {"cpu": "1"}},
                               ["cpu", "memory"])
    with pytest.raises(ValueError, match="gpu01: allocatable cpu: quantity '7,5' is no Kubernetes quantity"):
        pool_allocatable_quota(["gpu01"], {"gpu01": {"cpu": "7,5"}}, ["cpu"])


def test_excluded_resources_are_those_a_prefix_matches():
    covered = ["nvidia.com/gpu", "cpu", "memory", "rdma/ib"]
    assert excluded_resources(covered, ["rdma/"]) == ["rdma/ib"]
    assert excluded_resources(covered, ["nvidia.com/", "", "mem"]) == ["memory", "nvidia.com/gpu"]
    assert excluded_resources(covered, []) == []


def test_pool_admissions_reports_each_registered_nodes_allocatable():
    live = [node("gpu01", admitted=True, taints=(POOL,), unschedulable=False)]
    live[0]["status"]["allocatable"].update({"cpu": "7500m", "memory": "31Gi"})
    out = pool_admissions(["gpu01", "gpu09"], live, {}, [], {}, None, **KW)
    assert out["allocatable"] == {"gpu01": {"nvidia.com/gpu": "2", "cpu": "7500m", "memory": "31Gi"}}


def test_pool_gpu_total_sums_admitted_nodes():
    assert pool_gpu_total(["gpu01", "gpu02"], {"gpu01": 2, "gpu02": "2", "gpu03": 2}) == 4


def test_pool_gpu_total_names_the_node_without_a_count():
    with pytest.raises(ValueError, match="gpu02"):
        pool_gpu_total(["gpu01", "gpu02"], {"gpu01": 2})


@pytest.mark.parametrize("bad", ["1.5", "2Gi", True, "-1"])
def test_gpu_quantity_must_be_whole(bad):
    with pytest.raises(ValueError):
        parse_gpu_quantity(bad)


def test_quota_sums_flavors_and_filters_by_name():
    docs = [cq([4, "4"]), cq([16], name="other"), {"kind": "ResourceFlavor"}]
    assert clusterqueue_gpu_quota(docs) == 24
    assert clusterqueue_gpu_quota(docs, name="gpu") == 8


def test_quota_that_does_not_match_the_pool_is_an_error():
    assert quota_errors([cq([8])], 8, name="gpu") == []
    errors = quota_errors([cq([6])], 8, name="gpu")
    assert errors == ["ClusterQueue gpu: nominal nvidia.com/gpu quota is 6, but the admitted pool has 8 GPUs"]


def test_merge_taints_is_stable_when_nothing_changes():
    existing = [{"key": "other", "effect": "NoExecute"}, dict(HOLD, timeAdded="2026-01-01T00:00:00Z")]
    assert merge_taints(existing, [HOLD], []) == existing


def test_merge_taints_leaves_a_taint_it_sets_where_it_stands():
    # a node with the pool taint before an admin's: setting the pool taint again changes nothing (before, the pool
    # taint moved behind the admin's and every admission pass sent one needless write)
    admin = {"key": "admin/keep", "effect": "PreferNoSchedule"}
    pool = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}
    assert merge_taints([pool, admin], [pool], []) == [pool, admin]
    changed = dict(pool, value="slurm")
    assert merge_taints([pool, admin, HOLD], [changed], [HOLD["key"]]) == [changed, admin]


def test_merge_taints_adds_and_removes():
    assert merge_taints([{"key": "x", "effect": "NoSchedule"}], [HOLD], ["x"]) == [HOLD]
    assert merge_taints([HOLD], [], [HOLD["key"]]) == []


POOL = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}
FAIL = {"key": "gpufleet.io/gate", "value": "fail", "effect": "NoSchedule"}
KW = {"k8s_pool": "kubernetes", "label_key": "gpufleet.io/pool", "hold_taint": HOLD, "pool_taint": POOL,
      "fail_taint": FAIL}


def node(name="gpu03", allocatable="2", admitted=False, taints=(POOL, HOLD), unschedulable=True):
    labels = {"gpufleet.io/pool": "kubernetes", **({ADMITTED: "true"} if admitted else {})}
    status = {"allocatable": {"cpu": "64", "nvidia.com/gpu": allocatable}} if allocatable is not None else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"unschedulable": unschedulable, "taints": list(taints)}, "status": status}


def validator(node_name="gpu03", ready=True, phase="Running"):
    return {"metadata": {"name": f"nvidia-operator-validator-{node_name}"}, "spec": {"nodeName": node_name},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_pass_admits_a_node_whose_validator_passed_and_all_gpus_are_allocatable():
    state = node_admission(node(), 2, [validator()], "PASS", **KW)
    assert state["admitted"] and state["why"] == []
    assert state["labels"][ADMITTED] == "true"
    assert state["taints_remove"] == ["gpufleet.io/hold", "gpufleet.io/gate"] and state["taints_add"] == [POOL]


@pytest.mark.parametrize(("obj", "pods", "why"), [
    (node(allocatable="1"), [validator()], "allocatable nvidia.com/gpu is 1, the node has 2 GPUs"),
    (node(allocatable=None), [validator()], "allocatable nvidia.com/gpu is not reported"),
    (node(), [], "no GPU Operator validator pod on the node"),
    (node(), [validator("gpu04")], "no GPU Operator validator pod on the node"),
    (node(), [validator(ready=False)], "validator has not passed"),
    (node(), [validator(phase="Pending")], "validator has not passed"),
])
def test_pass_keeps_the_hold_until_the_gpus_are_validated_and_allocatable(obj, pods, why):
    state = node_admission(obj, 2, pods, "PASS", **KW)
    assert not state["admitted"] and HOLD in state["taints_add"]
    assert state["labels"][ADMITTED] is None
    assert any(why in w for w in state["why"]), state["why"]


def test_a_recorded_admission_is_kept_by_later_runs_without_a_verdict():
    state = node_admission(node(admitted=True, taints=(POOL,), unschedulable=False, allocatable="2"), **KW)
    assert state["admitted"] and state["labels"][ADMITTED] == "true"


def test_a_node_never_admitted_is_held_without_a_verdict():
    state = node_admission(node(), **KW)
    assert not state["admitted"] and state["taints_add"] == [POOL, HOLD]
    assert state["labels"] == {"gpufleet.io/pool": "kubernetes", "nvidia.com/gpu.deploy.operands": None,
                               ADMITTED: None, "gpufleet.io/leaf": None, "gpufleet.io/spine": None}


@pytest.mark.parametrize("verdict", ["FAIL", "ERROR"])
def test_fail_or_error_holds_an_admitted_node_and_drops_the_record(verdict):
    state = node_admission(node(admitted=True, taints=(POOL,), unschedulable=False), 2, [validator()], verdict, **KW)
    assert not state["admitted"] and state["labels"][ADMITTED] is None
    assert (FAIL in state["taints_add"]) is (verdict == "FAIL")


def test_a_node_with_the_fail_taint_stays_held_even_if_recorded_admitted():
    state = node_admission(node(admitted=True, taints=(POOL, FAIL)), **KW)
    assert not state["admitted"] and "fail taint" in state["why"][0]


def test_unknown_verdict_and_missing_count_fail_closed():
    with pytest.raises(ValueError, match="unknown gate verdict 'pass'"):
        node_admission(node(), 2, [validator()], "pass", **KW)
    with pytest.raises(ValueError, match="gpu03: no GPU count"):
        node_admission(node(), None, [validator()], "PASS", **KW)
    with pytest.raises(ValueError, match="not a whole number"):
        gpu_admission_errors(node(allocatable="1500m"), 2, [validator()])


def test_pod_ready_needs_running_and_ready():
    assert pod_ready(validator())
    assert not pod_ready(validator(ready=False)) and not pod_ready(validator(phase="Succeeded")) and not pod_ready({})


def test_pool_admissions_skips_unregistered_hosts_and_maps_node_names():
    live = [node("gpu03.lab"), node("gpu01", admitted=True, taints=(POOL,), unschedulable=False)]
    out = pool_admissions(["gpu01", "gpu03", "gpu09"], live, {"gpu03": 2}, [validator("gpu03.lab")],
                          {"gpu03": "PASS"}, {"gpu01": "gpu01", "gpu03": "gpu03.lab", "gpu09": "gpu09"}, **KW)
    assert out["unregistered"] == ["gpu09"]
    assert out["nodes"]["gpu03"]["name"] == "gpu03.lab" and out["nodes"]["gpu03"]["admitted"]
    assert out["nodes"]["gpu01"]["admitted"] and out["nodes"]["gpu01"]["taints"] == [POOL]
    patched = merge_taints(out["nodes"]["gpu03"]["taints"], out["nodes"]["gpu03"]["taints_add"],
                           out["nodes"]["gpu03"]["taints_remove"])
    assert patched == [POOL]


FABRIC = {"gpu01": {"gpufleet.io/leaf": "leaf1", "gpufleet.io/spine": "spine1"},
          "gpu03": {"gpufleet.io/leaf": "leaf2", "gpufleet.io/spine": "spine1"}}


def test_pool_nodes_get_their_fabric_labels_with_the_pool_label_admitted_or_held():
    live = [node("gpu01", admitted=True, taints=(POOL,), unschedulable=False), node("gpu03")]
    out = pool_admissions(["gpu01", "gpu03"], live, {"gpu03": 2}, [], {}, None, FABRIC, **KW)["nodes"]
    for host in ("gpu01", "gpu03"):
        labels = out[host]["labels"]
        assert labels["gpufleet.io/pool"] == "kubernetes"
        assert {k: labels[k] for k in fabric_label_keys()} == FABRIC[host]
    assert out["gpu01"]["admitted"] and not out["gpu03"]["admitted"]


def test_a_pool_node_outside_the_fabric_or_without_a_spine_loses_the_stale_levels():
    stale = node("gpu01")
    stale["metadata"]["labels"].update({"gpufleet.io/leaf": "old", "gpufleet.io/spine": "old"})
    live = [stale, node("gpu02")]
    fabric = {"gpu02": {"gpufleet.io/leaf": "leaf9"}}
    out = pool_admissions(["gpu01", "gpu02"], live, {}, [], {}, None, fabric, **KW)["nodes"]
    assert out["gpu01"]["labels"]["gpufleet.io/leaf"] is None and out["gpu01"]["labels"]["gpufleet.io/spine"] is None
    assert out["gpu02"]["labels"]["gpufleet.io/leaf"] == "leaf9" and out["gpu02"]["labels"]["gpufleet.io/spine"] is None


def test_a_fabric_label_the_model_does_not_know_is_refused_naming_the_node():
    with pytest.raises(ValueError, match=r"gpu01: gpufleet\.io/rack is no fabric label key"):
        node_admission(node("gpu01"), fabric_labels={"gpufleet.io/rack": "r1"}, **KW)


def test_a_node_leaving_loses_pool_admission_and_fabric_labels_and_its_operands():
    labels = leave_labels("gpufleet.io/pool")
    assert labels == {ADMITTED: None, "gpufleet.io/leaf": None, "gpufleet.io/pool": None,
                      "gpufleet.io/spine": None, "nvidia.com/gpu.deploy.operands": "false"}
    assert set(fabric_label_keys()) <= set(labels)


def test_two_hosts_resolving_to_one_registered_node_are_refused_naming_both():
    # gpu05's map says gpu04's FQDN; gpu04 finds the same Node by its short name
    live = [node("gpu04.lab.example", admitted=True, taints=(POOL,), unschedulable=False)]
    with pytest.raises(ValueError, match=r"gpu04 and gpu05 .*gpu04.lab.example"):
        pool_admissions(["gpu04", "gpu05"], live, {"gpu04": 2, "gpu05": 2}, [], {"gpu05": "PASS"},
                        {"gpu04": "gpu04", "gpu05": "gpu04.lab.example"}, **KW)
