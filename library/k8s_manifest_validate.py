#!/usr/bin/python
"""Ansible module: validate Kubernetes manifests and Helm values offline and strictly."""

DOCUMENTATION = r"""
---
module: k8s_manifest_validate
short_description: Validate Kubernetes manifests and Helm values offline, strictly
description:
  - Validates Kubernetes manifests without a cluster. Custom resources are checked against the
    C(openAPIV3Schema) of the CustomResourceDefinitions found under O(crd_paths), converted to a strict
    JSON Schema (unknown fields are rejected unless the schema preserves them; a version the CRD does
    not serve is rejected). Core kinds are checked with the C(kubernetes-validate) library in strict mode.
  - Null map entries are dropped before validation, as the API server prunes them.
  - Optionally validates a Helm values document against a JSON Schema, and checks that the nominal
    GPU quota of Kueue ClusterQueues equals the GPU count of the pool.
  - Read-only; never reports a change. Runs the same in check mode.
  - With O(cel), the CEL rules (C(x-kubernetes-validations)) of the CRDs are evaluated with cel-python on every
    custom resource that passes its schema. Transition rules (they name C(oldSelf)) only run on updates and
    are skipped and counted; a rule cel-python cannot evaluate (a Kubernetes CEL extension it lacks) is
    reported in RV(cel.unevaluable) and fails the task unless O(cel_unevaluable=warn).
  - Gang feasibility checks that only an admission webhook makes today always run on Volcano Jobs
    (C(minAvailable) above the replicas); with O(pool_gpus), PodGroups, Volcano Jobs, Volcano Queues and
    Kueue ClusterQueues asking for more GPUs than the pool has are refused too.
  - Admission webhooks themselves are not run.
version_added: "1.0.0"
author:
  - gpufleet
options:
  src:
    description:
      - Manifest files or directories (searched recursively for C(.yaml), C(.yml), C(.json), each also
        gzip-compressed as C(.gz)) on the host the module runs on. Every YAML document in them is validated.
    type: list
    elements: path
    default: []
  content:
    description: Multi-document YAML text to validate.
    type: str
  documents:
    description: Manifests given as data (a list of mappings).
    type: list
    elements: raw
    default: []
  crd_paths:
    description:
      - Files or directories holding CustomResourceDefinition manifests (plain or C(.gz)) whose schemas
        validate custom resources. A custom resource whose group is unknown and that is not a core kind fails.
      - gpufleet keeps the CRDs of the pinned add-on versions in C(files/crds/<component>/<version>/).
      - Two files that define the same kind are an error (two versions of one add-on in the paths).
    type: list
    elements: path
    default: []
  kubernetes_version:
    description: Kubernetes minor version whose core schemas apply (for example C(1.33)).
    type: str
    default: "1.33"
  strict:
    description: Reject fields the schemas do not list.
    type: bool
    default: true
  values:
    description: A Helm values document to validate against O(values_schema).
    type: dict
  values_schema:
    description: JSON Schema (draft 4 keywords) for O(values). Required with O(values).
    type: dict
  values_name:
    description: Label for O(values) in error messages (for example the chart name).
    type: str
    default: values
  cel:
    description: Evaluate the CEL rules (C(x-kubernetes-validations)) of the CRDs.
    type: bool
    default: true
  cel_unevaluable:
    description: What a CEL rule that cannot be evaluated offline does to the result (C(fail) keeps the check closed).
    type: str
    choices: [fail, warn]
    default: fail
  pool_gpus:
    description:
      - GPU count of the pool the workloads run on. When set, PodGroups, Volcano Jobs and Queues and Kueue
        ClusterQueues that ask for more GPUs than this are refused.
    type: int
  gpu_quota:
    description:
      - When set, the summed nominal quota of O(gpu_quota.resource) over the ClusterQueue(s) among the
        documents must equal O(gpu_quota.expected).
    type: dict
    suboptions:
      expected:
        description: GPU count of the admitted Kubernetes-pool nodes.
        type: int
        required: true
      resource:
        description: Resource name of the GPUs.
        type: str
        default: nvidia.com/gpu
      clusterqueue:
        description: Only count this ClusterQueue (all ClusterQueues when omitted).
        type: str
requirements:
  - cel-python
  - jsonschema
  - kubernetes-validate
  - PyYAML
notes:
  - Supports check mode.
seealso:
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- name: Validate a user's RayJob and Volcano Job before submitting them
  k8s_manifest_validate:
    src:
      - jobs/
    crd_paths:
      - /opt/gpufleet/files/crds/kuberay/1.7.0
      - /opt/gpufleet/files/crds/volcano/1.15.1
  delegate_to: localhost

- name: Validate rendered Kueue objects and check the quota follows the pool
  k8s_manifest_validate:
    content: "{{ lookup('ansible.builtin.template', 'kueue/resources.yaml.j2') }}"
    crd_paths: ["{{ playbook_dir }}/../files/crds/kueue/0.19.2"]
    gpu_quota:
      expected: 8
      clusterqueue: gpu-pool

- name: Check Helm values for known keys
  k8s_manifest_validate:
    values: "{{ my_values }}"
    values_schema: "{{ my_values_schema }}"
    values_name: gpu-operator
"""

