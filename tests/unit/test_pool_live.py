"""Live pool state read from Slurm: committed pools, admin holds, unfinished moves, partitions."""

import pathlib

import pytest
from ansible.module_utils.pool_live import (
    committed_pool,
    merge_k8s,
    node_view,
    partition_nodes_after,
    planner_nodes,
    planner_nodes_from_hostvars,
    unfinished,
    unfinished_moves,
)
from ansible.module_utils.slurm_state import parse_scontrol_nodes

CAPTURE = pathlib.Path(__file__).parent / "captures" / "scontrol_show_node_lab.txt"


@pytest.fixture
def lab_nodes():
    text = "\n".join(line for line in CAPTURE.read_text().splitlines() if not line.startswith("#@"))
    return parse_scontrol_nodes(text)


def test_real_capture_gives_each_node_its_committed_pool(lab_nodes):
    views = {name: node_view(name, node) for name, node in lab_nodes.items()}
    assert views["gpu01"]["pool"] == "slurm" and views["gpu01"]["healthy"]
    # An admin's drain keeps its pool but the node is not healthy capacity and not ours.
    assert views["gpu02"]["admin_hold"] and views["gpu02"]["pool"] == "slurm" and not views["gpu02"]["healthy"]
    # Our move reason commits gpu03 to k8s even while it is still in the partition.
    assert views["gpu03"]["pool"] == "k8s" and views["gpu03"]["in_partition"]
    assert views["gpu04"]["busy"] and views["gpu04"]["pool"] == "slurm"


def test_admin_drained_node_is_excluded_from_planning(lab_nodes):
    views = {name: node_view(name, node) for name, node in lab_nodes.items()}
    nodes = planner_nodes(views, {h: {"gpus": 2, "leaf": "l1"} for h in views}, views)
    by_name = {n["name"]: n for n in nodes}
    assert by_name["gpu02"]["excluded"] is True
    assert by_name["gpu01"]["excluded"] is False and by_name["gpu01"]["gpus"] == 2


def test_parked_node_outside_slurm_counts_in_its_target_pool():
    parked = {"state": "DOWN", "flags": {"DRAIN", "NOT_RESPONDING"}, "partitions": [], "busy": False,
              "reason": "gpufleet:move,to=k8s,run=r1,left_slurm"}
    view = node_view("gpu09", parked)
    assert view["pool"] == "k8s" and view["healthy"] and not view["in_partition"]


def test_unknown_node_has_no_pool_and_k8s_label_counts():
    assert committed_pool(None, None) is None
    assert committed_pool(None, {"pool": "k8s"}) == "k8s"


def test_unfinished_moves_are_found_from_state_alone(lab_nodes):
    views = {name: node_view(name, node) for name, node in lab_nodes.items()}
    assert unfinished(views, {}) == {"gpu03": "k8s"}
    held = {"state": "IDLE", "flags": {"DRAIN"}, "partitions": ["gpu"], "busy": False,
            "reason": "gpufleet:hold,to=slurm,run=r2,joining"}
    assert unfinished({"gpu05": node_view("gpu05", held)}, {}) == {"gpu05": "slurm"}


def test_partition_changes_keep_subset_partitions_and_grow_pool_partitions():
    partitions = {"gpu": ["gpu01", "gpu02", "gpu03"], "debug": ["gpu01"]}
    changes = partition_nodes_after(partitions, ["gpu01", "gpu02", "gpu03"], leaving=["gpu01"], joining=["gpu04"])
    assert changes == {"gpu": ["gpu02", "gpu03", "gpu04"], "debug": []}
    assert partition_nodes_after(partitions, ["gpu01", "gpu02", "gpu03"], [], []) == {}
    # A fresh cluster: an empty pool partition takes the joining nodes.
    assert partition_nodes_after({"gpu": []}, [], [], ["gpu01"]) == {"gpu": ["gpu01"]}


def test_a_node_that_failed_a_gate_is_not_healthy_capacity():
    failed = {"state": "IDLE", "flags": {"DRAIN"}, "partitions": ["gpu"], "busy": False,
              "reason": "gpufleet:gate,to=slurm,run=r3,nccl:busbw_5.5GB/s_below_98GB/s"}
    view = node_view("gpu07", failed)
    assert view["failed_gate"] and not view["healthy"] and not view["admin_hold"]
    assert view["pool"] == "slurm"
    assert unfinished({"gpu07": view}, {}) == {}


