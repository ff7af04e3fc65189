#!/usr/bin/python
"""Ansible module: static scheduling check of the Kubernetes pool's add-ons against the pool's nodes."""

DOCUMENTATION = r"""
---
module: k8s_schedule_check
short_description: Check offline that every add-on component can land where it must
description:
  - Models the nodes as the pool plan leaves them, that is a system (control-plane) node with O(system_taints),
    the GPU nodes of the rendered Node patches of C(k8s_pool_labels) (cordoned = held, else admitted),
    and a failed node (a held node with O(fail_taint), as the health gate leaves it).
  - Reads the rendered Helm values of each release in O(values) at the charts' own keys (tolerations,
    nodeSelector, required node affinity; subchart keys such as C(node-feature-discovery.worker.tolerations))
    and fails, naming the component, the values key and the node state, when an operator, controller or
    webhook Deployment cannot land on a system node, when NFD's worker, the device plugin, the validator
    or the DCGM exporter cannot land on a held or admitted GPU node, or when anything not in
    O(allowed_on_failed) would land on a failed node.
  - Fails as well when the API server would refuse a component's tolerations or node affinity (Kubernetes
    1.34 validation; the component then never runs), and when a placement cannot be judged offline
    (C(matchFields) on C(metadata.name) for the system node, whose names are not modelled). A toleration
    list given empty means no tolerations; an empty node selector term matches no node.
  - The GPU Operator's node labelling is simulated (NFD labels the nodes its worker reaches, the operator
    then labels them for its operands unless C(nvidia.com/gpu.deploy.operands=false)).
  - Read-only; never reports a change. Runs the same in check mode. No cluster is contacted.
version_added: "1.0.0"
author:
  - gpufleet
options:
  values:
    description: Release name (C(gpu-operator), C(volcano), C(kueue), C(kuberay)) -> path of its rendered values.yaml.
    type: dict
    required: true
  nodes_src:
    description: Path of the rendered Node patches (multi-document YAML) of the planned GPU nodes.
    type: path
    required: true
  system_taints:
    description: Taints of the system (control-plane) nodes, as C(key=value:Effect) strings or mappings.
    type: list
    elements: raw
    required: true
  fail_taint:
    description: Taint the health gate puts on a node that failed (health_gate_k8s_fail_taint).
    type: raw
    default: {key: gpufleet.io/gate, value: fail, effect: NoSchedule}
  allowed_on_failed:
    description: Component names that may run on a failed node (what the gate needs there).
    type: list
    elements: str
    default: []
  cni_ready:
    description: Whether the nodes have a network plugin; without one every node is NotReady and tainted.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Check the add-ons can be scheduled on the pool
  k8s_schedule_check:
    values:
      gpu-operator: /var/lib/gpufleet/k8s/gpu_operator/values.yaml
      kueue: /var/lib/gpufleet/k8s/kueue/values.yaml
    nodes_src: /var/lib/gpufleet/k8s/k8s_pool_labels/nodes.yaml
    system_taints: ["node-role.kubernetes.io/control-plane=true:NoSchedule"]
  delegate_to: localhost
"""

RETURN = r"""
components:
  description: Components checked, as release/name.
  returned: always
  type: list
  elements: str
nodes:
  description: Modelled nodes as name -> state (system, held, admitted, failed).
  returned: always
  type: dict
errors:
  description: Why a component cannot land where it must (empty on success).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.k8s_sched import COMPONENTS, model_nodes, schedule_errors

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None


def _load(path, many=False):
    with open(path, encoding="utf-8") as handle:
        if many:
            return [doc for doc in yaml.safe_load_all(handle) if doc]
        return yaml.safe_load(handle) or {}


def run(params):
    """Result dict of the check; ``failed`` with ``msg`` when a component cannot land where it must."""
    try:
        release_values = {name: _load(path) for name, path in params["values"].items()}
        gpu_nodes = _load(params["nodes_src"], many=True)
        nodes = model_nodes(gpu_nodes, params["system_taints"], params["fail_taint"],
                            cni_ready=params["cni_ready"])
        errors = schedule_errors(release_values, nodes, params["allowed_on_failed"])
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return {"failed": True, "msg": f"k8s_schedule_check: {exc}", "changed": False,
                "components": [], "nodes": {}, "errors": [str(exc)]}
    result = {
        "changed": False,
        "components": [f"{c['release']}/{c['name']}" for c in COMPONENTS if c["release"] in release_values],
        "nodes": {n["name"]: n["state"] for n in nodes},
        "errors": errors,
    }
    if errors:
        result.update(failed=True, msg="add-ons cannot be scheduled on the pool: " + "; ".join(errors))
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "values": {"type": "dict", "required": True},
            "nodes_src": {"type": "path", "required": True},
            "system_taints": {"type": "list", "elements": "raw", "required": True},
            "fail_taint": {"type": "raw", "default": {"key": "gpufleet.io/gate", "value": "fail",
                                                       "effect": "NoSchedule"}},
            "allowed_on_failed": {"type": "list", "elements": "str", "default": []},
            "cni_ready": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    if yaml is None:
        module.fail_json(msg="k8s_schedule_check needs PyYAML")
    result = run(module.params)
    if result.get("failed"):
        module.fail_json(**{k: v for k, v in result.items() if k != "failed"})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
