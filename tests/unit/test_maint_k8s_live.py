"""Kubernetes-pool maintenance reads a node's service state from Kubernetes and keeps the pool's live minimum.

A Kubernetes-pool node is parked in Slurm (drained with a ``move`` reason, slurmd down), so Slurm says
nothing about its service: that comes from its Node (Ready, schedulable, our maintenance annotation). The
plan and the live check before each Kubernetes wave keep the pool's minimum from it
(module_utils/maint_plan.py planner_nodes, module_utils/maint_k8s.py live_wave_check).
"""

import pathlib

import ansible.module_utils.maint_k8s as mk
import ansible.module_utils.maint_plan as mp
import maint as filters
import maint_ops as ops
import pytest
import yaml
from ansible.module_utils.k8s_state import POOL_LABEL
from ansible.module_utils.node_reason import make_reason
from ansible.module_utils.pool_live import node_view
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN = "20261124T0300"
POOLS = {"pools": {"slurm": {"min": 2, "target": 4}, "k8s": {"min": 2, "target": 4}}, "max_unavailable": 4}


def load(rel):
    return yaml.safe_load((ROOT / rel).read_text())


def parked(name):
    """Slurm's view of a node the pool executor moved to Kubernetes: drained with our move reason, slurmd down."""
    return node_view(name, {"name": name, "state": "DOWN", "flags": ["DRAIN"], "partitions": [],
                            "reason": make_reason("move", "left_slurm", "20261101T0900", "k8s"), "busy": False})


def in_slurm(name, state="IDLE", flags=()):
    return node_view(name, {"name": name, "state": state, "flags": list(flags), "partitions": ["gpu"],
                            "reason": None, "busy": state == "ALLOCATED"})


def kube(name, ready=True, cordoned=False, step=None, taints=None, pool="kubernetes"):
    """A Node as kubernetes.core.k8s_info returns it (k3s agent, pool label set by k8s_pool_labels)."""
    annotations = {"k3s.io/node-args": '["agent"]'}
    labels = {"kubernetes.io/hostname": name, POOL_LABEL: pool}
    if step:
        # maint_k8s writes both: the step label (the record a kubelet cannot forge) and the annotation (the run)
        annotations[mk.ANNOTATION] = make_reason("maint", step, RUN, "k8s")
        labels[mk.STEP_LABEL] = step
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": labels, "annotations": annotations},
           "spec": {"podCIDR": "10.42.3.0/24", "providerID": f"k3s://{name}"},
           "status": {"conditions": [
               {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
               {"type": "Ready", "status": "True" if ready else "Unknown",
                "reason": "KubeletReady" if ready else "NodeStatusUnknown"}]}}
    if cordoned:
        obj["spec"]["unschedulable"] = True
    if taints:
        obj["spec"]["taints"] = taints
    return obj


def fleet(k8s_nodes, slurm=("s01", "s02", "s03", "s04")):
    """Slurm views (the Kubernetes nodes parked), the Node objects and the host -> Node name map."""
    views = {s: in_slurm(s) for s in slurm}
    views.update({n["metadata"]["name"]: parked(n["metadata"]["name"]) for n in k8s_nodes})
    names = {h: h for h in views}
    return views, names


# --- a Kubernetes-pool node's service state comes from Kubernetes -------------------------------------------------


def test_parked_k8s_node_is_in_service_when_its_node_is_ready_and_schedulable():
    objs = [kube("k01")]
    views, names = fleet(objs, slurm=())
    nodes = filters.maint_planner_nodes(["k01"], views, {}, objs, names)
    assert nodes == [{"name": "k01", "pool": "k8s", "leaf": None, "in_service": True, "unfinished": False}]