def test_kubernetes_label_places_nodes_slurm_does_not_and_admin_cordon_is_not_capacity():
    from ansible.module_utils.k8s_state import node_states

    nodes = node_states({"resources": [
        {"kind": "Node", "metadata": {"name": "gpu05", "labels": {"gpufleet.io/pool": "k8s"}},
         "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"kind": "Node", "metadata": {"name": "gpu06", "labels": {"gpufleet.io/pool": "k8s"}},
         "spec": {"unschedulable": True}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
    ]})
    views = merge_k8s({}, nodes, ["gpu05", "gpu06", "gpu07"])
    assert views["gpu05"]["pool"] == "k8s" and views["gpu05"]["healthy"]
    assert views["gpu06"]["pool"] == "k8s" and views["gpu06"]["admin_hold"] and not views["gpu06"]["healthy"]
    assert views["gpu07"]["pool"] is None


def test_planner_nodes_read_the_gpu_count_from_the_named_variable_else_the_inventory(lab_nodes):
    views = {name: node_view(name, node) for name, node in lab_nodes.items()}
    hostvars = {
        "gpu01": {"discovered": 4, "cluster_gpu_count": 8, "cluster_leaf_switch": "leaf1"},
        "gpu04": {"cluster_gpu_count": 8, "cluster_pool_pin": "k8s"},
    }
    by_name = {n["name"]: n for n in planner_nodes_from_hostvars(["gpu01", "gpu04"], hostvars, views, "discovered",
                                                                 "gpu_discovery_refused")}
    assert by_name["gpu01"]["gpus"] == 4 and by_name["gpu01"]["leaf"] == "leaf1"
    assert by_name["gpu04"]["gpus"] == 8 and by_name["gpu04"]["pinned"] == "k8s"
    # Another variable name is not read in its place.
    by_name = {n["name"]: n for n in planner_nodes_from_hostvars(["gpu01"], hostvars, views, "gpu_discovery_count",
                                                                 "gpu_discovery_refused")}
    assert by_name["gpu01"]["gpus"] == 8


def test_unfinished_moves_are_batches_sorted_by_node(lab_nodes):
    views = {name: node_view(name, node) for name, node in lab_nodes.items()}
    targets = {name: "slurm" for name in views} | {"gpu03": "k8s"}
    moves = unfinished_moves(views, targets)
    assert moves == [{"node": n, "to": t, "reason": "finish a move an earlier run left"}
                     for n, t in sorted(unfinished(views, targets).items())]
    assert {"node": "gpu03", "to": "k8s", "reason": "finish a move an earlier run left"} in moves


# --- what is in service: Slurm and Kubernetes, live --------------------------------------------------------


def slurm(state, reason=None, partitions=("gpu",), flags=(), busy=None):
    """A parsed Slurm node as parse_scontrol_nodes gives it (State=IDLE+DRAIN is base IDLE, flag DRAIN)."""
    return {"state": state, "flags": set(flags), "partitions": list(partitions), "reason": reason,
            "busy": state in ("ALLOCATED", "MIXED") if busy is None else busy}


def k8s_node(name, label="kubernetes", ready="True", cordoned=False, taints=(), annotations=None, labels=None):
    """A Node object as kubernetes.core.k8s_info returns it."""
    meta = {"name": name, "labels": {**({"gpufleet.io/pool": label} if label else {}), **(labels or {})},
            "annotations": dict(annotations or {})}
    return {"kind": "Node", "metadata": meta,
            "spec": {"unschedulable": cordoned, "taints": [dict(t) for t in taints]},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}


POOL_TAINT = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}
HOLD_TAINT = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}


def test_node_joined_but_held_for_its_gate_is_not_capacity():
    # The executor joined gpu05 held (gpufleet:hold,...,joining) and a killed run never gated it; gpu06 was held
    # at its first slurmd start and never answered.
    joined = node_view("gpu05", slurm("IDLE", "gpufleet:hold,to=slurm,run=20261121T1000,joining", flags={"DRAIN"}))
    first = node_view("gpu06", slurm("DOWN", "gpufleet:hold,to=slurm,first_start",
                                     flags={"DRAIN", "NOT_RESPONDING"}))
    for view in (joined, first):
        assert view["pool"] == "slurm" and not view["healthy"]
        assert view["held"].startswith("held for its gate (gpufleet:hold,to=slurm")
    node = planner_nodes(["gpu05"], {}, {"gpu05": joined})[0]
    assert node["healthy"] is False and node["held"] == joined["held"]


def test_node_held_after_a_gate_error_is_not_capacity():
    view = node_view("gpu07", slurm("IDLE", "gpufleet:hold,to=slurm,run=r42,gate_error:nccl", flags={"DRAIN"}))
    assert view["pool"] == "slurm" and not view["healthy"] and not view["admin_hold"]
    assert view["held"] == ("held after a gate ERROR (gpufleet:hold,to=slurm,run=r42,gate_error:nccl): "
                            "not in service until a gate run passes it")


