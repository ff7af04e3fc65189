"""Pool wiring: GPU totals, ClusterQueue quota that must follow the pool, taints, node state."""

import pytest
from ansible.module_utils.k8s_pool import (
    clusterqueue_gpu_quota,
    merge_taints,
    node_pool_state,
    parse_gpu_quantity,
    pool_gpu_total,
    quota_errors,
)

HOLD = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}


def cq(quotas, name="gpu"):
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"resourceGroups": [{
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": f"f{i}", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": q}]}
                        for i, q in enumerate(quotas)],
        }]},
    }


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


def test_merge_taints_adds_and_removes():
    assert merge_taints([{"key": "x", "effect": "NoSchedule"}], [HOLD], ["x"]) == [HOLD]
    assert merge_taints([HOLD], [], [HOLD["key"]]) == []


def test_node_planned_into_kubernetes_is_held_until_admitted():
    state = node_pool_state({"gpu01": "kubernetes"}, "gpu01", "kubernetes", "gpufleet.io/pool", HOLD)
    assert state["labels"]["gpufleet.io/pool"] == "kubernetes"
    assert state["taints_add"] == [HOLD] and state["cordon"] is True
    admitted = node_pool_state({"gpu01": {"pool": "kubernetes", "admitted": True}}, "gpu01", "kubernetes",
                               "gpufleet.io/pool", HOLD)
    assert admitted["taints_remove"] == [HOLD["key"]] and admitted["cordon"] is False


def test_node_planned_elsewhere_disables_gpu_operator_operands():
    state = node_pool_state({"gpu02": "slurm"}, "gpu02", "kubernetes", "gpufleet.io/pool", HOLD)
    assert state["labels"] == {"gpufleet.io/pool": "slurm", "nvidia.com/gpu.deploy.operands": "false"}
    assert state["cordon"] is True


def test_node_missing_from_plan_is_an_error():
    with pytest.raises(ValueError, match="gpu09"):
        node_pool_state({}, "gpu09", "kubernetes", "gpufleet.io/pool", HOLD)


def test_pool_taint_is_kept_on_kubernetes_nodes_and_removed_elsewhere():
    pool = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}
    k8s = node_pool_state({"a": {"pool": "kubernetes", "admitted": True}}, "a", "kubernetes", "k", HOLD, pool)
    assert k8s["taints_add"] == [pool]
    other = node_pool_state({"b": "slurm"}, "b", "kubernetes", "k", HOLD, pool)
    assert other["taints_remove"] == ["gpufleet.io/pool"] and other["taints_add"] == [HOLD]