def test_k8s_node_not_ready_cordoned_or_tainted_is_out_of_service_whatever_slurm_says():
    gate_taint = [{"key": "gpufleet.io/gate", "value": "fail", "effect": "NoSchedule"}]
    objs = [kube("k01", ready=False), kube("k02", cordoned=True), kube("k03", taints=gate_taint), kube("k04")]
    views, names = fleet(objs, slurm=())
    # Slurm holds k04 in no partition and drained: its word must not count either way.
    nodes = {n["name"]: n for n in filters.maint_planner_nodes(sorted(names), views, {}, objs, names)}
    assert {h: n["in_service"] for h, n in nodes.items()} == {"k01": False, "k02": False, "k03": False, "k04": True}


def test_k8s_node_an_earlier_run_left_annotated_is_unfinished():
    objs = [kube("k01", cordoned=True, step="drain"), kube("k02", cordoned=True, step="applied"), kube("k03")]
    views, names = fleet(objs, slurm=())
    nodes = {n["name"]: n for n in filters.maint_planner_nodes(sorted(names), views, {}, objs, names)}
    assert [h for h, n in sorted(nodes.items()) if n["unfinished"]] == ["k01", "k02"]


def test_k8s_node_kubernetes_cannot_show_is_not_capacity():
    # No Kubernetes read at all (None), or no Node for the host: never counted in service.
    views, names = fleet([kube("k01")], slurm=())
    assert filters.maint_planner_nodes(["k01"], views, {}, None, names)[0]["in_service"] is False
    assert filters.maint_planner_nodes(["k01"], views, {}, [], names)[0]["in_service"] is False


def test_a_forged_maintenance_annotation_is_no_step_and_a_host_the_map_refused_is_never_in_service():
    # issue 36: gpufleet.io/maint written by the node's own kubelet (no step label) is not maintenance's; k02 is
    # refused by the Node-name map (its report failed) and is never read under its inventory name
    forged = kube("k01", cordoned=True)
    forged["metadata"]["annotations"][mk.ANNOTATION] = make_reason("maint", "applied", RUN, "k8s")
    objs = [forged, kube("k02"), kube("k03")]
    views, names = fleet(objs, slurm=())
    del names["k02"]
    nodes = {n["name"]: n for n in filters.maint_planner_nodes(["k01", "k02", "k03"], views, {}, objs, names)}
    assert [h for h, n in sorted(nodes.items()) if n["unfinished"]] == []
    assert {h: n["in_service"] for h, n in nodes.items()} == {"k01": False, "k02": False, "k03": True}


def test_k8s_node_name_differs_from_the_inventory_name():
    objs = [kube("dgx-a17")]
    views = {"gpu17": parked("gpu17")}
    nodes = filters.maint_planner_nodes(["gpu17"], views, {}, objs, {"gpu17": "dgx-a17"})
    assert nodes[0]["in_service"] is True


def test_k8s_node_outside_slurm_takes_its_pool_from_the_label():
    objs = [kube("k01")]
    nodes = filters.maint_planner_nodes(["k01"], {}, {}, objs, {"k01": "k01"})
    assert nodes[0]["pool"] == "k8s" and nodes[0]["in_service"] is True


def test_slurm_pool_nodes_still_read_slurm():
    views = {"s01": in_slurm("s01"), "s02": in_slurm("s02", "IDLE", ["DRAIN"]), "s03": in_slurm("s03", "DOWN")}
    nodes = {n["name"]: n for n in filters.maint_planner_nodes(sorted(views), views, {}, [], {})}
    assert {h: n["in_service"] for h, n in nodes.items()} == {"s01": True, "s02": False, "s03": False}


def test_plan_never_takes_the_whole_kubernetes_pool_in_one_wave():
    # Four Ready nodes in the Kubernetes pool, minimum 2, every node selected, a generous policy: Slurm shows
    # them drained and down (parked), which once let the whole pool go in one wave.
    objs = [kube(f"k{i:02d}") for i in range(1, 5)]
    views, names = fleet(objs)
    nodes = [dict(n, selected=n["pool"] == "k8s")
             for n in filters.maint_planner_nodes(sorted(names), views, {}, objs, names)]
    plan = mp.plan_waves(nodes, {"share": "100%", "max_unavailable": 4}, POOLS)
    assert plan["pools"]["k8s"]["in_service"] == 4
    assert [len(w) for w in plan["waves"]] == [2, 2]


