"""Offline strict validation: CRD schema conversion, real mistakes rejected, core kinds, values."""

import pytest
from ansible.module_utils.k8s_schema import (
    crd_to_json_schema,
    drop_nulls,
    load_crds,
    validate_document,
    validate_values,
)
from conftest import crd_dir

K8S = "1.33"


@pytest.fixture(scope="module")
def registry():
    return load_crds([str(crd_dir("kueue")), str(crd_dir("volcano")), str(crd_dir("kuberay")),
                      str(crd_dir("gpu_operator") / "nvidia.com_clusterpolicies.yaml.gz")])


def clusterqueue(spec_extra=None, api="kueue.x-k8s.io/v1beta2"):
    spec = {
        "namespaceSelector": {},
        "resourceGroups": [{
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": "k8s-pool", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
        }],
    }
    spec.update(spec_extra or {})
    return {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": "gpu"}, "spec": spec}


def volcano_job(spec):
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}


def test_valid_v1beta2_clusterqueue_passes(registry):
    assert validate_document(clusterqueue({"cohortName": "all"}), registry, K8S) == []


def test_v1beta1_only_cohort_field_is_rejected_under_v1beta2(registry):
    errors = validate_document(clusterqueue({"cohort": "all"}), registry, K8S)
    assert len(errors) == 1
    assert "unknown field(s) cohort" in errors[0] and "cohortName" in errors[0]


def test_cohort_field_is_accepted_under_v1beta1(registry):
    doc = clusterqueue({"cohort": "all"}, api="kueue.x-k8s.io/v1beta1")
    assert validate_document(doc, registry, K8S) == []


def test_misspelt_min_available_is_rejected(registry):
    errors = validate_document(volcano_job({"minAvaliable": 2, "tasks": []}), registry, K8S)
    assert errors and "minAvaliable" in errors[0]
    assert validate_document(volcano_job({"minAvailable": 2}), registry, K8S) == []


def test_wrong_api_version_of_a_crd_kind_is_rejected(registry):
    errors = validate_document(clusterqueue(api="kueue.x-k8s.io/v1"), registry, K8S)
    assert errors == [
        "apiVersion: kueue.x-k8s.io/v1 is not served for kind ClusterQueue "
        "(served: kueue.x-k8s.io/v1beta1, kueue.x-k8s.io/v1beta2)"
    ]


def test_wrong_kind_in_a_known_group_is_rejected(registry):
    doc = {"apiVersion": "ray.io/v1", "kind": "RayJobs", "metadata": {"name": "x"}}
    assert "not a kind of group ray.io" in validate_document(doc, registry, K8S)[0]


def test_wrong_core_api_version_is_rejected(registry):
    doc = {"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "x"}}
    assert "no schema for apps/v1beta1 Deployment" in validate_document(doc, registry, K8S)[0]


def test_unknown_core_field_is_rejected_and_valid_core_passes(registry):
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "labels": {"x": "y"}}}
    assert validate_document(ns, registry, K8S) == []
    assert "unknown field(s) spek" in validate_document({**ns, "spek": {}}, registry, K8S)[0]


def test_wrong_type_is_rejected(registry):
    errors = validate_document(volcano_job({"minAvailable": "two"}), registry, K8S)
    assert errors and errors[0].startswith("spec.minAvailable:")


def test_unknown_metadata_field_is_rejected(registry):
    doc = clusterqueue()
    doc["metadata"]["label"] = {"a": "b"}
    assert "unknown field(s) label" in validate_document(doc, registry, K8S)[0]


def test_nulls_are_dropped_like_the_api_server(registry):
    policy = {
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
        "spec": {"validator": {"plugin": None}},
    }
    assert not any("plugin" in e for e in validate_document(policy, registry, K8S))


def test_int_or_string_quantities_accept_both_forms(registry):
    for quota in (8, "8"):
        doc = clusterqueue()
        doc["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = quota
        assert validate_document(doc, registry, K8S) == []


def test_conversion_keeps_preserve_unknown_fields_open():
    schema = crd_to_json_schema({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}},
                     "x-kubernetes-preserve-unknown-fields": True},
            "closed": {"type": "object", "properties": {"a": {"type": "string", "nullable": True}}},
        },
    })
    assert "additionalProperties" not in schema["properties"]["spec"]
    assert schema["properties"]["closed"]["additionalProperties"] is False
    assert schema["properties"]["closed"]["properties"]["a"]["type"] == ["string", "null"]
    assert schema["additionalProperties"] is False


def test_drop_nulls_is_recursive_and_keeps_falsy_values():
    assert drop_nulls({"a": None, "b": {"c": None, "d": 0, "e": False}, "f": [{"g": None}]}) == {
        "b": {"d": 0, "e": False}, "f": [{}],
    }


def test_values_schema_rejects_unknown_key():
    schema = {"type": "object", "additionalProperties": False, "properties": {"driver": {"type": "object"}}}
    assert validate_values({"driver": {}}, schema, "gpu-operator") == []
    errors = validate_values({"drivers": {}}, schema, "gpu-operator")
    assert errors and errors[0].startswith("gpu-operator: <root>: unknown field(s) drivers")
