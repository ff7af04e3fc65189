"""Static scheduling check: each blocking item of issue 20 is caught with the values as rendered before the fix."""


import k8s_schedule_check
import pytest
import yaml
from ansible.module_utils.k8s_pool import merge_taints, pool_admissions
from ansible.module_utils.k8s_sched import (
    ADMITTED,
    FAILED,
    HELD,
    SYSTEM,
    model_nodes,
    parse_taint,
    schedule_errors,
    tolerates,
    toleration_errors,
)
from hypothesis import given, settings
from hypothesis import strategies as st

K3S_SERVER_TAINT = "node-role.kubernetes.io/control-plane=true:NoSchedule"
KUBEADM_SERVER_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
FAIL_TAINT = {"key": "gpufleet.io/gate", "value": "fail", "effect": "NoSchedule"}
POOL_TAINT = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}
HOLD_TAINT = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}
# The modelled cluster: gpu01 admitted by an earlier gate (recorded by the label), gpu04 registered and held.
PLAN = {"gpu01": True, "gpu04": False}

OPERAND_TOLERATIONS = [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "gpufleet.io/pool", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "gpufleet.io/hold", "operator": "Exists", "effect": "NoSchedule"},
]
SYSTEM_TOLERATIONS = [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]

# The values the roles rendered before the fix (issue 20): operands tolerate pool and hold, nothing else is set.
BEFORE = {
    "gpu-operator": {"driver": {"enabled": False}, "operator": {"defaultRuntime": "containerd"},
                     "daemonsets": {"tolerations": OPERAND_TOLERATIONS}},
    "volcano": {"basic": {"image_tag_version": "v1.15.1"}, "custom": {"scheduler_config_override": "actions: x"}},
    "kueue": {"managerConfig": {"controllerManagerConfigYaml": "kind: Configuration"}},
    "kuberay": {"image": {"tag": "v1.7.0"}, "batchScheduler": {"name": "volcano"}},
}
# The values the roles render now.
AFTER = {
    "gpu-operator": {**BEFORE["gpu-operator"],
                     "operator": {"tolerations": SYSTEM_TOLERATIONS},
                     "node-feature-discovery": {"master": {"tolerations": SYSTEM_TOLERATIONS},
                                                "gc": {"tolerations": SYSTEM_TOLERATIONS},
                                                "worker": {"tolerations": OPERAND_TOLERATIONS}}},
    "volcano": {**BEFORE["volcano"], "custom": {"default_tolerations": SYSTEM_TOLERATIONS}},
    "kueue": {**BEFORE["kueue"], "controllerManager": {"tolerations": SYSTEM_TOLERATIONS}},
    "kuberay": {**BEFORE["kuberay"], "tolerations": SYSTEM_TOLERATIONS},
}


def patches(plan=PLAN):
    """Node patches as k8s_pool_labels renders them, from the role's own admission function on modelled nodes."""
    admitted_label = "node-restriction.kubernetes.io/gpufleet-admitted"
    objs = [{"metadata": {"name": node, "labels": {admitted_label: "true"} if admitted else {}}}
            for node, admitted in plan.items()]
    states = pool_admissions(sorted(plan), objs, {}, k8s_pool="kubernetes", label_key="gpufleet.io/pool",
                             hold_taint=HOLD_TAINT, pool_taint=POOL_TAINT, fail_taint=FAIL_TAINT)["nodes"]
    return [{"metadata": {"name": node, "labels": state["labels"]},
             "spec": {"taints": merge_taints(state["taints"], state["taints_add"], state["taints_remove"])}}
            for node, state in sorted(states.items())]


def nodes(system_taints=(K3S_SERVER_TAINT,), plan=PLAN, cni_ready=True):
    return model_nodes(patches(plan), list(system_taints), FAIL_TAINT, cni_ready=cni_ready)