RETURN = r"""
documents:
  description: Number of manifests validated.
  returned: always
  type: int
  sample: 7
results:
  description: One entry per manifest.
  returned: always
  type: list
  elements: dict
  contains:
    source:
      description: File the document came from, or C(content) / C(documents).
      type: str
    index:
      description: Position of the document in its source.
      type: int
    document:
      description: Kind/namespace/name of the document.
      type: str
    errors:
      description: Validation errors (empty when valid).
      type: list
      elements: str
  sample:
    - source: content
      index: 0
      document: ClusterQueue/gpu-pool
      errors: ["spec: unknown field(s) cohort (allowed: ...)"]
cel:
  description: CEL rules over all documents.
  returned: always
  type: dict
  contains:
    evaluated:
      description: Rule evaluations that ran (passed or not).
      type: int
    skipped:
      description: Transition rule evaluations skipped (they need the old object).
      type: int
    unevaluable:
      description: Rules cel-python could not evaluate, with where and why.
      type: list
      elements: str
  sample: {evaluated: 12, skipped: 3, unevaluable: []}
errors:
  description: Every error, prefixed with source, index and document.
  returned: always
  type: list
  elements: str
  sample: ["content[0] ClusterQueue/gpu-pool: spec: unknown field(s) cohort"]
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.k8s_cel import HAS_CEL, CelRules
from ansible.module_utils.k8s_gang import gang_errors
from ansible.module_utils.k8s_pool import quota_errors
from ansible.module_utils.k8s_schema import (
    HAS_JSONSCHEMA,
    HAS_KUBERNETES_VALIDATE,
    HAS_YAML,
    load_crds,
    load_yaml_documents,
    read_text,
    validate_documents,
    validate_values,
    yaml_files,
)


def run(params):
    """Validate everything ``params`` names; return (documents, results, errors, cel summary)."""
    registry = load_crds(params["crd_paths"]) if params["crd_paths"] else None
    version = params["kubernetes_version"]
    strict = params["strict"]
    cel = CelRules() if params.get("cel", True) and registry else None
    all_docs = []
    results = []
    for path in yaml_files(params["src"]):
        docs = load_yaml_documents(read_text(path), path)
        all_docs.extend(docs)
        results.extend(validate_documents(docs, registry, version, strict, source=path, cel=cel))
    if params["content"]:
        docs = load_yaml_documents(params["content"], "content")
        all_docs.extend(docs)
        results.extend(validate_documents(docs, registry, version, strict, source="content", cel=cel))
    if params["documents"]:
        all_docs.extend(params["documents"])
        results.extend(
            validate_documents(params["documents"], registry, version, strict, source="documents", cel=cel)
        )
    errors = [
        f"{r['source']}[{r['index']}] {r['document']}: {error}" for r in results for error in r["errors"]
    ]
    summary = {"evaluated": 0, "skipped": 0, "unevaluable": []}
    for r in results:
        report = r.get("cel") or {}
        summary["evaluated"] += report.get("evaluated", 0)
        summary["skipped"] += report.get("skipped", 0)
        summary["unevaluable"].extend(f"{r['source']}[{r['index']}] {r['document']}: {u}"
                                      for u in report.get("unevaluable", []))
    if params.get("cel_unevaluable", "fail") == "fail":
        errors.extend(f"CEL rule not evaluated offline: {u}" for u in summary["unevaluable"])
    errors.extend(gang_errors(all_docs, params.get("pool_gpus")))
    if params["values"] is not None:
        errors.extend(validate_values(params["values"], params["values_schema"], params["values_name"]))
    quota = params["gpu_quota"]
    if quota:
        errors.extend(quota_errors(all_docs, quota["expected"], quota["resource"], quota["clusterqueue"]))
    return len(all_docs), results, errors, summary


def main():
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "list", "elements": "path", "default": []},
            "content": {"type": "str"},
            "documents": {"type": "list", "elements": "raw", "default": []},
            "crd_paths": {"type": "list", "elements": "path", "default": []},
            "kubernetes_version": {"type": "str", "default": "1.33"},
            "strict": {"type": "bool", "default": True},
            "values": {"type": "dict"},
            "values_schema": {"type": "dict"},
            "values_name": {"type": "str", "default": "values"},
            "cel": {"type": "bool", "default": True},
            "cel_unevaluable": {"type": "str", "choices": ["fail", "warn"], "default": "fail"},
            "pool_gpus": {"type": "int"},
            "gpu_quota": {
                "type": "dict",
                "options": {
                    "expected": {"type": "int", "required": True},
                    "resource": {"type": "str", "default": "nvidia.com/gpu"},
                    "clusterqueue": {"type": "str"},
                },
            },
        },
        required_by={"values": ["values_schema"]},
        required_one_of=[["src", "content", "documents", "values"]],
        supports_check_mode=True,
    )
    for ok, lib in ((HAS_YAML, "PyYAML"), (HAS_JSONSCHEMA, "jsonschema"),
                    (HAS_KUBERNETES_VALIDATE, "kubernetes-validate"),
                    (HAS_CEL or not module.params["cel"], "cel-python")):
        if not ok:
            module.fail_json(msg=missing_required_lib(lib))
    try:
        count, results, errors, cel = run(module.params)
    except (OSError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    for text in cel["unevaluable"] if module.params["cel_unevaluable"] == "warn" else []:
        module.warn(f"CEL rule not evaluated offline: {text}")
    if errors:
        module.fail_json(
            msg=f"{len(errors)} validation error(s): " + "; ".join(errors[:20]),
            documents=count, results=results, errors=errors, cel=cel, changed=False,
        )
    module.exit_json(changed=False, documents=count, results=results, errors=[], cel=cel)


if __name__ == "__main__":
    main()
