"""The pool planner on live state: Slurm's and Kubernetes' word on each node, through pool_live, into the plan.

One hypothesis property over any mix of node states a real fleet shows (gate-held, held after a gate ERROR,
left drained by a killed maintenance run, drained by an admin, idle, running jobs, Kubernetes Ready /
cordoned / held / not ready / unlabelled, with pods, fresh): the pipeline of the pool_planner role
(node_view, merge_k8s_info, planner_nodes, checked_plan) never takes a pool below its minimum in service,
never joins a node with running work as fresh, never moves work across schedulers without a drain, and
leaves an admin's drain or cordon standing; a node both schedulers can place work on stops the plan.
"""

import pytest
from ansible.module_utils.pool_live import merge_k8s_info, node_view, planner_nodes
from ansible.module_utils.pool_plan import PlanError, checked_plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RUN = "20261124T0300"

# Slurm: (state, flags, in a partition, reason) as parse_scontrol_nodes gives them.
SLURM = {
    "absent": None,
    "never_placed": ("DOWN", {"NOT_RESPONDING"}, False, None),
    "idle": ("IDLE", set(), True, None),
    "alloc": ("ALLOCATED", set(), True, None),
    "mix": ("MIXED", set(), True, None),
    "gate_held": ("IDLE", {"DRAIN"}, True, f"gpufleet:hold,to=slurm,run={RUN},joining"),
    "first_start": ("DOWN", {"DRAIN", "NOT_RESPONDING"}, True, "gpufleet:hold,to=slurm,first_start"),
    "gate_error": ("IDLE", {"DRAIN"}, True, f"gpufleet:hold,to=slurm,run={RUN},gate_error:nccl"),
    "gate_fail": ("IDLE", {"DRAIN"}, True, f"gpufleet:gate,to=slurm,run={RUN},nccl:busbw_5.5GB/s"),
    "maint_drain": ("MIXED", {"DRAIN"}, True, f"gpufleet:maint,to=slurm,run={RUN},drain"),
    "maint_applied": ("DOWN", {"DRAIN", "NOT_RESPONDING"}, True, f"gpufleet:maint,to=slurm,run={RUN},applied"),
    "admin_drain": ("IDLE", {"DRAIN"}, True, "xid 79 on GPU 3, RMA"),
    "admin_draining": ("MIXED", {"DRAIN"}, True, "bad HBM, drain after the job"),
    "parked": ("DOWN", {"DRAIN", "NOT_RESPONDING"}, False, f"gpufleet:move,to=k8s,run={RUN},left_slurm"),
}
SLURM_SERVING = {"idle", "alloc", "mix"}
SLURM_BUSY = {"alloc", "mix", "maint_drain", "admin_draining"}
SLURM_HELD = {"gate_held", "first_start", "gate_error", "gate_fail", "maint_drain", "maint_applied",
              "admin_drain", "admin_draining"}
SLURM_ADMIN = {"admin_drain", "admin_draining"}
# Slurm states that leave the node's pool to Kubernetes (Slurm does not place it).
SLURM_UNPLACED = {"absent", "never_placed", "parked"}

POOL_TAINT = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}
HOLD_TAINT = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}
MAINT = {"gpufleet.io/maint": f"gpufleet:maint,to=k8s,run={RUN},drain"}
# Kubernetes: (pool label, Ready, cordoned, taints, annotations).
K8S = {
    "absent": None,
    "ready": ("kubernetes", "True", False, [POOL_TAINT], {}),
    "ready_unlabelled": (None, "True", False, [], {}),
    "admin_cordon": ("kubernetes", "True", True, [POOL_TAINT], {}),
    "gate_held": ("kubernetes", "True", False, [POOL_TAINT, HOLD_TAINT], {}),
    "maint": ("kubernetes", "True", True, [POOL_TAINT], MAINT),
    "not_ready": ("kubernetes", "False", False, [POOL_TAINT], {}),
    "unknown": ("kubernetes", "Unknown", False, [POOL_TAINT], {}),
}
K8S_SERVING = {"ready", "ready_unlabelled"}
K8S_HELD = {"admin_cordon", "gate_held", "maint"}
# Pods run (or may run) on a node Kubernetes has Ready.
K8S_PODS = {"ready", "ready_unlabelled", "admin_cordon", "gate_held", "maint"}


def slurm_node(kind):
    state, flags, placed, reason = SLURM[kind]
    return {"state": state, "flags": set(flags), "partitions": ["gpu"] if placed else [], "reason": reason,
            "busy": kind in SLURM_BUSY}


