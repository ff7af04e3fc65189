"""Static scheduling check of the Kubernetes pool's add-ons, offline and without a scheduler.

The nodes are modelled as the pool plan leaves them (a system node with the control-plane taint, and
GPU nodes held, admitted and failed, each with labels, taints and cordon); each add-on component is
described by where it must run and by the keys of its chart's values that place it (tolerations,
nodeSelector, required node affinity). ``schedule_errors`` says, per component, values key and node
state, where a component cannot land where it must, or lands where it must not.

Chart facts (value keys and the defaults at them) were read from the pinned charts' own values.yaml
and templates: gpu-operator v26.7.0 (with its node-feature-discovery 0.19.0 subchart), volcano 1.15.1,
kueue 0.19.2, kuberay-operator 1.7.0. Helm replaces a list or scalar given in the values and merges maps.
"""

CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
CP_EQUAL_EMPTY = {"key": CONTROL_PLANE, "operator": "Equal", "value": "", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
OS_LINUX = {"kubernetes.io/os": "linux"}

# Label NFD's worker publishes for an NVIDIA PCI device; the GPU Operator keys gpu.present off it.
NFD_NVIDIA_LABEL = "feature.node.kubernetes.io/pci-10de.present"
DEPLOY_OPERANDS = "nvidia.com/gpu.deploy.operands"

# Tolerations the DaemonSet controller adds to every DaemonSet pod (Kubernetes docs, DaemonSet).
DAEMONSET_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
# A node whose kubelet reports no network plugin is NotReady; the node controller taints it.
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}

SYSTEM = "system"
HELD = "held"
ADMITTED = "admitted"
FAILED = "failed"
GPU_STATES = (HELD, ADMITTED)


def _c(release, name, kind, must, tolerations, node_selector=(), affinity=(), enabled=None,
       default_tolerations=(), default_node_selector=None, operand=None):
    return {
        "release": release, "name": name, "kind": kind, "must": must,
        "tolerations": list(tolerations), "node_selector": list(node_selector), "affinity": list(affinity),
        "enabled": enabled, "default_tolerations": list(default_tolerations),
        "default_node_selector": dict(default_node_selector or {}), "operand": operand,
    }


_NFD = "node-feature-discovery"
# Components and where they must run. Key lists: the first key with a non-empty value wins (volcano's
# per-component value falls back to default_*), else the chart's default applies.
COMPONENTS = [
    _c("gpu-operator", "gpu-operator", "Deployment", SYSTEM, ["operator.tolerations"],
       ["operator.nodeSelector"], ["operator.affinity"],
       default_tolerations=[CP_EQUAL_EMPTY], default_node_selector=OS_LINUX),
    _c("gpu-operator", "nfd-master", "Deployment", SYSTEM, [f"{_NFD}.master.tolerations"],
       [f"{_NFD}.master.nodeSelector"], [f"{_NFD}.master.affinity"], enabled="nfd.enabled",
       default_tolerations=[CP_EQUAL_EMPTY]),
    _c("gpu-operator", "nfd-gc", "Deployment", SYSTEM, [f"{_NFD}.gc.tolerations"],
       [f"{_NFD}.gc.nodeSelector"], [f"{_NFD}.gc.affinity"], enabled="nfd.enabled"),
    _c("gpu-operator", "nfd-worker", "DaemonSet", GPU_STATES, [f"{_NFD}.worker.tolerations"],
       [f"{_NFD}.worker.nodeSelector"], [f"{_NFD}.worker.affinity"], enabled="nfd.enabled",
       default_tolerations=[CP_EQUAL_EMPTY, GPU_TOLERATION]),
    _c("gpu-operator", "operator-validator", "DaemonSet", GPU_STATES, ["daemonsets.tolerations"],
       default_tolerations=[GPU_TOLERATION], operand="operator-validator"),
    _c("gpu-operator", "device-plugin", "DaemonSet", GPU_STATES, ["daemonsets.tolerations"],
       default_tolerations=[GPU_TOLERATION], operand="device-plugin"),
    _c("gpu-operator", "dcgm-exporter", "DaemonSet", GPU_STATES, ["daemonsets.tolerations"],
       default_tolerations=[GPU_TOLERATION], operand="dcgm-exporter"),
    _c("volcano", "volcano-admission", "Deployment", SYSTEM,
       ["custom.admission_tolerations", "custom.default_tolerations"],
       ["custom.admission_ns", "custom.default_ns"], ["custom.admission_affinity", "custom.default_affinity"],
       enabled="custom.admission_enable"),
    _c("volcano", "volcano-controllers", "Deployment", SYSTEM,
       ["custom.controller_tolerations", "custom.default_tolerations"],
       ["custom.controller_ns", "custom.default_ns"], ["custom.controller_affinity", "custom.default_affinity"],
       enabled="custom.controller_enable"),
    _c("volcano", "volcano-scheduler", "Deployment", SYSTEM,
       ["custom.scheduler_tolerations", "custom.default_tolerations"],
       ["custom.scheduler_ns", "custom.default_ns"], ["custom.scheduler_affinity", "custom.default_affinity"],
       enabled="custom.scheduler_enable"),
    _c("kueue", "kueue-controller-manager", "Deployment", SYSTEM, ["controllerManager.tolerations"],
       ["controllerManager.nodeSelector"]),
    _c("kuberay", "kuberay-operator", "Deployment", SYSTEM, ["tolerations"], ["nodeSelector"], ["affinity"]),
]


