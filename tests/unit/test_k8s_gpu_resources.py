"""Issue 33: MIG or time-sliced nodes could never be admitted. Admission wanted allocatable nvidia.com/gpu equal to the
inventory's GPU count, but a device plugin with time-slicing advertises GPUs x replicas, and MIG's mixed strategy
advertises nvidia.com/mig-<profile> and no nvidia.com/gpu. A node may now declare what its device plugin must
advertise (cluster_k8s_gpu_resources), checked exactly; the preflight refuses a declaration it does not understand.
"""

import pytest
from ansible.errors import AnsibleFilterError
from ansible.module_utils.inventory_check import inventory_errors
from ansible.module_utils.k8s_pool import (
    declared_gpu_resources,
    gpu_admission_errors,
    is_gpu_resource,
    node_admission,
    pool_gpu_total,
)
from k8s import k8s_gpu_admission_errors, k8s_pool_gpu_total
from test_k8s_pool import KW, node, validator

TIME_SLICED = {"nvidia.com/gpu": 8}  # 2 GPUs x 4 replicas
MIG_MIXED = {"nvidia.com/mig-1g.10gb": 14}  # 2 GPUs x 7


def mig_node(allocatable):
    obj = node()
    obj["status"]["allocatable"] = {"cpu": "64", **allocatable}
    return obj


def test_a_time_sliced_node_is_admitted_at_its_declared_replicas_and_not_at_its_gpu_count():
    assert node_admission(node(allocatable="8"), TIME_SLICED, [validator()], "PASS", **KW)["admitted"]
    # the old rule, allocatable nvidia.com/gpu == 2 GPUs, held this node forever
    held = node_admission(node(allocatable="8"), 2, [validator()], "PASS", **KW)
    assert not held["admitted"] and "allocatable nvidia.com/gpu is 8, the node has 2 GPUs" in held["why"][0]
    errors = gpu_admission_errors(node(allocatable="4"), TIME_SLICED, [validator()])
    assert errors == ["gpu03: allocatable nvidia.com/gpu is 4, the node has 8 declared"]


def test_a_mig_mixed_node_is_admitted_on_its_mig_devices_and_refused_when_they_differ():
    assert gpu_admission_errors(mig_node({"nvidia.com/mig-1g.10gb": "14", "nvidia.com/gpu": "0"}), MIG_MIXED,
                                [validator()]) == []
    assert gpu_admission_errors(mig_node({"nvidia.com/mig-1g.10gb": "7"}), MIG_MIXED, [validator()]) == [
        "gpu03: allocatable nvidia.com/mig-1g.10gb is 7, the node has 14 declared"]
    assert gpu_admission_errors(mig_node({}), MIG_MIXED, [validator()]) == [
        "gpu03: allocatable nvidia.com/mig-1g.10gb is not reported"]


def test_a_gpu_resource_the_inventory_does_not_declare_holds_the_node():
    """Fail closed: a node repartitioned behind the inventory's back (MIG profiles it does not declare) stays held."""
    errors = gpu_admission_errors(mig_node({"nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "2"}),
                                  MIG_MIXED, [validator()])
    assert errors == ["gpu03: advertises 2 nvidia.com/mig-3g.40gb, which the inventory does not declare"]


def test_kueue_counts_a_declared_node_by_its_nvidia_gpu_and_a_mig_only_node_as_none():
    assert pool_gpu_total(["a", "b", "c"], {"a": 2, "b": TIME_SLICED, "c": MIG_MIXED}) == 10


@pytest.mark.parametrize(("value", "why"), [
    ({}, "must map GPU resource names to counts"),
    ([8], "must map GPU resource names to counts"),
    ({"nvidia.com/gpus": 8}, "'nvidia.com/gpus' is no GPU resource"),
    ({"amd.com/gpu": 8}, "'amd.com/gpu' is no GPU resource"),
    ({"nvidia.com/mig-1g": 7}, "'nvidia.com/mig-1g' is no GPU resource"),
    ({"nvidia.com/gpu": 0}, "nvidia.com/gpu: the count must be at least 1, not 0"),
    ({"nvidia.com/gpu": "2.5"}, "nvidia.com/gpu: GPU quantity '2.5' is not a whole number"),
    ({"nvidia.com/gpu": True}, "nvidia.com/gpu: GPU quantity True is not a whole number"),
])
def test_a_declaration_not_understood_is_refused_naming_the_variable(value, why):
    with pytest.raises(ValueError, match="cluster_k8s_gpu_resources") as exc:
        declared_gpu_resources(value)
    assert why in str(exc.value)


def test_the_gpu_resource_names_are_the_device_plugins():
    assert all(is_gpu_resource(n) for n in ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb",
                                            "nvidia.com/mig-7g.80gb", "nvidia.com/mig-1g.12gb.me"))
    assert not any(is_gpu_resource(n) for n in ("nvidia.com/gpu.product", "rdma/ib", "nvidia.com/mig-0g.5gb"))


def test_the_filters_read_the_declaration_and_name_the_host():
    hostvars = {"gpu03": {"cluster_gpu_count": 2, "cluster_k8s_gpu_resources": TIME_SLICED},
                "gpu04": {"cluster_gpu_count": 2}, "gpu05": {"cluster_gpu_count": 2,
                                                             "cluster_k8s_gpu_resources": {"nvidia.com/gpu": -1}}}
    assert k8s_gpu_admission_errors(node(allocatable="8"), "gpu03", hostvars, "cluster_gpu_count", [validator()]) == []
    assert k8s_pool_gpu_total(["gpu03", "gpu04"], hostvars, "cluster_gpu_count") == 10
    with pytest.raises(AnsibleFilterError, match=r"gpu05: cluster_k8s_gpu_resources: nvidia.com/gpu"):
        k8s_pool_gpu_total(["gpu05"], hostvars, "cluster_gpu_count")


def test_preflight_refuses_a_declaration_it_does_not_understand_naming_host_and_variable():
    hostvars = {"gpu01": {"cluster_k8s_gpu_resources": {"nvidia.com/mig-2g": 3}}, "gpu02": {}}
    groups = {"all": ["gpu01", "gpu02"]}
    errors = inventory_errors(hostvars, groups, {"gpu_resources_var": "cluster_k8s_gpu_resources"})
    assert errors == ["host gpu01: variable cluster_k8s_gpu_resources: 'nvidia.com/mig-2g' is no GPU resource "
                      "(nvidia.com/gpu, nvidia.com/gpu.shared or nvidia.com/mig-<g>g.<mem>gb)"]
