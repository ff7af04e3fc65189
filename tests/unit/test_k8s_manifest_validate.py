"""The k8s_manifest_validate module end to end (argument parsing, exit/fail, check mode)."""

import json

import k8s_manifest_validate
import pytest
from ansible.module_utils.testing import patch_module_args
from conftest import crd_dir as pinned_crd_dir


def run_module(args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        k8s_manifest_validate.main()
    return exc.value.code


@pytest.fixture
def crd_dir():
    return str(pinned_crd_dir("kueue"))


GOOD = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: gpu}
"""


def test_valid_content_exits_zero_and_unchanged(crd_dir, capsys):
    assert run_module({"content": GOOD, "crd_paths": [crd_dir], "_ansible_check_mode": True}) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] is False and out["documents"] == 2 and out["errors"] == []


def test_invalid_file_fails_with_the_document_named(crd_dir, tmp_path, capsys):
    bad = tmp_path / "lq.yaml"
    bad.write_text(GOOD.replace("clusterQueue: gpu", "clusterQueues: gpu"))
    assert run_module({"src": [str(tmp_path)], "crd_paths": [crd_dir]}) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["failed"] is True
    assert "LocalQueue/team-a/default: spec: unknown field(s) clusterQueues" in out["errors"][0]


def test_quota_mismatch_fails(crd_dir, capsys):
    cq = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: gpu}
spec:
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors: [{name: pool, resources: [{name: nvidia.com/gpu, nominalQuota: 6}]}]
"""
    assert run_module({"content": cq, "crd_paths": [crd_dir], "gpu_quota": {"expected": 8}}) == 1
    assert "quota is 6, but the admitted pool has 8" in json.loads(capsys.readouterr().out)["msg"]


def test_custom_resource_without_crd_fails(capsys):
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "x"}}
    assert run_module({"documents": [doc]}) == 1
    assert "no schema for kueue.x-k8s.io/v1beta2 LocalQueue" in json.loads(capsys.readouterr().out)["msg"]