def get_path(values, dotted):
    """Value at ``dotted`` (split on dots, the subchart key itself may hold dashes); None when absent."""
    node = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def parse_taint(spec):
    """A taint from ``key=value:Effect`` (k3s node-taint form) or a mapping."""
    if isinstance(spec, dict):
        if not spec.get("key") or spec.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError(f"taint {spec!r} needs a key and an effect NoSchedule/PreferNoSchedule/NoExecute")
        return {"key": spec["key"], "value": spec.get("value") or "", "effect": spec["effect"]}
    text = str(spec)
    if ":" not in text:
        raise ValueError(f"taint {text!r} is not key[=value]:Effect")
    head, effect = text.rsplit(":", 1)
    key, _, value = head.partition("=")
    return parse_taint({"key": key, "value": value, "effect": effect})


def tolerates(toleration, taint):
    """Whether one toleration matches one taint (Kubernetes semantics; operator defaults to Equal)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint["effect"]:
        return False
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if operator == "Exists":
        return key == "" or key == taint["key"]
    if operator != "Equal":
        raise ValueError(f"toleration {toleration!r}: operator must be Exists or Equal")
    return key == taint["key"] and str(toleration.get("value") or "") == str(taint.get("value") or "")


def _match_expression(expr, labels):
    key, operator, values = expr.get("key"), expr.get("operator"), [str(v) for v in expr.get("values") or []]
    if operator == "In":
        return key in labels and str(labels[key]) in values
    if operator == "NotIn":
        return key not in labels or str(labels[key]) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, IndexError, ValueError):
            return False
        return have > want if operator == "Gt" else have < want
    raise ValueError(f"node affinity expression {expr!r}: unknown operator")


def required_affinity_matches(affinity, labels):
    """Required node affinity: any term matches when all its expressions do; preferred terms ignored."""
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(all(_match_expression(e, labels) for e in t.get("matchExpressions") or []) for t in terms)


def placement(component, values):
    """Effective tolerations, nodeSelector and affinity of ``component`` from its release's values."""

    def first(keys, default):
        for key in keys:
            found = get_path(values, key)
            if found:
                return key, found
        return (keys[0] if keys else "(chart default)"), default

    tol_key, tolerations = first(component["tolerations"], component["default_tolerations"])
    sel_key, selector = first(component["node_selector"], component["default_node_selector"])
    aff_key, affinity = first(component["affinity"], {})
    return {"tolerations": (tol_key, list(tolerations)), "node_selector": (sel_key, dict(selector)),
            "affinity": (aff_key, dict(affinity))}


def why_not(component, place, node):
    """None when ``component`` can land on ``node``, else the reason naming the values key."""
    tol_key, tolerations = place["tolerations"]
    if component["kind"] == "DaemonSet":
        tolerations = tolerations + DAEMONSET_TOLERATIONS
    taints = list(node["taints"]) + ([UNSCHEDULABLE_TAINT] if node.get("unschedulable") else [])
    for taint in taints:
        if taint["effect"] == "PreferNoSchedule":
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            shown = f"{taint['key']}={taint.get('value') or ''}:{taint['effect']}"
            return f"taint {shown} is not tolerated by {tol_key}"
    sel_key, selector = place["node_selector"]
    for key, value in selector.items():
        if str(node["labels"].get(key)) != str(value):
            return f"node lacks label {key}={value} required by {sel_key}"
    aff_key, affinity = place["affinity"]
    if not required_affinity_matches(affinity, node["labels"]):
        return f"required node affinity at {aff_key} matches no label of the node"
    if component["operand"]:
        label = f"nvidia.com/gpu.deploy.{component['operand']}"
        if node["labels"].get(label) != "true":
            return (f"node lacks label {label}=true, which the GPU Operator sets only on nodes that NFD's "
                    f"worker labelled {NFD_NVIDIA_LABEL} and that do not carry {DEPLOY_OPERANDS}=false")
    return None


