"""Each wave node goes to the wave play of the pool the planner read for it, and a node of no known pool to none.

The planner reads a Kubernetes-pool node's pool and service state from Kubernetes (module_utils/maint_plan.py
planner_nodes): the pool is Slurm's (a partition, or our move/hold reason), else the Node's pool label. The
schedules that split the plan's waves between the Slurm wave play (maintain.yml, ``maint_schedule``) and the
Kubernetes one (maintain_k8s.yml, ``maint_kube_schedule``) take each node's pool from those same planner nodes,
so a Kubernetes-pool node Slurm does not know is never drained and rebooted as a Slurm node. A node whose pool
no scheduler shows goes to neither wave and is reported.
"""

import pathlib

import maint as filters
import maint_ops as ops
import yaml
from ansible.module_utils.k8s_state import POOL_LABEL
from ansible.module_utils.node_reason import make_reason
from ansible.module_utils.pool_live import node_view
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parents[2]


def in_slurm(name):
    return node_view(name, {"name": name, "state": "IDLE", "flags": [], "partitions": ["gpu"], "reason": None,
                            "busy": False})


def parked(name):
    """Slurm's view of a node the pool executor moved to Kubernetes: drained with our move reason, slurmd down."""
    return node_view(name, {"name": name, "state": "DOWN", "flags": ["DRAIN"], "partitions": [],
                            "reason": make_reason("move", "left_slurm", "20261101T0900", "k8s"), "busy": False})


def unplaced(name):
    """Slurm knows the node (in slurm.conf's NodeName lines) but it is in no partition and carries no reason of ours."""
    return node_view(name, {"name": name, "state": "IDLE", "flags": [], "partitions": [], "reason": None,
                            "busy": False})


def kube(name, pool="kubernetes"):
    """A Ready, schedulable Node as kubernetes.core.k8s_info returns it (pool label set by k8s_pool_labels)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, POOL_LABEL: pool},
                         "annotations": {"k3s.io/node-args": '["agent"]'}},
            "spec": {"podCIDR": "10.42.3.0/24", "providerID": f"k3s://{name}"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def planned(views, k8s_objs, hosts):
    """The planner nodes maint_planner computes (slurm_node_info views, the Nodes, the inventory hosts)."""
    names = {h: h for h in hosts}
    return filters.maint_planner_nodes(sorted(hosts), views, {}, k8s_objs, names)


def test_a_kubernetes_pool_node_absent_from_slurm_goes_to_the_kubernetes_wave_not_the_slurm_one():
    # k01 joined Kubernetes only: Slurm has no node k01 at all, its Node carries the pool label.
    views = {"s01": in_slurm("s01")}
    nodes = planned(views, [kube("k01")], ["s01", "k01"])
    plan = {"waves": [["k01", "s01"]], "left_out": []}
    slurm = filters.maint_schedule(plan, nodes, True)
    assert slurm["order"] == ["s01"]
    assert slurm["left_out"] == []
    assert ops.FilterModule().filters()["maint_kube_schedule"](plan, nodes) == {"order": ["k01"], "serial": [1]}


def test_a_kubernetes_pool_node_parked_in_slurm_goes_to_the_kubernetes_wave():
    views = {"s01": in_slurm("s01"), "k02": parked("k02")}
    nodes = planned(views, [kube("k02")], ["s01", "k02"])
    plan = {"waves": [["k02"], ["s01"]], "left_out": []}
    assert filters.maint_schedule(plan, nodes, True)["order"] == ["s01"]
    assert ops.FilterModule().filters()["maint_kube_schedule"](plan, nodes)["order"] == ["k02"]


def test_a_node_of_no_known_pool_goes_to_neither_wave_and_is_reported():
    # u01: Slurm knows it but it is in no partition and has no move/hold reason; Kubernetes has no Node for it.
    views = {"s01": in_slurm("s01"), "u01": unplaced("u01")}
    nodes = planned(views, [], ["s01", "u01"])
    plan = {"waves": [["s01", "u01"]], "left_out": []}
    for k8s in (False, True):
        slurm = filters.maint_schedule(plan, nodes, k8s)
        assert slurm["order"] == ["s01"]
        assert [x["node"] for x in slurm["left_out"]] == ["u01"]
        assert "pool" in slurm["left_out"][0]["reason"] and "neither" in slurm["left_out"][0]["reason"]
    assert ops.FilterModule().filters()["maint_kube_schedule"](plan, nodes)["order"] == []


def test_a_wave_node_the_planner_never_read_goes_to_neither_wave():
    nodes = planned({"s01": in_slurm("s01")}, None, ["s01"])
    plan = {"waves": [["s01", "ghost"]], "left_out": []}
    slurm = filters.maint_schedule(plan, nodes)
    assert slurm["order"] == ["s01"] and [x["node"] for x in slurm["left_out"]] == ["ghost"]
    assert ops.FilterModule().filters()["maint_kube_schedule"](plan, nodes)["order"] == []


POOLS = st.sampled_from(["slurm", "k8s", None])


@settings(max_examples=150, deadline=None)
@given(pools=st.lists(POOLS, min_size=1, max_size=12), cuts=st.lists(st.integers(1, 4), max_size=12),
       k8s=st.booleans())
def test_property_every_wave_node_goes_to_its_pools_wave_play_once_or_is_reported(pools, cuts, k8s):
    names = [f"gpu{i:02d}" for i in range(len(pools))]
    nodes = [{"name": n, "pool": p, "leaf": None, "in_service": True, "unfinished": False}
             for n, p in zip(names, pools, strict=True)]
    waves, rest = [], list(names)
    for c in cuts:
        if rest:
            waves.append(rest[:c])
            rest = rest[c:]
    if rest:
        waves.append(rest)
    plan = {"waves": waves, "left_out": []}
    slurm = filters.maint_schedule(plan, nodes, k8s)
    kube_order = ops.FilterModule().filters()["maint_kube_schedule"](plan, nodes)["order"] if k8s else []
    left = [x["node"] for x in slurm["left_out"]]
    pool_of = dict(zip(names, pools, strict=True))
    assert sorted(slurm["order"] + kube_order + left) == sorted(names)
    assert all(pool_of[n] == "slurm" for n in slurm["order"])
    assert all(pool_of[n] == "k8s" for n in kube_order)
    assert sum(slurm["serial"]) == len(slurm["order"]) or slurm["order"] == []


def test_the_planner_schedules_the_waves_from_the_nodes_it_planned():
    tasks = yaml.safe_load((ROOT / "roles/maint_planner/tasks/main.yml").read_text())
    k8s = yaml.safe_load((ROOT / "roles/maint_planner/tasks/k8s.yml").read_text())
    order = next(t for t in tasks if t.get("name") == "Order the waves")
    kube = k8s[0]
    assert "maint_schedule(__maint_planner_node_list" in str(order)
    assert "maint_kube_schedule(__maint_planner_node_list)" in str(kube)
    assert "__maint_planner_slurm.nodes" not in str(order) + str(kube)
