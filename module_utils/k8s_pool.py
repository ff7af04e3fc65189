"""Pure helpers of the Kubernetes pool: GPU quota, node labels/taints and admission from the live state."""

import re
from fractions import Fraction

from ansible.module_utils.fabric import LEVELS
from ansible.module_utils.fabric import label_key as fabric_label_key

GPU_RESOURCE = "nvidia.com/gpu"

_QUANTITY = re.compile(r"^\+?([0-9]+)$")


def parse_gpu_quantity(value):
    """A GPU quantity as an int ("8", 8); GPUs are whole devices, anything else is an error."""
    if isinstance(value, bool):
        raise ValueError(f"GPU quantity {value!r} is not a whole number")
    if isinstance(value, int):
        return value
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"GPU quantity {value!r} is not a whole number")
    return int(match.group(1))


def pool_gpu_total(nodes, gpu_counts, resource=GPU_RESOURCE):
    """Sum the GPU counts of ``nodes``; ``gpu_counts`` maps node -> count, or -> ``{resource: count}`` where the
    node declares its GPU resources (``declared_gpu_resources``: then its ``resource``, 0 when it declares only
    others, such as MIG devices). Missing counts are errors."""
    missing = [node for node in nodes if gpu_counts.get(node) is None]
    if missing:
        raise ValueError(f"no GPU count for node(s) {', '.join(sorted(missing))}")
    return sum(gpu_counts[node].get(resource, 0) if isinstance(gpu_counts[node], dict)
               else parse_gpu_quantity(gpu_counts[node]) for node in nodes)


