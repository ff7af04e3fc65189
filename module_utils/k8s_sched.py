"""Static scheduling check of the Kubernetes pool's add-ons, offline and without a scheduler.

The nodes are modelled as the pool plan leaves them (a system node with the control-plane taint, and
GPU nodes held, admitted and failed, each with labels, taints and cordon); each add-on component is
described by where it must run and by the keys of its chart's values that place it (tolerations,
nodeSelector, required node affinity). ``schedule_errors`` says, per component, values key and node
state, where a component cannot land where it must, or lands where it must not.

Chart facts (value keys and the defaults at them) were read from the pinned charts' own values.yaml
and templates: gpu-operator v26.7.0 (with its node-feature-discovery 0.19.0 subchart), volcano 1.15.1,
kueue 0.19.2, kuberay-operator 1.7.0. Helm replaces a list or scalar given in the values and merges maps:
a toleration list given empty (or null) renders no tolerations, whatever the chart's default.

Kubernetes rules are those of the pinned minor (1.34). A component whose tolerations or node affinity
the API server refuses (ValidateTolerations, ValidateNodeSelector) is never created: it is reported as
refused, not as placed. Node affinity is matched as the scheduler does: terms are ORed, an empty term
matches no node, and matchFields knows one field, metadata.name, with In or NotIn and one value. The
model's system node stands for every control-plane node, whose names are not known here: a matchFields
term there cannot be judged, and the check fails closed.
"""

import re

from ansible.module_utils.k8s_state import HOLD_TAINT

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

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Label names and values (k8s.io/apimachinery validation: IsQualifiedName, IsValidLabelValue).
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# The one node field matchFields can select on (nodeaffinity's extractNodeFields).
NODE_NAME_FIELD = "metadata.name"

# Whether a component lands on a node: it does, it does not, or the model cannot tell (fail closed).
LANDS, NO, UNKNOWN = "lands", "no", "unknown"

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


def _given(values, dotted):
    """Whether ``dotted`` is a key of the values (its value may be empty or null)."""
    parent, _, last = dotted.rpartition(".")
    node = get_path(values, parent) if parent else values
    return isinstance(node, dict) and last in node


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


def _label_name_ok(key):
    if not isinstance(key, str) or not key:
        return False
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return len(name) <= 63 and bool(_NAME_PART.match(name))


def _label_value_ok(value):
    return isinstance(value, str) and (value == "" or (len(value) <= 63 and bool(_NAME_PART.match(value))))


def toleration_errors(tolerations, where):
    """Why the API server refuses a toleration list (ValidateTolerations), one error per toleration and rule.

    Work at risk: none (read-only).
    """
    if not isinstance(tolerations, list):
        return [f"{where}: must be a list of tolerations"]
    errors = []
    for index, toleration in enumerate(tolerations):
        at = f"{where}[{index}]"
        if not isinstance(toleration, dict):
            errors.append(f"{at}: must be a mapping")
            continue
        key, operator = toleration.get("key") or "", toleration.get("operator") or ""
        value, effect = toleration.get("value") or "", toleration.get("effect") or ""
        if key and not _label_name_ok(key):
            errors.append(f"{at}: key must be a label name")
        if not key and operator != "Exists":
            errors.append(f"{at}: operator must be Exists when key is empty")
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errors.append(f"{at}: effect must be NoExecute when tolerationSeconds is set")
        if operator in ("Equal", ""):
            if not _label_value_ok(str(value)):
                errors.append(f"{at}: value must be a label value")
        elif operator == "Exists":
            if value:
                errors.append(f"{at}: value must be empty when operator is Exists")
        else:
            errors.append(f"{at}: operator must be Equal or Exists")
        if effect and effect not in TAINT_EFFECTS:
            errors.append(f"{at}: effect must be NoSchedule, PreferNoSchedule or NoExecute")
    return errors


def _requirement_errors(expr, at, allow_invalid_values):
    if not isinstance(expr, dict):
        return [f"{at}: must be a mapping"]
    errors, operator, values = [], expr.get("operator"), expr.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            errors.append(f"{at}: values are required with In and NotIn")
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(f"{at}: values must be empty with Exists and DoesNotExist")
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(f"{at}: Gt and Lt take exactly one value")
    else:
        errors.append(f"{at}: operator must be In, NotIn, Exists, DoesNotExist, Gt or Lt")
    if not _label_name_ok(expr.get("key")):
        errors.append(f"{at}: key must be a label name")
    if not allow_invalid_values and not all(_label_value_ok(str(v)) for v in values):
        errors.append(f"{at}: values must be label values")
    return errors


def _field_requirement_errors(expr, at):
    if not isinstance(expr, dict):
        return [f"{at}: must be a mapping"]
    errors = []
    if expr.get("operator") in ("In", "NotIn"):
        if len(expr.get("values") or []) != 1:
            errors.append(f"{at}: matchFields In and NotIn take exactly one value")
    else:
        errors.append(f"{at}: matchFields operator must be In or NotIn")
    if expr.get("key") != NODE_NAME_FIELD:
        errors.append(f"{at}: matchFields key must be {NODE_NAME_FIELD}")
    return errors


