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
    by_name = {n["name"]: n for n in planner_nodes_from_hostvars(["gpu01", "gpu04"], hostvars, views, "discovered")}
    assert by_name["gpu01"]["gpus"] == 4 and by_name["gpu01"]["leaf"] == "leaf1"
    assert by_name["gpu04"]["gpus"] == 8 and by_name["gpu04"]["pinned"] == "k8s"
    # Another variable name is not read in its place.
    by_name = {n["name"]: n for n in planner_nodes_from_hostvars(["gpu01"], hostvars, views, "gpu_discovery_count")}
    assert by_name["gpu01"]["gpus"] == 8


def test_unfinished_moves_are_batches_sorted_by_node(lab_nodes):
    views = {name: node_view(name, node) for name, node in lab_nodes.items()}
    targets = {name: "slurm" for name in views} | {"gpu03": "k8s"}
    moves = unfinished_moves(views, targets)
    assert moves == [{"node": n, "to": t, "reason": "finish a move an earlier run left"}
                     for n, t in sorted(unfinished(views, targets).items())]
    assert {"node": "gpu03", "to": "k8s", "reason": "finish a move an earlier run left"} in moves