# A Kubernetes quantity (k8s.io/apimachinery resource.Quantity): a number, then a binary-SI suffix, a decimal-SI
# suffix or a decimal exponent ("7500m", "31Gi", "32847812Ki", "1e3").
_K8S_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value):
    """A non-negative Kubernetes quantity as an exact Fraction ("7500m" -> 15/2, "31Gi", 8); anything else
    (a sign, a unit Kubernetes does not know, a bool, an empty value) is a ValueError."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"quantity {value!r} is no Kubernetes quantity")
    text = str(value).strip()
    match = _K8S_QUANTITY.match(text)
    if not match:
        raise ValueError(f"quantity {value!r} is no Kubernetes quantity")
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * 1024 ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def format_quantity(value):
    """A quantity Kubernetes reads back exactly: a whole number as digits ("64", "68719476736"), else millis
    ("7500m"); a remainder below a milli is dropped (a quota is never rounded up)."""
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    millis = value * 1000
    return f"{millis.numerator // millis.denominator}m"


def pool_allocatable_quota(nodes, allocatable, resources):
    """``{resource: quantity}``: for each of ``resources``, the sum of the allocatable amounts of ``nodes``
    (``allocatable``: node -> its Node's ``status.allocatable``); every resource is ``"0"`` when ``nodes`` is empty.

    Work at risk: the ClusterQueue admits workloads up to this quota. Refused (fail closed): a node without
    allocatable, or without one of ``resources``, or with an amount that is no Kubernetes quantity, is a ValueError
    naming the node and the resource, never a guess.
    """
    totals = {resource: Fraction(0) for resource in resources}
    for node in nodes:
        amounts = (allocatable or {}).get(node)
        if not isinstance(amounts, dict):
            raise ValueError(f"{node}: no allocatable resources read for the node")
        for resource in resources:
            if amounts.get(resource) is None:
                raise ValueError(f"{node}: allocatable {resource} is not reported")
            try:
                totals[resource] += parse_quantity(amounts[resource])
            except ValueError as exc:
                raise ValueError(f"{node}: allocatable {resource}: {exc}") from exc
    return {resource: format_quantity(total) for resource, total in totals.items()}


def excluded_resources(resources, prefixes):
    """The resources of ``resources`` (sorted, once each) whose name starts with one of ``prefixes``: those Kueue
    ignores under ``resources.excludeResourcePrefixes`` (a plain prefix match, as Kueue's)."""
    prefixes = [str(p) for p in prefixes or [] if str(p)]
    return sorted({str(r) for r in resources or [] if any(str(r).startswith(p) for p in prefixes)})


def clusterqueue_gpu_quota(docs, resource=GPU_RESOURCE, name=None):
    """Nominal quota of ``resource`` summed over the flavors of the ClusterQueue(s) in ``docs``."""
    total = 0
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "ClusterQueue":
            continue
        if not str(doc.get("apiVersion", "")).startswith("kueue.x-k8s.io/"):
            continue
        if name is not None and (doc.get("metadata") or {}).get("name") != name:
            continue
        for group in (doc.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    if res.get("name") == resource:
                        total += parse_gpu_quantity(res.get("nominalQuota", 0))
    return total


def quota_errors(docs, expected, resource=GPU_RESOURCE, name=None):
    """Errors when the ClusterQueue quota of ``resource`` differs from the pool's GPU count."""
    found = clusterqueue_gpu_quota(docs, resource, name)
    label = f"ClusterQueue {name}" if name else "ClusterQueues"
    if found != expected:
        return [f"{label}: nominal {resource} quota is {found}, but the admitted pool has {expected} GPUs"]
    return []


def _taint_key(taint):
    return (taint.get("key"), taint.get("effect"))


def merge_taints(existing, add=(), remove=()):
    """Return ``existing`` taints with ``add`` set (same key+effect replaced) and ``remove`` keys dropped.

    Order is stable: each kept or replaced taint stays where it was, and new ones follow, so a node whose taints
    already hold ``add`` (in any place among others) compares equal and no patch is sent. A taint already there
    with the same value keeps its entry (its timeAdded).
    """
    remove_keys = {t["key"] if isinstance(t, dict) else t for t in remove}
    wanted = {}
    for taint in add:
        wanted[_taint_key(taint)] = {k: v for k, v in taint.items() if v is not None}
    merged, placed = [], set()
    for taint in existing or []:
        key = _taint_key(taint)
        if taint.get("key") in remove_keys and key not in wanted:
            continue
        if key in wanted:
            if key in placed:
                continue
            placed.add(key)
            want = wanted[key]
            merged.append(taint if taint.get("value") == want.get("value") else want)
        else:
            merged.append(taint)
    merged += [want for key, want in wanted.items() if key not in placed]
    return merged


ADMITTED_LABEL = "node-restriction.kubernetes.io/gpufleet-admitted"
VERDICTS = ("PASS", "FAIL", "ERROR")


def pod_ready(pod):
    """True when ``pod`` (a Pod object dict) is Running with its Ready condition True."""
    status = (pod or {}).get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
               for c in status.get("conditions") or [])


# The GPU resources a device plugin may advertise: whole or time-sliced GPUs (nvidia.com/gpu; renamed with
# renameByDefault: nvidia.com/gpu.shared) and MIG devices of the mixed strategy (nvidia.com/mig-<g>g.<mem>gb[.me]).
_GPU_RESOURCE_NAME = re.compile(r"^nvidia\.com/(gpu(\.shared)?|mig-[1-9][0-9]*g\.[1-9][0-9]*gb(\.me)?)$")


def is_gpu_resource(name):
    """Whether an extended resource name is one of the GPU resources the NVIDIA device plugin advertises."""
    return bool(_GPU_RESOURCE_NAME.match(str(name)))


def declared_gpu_resources(value, var="cluster_k8s_gpu_resources"):
    """The ``{resource: count}`` a node's device plugin must advertise, from host variable ``var``.

    For GPUs that are shared or partitioned, where allocatable ``nvidia.com/gpu`` is not the GPU count:
    time-slicing ``{nvidia.com/gpu: GPUs x replicas}``, MIG's single strategy ``{nvidia.com/gpu: MIG devices}``,
    MIG's mixed strategy ``{nvidia.com/mig-1g.10gb: 56}``. Each name must be a GPU resource, each count a whole
    number above 0; anything else is a ValueError naming ``var`` (fail closed: no admission on a guess).
    """
    if hasattr(value, "items") and not isinstance(value, dict):
        value = dict(value)  # Ansible's mapping types (hostvars, lazy templated dicts)
    if not isinstance(value, dict) or not value:
        raise ValueError(f"{var} must map GPU resource names to counts, not {value!r}")
    out = {}
    for name, count in value.items():
        if not is_gpu_resource(name):
            raise ValueError(f"{var}: {name!r} is no GPU resource (nvidia.com/gpu, nvidia.com/gpu.shared or "
                             "nvidia.com/mig-<g>g.<mem>gb)")
        try:
            number = parse_gpu_quantity(count)
        except ValueError as exc:
            raise ValueError(f"{var}: {name}: {exc}") from exc
        if number < 1:
            raise ValueError(f"{var}: {name}: the count must be at least 1, not {number}")
        out[str(name)] = number
    return out


def gpu_admission_errors(node_obj, gpu_count, validator_pods=(), resource=GPU_RESOURCE):
    """Why a node the gate passed may not be admitted yet; ``[]`` when it may.

    Admission needs the GPU Operator validator's pod on the node Ready (its init containers, the driver,
    toolkit, CUDA and plugin validations, have all passed) and the GPUs allocatable as declared. ``gpu_count`` is
    the inventory's GPU count (then allocatable ``resource`` must equal it), or a ``{resource: count}`` from
    ``declared_gpu_resources`` for shared or partitioned GPUs (then each must be allocatable exactly so, and no
    other GPU resource may be advertised). Anything missing or unreadable is an error (fail closed).
    """
    meta = (node_obj or {}).get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("k8s node: object has no metadata.name")
    if gpu_count is None:
        raise ValueError(f"{name}: no GPU count for the node")
    declared = isinstance(gpu_count, dict)
    expected = dict(gpu_count) if declared else {resource: parse_gpu_quantity(gpu_count)}
    errors = []
    pods = [p for p in validator_pods or [] if ((p or {}).get("spec") or {}).get("nodeName") == name]
    if not pods:
        errors.append(f"{name}: no GPU Operator validator pod on the node")
    elif not any(pod_ready(p) for p in pods):
        names = ", ".join(sorted(((p.get("metadata") or {}).get("name") or "?") for p in pods))
        errors.append(f"{name}: the GPU Operator validator has not passed (pod {names} not Ready)")
    node_allocatable = (node_obj.get("status") or {}).get("allocatable") or {}
    for res, count in expected.items():
        allocatable = node_allocatable.get(res)
        if allocatable is None:
            errors.append(f"{name}: allocatable {res} is not reported")
            continue
        found = parse_gpu_quantity(allocatable)
        if found != count:
            errors.append(f"{name}: allocatable {res} is {found}, the node has {count} "
                          + ("declared" if declared else "GPUs"))
    if declared:
        for res in sorted(node_allocatable):
            if is_gpu_resource(res) and res not in expected and parse_gpu_quantity(node_allocatable[res]) > 0:
                errors.append(f"{name}: advertises {node_allocatable[res]} {res}, which the inventory does not declare")
    return errors


def fabric_label_keys():
    """Every fabric label key a node may carry (``gpufleet.io/<level>`` for each level the model knows)."""
    return [fabric_label_key(level) for level in LEVELS]


def leave_labels(label_key, admitted_label=ADMITTED_LABEL, extra=()):
    """Node labels of a node leaving the Kubernetes pool: the pool, admission and fabric labels removed
    (None in a merge patch), the GPU Operator's operands off (``nvidia.com/gpu.deploy.operands=false``).

    The fabric labels go with the pool label, so the node also leaves its leaf's Volcano HyperNode and
    Kueue's Topology; a node that comes back is held until the gate admits it again.
    """
    labels = {key: None for key in (label_key, admitted_label, *fabric_label_keys(), *extra)}
    labels["nvidia.com/gpu.deploy.operands"] = "false"
    return dict(sorted(labels.items()))


def node_admission(node_obj, gpu_count=None, validator_pods=(), verdict=None, *, k8s_pool, label_key,
                   hold_taint, pool_taint=None, fail_taint=None, admitted_label=ADMITTED_LABEL,
                   resource=GPU_RESOURCE, fabric_labels=None):
    """Labels, taints and cordon of a Kubernetes-pool node from its live object and this run's gate verdict.

    The node's admission is recorded on it (label ``admitted_label=true``), so a later run without a
    verdict keeps what the gate decided instead of holding the node again:

    - ``PASS``: admitted when ``gpu_admission_errors`` is empty (validator passed, allocatable GPUs equal
      the node's count); otherwise held, with the errors as ``why``;
    - ``FAIL``: held, the fail taint set, the admission label removed;
    - ``ERROR`` (the gate could not judge): held, the admission label removed (retried on the next gate);
    - no verdict: admitted when the label says so and the node carries no fail taint; otherwise held.

    ``pending`` is true for a node that waits for its gate: no verdict this run, not admitted, and no fail taint
    (a node the gate failed waits for ``gate.yml`` after its repair, as a Slurm node drained with the gate's
    reason does); ``site.yml`` gates the pending nodes in the same run (playbooks/k8s.yml).

    An admitted node loses the hold and fail taints; a held node carries the hold taint (NoSchedule, which a
    kubelet cannot lift: NodeRestriction forbids it to change taints). The cordon (``spec.unschedulable``) is
    never touched: it is an admin's or maintenance's, and stands through every admission. Every pool node
    keeps the pool label and taint, and the GPU Operator's operands
    (``nvidia.com/gpu.deploy.operands`` removed), and its fabric labels (``fabric_labels``, ``{key: value}``
    from the fabric model): every fabric level key the node has no switch for is removed, so a label left
    by an earlier place in the fabric goes. A label value of None means "remove the label".
    The admission record ``admitted_label`` defaults to a ``node-restriction.kubernetes.io/`` label, which a
    node's own kubelet cannot set (NodeRestriction), so a node cannot admit itself.
    Returns ``{labels, taints_add, taints_remove, admitted, pending, why}``; an unknown verdict is an error.

    Work at risk: an admin's cordon and a held node's gate. Guarded: no patch of this carries
    ``spec.unschedulable``, and admission rests only on what the node's kubelet cannot write.
    """
    if verdict is not None and verdict not in VERDICTS:
        raise ValueError(f"unknown gate verdict {verdict!r} (expected one of {', '.join(VERDICTS)})")
    meta = (node_obj or {}).get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("k8s node: object has no metadata.name")
    labels_now = meta.get("labels") or {}
    taints_now = ((node_obj.get("spec") or {}).get("taints")) or []
    fail_key = fail_taint["key"] if fail_taint else None
    failed_before = fail_key is not None and any(t.get("key") == fail_key for t in taints_now)
    recorded = str(labels_now.get(admitted_label, "")).lower() == "true"
    why = []
    pending = False
    if verdict == "PASS":
        why = gpu_admission_errors(node_obj, gpu_count, validator_pods, resource)
        admitted = not why
    elif verdict == "FAIL":
        admitted, why = False, [f"{name}: the health gate failed the node"]
    elif verdict == "ERROR":
        admitted, why = False, [f"{name}: the health gate could not judge the node"]
    elif failed_before:
        admitted, why = False, [f"{name}: carries the gate's fail taint {fail_key}"]
    elif recorded:
        admitted = True
    else:
        admitted, pending, why = False, True, [f"{name}: not admitted by the health gate yet"]
    fabric = dict(fabric_labels or {})
    unknown = sorted(set(fabric) - set(fabric_label_keys()))
    if unknown:
        raise ValueError(f"{name}: {', '.join(unknown)} is no fabric label key ({', '.join(fabric_label_keys())})")
    labels = {key: fabric.get(key) for key in fabric_label_keys()}
    labels.update({label_key: k8s_pool, "nvidia.com/gpu.deploy.operands": None,
                   admitted_label: "true" if admitted else None})
    pool_taints = [pool_taint] if pool_taint else []
    if admitted:
        return {"labels": labels, "taints_add": pool_taints,
                "taints_remove": [hold_taint["key"]] + ([fail_key] if fail_key else []),
                "admitted": True, "pending": False, "why": []}
    add = [*pool_taints, hold_taint]
    if verdict == "FAIL" and fail_taint:
        add.append(fail_taint)
    return {"labels": labels, "taints_add": add, "taints_remove": [], "admitted": False, "pending": pending, "why": why}


# A Node name is a DNS subdomain (RFC 1123): lower-case labels of letters, digits and '-', at most 253 long.
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
REPORTED_FIELD = "ansible_facts.nodename"


def _short(name):
    return str(name).split(".", 1)[0].lower()


def _name_check(hosts, explicit, reported, inventory, var):
    explicit, reported = explicit or {}, reported or {}
    others = {_short(h): h for h in inventory}
    out, where, by_short, errors, refused = {}, {}, {}, [], {}
    for host in hosts:
        if host in out or host in refused:
            continue
        value = explicit.get(host)
        if value is not None and str(value).strip():
            field, name = var, str(value).strip().lower()
        elif str(host).strip():
            field, name = "inventory name", str(host).strip().lower()
        else:
            raise ValueError(f"{host!r}: {var}: k8s node: no host name")
        if len(name) > 253 or _DNS_SUBDOMAIN.fullmatch(name) is None:
            errors.append(f"{host}: {field} {name!r} is no Kubernetes Node name (a lower-case DNS subdomain of at "
                          f"most 253 characters); the host is refused, no Node is touched")
            continue
        other = by_short.get(_short(name))
        if other is not None:
            where[host] = (field, name)
            first, second = sorted((other, host))
            errors.append(f"{first} and {second} both map to Kubernetes Node name {_short(name)!r} "
                          f"({first}: {where[first][0]} {where[first][1]!r}; {second}: {where[second][0]} "
                          f"{where[second][1]!r}); both hosts are refused, no Node is touched (fix {var})")
            continue
        by_short[_short(name)] = host
        where[host] = (field, name)
        seen = reported.get(host)
        seen = str(seen).strip() if seen is not None and str(seen).strip() else None
        owner = others.get(_short(seen)) if seen is not None else None
        why = None
        if seen is not None and owner is not None and _short(owner) != _short(host):
            why = (f"{host}: {REPORTED_FIELD} {seen!r} is the name of inventory host {owner}, not of {host} "
                   f"(its Node is {name!r}, from its {field}); the host is refused and held, no other Node is "
                   f"touched (fix its hostname)")
        elif seen is not None and field != var and seen.lower() != name:
            why = (f"{host}: {REPORTED_FIELD} {seen!r} (the hostname k3s and the kubelet register) differs "
                   f"from its Node name {name!r} (the inventory name; {var} is not set); the host is "
                   f"refused and held, no other Node is touched (fix the hostname, or set {var} to the name "
                   f"its agent registers)")
        if why is not None:
            refused[host] = {"name": name, "field": REPORTED_FIELD, "value": seen, "reason": why}
            continue
        out[host] = name
    return out, refused, errors


def node_name_check(hosts, explicit=None, reported=None, inventory=(), var="cluster_k8s_node_name"):
    """``{"names": {host: Node name}, "refused": {host: refusal}}`` for ``hosts``. The inventory is the one source
    of the name: ``explicit`` (``var``, which must equal the agent's ``node-name`` when that is set), else the
    inventory name; lowercased, as the kubelet does.

    ``explicit``: host -> ``var`` (set by the admin); ``reported``: host -> the kernel hostname the node
    reported about itself (``ansible_facts.nodename``, what k3s and the kubelet register when no ``node-name``
    is configured); ``inventory``: every inventory host name. The reported hostname never names a Node: it is
    a cross-check, applied only where it is known (a fresh host has no facts yet).

    ``names`` holds only the hosts whose report passed: a consumer looks a host up there and never falls back
    to another name. A host whose report fails is in ``refused`` alone, with ``{name, field, value, reason}``:
    ``name`` is its own Node's name from the inventory (never from the report), which the caller holds;
    ``field`` is ``REPORTED_FIELD`` and ``value`` what the node reported; ``reason`` names the host, the field
    and the values.

    Work at risk: the map picks the Node a run drains, cordons, uncordons and lifts the gate-failed taint
    from, and a node's hostname can differ from the name it is known by (a cloned image keeps its hostname; a
    node can lie). Refused, for the one host (it is in ``refused``, never in ``names``, so no Node is acted on
    for it under any name and it is never capacity): a reported hostname whose first label is another
    inventory host's, also where ``var`` is set; a host named by its inventory name whose reported hostname
    differs from it (its kubelet registered another Node, set ``var``). Refused for the whole run (ValueError
    naming each host, the variable and the values; the admin's input, which preflight refuses first): a name
    that is no DNS subdomain; two hosts whose names share a first label (a short name finds its FQDN Node
    too), naming both hosts. Every refusal of the run is reported at once.
    """
    out, refused, errors = _name_check(hosts, explicit, reported, inventory, var)
    if errors:
        raise ValueError("; ".join(errors))
    return {"names": out, "refused": refused}


def node_name_errors(hosts, explicit=None, var="cluster_k8s_node_name"):
    """The inventory's own Node-name errors, from the inventory alone (no host contacted, so no reported hostname):
    a name that is no DNS subdomain, two hosts mapping to one Node name (naming both). Preflight's check; each error
    names the host and ``var``."""
    return _name_check(hosts, explicit, None, hosts, var)[2]


def node_names(hosts, explicit=None, reported=None, inventory=(), var="cluster_k8s_node_name"):
    """``{host: Node name}`` of the hosts of ``hosts`` whose report passed (``node_name_check``'s ``names``): a
    refused host is absent, and its consumers must not fall back to a name of their own.

    Work at risk: as ``node_name_check``.
    """
    return node_name_check(hosts, explicit, reported, inventory, var)["names"]


def _registered(name, by_name):
    """The Node object for ``name``: exact, else the one Node whose first DNS label is ``name``'s (a node that
    registered its FQDN where the inventory names it short, or the reverse); None when absent or ambiguous."""
    if name in by_name:
        return by_name[name]
    short = name.split(".")[0]
    found = [obj for other, obj in by_name.items() if other.split(".")[0] == short]
    return found[0] if len(found) == 1 else None


HOLD_REASON_ANNOTATION = "gpufleet.io/hold-reason"


def refused_hold(host, refusal, hold_taint, admitted_label=ADMITTED_LABEL):
    """The patch that holds a host whose report was refused (``node_name_check``'s ``refused[host]``), on its own
    Node (``refusal["name"]``, from the inventory): the hold taint, the admission record dropped (it is gated again
    once its report passes), the reason in annotation ``HOLD_REASON_ANNOTATION``. No pool label, no cordon.
    """
    reason = str(refusal.get("reason") or f"{host}: its report was refused")
    return {"labels": {admitted_label: None}, "annotations": {HOLD_REASON_ANNOTATION: reason},
            "taints_add": [hold_taint], "taints_remove": [], "admitted": False, "pending": False, "refused": True,
            "why": [reason]}


def pool_admissions(hosts, node_objs, gpu_counts, validator_pods=(), verdicts=None, node_names=None, fabric=None,
                    refused=None, **kwargs):
    """``node_admission`` for every inventory host of the pool that is registered as a Node.

    ``fabric``: host -> its fabric labels (``fabric.node_labels``); a host without an entry has no place in
    the fabric and carries no fabric label.
    ``node_objs``: Node objects (a ``k8s_info`` result's ``resources``); ``gpu_counts``: host -> GPU count;
    ``verdicts``: host -> this run's gate verdict; ``node_names``: host -> Node name (``node_names``), or None where
    each host's name is its Node's (a Node registered under the FQDN of a short name, or the reverse, is found too
    when it is the only one); ``refused``: host -> its refusal (``node_name_check``'s ``refused``).
    Returns ``{"nodes": {host: {name, taints, **admission}}, "unregistered": [host, ...], "allocatable":
    {host: status.allocatable}, "refused": {host: reason}}``; ``taints`` are the node's live taints, for the merge
    that keeps their order (no patch when nothing changes); ``allocatable`` is each admissible node's, for the quota of
    what is admitted. A refused host whose own Node exists is in ``nodes`` with ``refused_hold``'s patch (held, its
    verdict ignored); every other node's patch drops that hold's reason annotation.

    Work at risk: an admission lifts the hold and the gate-failed taint (never a cordon); two hosts that
    resolve to one Node (a map entry naming another host's Node, or a short name finding its FQDN) would
    let one host's verdict act on the other's Node. Refused: ValueError naming both hosts and the Node; a host
    whose report was refused, or that a given ``node_names`` leaves out, is never admitted, never looked up under
    another host's name and adds no allocatable (it is held on its own Node where it has one).
    """
    verdicts = verdicts or {}
    refused = dict(refused or {})
    by_name = {}
    for obj in node_objs or []:
        name = ((obj or {}).get("metadata") or {}).get("name")
        if name:
            by_name[name] = obj
    out, unregistered, claimed, allocatable, refusals = {}, [], {}, {}, {}
    for host in sorted(hosts):
        if host not in refused and node_names is not None and host not in node_names:
            refusals[host] = f"{host}: no Kubernetes Node name in the Node-name map; not acted on"
            continue
        own = refused[host]["name"] if host in refused else (host if node_names is None else node_names[host])
        obj = _registered(own, by_name)
        if host in refused:
            refusals[host] = str(refused[host].get("reason"))
        if obj is None:
            unregistered.append(host)
            continue
        name = obj["metadata"]["name"]
        if name in claimed:
            raise ValueError(f"{claimed[name]} and {host} both resolve to Kubernetes Node {name}; both hosts are "
                             f"refused, no Node is touched (fix the Node-name map)")
        claimed[name] = host
        taints = ((obj.get("spec") or {}).get("taints")) or []
        if host in refused:
            out[host] = {"name": name, "taints": taints,
                         **refused_hold(host, refused[host], kwargs["hold_taint"],
                                        kwargs.get("admitted_label", ADMITTED_LABEL))}
            continue
        try:
            state = node_admission(obj, gpu_counts.get(host), validator_pods, verdicts.get(host),
                                   fabric_labels=(fabric or {}).get(host), **kwargs)
        except ValueError as exc:
            raise ValueError(f"{host}: {exc}") from exc
        out[host] = {"name": name, "taints": taints, "annotations": {HOLD_REASON_ANNOTATION: None}, "refused": False,
                     **state}
        allocatable[host] = dict(((obj.get("status") or {}).get("allocatable")) or {})
    return {"nodes": out, "unregistered": unregistered, "allocatable": allocatable, "refused": refusals}