def _term_errors(term, at, allow_invalid_values):
    if not isinstance(term, dict):
        return [f"{at}: must be a mapping"]
    errors = []
    for index, expr in enumerate(term.get("matchExpressions") or []):
        errors.extend(_requirement_errors(expr, f"{at}.matchExpressions[{index}]", allow_invalid_values))
    for index, expr in enumerate(term.get("matchFields") or []):
        errors.extend(_field_requirement_errors(expr, f"{at}.matchFields[{index}]"))
    return errors


def node_affinity_errors(affinity, where):
    """Why the API server refuses an affinity's node affinity (ValidateNodeSelector, preferred terms).

    Work at risk: none (read-only).
    """
    if not affinity:
        return []
    if not isinstance(affinity, dict):
        return [f"{where}: must be a mapping"]
    node_affinity = affinity.get("nodeAffinity") or {}
    errors = []
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        at = f"{where}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = (required or {}).get("nodeSelectorTerms") or []
        if not terms:
            errors.append(f"{at}: must have at least one node selector term")
        for index, term in enumerate(terms):
            errors.extend(_term_errors(term, f"{at}[{index}]", allow_invalid_values=False))
    for index, preferred in enumerate(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        at = f"{where}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{index}]"
        weight = (preferred or {}).get("weight")
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            errors.append(f"{at}.weight: must be in the range 1-100")
        errors.extend(_term_errors((preferred or {}).get("preference") or {}, f"{at}.preference",
                                   allow_invalid_values=True))
    return errors


def refusals(place):
    """Why the API server refuses the component's object for its placement ([] when it accepts it).

    Work at risk: none (read-only).
    """
    tol_key, tolerations = place["tolerations"]
    aff_key, affinity = place["affinity"]
    return toleration_errors(tolerations, tol_key) + node_affinity_errors(affinity, aff_key)


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


def _term_matches(term, labels, node_name):
    """True, False, or None when the term selects by name and the node's name is not known."""
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    if not all(_match_expression(e, labels) for e in expressions):
        return False
    if fields and node_name is None:
        return None
    for field in fields:
        equal = node_name == str(field["values"][0])
        if equal != (field["operator"] == "In"):
            return False
    return True


def required_affinity_matches(affinity, labels, node_name=None):
    """Required node affinity: True when a term matches, False when none does, None when it cannot be told.

    Terms are ORed; a term matches when all its expressions and fields do; an empty term matches no node;
    a field (metadata.name) cannot be told without ``node_name``. Preferred terms are ignored.
    """
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    verdicts = [_term_matches(term, labels, node_name) for term in (required or {}).get("nodeSelectorTerms") or []]
    if any(verdicts):
        return True
    return None if None in verdicts else False


def placement(component, values):
    """Effective tolerations, nodeSelector and affinity of ``component`` from its release's values."""

    def first(keys, default, empty=None):
        given_empty = None
        for key in keys:
            found = get_path(values, key)
            if found:
                return key, found
            if empty is not None and given_empty is None and _given(values, key):
                given_empty = key
        if given_empty is not None:
            # Helm replaces a list: given empty (or null), the chart's default list is gone.
            return given_empty, empty
        return (keys[0] if keys else "(chart default)"), default

    tol_key, tolerations = first(component["tolerations"], component["default_tolerations"], empty=[])
    if isinstance(tolerations, (list, tuple)):
        tolerations = list(tolerations)
    sel_key, selector = first(component["node_selector"], component["default_node_selector"])
    aff_key, affinity = first(component["affinity"], {})
    return {"tolerations": (tol_key, tolerations), "node_selector": (sel_key, dict(selector)),
            "affinity": (aff_key, dict(affinity))}


def why_not(component, place, node):
    """None when ``component`` can land on ``node``, else the reason naming the values key."""
    return verdict(component, place, node)[1]


def verdict(component, place, node):
    """(LANDS, None), (NO, reason) or (UNKNOWN, reason): whether ``component`` lands on ``node``.

    ``place`` must be one the API server accepts (see ``refusals``). UNKNOWN: the required node affinity
    selects by name and the node's name is not modelled (the system node).

    Work at risk: none (read-only).
    """
    tol_key, tolerations = place["tolerations"]
    if component["kind"] == "DaemonSet":
        tolerations = tolerations + DAEMONSET_TOLERATIONS
    taints = list(node["taints"]) + ([UNSCHEDULABLE_TAINT] if node.get("unschedulable") else [])
    for taint in taints:
        if taint["effect"] == "PreferNoSchedule":
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            shown = f"{taint['key']}={taint.get('value') or ''}:{taint['effect']}"
            return NO, f"taint {shown} is not tolerated by {tol_key}"
    sel_key, selector = place["node_selector"]
    for key, value in selector.items():
        if str(node["labels"].get(key)) != str(value):
            return NO, f"node lacks label {key}={value} required by {sel_key}"
    if component["operand"]:
        label = f"nvidia.com/gpu.deploy.{component['operand']}"
        if node["labels"].get(label) != "true":
            return NO, (f"node lacks label {label}=true, which the GPU Operator sets only on nodes that NFD's "
                        f"worker labelled {NFD_NVIDIA_LABEL} and that do not carry {DEPLOY_OPERANDS}=false")
    aff_key, affinity = place["affinity"]
    matches = required_affinity_matches(affinity, node["labels"], node.get("node_name"))
    if matches is None:
        return UNKNOWN, (f"required node affinity at {aff_key} selects by {NODE_NAME_FIELD}, and the model's "
                         f"{node['state']} node has no name to match (cannot judge: fail closed)")
    if not matches:
        return NO, f"required node affinity at {aff_key} matches no label or field of the node"
    return LANDS, None


def model_nodes(gpu_nodes, system_taints, fail_taint, system_labels=None, cni_ready=True, hold_key=HOLD_TAINT):
    """Nodes in each state: system, and the planned GPU nodes (held/admitted) plus a failed copy of one.

    ``gpu_nodes``: Node patches as k8s_pool_labels renders them (metadata.labels, spec.taints; a cordon is
    the admin's, never in a patch). A GPU node is held when it carries the hold taint ``hold_key``, else
    admitted. The failed node is a held node with the gate's fail taint, as health_gate leaves it. Labels that
    are removed (null) are dropped.
    """
    base = {"kubernetes.io/os": "linux"}
    nodes = [{"name": "system", "state": SYSTEM, "node_name": None,
              "labels": {**base, CONTROL_PLANE: "true", **(system_labels or {})},
              "taints": [parse_taint(t) for t in system_taints], "unschedulable": False}]
    held = None
    for doc in gpu_nodes:
        meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
        labels = {**base, **{k: str(v) for k, v in (meta.get("labels") or {}).items() if v is not None}}
        taints = [parse_taint(t) for t in spec.get("taints") or []]
        node = {"name": meta.get("name"), "node_name": meta.get("name"), "labels": labels, "taints": taints,
                "unschedulable": bool(spec.get("unschedulable")), "gpu": True}
        node["state"] = HELD if node["unschedulable"] or any(t["key"] == hold_key for t in taints) else ADMITTED
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


def _cannot(component, place, node, where):
    state, reason = verdict(component, place, node)
    verb = "cannot be shown to land" if state == UNKNOWN else "cannot land"
    return f"{component['release']}/{component['name']} ({component['kind']}) {verb} on {where}: {reason}"


def schedule_errors(release_values, nodes, allowed_on_failed=()):
    """Errors naming component, values key and node state; [] when every component lands where it must.

    ``release_values``: release -> rendered values (a release left out is not checked).
    The GPU Operator's own labelling is simulated: NFD's worker labels the GPU nodes it lands on, and
    the operator (if it lands on a system node) gives them the operand deploy labels.

    Work at risk: none (read-only). It is the gate in front of the add-ons' install, so it fails closed:
    a component the API server would refuse is an error (it never runs), a placement it cannot judge
    (matchFields on the unnamed system node) is an error both where the component must land and on a
    failed node, and a model without a system, held or admitted node is an error.
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
    refused = {name: refusals(place) for name, place in placed.items()}
    by_name = {c["name"]: c for c in components}

    def lands(name, node):
        return name in by_name and not refused[name] and verdict(by_name[name], placed[name], node)[0] == LANDS

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
        if refused[name]:
            errors.extend(f"{label} ({comp['kind']}) is refused by the API server, so it never runs: {reason}"
                          for reason in refused[name])
            continue
        if comp["must"] == SYSTEM:
            system = [n for n in nodes if n["state"] == SYSTEM]
            if not any(verdict(comp, place, n)[0] == LANDS for n in system):
                errors.append(_cannot(comp, place, system[0], "a system node"))
        else:
            for node in nodes:
                if node["state"] in comp["must"] and verdict(comp, place, node)[0] != LANDS:
                    errors.append(_cannot(comp, place, node, f"{node['state']} GPU node {node['name']}"))
        if name not in allowed_on_failed:
            for node in nodes:
                state, reason = verdict(comp, place, node) if node["state"] == FAILED else (NO, None)
                if state == LANDS:
                    errors.append(f"{label} ({comp['kind']}) would land on failed GPU node {node['name']}: "
                                  f"only {', '.join(allowed_on_failed) or 'nothing'} may run there "
                                  f"(check {place['tolerations'][0]})")
                elif state == UNKNOWN:
                    errors.append(f"{label} ({comp['kind']}) may land on failed GPU node {node['name']}: {reason}")
    return sorted(set(errors), key=errors.index)