def model_nodes(gpu_nodes, system_taints, fail_taint, system_labels=None, cni_ready=True):
    """Nodes in each state: system, and the planned GPU nodes (held/admitted) plus a failed copy of one.

    ``gpu_nodes``: Node patches as k8s_pool_labels renders them (metadata.labels, spec.taints,
    spec.unschedulable). A GPU node is admitted when schedulable. The failed node is a held node with the
    gate's fail taint, as health_gate leaves it. Labels that are removed (null) are dropped.
    """
    base = {"kubernetes.io/os": "linux"}
    nodes = [{"name": "system", "state": SYSTEM,
              "labels": {**base, CONTROL_PLANE: "true", **(system_labels or {})},
              "taints": [parse_taint(t) for t in system_taints], "unschedulable": False}]
    held = None
    for doc in gpu_nodes:
        meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
        labels = {**base, **{k: str(v) for k, v in (meta.get("labels") or {}).items() if v is not None}}
        taints = [parse_taint(t) for t in spec.get("taints") or []]
        node = {"name": meta.get("name"), "labels": labels, "taints": taints,
                "unschedulable": bool(spec.get("unschedulable")), "gpu": True}
        node["state"] = HELD if node["unschedulable"] else ADMITTED
        nodes.append(node)
        if node["state"] == HELD and held is None:
            held = node
    if held is not None:
        nodes.append({**held, "name": f"{held['name']} (as failed)", "state": FAILED, "origin": held["name"],
                      "taints": held["taints"] + [parse_taint(fail_taint)]})
    if not cni_ready:
        for node in nodes:
            node["taints"] = node["taints"] + [NOT_READY_TAINT]
    return nodes


def _enabled(component, values):
    if component["enabled"] is None:
        return True
    flag = get_path(values, component["enabled"])
    return True if flag is None else bool(flag)


def schedule_errors(release_values, nodes, allowed_on_failed=()):
    """Errors naming component, values key and node state; [] when every component lands where it must.

    ``release_values``: release -> rendered values (a release left out is not checked).
    The GPU Operator's own labelling is simulated: NFD's worker labels the GPU nodes it lands on, and
    the operator (if it lands on a system node) gives them the operand deploy labels.
    """
    errors = []
    states = {n["state"] for n in nodes}
    for state in (SYSTEM, HELD, ADMITTED):
        if state not in states:
            errors.append(f"no {state} node in the model: the pool plan leaves nothing to check (fail closed)")
    if errors:
        return errors
    nodes = [dict(n, labels=dict(n["labels"])) for n in nodes]
    components = [c for c in COMPONENTS if c["release"] in release_values
                  and _enabled(c, release_values[c["release"]] or {})]
    placed = {c["name"]: placement(c, release_values[c["release"]] or {}) for c in components}
    by_name = {c["name"]: c for c in components}

    def lands(name, node):
        return name in by_name and why_not(by_name[name], placed[name], node) is None

    operator_up = any(lands("gpu-operator", n) for n in nodes if n["state"] == SYSTEM)
    by_node = {n["name"]: n for n in nodes}
    for node in nodes:
        # A failed node was held first: it keeps the labels NFD and the operator gave it then.
        origin = by_node.get(node.get("origin"), node)
        if node.get("gpu") and (lands("nfd-worker", node) or lands("nfd-worker", origin)):
            node["labels"][NFD_NVIDIA_LABEL] = "true"
            if operator_up and node["labels"].get(DEPLOY_OPERANDS) != "false":
                node["labels"]["nvidia.com/gpu.present"] = "true"
                for operand in ("operator-validator", "device-plugin", "dcgm-exporter"):
                    node["labels"][f"nvidia.com/gpu.deploy.{operand}"] = "true"

    for comp in components:
        name, place = comp["name"], placed[comp["name"]]
        label = f"{comp['release']}/{name}"
        if comp["must"] == SYSTEM:
            system = [n for n in nodes if n["state"] == SYSTEM]
            reasons = [why_not(comp, place, n) for n in system]
            if all(reasons):
                errors.append(f"{label} ({comp['kind']}) cannot land on a system node: {reasons[0]}")
        else:
            for node in nodes:
                if node["state"] in comp["must"]:
                    reason = why_not(comp, place, node)
                    if reason:
                        errors.append(f"{label} ({comp['kind']}) cannot land on {node['state']} GPU node "
                                      f"{node['name']}: {reason}")
        if name not in allowed_on_failed:
            for node in nodes:
                if node["state"] == FAILED and why_not(comp, place, node) is None:
                    errors.append(f"{label} ({comp['kind']}) would land on failed GPU node {node['name']}: "
                                  f"only {', '.join(allowed_on_failed) or 'nothing'} may run there "
                                  f"(check {place['tolerations'][0]})")
    return sorted(set(errors), key=errors.index)
