"""CEL rules (x-kubernetes-validations) of the pinned CRDs, evaluated offline (module_utils/k8s_cel.py)."""

import pytest
from ansible.module_utils.fabric import from_inventory, kueue_topology, volcano_hypernodes
from ansible.module_utils.k8s_cel import CelRules, collect_rules
from ansible.module_utils.k8s_schema import CrdRegistry, load_crds, validate_document
from conftest import crd_dir

K8S = "1.33"


@pytest.fixture(scope="module")
def registry():
    return load_crds([str(crd_dir("kueue")), str(crd_dir("volcano")), str(crd_dir("kuberay")),
                      str(crd_dir("gpu_operator"))])


@pytest.fixture(scope="module")
def cel():
    return CelRules()


def check(doc, registry, cel):
    report = {}
    return validate_document(doc, registry, K8S, cel=cel, cel_report=report), report


def flavor(spec):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "k8s-pool"},
            "spec": spec}


# Per CRD version: (rules, evaluated offline, transition rules skipped, unevaluable) with cel-python 0.5.0.
COUNTS = {
    ("kueue.x-k8s.io", "v1beta2", "ClusterQueue"): (4, 4, 0, 0),
    ("kueue.x-k8s.io", "v1beta2", "ResourceFlavor"): (10, 7, 3, 0),
    ("kueue.x-k8s.io", "v1beta2", "Topology"): (3, 2, 1, 0),
    ("kueue.x-k8s.io", "v1beta2", "Workload"): (23, 16, 7, 0),
    ("kueue.x-k8s.io", "v1beta2", "LocalQueue"): (1, 0, 1, 0),
    ("topology.volcano.sh", "v1alpha1", "HyperNode"): (2, 2, 0, 0),
    ("ray.io", "v1", "RayJob"): (9, 6, 3, 0),
    ("ray.io", "v1", "RayCluster"): (3, 1, 2, 0),
    ("nvidia.com", "v1alpha1", "NVIDIADriver"): (3, 1, 2, 0),
    ("nvidia.com", "v1alpha1", "GPUCluster"): (1, 1, 0, 0),
}


@pytest.mark.parametrize("key", sorted(COUNTS))
def test_rule_counts_per_crd(registry, cel, key):
    counts = cel.counts(registry.rules[key])
    assert (counts["rules"], counts["evaluable"], counts["transition"], counts["unevaluable"]) == COUNTS[key]


def test_every_rule_of_the_pinned_crds_compiles_or_is_a_transition_rule(registry, cel):
    total = {"rules": 0, "evaluable": 0, "transition": 0, "unevaluable": 0}
    for rules in registry.rules.values():
        for name, value in cel.counts(rules).items():
            total[name] += value
    assert total["unevaluable"] == 0
    assert total["rules"] == total["evaluable"] + total["transition"] and total["rules"] >= 100


def test_flavor_naming_a_topology_without_node_labels_is_caught(registry, cel):
    errors, report = check(flavor({"topologyName": "gpufleet-fabric", "nodeLabels": {}}), registry, cel)
    assert any("self.nodeLabels.size() >= 1" in e for e in errors), errors
    good, report = check(flavor({"topologyName": "gpufleet-fabric", "nodeLabels": {"gpufleet.io/pool": "kubernetes"}}),
                         registry, cel)
    assert good == [] and report["evaluated"] >= 1 and report["unevaluable"] == []


def test_flavor_naming_a_topology_without_any_node_labels_field_is_caught(registry, cel):
    errors, _ = check(flavor({"topologyName": "gpufleet-fabric"}), registry, cel)
    assert errors and "no such member" in errors[0]


def test_topology_with_hostname_above_the_lowest_level_is_caught(registry, cel):
    topo = kueue_topology(from_inventory({"gpu01": "leaf1"}), "fabric")
    assert check(topo, registry, cel)[0] == []
    topo["spec"]["levels"].reverse()
    errors, report = check(topo, registry, cel)
    assert errors == [
        "spec.levels: the kubernetes.io/hostname label can only be used at the lowest level of topology "
        "[CEL: size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || "
        "self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname']"
    ]
    assert report["skipped"] == 1  # self == oldSelf: a transition rule, only on update


def test_topology_with_a_repeated_level_is_caught(registry, cel):
    topo = kueue_topology(from_inventory({"gpu01": "leaf1"}), "fabric", hostname_level=False)
    topo["spec"]["levels"].append({"nodeLabel": "gpufleet.io/leaf"})
    errors, _ = check(topo, registry, cel)
    assert len(errors) == 1 and "must be unique" in errors[0]


def test_hypernode_selector_rules_run_on_every_member(registry, cel):
    fabric = from_inventory({"a": "leaf1", "b": "leaf2"}, {"leaf1": "spine1", "leaf2": "spine1"})
    docs = volcano_hypernodes(fabric)
    for doc in docs:
        errors, report = check(doc, registry, cel)
        assert errors == [] and report["evaluated"] == 2 * len(doc["spec"]["members"])
    docs[0]["spec"]["members"][0]["selector"]["exactMatch"] = {"name": "a"}
    errors, _ = check(docs[0], registry, cel)
    assert errors == ["spec.members[0].selector: Only one of ExactMatch, RegexMatch, or LabelMatch can be specified "
                      "[CEL: (has(self.exactMatch) ? 1 : 0) + (has(self.regexMatch) ? 1 : 0) + "
                      "(has(self.labelMatch) ? 1 : 0) <= 1]"]


def test_clusterqueue_borrowing_limit_without_cohort_is_caught(registry, cel):
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "gpu"},
          "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
              {"name": "k8s-pool",
               "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 2}]}]}]}}
    errors, _ = check(cq, registry, cel)
    assert len(errors) == 1 and "borrowingLimit" in errors[0]
    cq["spec"]["cohortName"] = "all"
    assert check(cq, registry, cel)[0] == []


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "spec": {"group": "example.gpufleet.io", "names": {"kind": "Box"}, "versions": [{
        "name": "v1", "served": True, "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"size": {"type": "string"}, "ids": {"type": "array", "items": {"type": "integer"}}},
            "x-kubernetes-validations": [
                {"rule": "quantity(self.size).isLessThan(quantity('1Gi'))", "message": "too big"},
                {"rule": "self.ids.isSorted()", "message": "ids must be sorted"},
                {"rule": "size(self.ids) > 0", "message": "ids must not be empty"},
                {"rule": "self.ids == oldSelf.ids", "message": "immutable"},
            ]}}}}}]},
}


def test_rules_using_kubernetes_extensions_are_reported_not_passed():
    registry = CrdRegistry()
    registry.add_crd(CRD)
    doc = {"apiVersion": "example.gpufleet.io/v1", "kind": "Box", "metadata": {"name": "b"},
           "spec": {"size": "2Gi", "ids": []}}
    errors, report = check(doc, registry, CelRules())
    assert errors == ["spec: ids must not be empty [CEL: size(self.ids) > 0]"]
    assert len(report["unevaluable"]) == 2
    assert "isLessThan" in report["unevaluable"][0] and "isSorted" in report["unevaluable"][1]
    assert report["skipped"] == 1 and report["evaluated"] == 1


def test_rules_do_not_run_where_their_field_is_absent():
    rules = collect_rules(CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert [r["path"] for r in rules] == [(("field", "spec"),)] * 4
    outcome = CelRules().evaluate({"metadata": {"name": "b"}}, rules)
    assert outcome == {"errors": [], "unevaluable": [], "evaluated": 0, "skipped": 0}
