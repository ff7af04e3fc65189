"""Who queues and who gangs: Kueue's ClusterQueue holds the one GPU quota, counted over the admitted nodes only
(none admitted: 0), cpu and memory quotas summed over their allocatable, rdma/* excluded, with waitForPodsReady and
opt-in namespaces; Volcano queues carrying a GPU amount are refused.
Kueue 0.19.2 Configuration fields (config.kueue.x-k8s.io/v1beta2) as read in apis/config/v1beta2."""

import pathlib
import sys

import pytest
import yaml
from conftest import run_cases

ROOT = pathlib.Path(__file__).resolve().parents[2]


# Every case is a host of its own, rendering the role's documents into <case>/out with the case's settings; one
# ansible-playbook run plays them all (a play per role) and each test judges its own host. The admitted nodes are
# the same three k8s_agent entries for every case (never contacted).
ALLOCATABLE_TWO = {"gpu01": {"cpu": "7500m", "memory": "31Gi", "nvidia.com/gpu": "2", "rdma/ib": "1k"},
                   "gpu03": {"cpu": "8", "memory": "32847812Ki", "nvidia.com/gpu": "2"},
                   "gpu02": {"cpu": "64", "memory": "1Ti"}}
VOLCANO_QUEUES = [{"name": "training", "weight": 3, "capability": {"nvidia.com/gpu": 8}},
                  {"name": "interactive", "weight": 1, "guarantee": {"resource": {"nvidia.com/gpu": 1}}},
                  {"name": "cpu", "weight": 1, "capability": {"cpu": "64"}}]