# --- the live minimum before each Kubernetes wave (the Slurm path's wave_check) --------------------------------


def test_live_check_leaves_out_a_k8s_node_that_would_take_the_pool_below_its_minimum():
    # k04 failed its gate in an earlier wave (tainted, cordoned): three Ready nodes left, minimum 2.
    gate_taint = [{"key": "gpufleet.io/gate", "value": "fail", "effect": "NoSchedule"}]
    objs = [kube("k01"), kube("k02"), kube("k03"), kube("k04", cordoned=True, taints=gate_taint)]
    names = {h: h for h in ("k01", "k02", "k03", "k04")}
    check = mk.live_wave_check(["k01", "k02"], objs, names, POOLS)
    assert check["go"] == ["k01"]
    assert check["left_out"] == [{"node": "k02", "reason": "pool k8s has 2 nodes in service now, its minimum is 2: "
                                                          "the wave goes on without it"}]


def test_live_check_refuses_a_pool_policy_it_cannot_read():
    # A minimum the check cannot read is never "no minimum": the wave does not start.
    objs = [kube("k01"), kube("k02")]
    names = {"k01": "k01", "k02": "k02"}
    bad = {"pools": {"k8s": {"min": 2, "target": 1}}}
    with pytest.raises(ValueError, match=r"cluster_pools\.pools\.k8s\.target"):
        mk.live_wave_check(["k01"], objs, names, bad)
    with pytest.raises(ValueError, match=r"cluster_pools\.pools\.k8s\.target"):
        mp.wave_check(["k01"], {"k01": {"drained": False, "down": False}}, bad, {"k01": "k8s"})


def test_live_check_leaves_a_node_someone_else_cordoned_as_it_is():
    objs = [kube("k01", cordoned=True), kube("k02"), kube("k03"), kube("k04")]
    names = {h: h for h in ("k01", "k02", "k03", "k04")}
    check = mk.live_wave_check(["k01"], objs, names, POOLS)
    assert check["go"] == [] and "not by maintenance" in check["left_out"][0]["reason"]


def test_live_check_takes_an_unfinished_node_already_out():
    objs = [kube("k01", cordoned=True, step="drain"), kube("k02"), kube("k03")]
    names = {h: h for h in ("k01", "k02", "k03")}
    assert mk.live_wave_check(["k01"], objs, names, POOLS)["go"] == ["k01"]


def test_live_check_counts_a_wave_node_by_its_wave_not_its_label():
    # k03 is in the Kubernetes wave while its label still says slurm (a move in flight): it counts in the
    # Kubernetes pool; k04 has no Node: it goes on, and maint_k8s leaves it out as unknown to the API.
    objs = [kube("k01"), kube("k02"), kube("k03", pool="slurm")]
    names = {h: h for h in ("k01", "k02", "k03", "k04")}
    pools = {"pools": {"k8s": {"min": 3, "target": 3}}}
    check = mk.live_wave_check(["k03", "k04"], objs, names, pools)
    assert check["go"] == ["k04"] and [x["node"] for x in check["left_out"]] == ["k03"]


def test_live_check_filter_is_the_slurm_paths_wave_check():
    objs = [kube("k01"), kube("k02"), kube("k03")]
    names = {h: h for h in ("k01", "k02", "k03")}
    assert ops.FilterModule().filters()["maint_kube_wave_check"](["k01", "k02"], objs, names, POOLS) == \
        mk.live_wave_check(["k01", "k02"], objs, names, POOLS)


NODE_STATES = st.fixed_dictionaries({
    "ready": st.booleans(), "cordoned": st.booleans(), "tainted": st.booleans(),
    "step": st.sampled_from([None, None, "drain", "applied"]), "selected": st.booleans()})


