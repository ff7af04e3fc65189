"""Kubernetes Node objects (as k8s_info returns them) read into the pool view."""
import pytest
from ansible.module_utils.k8s_state import HOLD_TAINT, POOL_LABEL, REASON_ANNOTATION, node_state, node_states
from ansible.module_utils.node_reason import make_reason, may_resume


def node(name="gpu01", labels=None, annotations=None, unschedulable=None, taints=None, ready="True"):
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                     "annotations": annotations or {}},
        "spec": {"podCIDR": "10.42.0.0/24"},
        "status": {"conditions": [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
            {"type": "Ready", "status": ready, "reason": "KubeletReady"},
        ]},
    }
    if unschedulable is not None:
        obj["spec"]["unschedulable"] = unschedulable
    if taints is not None:
        obj["spec"]["taints"] = taints
    return obj


def test_ready_labelled_node_is_in_service_in_its_pool():
    state = node_state(node(labels={POOL_LABEL: "k8s"}))
    assert state["pool"] == "k8s" and state["in_service"] and state["ready"] is True
    assert not state["unschedulable"] and state["taints"] == [] and state["reason"] is None


def test_unlabelled_node_has_no_pool():
    assert node_state(node())["pool"] is None


@pytest.mark.parametrize(("label", "pool"), [("kubernetes", "k8s"), ("k8s", "k8s"), ("slurm", "slurm"),
                                             ("gpu", "gpu")])
def test_pool_label_value_maps_to_the_policy_pool_name(label, pool):
    state = node_state(node(labels={POOL_LABEL: label}))
    assert state["pool"] == pool and state["pool_label"] == label


def test_pool_taint_does_not_take_a_pool_node_out_of_service():
    state = node_state(node(labels={POOL_LABEL: "kubernetes"},
                            taints=[{"key": POOL_LABEL, "value": "kubernetes", "effect": "NoSchedule"}]))
    assert state["in_service"]


def test_hold_taint_set_at_registration_without_annotation_is_ours():
    state = node_state(node(taints=[{"key": HOLD_TAINT, "value": "gate", "effect": "NoSchedule"}]))
    assert state["held_by_us"] and may_resume(state) and not state["in_service"]


def test_admin_annotation_keeps_even_our_hold_in_place():
    state = node_state(node(annotations={REASON_ANNOTATION: "RMA ticket 42"}, unschedulable=True,
                            taints=[{"key": HOLD_TAINT, "value": "gate", "effect": "NoSchedule"}]))
    assert not state["held_by_us"] and not may_resume(state)


def test_our_cordon_and_hold_taint_is_resumable():
    reason = make_reason("gate", "pending", target="k8s", run_id="r3")
    state = node_state(node(labels={POOL_LABEL: "k8s"}, annotations={REASON_ANNOTATION: reason},
                            unschedulable=True,
                            taints=[{"key": HOLD_TAINT, "value": "gate", "effect": "NoSchedule"},
                                    {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]))
    assert state["hold_taint"] and state["held_by_us"] and not state["in_service"]
    assert may_resume(state)


def test_admin_cordon_is_never_resumed():
    state = node_state(node(labels={POOL_LABEL: "k8s"}, unschedulable=True))
    assert not state["held_by_us"] and not state["in_service"]
    assert not may_resume(state)


def test_foreign_noexecute_taint_keeps_node_out_of_service():
    state = node_state(node(taints=[{"key": "nvidia.com/gpu", "value": "bad", "effect": "NoExecute"}]))
    assert not state["in_service"] and not state["hold_taint"]


@pytest.mark.parametrize(("status", "ready"), [("True", True), ("False", False), ("Unknown", None)])
def test_ready_condition(status, ready):
    state = node_state(node(ready=status))
    assert state["ready"] is ready
    assert state["in_service"] is (ready is True)


@pytest.mark.parametrize(("obj", "match"), [
    ({"kind": "Pod", "metadata": {"name": "x"}}, "kind Node"),
    ({"kind": "Node", "metadata": {}}, "metadata.name"),
    ("gpu01", "dict"),
    (node(taints=[{"value": "x"}]), "lacks key or effect"),
])
def test_unreadable_objects_raise(obj, match):
    with pytest.raises(ValueError, match=match):
        node_state(obj)


def test_node_states_reads_a_k8s_info_result():
    result = {"resources": [node("gpu01"), node("gpu02", labels={POOL_LABEL: "k8s"})], "api_found": True}
    states = node_states(result)
    assert {n: s["pool"] for n, s in states.items()} == {"gpu01": None, "gpu02": "k8s"}
