"""Gang feasibility checks an admission webhook makes today (module_utils/k8s_gang.py)."""

import json

import k8s_manifest_validate
import pytest
from ansible.module_utils.k8s_gang import gang_errors, pod_gpus
from ansible.module_utils.testing import patch_module_args
from conftest import crd_dir


def task(name, replicas, gpus=1, min_available=None):
    out = {"name": name, "replicas": replicas, "template": {"spec": {"containers": [
        {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}
    if min_available is not None:
        out["minAvailable"] = min_available
    return out


def vcjob(min_available, *tasks):
    spec = {"schedulerName": "volcano", "tasks": list(tasks)}
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "train"}, "spec": spec}


def test_min_available_above_total_replicas_is_refused():
    errors = gang_errors([vcjob(5, task("master", 1), task("worker", 3))])
    assert errors == ["Job/train: spec.minAvailable 5 exceeds the total replicas 4 of its tasks; "
                      "the gang can never start (Volcano's admission webhook refuses it)"]
    assert gang_errors([vcjob(4, task("master", 1), task("worker", 3))]) == []


def test_task_min_available_above_its_replicas_is_refused():
    errors = gang_errors([vcjob(None, task("worker", 2, min_available=3))])
    assert len(errors) == 1 and "spec.tasks[0] (worker) minAvailable 3 exceeds its replicas 2" in errors[0]


def test_a_gang_needing_more_gpus_than_the_pool_is_refused_only_with_the_pool_size():
    job = vcjob(3, task("worker", 4, gpus=4))
    assert gang_errors([job]) == []
    assert gang_errors([job], pool_gpus=12) == []
    assert gang_errors([job], pool_gpus=8) == ["Job/train: its gang of 3 pod(s) needs at least 12 nvidia.com/gpu, "
                                               "the pool has 8"]
    # without minAvailable every replica belongs to the gang; cheapest pods count first
    assert gang_errors([vcjob(2, task("cpu", 1, gpus=0), task("gpu", 2, gpus=8))], pool_gpus=8) == []


def test_podgroup_and_quotas_above_the_pool_are_refused():
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg"},
          "spec": {"minMember": 2, "minResources": {"nvidia.com/gpu": "16"}}}
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "gpu-pool"},
          "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
              {"name": "k8s-pool", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 10}]}]}]}}
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "training"},
             "spec": {"capability": {"nvidia.com/gpu": 8}}}
    errors = gang_errors([pg, cq, queue], pool_gpus=6)
    assert errors == [
        "PodGroup/pg: spec.minResources asks for 16 nvidia.com/gpu, the pool has 6",
        "ClusterQueue/gpu-pool: flavor k8s-pool has a nominal nvidia.com/gpu quota of 10, the pool has 6",
        "Queue/training: spec.capability nvidia.com/gpu is 8, the pool has 6",
    ]
    assert gang_errors([pg, cq, queue], pool_gpus=16) == []


def test_pod_gpus_counts_containers_and_the_largest_init_container():
    template = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 2}}},
                                        {"resources": {"requests": {"nvidia.com/gpu": "1"}}}],
                         "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": 4}}}]}}
    assert pod_gpus(template) == 4
    with pytest.raises(ValueError):
        pod_gpus({"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1.5"}}}]}})


def run_module(args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        k8s_manifest_validate.main()
    return exc.value.code


def test_module_refuses_min_available_and_a_broken_cel_rule(capsys):
    docs = [vcjob(5, task("worker", 4)),
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
             "spec": {"topologyName": "fabric", "nodeLabels": {}}}]
    code = run_module({"documents": docs, "crd_paths": [str(crd_dir("volcano")), str(crd_dir("kueue"))]})
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert any("self.nodeLabels.size() >= 1" in e for e in out["errors"])
    assert any("spec.minAvailable 5 exceeds the total replicas 4" in e for e in out["errors"])
    assert out["cel"]["unevaluable"] == [] and out["cel"]["evaluated"] > 0


def test_module_reports_cel_counts_on_a_good_document(capsys):
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
           "spec": {"topologyName": "fabric", "nodeLabels": {"gpufleet.io/pool": "kubernetes"}}}
    assert run_module({"documents": [doc], "crd_paths": [str(crd_dir("kueue"))]}) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cel"] == {"evaluated": 1, "skipped": 3, "unevaluable": []}
    assert out["results"][0]["cel"]["skipped"] == 3