CASES = {  # case: (role, settings)
    "admitted": ("kueue", {"kueue_pool_nodes": ["gpu01", "gpu03"],
                           "kueue_pool_allocatable": {h: {"cpu": "8", "memory": "31Gi"} for h in ("gpu01", "gpu03")},
                           "kueue_local_queues": [{"name": "default", "namespace": "team-a"}]}),
    "nothing-admitted": ("kueue", {}),
    "two-admitted": ("kueue", {"kueue_pool_nodes": ["gpu01", "gpu03"], "kueue_pool_allocatable": ALLOCATABLE_TWO}),
    "operator-quota": ("kueue", {"kueue_pool_nodes": ["gpu01"], "kueue_other_quotas": {"memory": "2Ti"},
                                 "kueue_pool_allocatable": {"gpu01": {"cpu": "16"}}}),
    "exclusion-hides-gpu": ("kueue", {"kueue_exclude_resource_prefixes": ["rdma/", "nvidia.com/"]}),
    "unreadable-allocatable": ("kueue", {"kueue_pool_nodes": ["gpu01", "gpu03"],
                                         "kueue_pool_allocatable": {"gpu01": {"cpu": "8", "memory": "31Gi"},
                                                                    "gpu03": {"cpu": "8", "memory": "31 GiB"}}}),
    "missing-allocatable": ("kueue", {"kueue_pool_nodes": ["gpu01"]}),
    "outside-the-pool": ("kueue", {"kueue_pool_nodes": ["gpu09"]}),
    "bad-timeout": ("kueue", {"kueue_wait_for_pods_ready": {"blockAdmission": False}}),
    "volcano-gpu-queues": ("volcano", {"volcano_queues": VOLCANO_QUEUES}),
    "volcano-cpu-queue": ("volcano", {"volcano_queues": VOLCANO_QUEUES[2:]}),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run of every case: a CaseRun, with the case directories as .dirs."""
    tmp = tmp_path_factory.mktemp("kueue_render")
    hosts = {role: {} for role in ("kueue", "volcano")}
    for case, (role, settings) in CASES.items():
        hosts[role][case] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                             f"{role}_apply": False, f"{role}_manifest_dir": str(tmp / case / "out"),
                             "cluster_k8s_crd_dir": str(ROOT / "files" / "crds"), **settings}
    inventory = {"all": {"children": {
        **{f"{role}_cases": {"hosts": cases} for role, cases in hosts.items()},
        "k8s_agent": {"hosts": {f"gpu0{i}": {"cluster_gpu_count": 2, "cluster_leaf_switch": "leaf1"}
                                for i in (1, 2, 3)}}}}}
    plays = [{
        "name": f"Render {role}", "hosts": f"{role}_cases", "gather_facts": False,
        "vars_files": [str(ROOT / "playbooks" / "vars" / "k8s_versions.yml")],
        "roles": [{"role": role}, {"role": "k8s_release", "k8s_release_releases": [f"{{{{ {role}_rendered }}}}"]}],
    } for role in hosts]
    (tmp / "run").mkdir()
    result = run_cases(tmp / "run", plays, inventory)
    result.dirs = {case: tmp / case for case in CASES}
    return result


def rendered(run, case):
    assert not run.failed(case), run.out
    docs = [d for d in yaml.safe_load_all((run.dirs[case] / "out" / "resources.yaml").read_text()) if d]
    values = yaml.safe_load((run.dirs[case] / "out" / "values.yaml").read_text())
    return docs, yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def refused(run, case, message):
    assert run.failed(case), run.out
    assert message in run.messages(case), run.out


def quotas(docs):
    queue = next(d for d in docs if d["kind"] == "ClusterQueue")
    group = queue["spec"]["resourceGroups"][0]
    res = group["flavors"][0]["resources"]
    assert group["coveredResources"] == [r["name"] for r in res]
    return {r["name"]: r["nominalQuota"] for r in res}


def gpu_quota(docs):
    return quotas(docs)["nvidia.com/gpu"]


def test_quota_counts_only_the_admitted_nodes_and_the_topology_every_pool_node(run):
    docs, config = rendered(run, "admitted")
    assert gpu_quota(docs) == 4
    assert next(d for d in docs if d["kind"] == "ResourceFlavor")["spec"]["topologyName"] == "gpufleet-fabric"
    assert config["waitForPodsReady"]["timeout"] == "10m"
    assert config["managedJobsNamespaceSelector"] == {"matchLabels": {"gpufleet.io/kueue": "managed"}}
    namespace = next(d for d in docs if d["kind"] == "Namespace")
    assert namespace["metadata"] == {"name": "team-a", "labels": {"gpufleet.io/kueue": "managed"}}


def test_nothing_admitted_yet_renders_a_zero_quota_instead_of_failing(run):
    docs, _ = rendered(run, "nothing-admitted")
    assert gpu_quota(docs) == 0
    assert any(d["kind"] == "Topology" for d in docs)


def test_nothing_admitted_gives_zero_cpu_and_memory_quota_and_rdma_is_excluded(run):
    # issue 33: the cpu/memory quotas were constants (1024 cpus, 8Ti) whatever was admitted, and a pod asking for
    # rdma/* was inadmissible (no excludeResourcePrefixes)
    docs, config = rendered(run, "nothing-admitted")
    assert quotas(docs) == {"nvidia.com/gpu": 0, "cpu": "0", "memory": "0"}
    assert config["resources"] == {"excludeResourcePrefixes": ["rdma/"]}


def test_two_admitted_nodes_give_the_sum_of_their_allocatable_cpu_and_memory(run):
    docs, _ = rendered(run, "two-admitted")
    # 7.5 + 8 cpus; 31 GiB + 32847812 KiB in bytes; gpu02 is not admitted
    assert quotas(docs) == {"nvidia.com/gpu": 4, "cpu": "15500m", "memory": str(31 * 2**30 + 32847812 * 1024)}


def test_an_operator_quota_overrides_the_computed_one_and_no_exclusion_may_hide_a_covered_resource(run):
    docs, _ = rendered(run, "operator-quota")
    assert quotas(docs) == {"nvidia.com/gpu": 2, "cpu": "16", "memory": "2Ti"}
    refused(run, "exclusion-hides-gpu", "would make Kueue ignore nvidia.com/gpu")


def test_an_admitted_node_whose_allocatable_is_missing_or_unreadable_fails_naming_the_node(run):
    refused(run, "unreadable-allocatable", "gpu03: allocatable memory: quantity '31 GiB' is no Kubernetes quantity")
    refused(run, "missing-allocatable", "gpu01: no allocatable resources read for the node")


def test_an_admitted_node_outside_the_pool_or_a_bad_timeout_is_refused(run):
    refused(run, "outside-the-pool", "all in kueue_fabric_nodes")
    refused(run, "bad-timeout", "kueue_wait_for_pods_ready")


def test_a_volcano_queue_with_its_own_gpu_quota_is_refused(run):
    refused(run, "volcano-gpu-queues", "volcano_queues training, interactive set nvidia.com/gpu")
    assert not run.failed("volcano-cpu-queue"), run.out