def k8s_object(name, kind):
    label, ready, cordoned, taints, annotations = K8S[kind]
    return {"kind": "Node",
            "metadata": {"name": name, "labels": {"gpufleet.io/pool": label} if label else {},
                         "annotations": dict(annotations)},
            "spec": {"unschedulable": cordoned, "taints": [dict(t) for t in taints]},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}


@st.composite
def fleets(draw):
    n = draw(st.integers(1, 9))
    fleet = {}
    for i in range(n):
        s = draw(st.sampled_from(sorted(SLURM)))
        # Where Kubernetes is read, a node parked for it is registered there (k8s.yml joined it).
        k = draw(st.sampled_from(sorted(K8S) if s != "parked" else sorted(set(K8S) - {"absent"})))
        pods = k in K8S_PODS and draw(st.booleans())
        fleet[f"gpu{i:02d}"] = {"slurm": s, "k8s": k, "pods": pods, "leaf": draw(st.sampled_from(["l1", "l2"]))}
    # Goals the hosts can hold (validation refuses more): minimums first, then targets.
    mins = {"slurm": draw(st.integers(0, min(3, n)))}
    mins["k8s"] = draw(st.integers(0, min(3, n - mins["slurm"])))
    targets = {"slurm": draw(st.integers(mins["slurm"], n - mins["k8s"]))}
    targets["k8s"] = draw(st.integers(mins["k8s"], n - targets["slurm"]))
    policy = {"pools": {p: {"min": mins[p], "target": targets[p]} for p in mins},
              "max_unavailable": draw(st.integers(1, 3))}
    return fleet, policy


def plan_from_live(fleet, policy):
    """What the pool_planner role does with slurm_node_info's and k8s_info's answers."""
    hosts = sorted(fleet)
    views = {h: node_view(h, slurm_node(f["slurm"])) for h, f in fleet.items() if f["slurm"] != "absent"}
    k8s = {"resources": [k8s_object(h, f["k8s"]) for h, f in fleet.items() if f["k8s"] != "absent"]}
    merged = merge_k8s_info(views, k8s, hosts)
    facts = {h: {"gpus": 8, "leaf": f["leaf"]} for h, f in fleet.items()}
    return checked_plan(planner_nodes(hosts, facts, merged), policy)


def serving(f):
    """The pool a node takes work for now, as the schedulers say it (None: neither)."""
    if f["slurm"] in SLURM_SERVING:
        return "slurm"
    if f["k8s"] in K8S_SERVING and f["slurm"] in SLURM_UNPLACED:
        return "k8s"
    return None


def conflicts(fleet):
    """Nodes Kubernetes schedules on while Slurm places them (serves them, or holds them for itself)."""
    return sorted(h for h, f in fleet.items() if f["k8s"] in K8S_SERVING and f["slurm"] not in SLURM_UNPLACED)


@SETTINGS
@given(fleets())
def test_no_plan_takes_a_pool_below_its_minimum_or_moves_work_or_an_admins_hold(case):
    fleet, policy = case
    bad = conflicts(fleet)
    if bad:
        with pytest.raises(PlanError) as exc:
            plan_from_live(fleet, policy)
        for host in bad:
            assert f"{host}: " in str(exc.value)
        return
    result = plan_from_live(fleet, policy)

    in_service = {p: sum(1 for f in fleet.values() if serving(f) == p) for p in ("slurm", "k8s")}
    for p in in_service:  # capacity is what the schedulers say, nothing more
        assert result["pools_before"][p]["capacity_nodes"] == in_service[p], (p, result["summary"])
    for batch in result["batches"]:
        out = {p: sum(1 for m in batch if m["from"] == p and serving(fleet[m["node"]]) == p) for p in in_service}
        for p, spec in policy["pools"].items():
            if out[p]:
                assert in_service[p] - out[p] >= spec["min"], (p, batch, result["summary"])
            in_service[p] -= out[p]  # a node that joins is held for its gate: it adds nothing this run
    for m in result["moves"]:
        f = fleet[m["node"]]
        assert f["slurm"] not in SLURM_HELD, m  # held and admin-drained nodes never move
        assert not (f["k8s"] in K8S_HELD and f["slurm"] in SLURM_UNPLACED), m  # nor held or cordoned k8s nodes
        if f["slurm"] in SLURM_BUSY:  # running jobs leave only through Slurm's drain
            assert m["from"] == "slurm", m
        if f["pods"]:  # running pods leave only through Kubernetes' drain
            assert m["from"] == "k8s" or m["to"] == "k8s", m
            assert m["from"] is not None, m
    for h, f in fleet.items():
        if f["slurm"] in SLURM_ADMIN:
            assert result["targets"][h] == "slurm"