def test_model_has_each_state_with_the_plans_taints():
    model = {n["state"]: n for n in nodes()}
    assert set(model) == {SYSTEM, HELD, ADMITTED, FAILED}
    assert {t["key"] for t in model[HELD]["taints"]} == {"gpufleet.io/pool", "gpufleet.io/hold"}
    # The hold is the taint alone: no patch carries a cordon (an admin's or maintenance's stands).
    assert not model[HELD]["unschedulable"] and not model[ADMITTED]["unschedulable"]
    assert {t["key"] for t in model[ADMITTED]["taints"]} == {"gpufleet.io/pool"}
    assert "gpufleet.io/gate" in {t["key"] for t in model[FAILED]["taints"]}
    assert model[SYSTEM]["taints"] == [{"key": "node-role.kubernetes.io/control-plane", "value": "true",
                                        "effect": "NoSchedule"}]


def test_charts_equal_empty_toleration_misses_the_k3s_taint_but_exists_matches_both():
    equal_empty = {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
                   "effect": "NoSchedule"}
    k3s, kubeadm = parse_taint(K3S_SERVER_TAINT), parse_taint(KUBEADM_SERVER_TAINT)
    assert not tolerates(equal_empty, k3s)
    assert tolerates(equal_empty, kubeadm)
    assert tolerates(SYSTEM_TOLERATIONS[0], k3s) and tolerates(SYSTEM_TOLERATIONS[0], kubeadm)
    assert tolerates({"operator": "Exists"}, k3s)
    assert not tolerates({"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                          "effect": "NoExecute"}, k3s)


def test_rendered_values_land_everywhere_they_must():
    assert schedule_errors(AFTER, nodes()) == []
    assert schedule_errors(AFTER, nodes(system_taints=[KUBEADM_SERVER_TAINT])) == []


@pytest.mark.parametrize("component, key", [
    ("gpu-operator/gpu-operator", "operator.tolerations"),
    ("gpu-operator/nfd-master", "node-feature-discovery.master.tolerations"),
    ("gpu-operator/nfd-gc", "node-feature-discovery.gc.tolerations"),
    ("volcano/volcano-admission", "custom.admission_tolerations"),
    ("volcano/volcano-controllers", "custom.controller_tolerations"),
    ("volcano/volcano-scheduler", "custom.scheduler_tolerations"),
    ("kueue/kueue-controller-manager", "controllerManager.tolerations"),
    ("kuberay/kuberay-operator", "tolerations"),
])
def test_item1_controllers_with_no_system_toleration_are_caught(component, key):
    errors = schedule_errors(BEFORE, nodes())
    expected = (f"{component} (Deployment) cannot land on a system node: taint "
                f"node-role.kubernetes.io/control-plane=true:NoSchedule is not tolerated by {key}")
    assert expected in errors


def test_item2_nfd_worker_without_its_own_tolerations_leaves_gpus_unschedulable():
    values = {**AFTER, "gpu-operator": {k: v for k, v in AFTER["gpu-operator"].items()
                                        if k != "node-feature-discovery"}}
    values["gpu-operator"]["node-feature-discovery"] = {"master": {"tolerations": SYSTEM_TOLERATIONS},
                                                        "gc": {"tolerations": SYSTEM_TOLERATIONS}}
    errors = schedule_errors(values, nodes())
    assert ("gpu-operator/nfd-worker (DaemonSet) cannot land on held GPU node gpu04: taint "
            "gpufleet.io/pool=kubernetes:NoSchedule is not tolerated by node-feature-discovery.worker.tolerations"
            in errors)
    assert any(e.startswith("gpu-operator/nfd-worker (DaemonSet) cannot land on admitted GPU node gpu01")
               for e in errors)
    for operand in ("device-plugin", "operator-validator", "dcgm-exporter"):
        assert any(e.startswith(f"gpu-operator/{operand} (DaemonSet) cannot land on admitted GPU node gpu01: "
                                f"node lacks label nvidia.com/gpu.deploy.{operand}=true") for e in errors), operand


def test_item2_operands_need_the_operator_running_to_be_labelled():
    values = {**AFTER, "gpu-operator": {**AFTER["gpu-operator"],
                                        "operator": {"tolerations": [], "nodeSelector": {"kubernetes.io/os": "linux"}}}}
    errors = schedule_errors(values, nodes())
    assert any(e.startswith("gpu-operator/device-plugin (DaemonSet) cannot land on held GPU node gpu04")
               for e in errors)


def test_item3_a_missing_pool_plan_fails_closed():
    errors = schedule_errors(AFTER, nodes(plan={}))
    assert errors == ["no held node in the model: the pool plan leaves nothing to check (fail closed)",
                      "no admitted node in the model: the pool plan leaves nothing to check (fail closed)"]


def test_item4_kubeadm_without_a_cni_leaves_every_deployment_pending():
    errors = schedule_errors(AFTER, nodes(system_taints=[KUBEADM_SERVER_TAINT], cni_ready=False))
    assert ("kueue/kueue-controller-manager (Deployment) cannot land on a system node: taint "
            "node.kubernetes.io/not-ready=:NoSchedule is not tolerated by controllerManager.tolerations" in errors)
    # DaemonSets are not held back by the not-ready taint's NoSchedule either: they tolerate only NoExecute.
    assert any(e.startswith("gpu-operator/nfd-worker (DaemonSet) cannot land on held GPU node") for e in errors)


def test_operands_that_tolerate_the_fail_taint_are_caught_on_a_failed_node():
    broad = [{"operator": "Exists"}]
    values = {**AFTER, "gpu-operator": {**AFTER["gpu-operator"], "daemonsets": {"tolerations": broad}}}
    errors = schedule_errors(values, nodes())
    assert any(e.startswith("gpu-operator/device-plugin (DaemonSet) would land on failed GPU node gpu04 (as failed)")
               and "daemonsets.tolerations" in e for e in errors)
    assert schedule_errors(values, nodes(), allowed_on_failed=["operator-validator", "device-plugin",
                                                                "dcgm-exporter"]) == []


def test_node_selector_and_required_affinity_are_read_at_the_charts_keys():
    selector = {"node-role.kubernetes.io/control-plane": "yes"}
    values = {**AFTER, "kuberay": {**AFTER["kuberay"], "nodeSelector": selector}}
    assert any("node lacks label node-role.kubernetes.io/control-plane=yes required by nodeSelector" in e
               for e in schedule_errors(values, nodes()))
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpufleet.io/pool", "operator": "In", "values": ["kubernetes"]}]}]}}}
    values = {**AFTER, "volcano": {"custom": {"default_tolerations": SYSTEM_TOLERATIONS, "default_affinity": affinity}}}
    assert any(e.startswith("volcano/volcano-scheduler (Deployment) cannot land on a system node: required node "
                            "affinity at custom.default_affinity") for e in schedule_errors(values, nodes()))


def test_a_disabled_component_is_not_checked():
    values = {**BEFORE, "volcano": {"custom": {"admission_enable": False, "controller_enable": False,
                                               "scheduler_enable": False}}}
    assert not any(e.startswith("volcano/") for e in schedule_errors(values, nodes()))


def test_module_fails_naming_component_key_and_state(tmp_path):
    paths = {}
    for release, values in BEFORE.items():
        paths[release] = tmp_path / f"{release}.yaml"
        paths[release].write_text(yaml.safe_dump(values))
    nodes_file = tmp_path / "nodes.yaml"
    nodes_file.write_text(yaml.safe_dump_all(patches()))
    params = {"values": {k: str(v) for k, v in paths.items()}, "nodes_src": str(nodes_file),
              "system_taints": [K3S_SERVER_TAINT], "fail_taint": FAIL_TAINT, "allowed_on_failed": [],
              "cni_ready": True}
    result = k8s_schedule_check.run(params)
    assert result["failed"] and not result["changed"]
    assert "kueue/kueue-controller-manager (Deployment) cannot land on a system node" in result["msg"]
    assert result["nodes"] == {"system": SYSTEM, "gpu01": ADMITTED, "gpu04": HELD, "gpu04 (as failed)": FAILED}
    for release, values in AFTER.items():
        paths[release].write_text(yaml.safe_dump(values))
    result = k8s_schedule_check.run(params)
    assert not result.get("failed") and result["errors"] == []
    assert len(result["components"]) == 12


def test_bad_taint_is_an_error():
    with pytest.raises(ValueError, match="key\\[=value\\]:Effect"):
        parse_taint("no-effect")
    with pytest.raises(ValueError, match="needs a key and an effect"):
        parse_taint({"key": "a", "effect": "Sometimes"})



# Kubernetes rules at the pinned version (playbooks/vars/k8s_versions.yml: 1.34): the API server's
# ValidateTolerations and ValidateNodeSelector (pkg/apis/core/validation), and the scheduler's node
# affinity (component-helpers nodeaffinity: an empty term matches nothing, matchFields knows metadata.name).
CONTROL_PLANE_EXISTS = SYSTEM_TOLERATIONS[0]


def by_name_affinity(*fields, expressions=()):
    term = {"matchFields": list(fields)}
    if expressions:
        term["matchExpressions"] = list(expressions)
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def test_an_empty_toleration_list_means_no_tolerations():
    # Helm replaces a list given in the values: `tolerations: []` drops the chart's default toleration,
    # and the chart renders no tolerations at all.
    values = {**AFTER, "gpu-operator": {**AFTER["gpu-operator"],
                                        "operator": {"tolerations": []}}}
    errors = schedule_errors(values, nodes(system_taints=[KUBEADM_SERVER_TAINT]))
    assert ("gpu-operator/gpu-operator (Deployment) cannot land on a system node: taint "
            "node-role.kubernetes.io/control-plane=:NoSchedule is not tolerated by operator.tolerations" in errors)


@pytest.mark.parametrize("toleration, reason", [
    ({**CONTROL_PLANE_EXISTS, "value": "true"}, "value must be empty when operator is Exists"),
    ({**CONTROL_PLANE_EXISTS, "tolerationSeconds": 300}, "effect must be NoExecute when tolerationSeconds is set"),
    ({"operator": "Equal", "value": "true", "effect": "NoSchedule"}, "operator must be Exists when key is empty"),
    ({**CONTROL_PLANE_EXISTS, "operator": "exists"}, "operator must be Equal or Exists"),
    ({**CONTROL_PLANE_EXISTS, "effect": "noschedule"}, "effect must be NoSchedule, PreferNoSchedule or NoExecute"),
    ({"key": "gpufleet.io/pool kubernetes", "operator": "Exists"}, "key must be a label name"),
    ({"key": "gpufleet.io/pool", "operator": "Equal", "value": "kubernetes pool"}, "value must be a label value"),
])
def test_a_toleration_the_api_server_refuses_is_reported_invalid(toleration, reason):
    values = {**AFTER, "kueue": {**AFTER["kueue"],
                                 "controllerManager": {"tolerations": [CONTROL_PLANE_EXISTS, toleration]}}}
    errors = schedule_errors(values, nodes())
    expected = (f"kueue/kueue-controller-manager (Deployment) is refused by the API server, so it never runs: "
                f"controllerManager.tolerations[1]: {reason}")
    assert expected in errors, errors
    assert not any(e.startswith("kueue/") and "cannot land" in e for e in errors)


def test_an_operator_the_api_server_refuses_runs_nowhere_and_labels_no_node():
    refused = [{**CONTROL_PLANE_EXISTS, "value": "true"}]
    values = {**AFTER, "gpu-operator": {**AFTER["gpu-operator"],
                                        "operator": {"tolerations": refused}}}
    errors = schedule_errors(values, nodes())
    assert any(e.startswith("gpu-operator/gpu-operator (Deployment) is refused by the API server") for e in errors)
    # No operator, no operand labels: the device plugin lands nowhere.
    assert any(e.startswith("gpu-operator/device-plugin (DaemonSet) cannot land on admitted GPU node gpu01: "
                            "node lacks label nvidia.com/gpu.deploy.device-plugin=true") for e in errors)


def test_match_fields_selects_gpu_nodes_by_name():
    values = {**AFTER, "gpu-operator": {**AFTER["gpu-operator"], "node-feature-discovery": {
        **AFTER["gpu-operator"]["node-feature-discovery"],
        "worker": {"tolerations": OPERAND_TOLERATIONS,
                   "affinity": by_name_affinity({"key": "metadata.name", "operator": "In", "values": ["gpu01"]})}}}}
    errors = schedule_errors(values, nodes())
    assert ("gpu-operator/nfd-worker (DaemonSet) cannot land on held GPU node gpu04: required node affinity at "
            "node-feature-discovery.worker.affinity matches no label or field of the node" in errors), errors
    assert not any(e.startswith("gpu-operator/nfd-worker (DaemonSet) cannot land on admitted GPU node gpu01")
                   for e in errors)


def test_match_fields_on_the_unnamed_system_node_fails_closed():
    # The model's system node stands for every control-plane node: their names are not known here.
    affinity = by_name_affinity({"key": "metadata.name", "operator": "In", "values": ["ctl1"]})
    values = {**AFTER, "kuberay": {**AFTER["kuberay"], "affinity": affinity}}
    errors = schedule_errors(values, nodes())
    assert any(e.startswith("kuberay/kuberay-operator (Deployment) cannot be shown to land on a system node: "
                            "required node affinity at affinity selects by metadata.name") for e in errors), errors


def test_an_empty_node_selector_term_matches_no_node():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}
    values = {**AFTER, "kuberay": {**AFTER["kuberay"], "affinity": affinity}}
    assert ("kuberay/kuberay-operator (Deployment) cannot land on a system node: required node affinity at "
            "affinity matches no label or field of the node" in schedule_errors(values, nodes()))


@pytest.mark.parametrize("requirement, reason", [
    ({"key": "metadata.labels", "operator": "In", "values": ["x"]}, "matchFields key must be metadata.name"),
    ({"key": "metadata.name", "operator": "In", "values": ["gpu01", "gpu04"]},
     "matchFields In and NotIn take exactly one value"),
    ({"key": "metadata.name", "operator": "Exists"}, "matchFields operator must be In or NotIn"),
])
def test_match_fields_the_api_server_refuses_is_reported_invalid(requirement, reason):
    values = {**AFTER, "kuberay": {**AFTER["kuberay"], "affinity": by_name_affinity(requirement)}}
    errors = schedule_errors(values, nodes())
    expected = (f"kuberay/kuberay-operator (Deployment) is refused by the API server, so it never runs: "
                f"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                f".matchFields[0]: {reason}")
    assert expected in errors, errors


TOLERATION_POOL = [
    CONTROL_PLANE_EXISTS,
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    {"operator": "Exists"},
    {**CONTROL_PLANE_EXISTS, "value": "true"},
    {**CONTROL_PLANE_EXISTS, "tolerationSeconds": 60},
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"operator": "Equal", "value": "x"},
    {"key": "gpufleet.io/gate", "operator": "In", "value": "fail"},
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(TOLERATION_POOL), max_size=4))
def test_a_component_is_either_refused_or_placed_never_both(tolerations):
    values = {**AFTER, "kueue": {**AFTER["kueue"], "controllerManager": {"tolerations": tolerations}}}
    kueue = [e for e in schedule_errors(values, nodes()) if e.startswith("kueue/")]
    refused = toleration_errors(tolerations, "controllerManager.tolerations")
    if refused:
        assert kueue == [f"kueue/kueue-controller-manager (Deployment) is refused by the API server, so it never "
                         f"runs: {reason}" for reason in refused]
    else:
        # An empty list tolerates nothing: the control-plane taint keeps it off the system node.
        on_system = any(tolerates(t, parse_taint(K3S_SERVER_TAINT)) for t in tolerations)
        assert (kueue == []) == on_system or any("would land on failed" in e for e in kueue), kueue
