"""Read-modify-write of a Node's taints and labels, the way Kubernetes' own controllers change a Node.

A Node's ``spec.taints`` is one list: a JSON or strategic merge patch that carries it replaces the whole list.
Other writers change that list too: the node lifecycle controller adds and removes ``node.kubernetes.io/*``
taints as a node's kubelet stops and starts reporting, an admin runs ``kubectl taint``. A patch computed from
an earlier read would put back the list as it was then, dropping or reviving their taints.

So each attempt reads the Node, computes the new labels and taints from what it read, and sends them with the
``resourceVersion`` it read. The API server refuses the patch with 409 Conflict when the Node changed since
that read; the next attempt starts from a fresh read. Labels are map keys (a patch sets or removes only the
keys it names); they ride in the same patch so one Node change is one write.

The API is passed in (``read(name) -> dict``, ``patch(name, body)``; ``patch`` raises ``Conflict`` on 409),
so the logic is tested without a cluster; ``library/k8s_node_patch.py`` binds it to the Python client.
"""

from __future__ import annotations

from ansible.module_utils.k8s_pool import merge_taints


class Conflict(Exception):
    """The Node changed between the read and the patch (HTTP 409)."""


def _clean_taint(taint):
    return {k: v for k, v in dict(taint).items() if v is not None}


def _remove_keys(remove):
    return [t["key"] if isinstance(t, dict) else t for t in remove or []]


def _map_changes(live, wanted):
    changes = {}
    for key, value in (wanted or {}).items():
        want = None if value is None else str(value)
        if want is None and key in live:
            changes[key] = None
        elif want is not None and live.get(key) != want:
            changes[key] = want
    return changes


def node_change(node, labels=None, taints_add=(), taints_remove=(), annotations=None):
    """The patch body that brings ``node`` (a Node as a dict) to the wanted labels, annotations and taints, or
    None.

    ``labels``, ``annotations``: {key: value}; a value of None removes the key. ``taints_add``: taints to set (a
    taint with the same key and effect is replaced); ``taints_remove``: keys (or taints, by key) to drop. The taints a
    patch sends are ``merge_taints`` of the node's own, so every taint nobody asked to change is kept.
    """
    meta = node.get("metadata") or {}
    live_labels = meta.get("labels") or {}
    live_taints = (node.get("spec") or {}).get("taints") or []
    label_changes = _map_changes(live_labels, labels)
    annotation_changes = _map_changes(meta.get("annotations") or {}, annotations)
    taints = merge_taints(live_taints, [_clean_taint(t) for t in taints_add or []], _remove_keys(taints_remove))
    body = {}
    if label_changes:
        body.setdefault("metadata", {})["labels"] = label_changes
    if annotation_changes:
        body.setdefault("metadata", {})["annotations"] = annotation_changes
    if taints != live_taints:
        body["spec"] = {"taints": taints}
    if not body:
        return None
    body.setdefault("metadata", {})["resourceVersion"] = meta.get("resourceVersion")
    if not body["metadata"]["resourceVersion"]:
        raise ValueError(f"Node {meta.get('name')}: read without metadata.resourceVersion; refusing an unguarded patch")
    return body


def _state(node):
    return {
        "labels": dict((node.get("metadata") or {}).get("labels") or {}),
        "annotations": dict((node.get("metadata") or {}).get("annotations") or {}),
        "taints": list((node.get("spec") or {}).get("taints") or []),
    }


def patch_node(read, patch, name, labels=None, taints_add=(), taints_remove=(), check_mode=False, attempts=5,
               annotations=None):
    """Bring Node ``name`` to the wanted labels, annotations and taints; returns {changed, before, after, attempts}.

    Each attempt reads, computes and patches with the read's resourceVersion; a Conflict starts the next one.
    After ``attempts`` conflicts in a row it raises RuntimeError: the Node changes faster than a patch lands,
    and a patch without the guard could drop another writer's taint.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    for attempt in range(1, attempts + 1):
        node = read(name)
        body = node_change(node, labels, taints_add, taints_remove, annotations)
        before = _state(node)
        if body is None:
            return {"changed": False, "before": before, "after": before, "attempts": attempt}
        after = {
            "labels": {
                k: v
                for k, v in {**before["labels"], **(body.get("metadata") or {}).get("labels", {})}.items()
                if v is not None
            },
            "annotations": {
                k: v
                for k, v in {**before["annotations"], **(body.get("metadata") or {}).get("annotations", {})}.items()
                if v is not None
            },
            "taints": (body.get("spec") or {}).get("taints", before["taints"]),
        }
        if check_mode:
            return {"changed": True, "before": before, "after": after, "attempts": attempt}
        try:
            patch(name, body)
        except Conflict:
            continue
        return {"changed": True, "before": before, "after": after, "attempts": attempt}
    raise RuntimeError(
        f"Node {name}: changed by another writer during each of {attempts} patches in a row (409 Conflict); "
        "nothing was written by the last attempt"
    )
