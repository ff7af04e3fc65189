"""k8s_node_patch: a Node's taints change by read-modify-write guarded by resourceVersion (issue 33: "Patch Nodes
the way controllers do ... never a wholesale replacement of spec.taints"), and no role patches taints another way.
"""

import copy
import pathlib
import re

import pytest
from ansible.module_utils.k8s_node_patch import Conflict, node_change, patch_node

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOLD = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}
FAIL = {"key": "gpufleet.io/gate", "value": "fail", "effect": "NoSchedule"}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-28T08:00:00Z"}


class FakeNodeAPI:
    """Test double of the API server for one Node: optimistic concurrency on resourceVersion (409 when the patch
    names another), labels merged per key (null removes), spec.taints replaced whole (an atomic list).
    ``interleave`` runs once per read, after it: another writer changing the Node between our read and patch."""

    def __init__(self, node, interleave=()):
        self.node = copy.deepcopy(node)
        self.interleave = list(interleave)
        self.reads = 0
        self.patches = []

    def _bump(self):
        meta = self.node["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)

    def read(self, name):
        assert name == self.node["metadata"]["name"]
        self.reads += 1
        seen = copy.deepcopy(self.node)
        if self.interleave:
            self.interleave.pop(0)(self.node)
            self._bump()
        return seen

    def patch(self, name, body):
        self.patches.append(copy.deepcopy(body))
        if body["metadata"]["resourceVersion"] != self.node["metadata"]["resourceVersion"]:
            raise Conflict("the object has been modified")
        labels = self.node["metadata"].setdefault("labels", {})
        for key, value in (body["metadata"].get("labels") or {}).items():
            if value is None:
                labels.pop(key, None)
            else:
                labels[key] = value
        if "spec" in body:
            self.node.setdefault("spec", {})["taints"] = body["spec"]["taints"]
        self._bump()


def _node(taints=(), labels=None):
    return {
        "metadata": {"name": "gpu07", "resourceVersion": "100", "labels": dict(labels or {})},
        "spec": {"taints": [dict(t) for t in taints]},
    }


def test_a_taint_another_writer_adds_between_read_and_patch_survives():
    """The node lifecycle controller taints the node unreachable after our read: the guarded patch is refused,
    the next attempt reads again, and both the controller's taint and our change end on the Node."""
    api = FakeNodeAPI(_node([HOLD]), interleave=[lambda n: n["spec"]["taints"].append(dict(UNREACHABLE))])
    result = patch_node(api.read, api.patch, "gpu07", {"gpufleet.io/admitted": "true"}, taints_remove=[HOLD["key"]])
    assert result["changed"] and result["attempts"] == 2
    assert api.node["spec"]["taints"] == [UNREACHABLE]
    assert api.node["metadata"]["labels"] == {"gpufleet.io/admitted": "true"}


def test_an_unguarded_patch_from_the_first_read_would_have_dropped_that_taint():
    """What a merge patch of spec.taints computed from an earlier read does (the old path): the double shows the
    loss when the guard is left out, so the test above is not passing for want of a race."""
    api = FakeNodeAPI(_node([HOLD]), interleave=[lambda n: n["spec"]["taints"].append(dict(UNREACHABLE))])
    body = node_change(api.read("gpu07"), taints_remove=[HOLD["key"]])
    body["metadata"]["resourceVersion"] = api.node["metadata"]["resourceVersion"]  # no guard: the current one
    api.patch("gpu07", body)
    assert UNREACHABLE not in api.node["spec"]["taints"]


def test_a_taint_removed_by_another_writer_is_not_put_back():
    api = FakeNodeAPI(_node([HOLD, UNREACHABLE]), interleave=[lambda n: n["spec"]["taints"].remove(UNREACHABLE)])
    patch_node(api.read, api.patch, "gpu07", taints_add=[FAIL])
    assert api.node["spec"]["taints"] == [HOLD, FAIL]


def test_every_patch_carries_the_resource_version_it_was_computed_from():
    api = FakeNodeAPI(_node([HOLD]), interleave=[lambda n: None, lambda n: None])
    patch_node(api.read, api.patch, "gpu07", taints_add=[FAIL])
    assert [p["metadata"]["resourceVersion"] for p in api.patches] == ["100", "101", "102"]
    assert api.node["metadata"]["resourceVersion"] == "103" and api.node["spec"]["taints"] == [HOLD, FAIL]


def test_a_node_that_keeps_changing_fails_after_the_attempts_and_says_so():
    api = FakeNodeAPI(_node([HOLD]), interleave=[lambda n: None] * 3)
    with pytest.raises(RuntimeError, match=r"gpu07: changed by another writer during each of 3 patches"):
        patch_node(api.read, api.patch, "gpu07", taints_add=[FAIL], attempts=3)
    assert len(api.patches) == 3 and api.node["spec"]["taints"] == [HOLD]


def test_a_node_already_right_gets_no_patch():
    api = FakeNodeAPI(_node([HOLD, FAIL], {"a": "1"}))
    result = patch_node(api.read, api.patch, "gpu07", {"a": "1", "gone": None}, taints_add=[FAIL],
                        taints_remove=["never-there"])
    assert not result["changed"] and api.patches == []


def test_check_mode_reports_the_change_and_writes_nothing():
    api = FakeNodeAPI(_node([HOLD]))
    result = patch_node(api.read, api.patch, "gpu07", {"x": "y"}, taints_remove=[HOLD["key"]], check_mode=True)
    assert result["changed"] and api.patches == []
    assert result["after"] == {"labels": {"x": "y"}, "annotations": {}, "taints": []}
    assert result["before"] == {"labels": {}, "annotations": {}, "taints": [HOLD]}


def test_annotations_only_the_named_keys_change_in_the_same_guarded_patch():
    # issue 36: the hold of a node whose report was refused carries its reason in an annotation, in one Node write
    node = _node(labels={"a": "1"})
    node["metadata"]["annotations"] = {"keep": "1", "gpufleet.io/hold-reason": "old"}
    body = node_change(node, {"a": "1"}, [HOLD], (), {"gpufleet.io/hold-reason": "gpu02: refused", "gone": None})
    assert body == {"metadata": {"annotations": {"gpufleet.io/hold-reason": "gpu02: refused"},
                                 "resourceVersion": "100"},
                    "spec": {"taints": [HOLD]}}
    node["metadata"]["annotations"]["gpufleet.io/hold-reason"] = "gpu02: refused"
    node["spec"]["taints"] = [HOLD]
    assert node_change(node, {}, [HOLD], (), {"gpufleet.io/hold-reason": "gpu02: refused", "gone": None}) is None


def test_labels_only_the_named_keys_change_and_a_null_removes_one_that_exists():
    body = node_change(_node(labels={"keep": "1", "drop": "2", "same": "3"}), {"drop": None, "same": 3, "new": "4"})
    assert body == {"metadata": {"labels": {"drop": None, "new": "4"}, "resourceVersion": "100"}}


def test_a_taint_kept_keeps_its_time_added_and_an_untouched_list_is_not_sent():
    body = node_change(_node([UNREACHABLE]), {"l": "v"}, taints_add=[{**UNREACHABLE, "timeAdded": None}])
    assert "spec" not in body


def test_a_node_read_without_a_resource_version_is_refused():
    node = _node([HOLD])
    del node["metadata"]["resourceVersion"]
    with pytest.raises(ValueError, match=r"gpu07: read without metadata\.resourceVersion"):
        node_change(node, taints_remove=[HOLD["key"]])


TAINT_WRITERS = re.compile(r"kubernetes\.core\.k8s_taint\b|^\s*taints\s*:|['\"]taints['\"]\s*:", re.M)


def test_no_role_or_playbook_writes_node_taints_but_k8s_node_patch():
    """kubernetes.core.k8s_taint and a patch whose body names spec.taints send a list computed from an earlier
    read. Registration-time taints (kubelet's registerWithTaints, k3s's node-taint) are the kubelet's, at join."""
    allowed = {
        "roles/kubeadm_worker/tasks/facts.yml",  # registerWithTaints: the kubelet's own, at registration
        "roles/kubeadm_control_plane/tasks/facts.yml",  # nodeRegistration.taints: kubeadm's, at init/join
        # the Node changes for review (nodes.yaml); k8s_node_patch applies them, this file is never sent
        "roles/k8s_pool_labels/templates/var/lib/gpufleet/k8s/k8s_pool_labels/nodes.yaml.j2",
    }
    bad = []
    for top in ("roles", "playbooks"):
        for path in sorted((ROOT / top).rglob("*")):
            rel = str(path.relative_to(ROOT))
            if path.suffix not in (".yml", ".yaml", ".j2") or rel in allowed or "/defaults/" in rel:
                continue
            text = path.read_text(encoding="utf-8")
            if "kind: Node\n" not in text and "'kind': 'Node'" not in text and "k8s_taint" not in text:
                continue
            bad += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}" for m in TAINT_WRITERS.finditer(text)]
    assert not bad, "Node taints written without k8s_node_patch's guard:\n" + "\n".join(bad)