@pytest.mark.parametrize("step", ["drain", "applied"])
def test_node_a_killed_maintenance_run_left_drained_is_held_with_its_unfinished_change(step):
    reason = f"gpufleet:maint,to=slurm,run=20261124T0300,{step}"
    view = node_view("gpu03", slurm("MIXED" if step == "drain" else "IDLE", reason, flags={"DRAIN"}))
    assert view["pool"] == "slurm" and not view["healthy"] and not view["admin_hold"]
    assert view["held"] == f"maintenance unfinished on gpu03: rerun maintain.yml ({reason})"


def test_kubernetes_node_held_for_its_gate_is_not_capacity():
    from ansible.module_utils.k8s_state import node_states

    knodes = node_states([k8s_node("gpu08", taints=[POOL_TAINT, HOLD_TAINT])])
    view = merge_k8s({}, knodes, ["gpu08"])["gpu08"]
    assert view["pool"] == "k8s" and not view["healthy"] and not view["admin_hold"]
    assert view["held"].startswith("held in Kubernetes for its gate")


def test_kubernetes_node_with_unfinished_maintenance_is_held_not_taken_for_an_admin_cordon():
    from ansible.module_utils.pool_live import merge_k8s_info

    annotation = {"gpufleet.io/maint": "gpufleet:maint,to=k8s,run=20261124T0300,drain"}
    step = {"node-restriction.kubernetes.io/gpufleet-maint": "drain"}  # maintenance's record, kubelet-proof
    result = {"resources": [k8s_node("gpu09", cordoned=True, taints=[POOL_TAINT], annotations=annotation,
                                     labels=step)]}
    view = merge_k8s_info({}, result, ["gpu09"])["gpu09"]
    assert view["pool"] == "k8s" and not view["healthy"] and not view["admin_hold"]
    assert view["held"] == ("maintenance unfinished on gpu09: rerun maintain.yml "
                            "(gpufleet.io/maint=gpufleet:maint,to=k8s,run=20261124T0300,drain)")


def test_a_cordon_whose_node_forged_the_maintenance_annotation_is_an_admins_hold():
    # issue 36: a kubelet may write any annotation on its own Node; without maintenance's label the cordon is an
    # admin's (never lifted, never moved), whatever gpufleet.io/maint says
    from ansible.module_utils.pool_live import merge_k8s_info

    forged = {"gpufleet.io/maint": "gpufleet:maint,to=k8s,run=20261124T0300,applied"}
    result = {"resources": [k8s_node("gpu09", cordoned=True, taints=[POOL_TAINT], annotations=forged)]}
    view = merge_k8s_info({}, result, ["gpu09"])["gpu09"]
    assert view["admin_hold"] and not view["healthy"], view
    assert view["held"] is None, view


def test_a_host_left_out_of_the_node_name_map_is_held_and_never_read_under_its_inventory_name():
    # issue 36: gpu02 reported gpu01's hostname, so the Node-name map refuses it; its own Node (in service) must not
    # make it capacity or movable under the inventory name
    from ansible.module_utils.k8s_state import node_states

    nodes = node_states([k8s_node("gpu01", taints=[POOL_TAINT]), k8s_node("gpu02", taints=[POOL_TAINT])])
    views = merge_k8s({}, nodes, ["gpu01", "gpu02"], {"gpu01": "gpu01"})
    assert views["gpu01"]["healthy"] and views["gpu01"]["held"] is None
    assert not views["gpu02"]["healthy"], views["gpu02"]
    assert views["gpu02"]["held"].startswith("gpu02: no Kubernetes Node name"), views["gpu02"]
    assert "k8s" not in views["gpu02"] and views["gpu02"]["schedulers"] == []


def test_kubernetes_node_whose_readiness_is_unknown_is_not_capacity():
    from ansible.module_utils.k8s_state import node_states

    view = merge_k8s({}, node_states([k8s_node("gpu10", ready="Unknown", taints=[POOL_TAINT])]), ["gpu10"])["gpu10"]
    assert view["pool"] == "k8s" and not view["healthy"]


@pytest.mark.parametrize("label", [None, "batch", "slurm"])
def test_ready_kubernetes_node_slurm_does_not_place_is_in_the_k8s_pool_whatever_its_label(label):
    from ansible.module_utils.k8s_state import node_states

    view = merge_k8s({}, node_states([k8s_node("gpu11", label=label)]), ["gpu11"])["gpu11"]
    assert view["pool"] == "k8s" and view["healthy"]
    assert view["schedulers"] == ["k8s"]