def _objs(states):
    taint = [{"key": "gpufleet.io/gate", "value": "fail", "effect": "NoSchedule"}]
    return [kube(f"k{i:02d}", ready=s["ready"], cordoned=s["cordoned"] or bool(s["step"]),
                 step=s["step"], taints=taint if s["tainted"] else None) for i, s in enumerate(states)]


def _live_up(objs):
    return {o["metadata"]["name"] for o in objs if mk.live_view(o)["in_service"]}


@settings(max_examples=150, deadline=None)
@given(st.lists(NODE_STATES, min_size=1, max_size=8), st.integers(0, 6), st.sampled_from(["10%", "50%", "100%", 1, 3]),
       st.integers(1, 6))
def test_property_no_planned_wave_takes_the_kubernetes_pool_below_its_live_minimum(states, minimum, share, mu):
    objs = _objs(states)
    views, names = fleet(objs, slurm=())
    pools = {"pools": {"slurm": {"min": 0, "target": 0}, "k8s": {"min": minimum, "target": max(minimum, len(objs))}},
             "max_unavailable": mu}
    nodes = [dict(n, selected=s["selected"])
             for n, s in zip(filters.maint_planner_nodes(sorted(names), views, {}, objs, names), states, strict=True)]
    plan = mp.plan_waves(nodes, {"share": share, "max_unavailable": mu}, pools)
    # In service per Kubernetes, plus the nodes an earlier run left in maintenance (they return after their
    # wave, and the live check before each wave stands guard if one does not).
    serving = _live_up(objs) | {o["metadata"]["name"] for o, s in zip(objs, states, strict=True) if s["step"]}
    for wave in plan["waves"]:
        assert len(wave) <= mu
        taken = [n for n in wave if n in serving]
        if taken:
            assert len(serving) - len(taken) >= minimum, (wave, sorted(serving), minimum)


@settings(max_examples=150, deadline=None)
@given(st.lists(NODE_STATES, min_size=1, max_size=8), st.integers(0, 6), st.data())
def test_property_the_live_check_never_takes_the_kubernetes_pool_below_its_minimum(states, minimum, data):
    objs = _objs(states)
    names = {o["metadata"]["name"]: o["metadata"]["name"] for o in objs}
    wave = data.draw(st.lists(st.sampled_from(sorted(names)), unique=True))
    pools = {"pools": {"slurm": {"min": 0, "target": 0}, "k8s": {"min": minimum, "target": max(minimum, len(objs))}}}
    check = mk.live_wave_check(wave, objs, names, pools)
    up = _live_up(objs)
    assert sorted(check["go"] + [x["node"] for x in check["left_out"]]) == sorted(wave)
    taken = [n for n in check["go"] if n in up]
    assert not taken or len(up) - len(taken) >= minimum


# --- the wiring ----------------------------------------------------------------------------------------------------


def _task(tasks, name):
    return next(t for t in tasks if t.get("name") == name)


def test_the_planner_reads_kubernetes_nodes_and_plans_from_them():
    tasks = load("roles/maint_planner/tasks/main.yml")
    read = _task(tasks, "Read Kubernetes' nodes")
    assert read["kubernetes.core.k8s_info"]["kind"] == "Node"
    assert read.get("check_mode") is False
    read_nodes = _task(tasks, "Read each node's pool and service state")["ansible.builtin.set_fact"]
    assert "maint_planner_nodes(__maint_planner_slurm.nodes, hostvars, __maint_planner_k8s_nodes" in str(read_nodes)
    assert _task(tasks, "Plan the waves")["maint_plan"]["nodes"] == "{{ __maint_planner_node_list }}"


def test_each_kubernetes_wave_checks_the_live_minimum_before_it_drains():
    tasks = load("roles/maint_k8s/tasks/main.yml")
    names = [t.get("name") for t in tasks]
    check = names.index("Check the wave against the pools' minimums now")
    assert "maint_kube_wave_check" in str(tasks[check])
    assert check < names.index("Cordon and drain the node")
    assert names.index("End the run for a node the wave cannot take now") > check
