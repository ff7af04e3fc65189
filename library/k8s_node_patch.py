#!/usr/bin/python
"""Set and remove a Node's taints and labels by read-modify-write, guarded by the read's resourceVersion."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: k8s_node_patch
short_description: Change a Node's taints, labels and annotations without overwriting another writer's
description:
  - Reads the Node, computes its new taints (the ones it had, with I(taints_add) set and I(taints_remove)
    dropped), labels and annotations, and patches them with the resourceVersion it read. When the Node changed since the
    read (HTTP 409 Conflict), it reads again and retries, up to I(attempts) times; then it fails and says so.
  - This is how Kubernetes' controllers change a Node. C(kubernetes.core.k8s_taint) and a merge patch of
    C(spec.taints) send a list computed from an earlier read, which drops or revives a taint another writer
    (the node lifecycle controller, an admin) changed in between.
  - Never touches C(spec.unschedulable), so an admin's or maintenance's cordon stands.
  - Supports check mode and diff.
options:
  name:
    description: The Node's name.
    type: str
    required: true
  kubeconfig:
    description: Path of the kubeconfig to use.
    type: path
    required: true
  labels:
    description: Labels to set; a null value removes the label.
    type: dict
    default: {}
  annotations:
    description: Annotations to set; a null value removes the annotation.
    type: dict
    default: {}
  taints_add:
    description: Taints to set (key, value, effect); one with the same key and effect is replaced.
    type: list
    elements: dict
    default: []
  taints_remove:
    description: Keys of the taints to remove (every effect).
    type: list
    elements: str
    default: []
  attempts:
    description: Read-patch attempts before a run of conflicts fails the task.
    type: int
    default: 5
  missing_ok:
    description: A Node that is not registered (404) changes nothing and fails nothing (RV(missing) is true);
      without it the task fails naming the Node.
    type: bool
    default: false
requirements:
  - kubernetes (the Python client)
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Hold a node with the gate's fail taint and drop its admission label
  k8s_node_patch:
    name: gpu07
    kubeconfig: /etc/kubernetes/admin.conf
    taints_add: [{key: gpufleet.io/gate, value: fail, effect: NoSchedule}]
    labels: {node-restriction.kubernetes.io/gpufleet-admitted: null}
"""

RETURN = r"""
before:
  description: The Node's labels, annotations and taints as read by the last attempt.
  type: dict
  returned: always
after:
  description: The labels, annotations and taints the patch set (equal to before when nothing changed).
  type: dict
  returned: always
attempts:
  description: Attempts used (more than 1 after a conflict).
  type: int
  returned: always
missing:
  description: True when the Node is not registered and O(missing_ok) let the task pass.
  type: bool
  returned: when the Node is missing
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.k8s_node_patch import Conflict, patch_node


def _taint_spec(module, taint):
    if not isinstance(taint, dict) or not taint.get("key") or taint.get("effect") not in (
        "NoSchedule",
        "PreferNoSchedule",
        "NoExecute",
    ):
        module.fail_json(msg=f"taints_add: each taint needs a key and an effect "
                             f"(NoSchedule, PreferNoSchedule or NoExecute), not {taint!r}")
    unknown = set(taint) - {"key", "value", "effect"}
    if unknown:
        module.fail_json(msg=f"taints_add: unknown field(s) {sorted(unknown)} in {taint!r}")
    return {"key": str(taint["key"]), "value": None if taint.get("value") is None else str(taint["value"]),
            "effect": taint["effect"]}


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "kubeconfig": {"type": "path", "required": True},
            "labels": {"type": "dict", "default": {}},
            "annotations": {"type": "dict", "default": {}},
            "taints_add": {"type": "list", "elements": "dict", "default": []},
            "taints_remove": {"type": "list", "elements": "str", "default": []},
            "attempts": {"type": "int", "default": 5},
            "missing_ok": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    params = module.params
    taints_add = [_taint_spec(module, t) for t in params["taints_add"]]
    try:
        from kubernetes import client, config
        from kubernetes.client.rest import ApiException
    except ImportError as exc:
        module.fail_json(msg=f"k8s_node_patch needs the Python kubernetes client on this host (k8s_client role): {exc}")

    try:
        api = client.CoreV1Api(config.new_client_from_config(config_file=params["kubeconfig"]))
    except Exception as exc:  # a missing or unreadable kubeconfig: say which
        module.fail_json(msg=f"cannot load the kubeconfig {params['kubeconfig']}: {exc}")
    name = params["name"]

    def read(node):
        try:
            return api.api_client.sanitize_for_serialization(api.read_node(node))
        except ApiException as exc:
            if exc.status == 404:
                if params["missing_ok"]:
                    module.exit_json(changed=False, missing=True, before={}, after={}, attempts=1)
                module.fail_json(msg=f"Node {node} is not registered (404); nothing patched")
            module.fail_json(msg=f"cannot read Node {node}: {exc.status} {exc.reason}")

    def patch(node, body):
        try:
            api.patch_node(node, body)
        except ApiException as exc:
            if exc.status == 409:
                raise Conflict(str(exc.reason)) from exc
            module.fail_json(msg=f"cannot patch Node {node}: {exc.status} {exc.reason}: {exc.body}")

    try:
        result = patch_node(read, patch, name, params["labels"], taints_add, params["taints_remove"],
                            check_mode=module.check_mode, attempts=params["attempts"],
                            annotations=params["annotations"])
    except (RuntimeError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # the API server unreachable (urllib3), or another client error
        module.fail_json(msg=f"cannot reach the API server for Node {name}: {type(exc).__name__}: {exc}")
    module.exit_json(
        changed=result["changed"],
        before=result["before"],
        after=result["after"],
        attempts=result["attempts"],
        diff={"before": result["before"], "after": result["after"]},
    )


if __name__ == "__main__":
    main()