def test_node_schedulable_in_both_schedulers_is_reported_with_both():
    from ansible.module_utils.k8s_state import node_states

    views = {"gpu12": node_view("gpu12", slurm("IDLE"))}
    view = merge_k8s(views, node_states([k8s_node("gpu12", taints=[POOL_TAINT])]), ["gpu12"])["gpu12"]
    assert view["schedulers"] == ["k8s", "slurm"]
    # Drained in Slurm, or cordoned in Kubernetes: one scheduler only.
    drained = {"gpu12": node_view("gpu12", slurm("IDLE", "gpu12 xid 79", flags={"DRAIN"}))}
    assert merge_k8s(drained, node_states([k8s_node("gpu12")]), ["gpu12"])["gpu12"]["schedulers"] == ["k8s"]
    cordoned = node_states([k8s_node("gpu12", cordoned=True)])
    assert merge_k8s(views, cordoned, ["gpu12"])["gpu12"]["schedulers"] == ["slurm"]


@pytest.mark.parametrize("state", ["IDLE+MAINTENANCE+RESERVED", "MIXED+MAINTENANCE+RESERVED", "IDLE$"])
def test_node_in_an_active_maint_reservation_is_not_capacity(lab_nodes, state):
    # A MAINT reservation takes the node out of the pool's service: it runs only the reservation's jobs.
    # scontrol prints the flag as MAINTENANCE; sinfo's "$" suffix reads as MAINT.
    line = next(ln for ln in CAPTURE.read_text().splitlines() if ln.startswith("NodeName=gpu01 "))
    node = parse_scontrol_nodes(line.replace("State=IDLE ", f"State={state} "))["gpu01"]
    view = node_view("gpu01", node)
    assert view["pool"] == "slurm" and not view["healthy"], view
    assert "slurm" not in view["schedulers"], view


def test_a_node_registered_under_its_cluster_k8s_node_name_is_found_in_kubernetes():
    # review of issue 33: the live read matched Nodes by inventory name only, so a node named with
    # cluster_k8s_node_name never joined k8s_agent and gate.yml gated it as a Slurm node.
    from ansible.module_utils.pool_live import merge_k8s_info

    result = {"resources": [k8s_node("gpu11.cluster.example", taints=[POOL_TAINT])]}
    view = merge_k8s_info({}, result, ["gpu11"], {"gpu11": "gpu11.cluster.example"})["gpu11"]
    assert view["pool"] == "k8s" and view["healthy"]
    assert merge_k8s_info({}, result, ["gpu11"])["gpu11"]["pool"] is None


def test_a_node_whose_gpu_report_was_refused_is_held_and_never_placed():
    """gpu_discovery refused gpu09's own GPU report in this run (issue 36): it leaves the run, but the planner still
    sees it. Slurm does not know it yet, so its live view is healthy and unassigned: before, a Slurm pool below its
    target placed it, and the executor (which acts through delegate_to) joined it to Slurm, gave it the munge key
    and started slurmd on a report judged untrustworthy. Now the refusal holds it: never moved, never capacity."""
    from ansible.module_utils.pool_plan import plan

    hostvars = {
        "gpu01": {"cluster_gpu_count": 8, "cluster_leaf_switch": "l1", "gpu_discovery_count": 8},
        "gpu09": {"cluster_gpu_count": 8, "cluster_leaf_switch": "l1", "gpu_discovery_refused": ["file"]},
    }
    views = {"gpu01": node_view("gpu01", {"state": "IDLE", "flags": set(), "partitions": ["gpu"], "busy": False,
                                          "reason": None}),
             "gpu09": node_view("gpu09")}
    nodes = {n["name"]: n for n in planner_nodes_from_hostvars(list(hostvars), hostvars, views, "gpu_discovery_count",
                                                               "gpu_discovery_refused")}
    assert nodes["gpu09"]["held"] and "field(s) file" in nodes["gpu09"]["held"]
    assert nodes["gpu09"]["healthy"] is False
    assert nodes["gpu01"]["held"] is None and nodes["gpu01"]["healthy"] is True
    result = plan(list(nodes.values()), {"pools": {"slurm": {"min": 1, "target": 2}}, "max_unavailable": 1})
    assert "gpu09" not in {m["node"] for m in result["moves"]}
    assert result["targets"].get("gpu09") in (None, nodes["gpu09"]["pool"]), result["targets"]
    assert any(h["node"] == "gpu09" for h in result["held"]), result["held"]
