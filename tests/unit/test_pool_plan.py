"""The pool planner: hypothesis properties for each promise docs/pools.md makes, and worked examples."""
import itertools
import random

import pytest
from ansible.module_utils.pool_plan import plan, summary
from ansible.module_utils.pool_policy import resolve_target
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

POOLS = ("k8s", "slurm")
PERCENTS = ["0%", "25%", "50%", "75%", "100%"]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw, max_nodes=10, pins=True, unhealthy=True, unassigned=True, excluded=True):
    n = draw(st.integers(1, max_nodes))
    leaves = draw(st.lists(st.sampled_from(["leafA", "leafB", "leafC", "leafD"]), min_size=1, max_size=4))
    named = draw(st.sampled_from([POOLS, ("slurm",), ("k8s",)]))
    # A policy names every pool that has nodes (plan refuses one that does not).
    pool_choices = list(named) + ([None] if unassigned else [])
    nodes = []
    for i in range(n):
        nodes.append({
            "name": f"gpu{i:02d}",
            "gpus": draw(st.sampled_from([4, 8])),
            "leaf": draw(st.sampled_from([*leaves, None])),
            "healthy": draw(st.sampled_from([True, True, True, False])) if unhealthy else True,
            "pool": draw(st.sampled_from(pool_choices)),
            "pinned": draw(st.sampled_from([None, None, None, *POOLS])) if pins else None,
            "excluded": draw(st.booleans()) and draw(st.booleans()) if excluded else False,
        })
    pools = {}
    for p in named:
        mn = draw(st.integers(0, 3))
        target = draw(st.one_of(st.integers(mn, mn + 5), st.sampled_from(PERCENTS)))
        pools[p] = {"min": mn, "target": target}
    fractions = [s["target"] for s in pools.values() if isinstance(s["target"], str)]
    if sum(int(f[:-1]) for f in fractions) > 100:  # validation refuses fractions above 100% in all
        pools["slurm"]["target"] = f"{100 - int(pools['k8s']['target'][:-1])}%"
    policy = {"pools": pools, "max_unavailable": draw(st.integers(1, 3))}
    # A pin to a pool the policy lacks is a validation error, caught before planning.
    for node in nodes:
        if node["pinned"] not in (None, *pools):
            node["pinned"] = None
    return nodes, policy


def capacity(node):
    return node["healthy"] and not node["excluded"]


def wants(nodes, policy):
    eligible = sum(1 for n in nodes if capacity(n))
    return {p: max(s["min"], resolve_target(s["target"], eligible)) for p, s in policy["pools"].items()}


def blocked(result):
    return [u for u in result["unmet"] if "node" in u]


# --- properties -------------------------------------------------------------------------------------------


@SETTINGS
@given(clusters(), st.randoms(use_true_random=False))
def test_plan_is_deterministic_whatever_the_input_order(cluster, rnd):
    nodes, policy = cluster
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    assert plan(shuffled, policy) == plan(nodes, policy)


@SETTINGS
@given(clusters())
def test_replanning_the_planned_state_moves_nothing(cluster):
    nodes, policy = cluster
    first = plan(nodes, policy)
    assume(not blocked(first))
    after = [dict(n, pool=first["targets"][n["name"]]) for n in nodes]
    again = plan(after, policy)
    assert again["moves"] == [] and again["batches"] == []
    assert again["targets"] == first["targets"]


@SETTINGS
@given(clusters(pins=False, unassigned=False), st.data())
def test_zero_moves_when_the_cluster_already_meets_the_policy(cluster, data):
    nodes, _ = cluster
    pools = {}
    for p in POOLS:  # a policy this state meets: each target at most what the pool holds now
        have = sum(1 for n in nodes if capacity(n) and n["pool"] == p)
        target = data.draw(st.integers(0, have))
        pools[p] = {"min": data.draw(st.integers(0, target)), "target": target}
    result = plan(nodes, {"pools": pools, "max_unavailable": 2})
    assert result["moves"] == []
    assert result["unmet"] == []
    assert result["targets"] == {n["name"]: n["pool"] for n in nodes}


def brute_force_fewest_moves(nodes, policy):
    """The fewest moves over every assignment of the movable nodes that meets every pool's goal."""
    want = wants(nodes, policy)
    pools = sorted(policy["pools"])
    fixed, free = {}, []
    for n in nodes:
        if n["excluded"]:
            fixed[n["name"]] = n["pool"]
        elif n["pinned"]:
            fixed[n["name"]] = n["pinned"]
        elif not n["healthy"]:
            fixed[n["name"]] = n["pool"]
        else:
            free.append(n)
    best = None
    for choice in itertools.product(pools, repeat=len(free)):
        final = dict(fixed)
        final.update({n["name"]: c for n, c in zip(free, choice, strict=True)})
        counts = dict.fromkeys(pools, 0)
        for n in nodes:
            if capacity(n) and final[n["name"]] in counts:
                counts[final[n["name"]]] += 1
        if all(counts[p] >= want[p] for p in pools):
            moves = sum(1 for n in nodes if final[n["name"]] != n["pool"])
            best = moves if best is None else min(best, moves)
    return best


@SETTINGS
@given(st.one_of(clusters(max_nodes=8), clusters(max_nodes=8, pins=False, unhealthy=False, excluded=False)))
def test_plan_makes_the_fewest_moves_that_meet_the_policy(cluster):
    nodes, policy = cluster
    result = plan(nodes, policy)
    fewest = brute_force_fewest_moves(nodes, policy)
    if fewest is None:  # no assignment meets every goal: the plan must say so (a pool short,
        # or a pin that waits because honouring it would break a pool's minimum)
        assert result["unmet"], result
        return
    assume(not blocked(result))
    assert not [u for u in result["unmet"] if "pool" in u]
    assert len(result["moves"]) == fewest


@SETTINGS
@given(clusters(max_nodes=14))
def test_batches_never_take_a_pool_below_its_minimum_and_hold_at_most_max_unavailable(cluster):
    nodes, policy = cluster
    result = plan(nodes, policy)
    by_name = {n["name"]: n for n in nodes}
    where = {n["name"]: n["pool"] for n in nodes}

    def in_service(p):
        return sum(1 for name, pool in where.items() if pool == p and capacity(by_name[name]))

    for index, batch in enumerate(result["batches"]):
        leaving = [m for m in batch if m["from"] in policy["pools"]]
        assert batch and len(leaving) <= policy["max_unavailable"]
        # Nodes in no pool join all together, in the first batch, and only there.
        assert index == 0 or len(leaving) == len(batch)
        before = {p: in_service(p) for p in policy["pools"]}
        out = {p: sum(1 for m in batch if m["from"] == p and capacity(by_name[m["node"]]))
               for p in policy["pools"]}
        for p, spec in policy["pools"].items():
            during = before[p] - out[p]
            if out[p]:
                assert during >= spec["min"], (p, batch)
        for m in batch:
            assert where[m["node"]] == m["from"]
            where[m["node"]] = m["to"]
    assert where == result["targets"]
    assert result["moves"] == [m for b in result["batches"] for m in b]


@SETTINGS
@given(clusters(max_nodes=14))
def test_pinned_and_excluded_nodes_never_move_except_a_pin_to_its_pool(cluster):
    nodes, policy = cluster
    result = plan(nodes, policy)
    moved = {m["node"]: m for m in result["moves"]}
    for n in nodes:
        if n["excluded"]:
            assert n["name"] not in moved
            assert result["targets"][n["name"]] == n["pool"]
        elif n["pinned"]:
            if n["pool"] == n["pinned"]:
                assert n["name"] not in moved
            elif n["name"] in moved:
                assert moved[n["name"]]["to"] == n["pinned"]
                assert "pinned" in moved[n["name"]]["reason"]
            else:  # only a minimum in service can hold a pin back, and the plan says so
                assert any(u.get("node") == n["name"] for u in result["unmet"])


@SETTINGS
@given(clusters(max_nodes=14))
def test_unhealthy_nodes_are_not_capacity_and_are_not_moved_unless_pinned(cluster):
    nodes, policy = cluster
    result = plan(nodes, policy)
    moved = {m["node"] for m in result["moves"]}
    for n in nodes:
        if not n["healthy"] and not n["pinned"]:
            assert n["name"] not in moved
    for p in policy["pools"]:
        healthy_in_p = sum(1 for n in nodes if capacity(n) and result["targets"][n["name"]] == p)
        assert result["pools_after"][p]["capacity_nodes"] == healthy_in_p
        if healthy_in_p < wants(nodes, policy)[p] and not blocked(result):
            # short of its goal only when the healthy nodes cannot cover every goal
            assert sum(wants(nodes, policy).values()) > sum(1 for n in nodes if capacity(n)) or any(
                n["pinned"] for n in nodes)


@SETTINGS
@given(clusters(max_nodes=14))
def test_unassigned_healthy_nodes_get_a_pool(cluster):
    nodes, policy = cluster
    result = plan(nodes, policy)
    for n in nodes:
        if capacity(n) and not blocked(result):
            assert result["targets"][n["name"]] in policy["pools"]


@SETTINGS
@given(st.lists(st.integers(1, 6), min_size=1, max_size=6),
       st.lists(st.integers(0, 6), min_size=1, max_size=6), st.integers(0, 40))
def test_rebalancing_splits_at_most_one_leaf_that_was_whole(slurm_leaves, k8s_leaves, want_k8s):
    nodes = []
    for tag, sizes, pool in (("s", slurm_leaves, "slurm"), ("k", k8s_leaves, "k8s")):
        for li, size in enumerate(sizes):
            nodes += [{"name": f"{tag}{li}n{j}", "gpus": 8, "leaf": f"{tag}{li}", "pool": pool}
                      for j in range(size)]
    total = len(nodes)
    want_k8s = min(want_k8s, total)
    policy = {"pools": {"k8s": {"target": want_k8s}, "slurm": {"target": total - want_k8s}}}
    result = plan(nodes, policy)

    def mixed(assign):
        pools_by_leaf = {}
        for n in nodes:
            pools_by_leaf.setdefault(n["leaf"], set()).add(assign[n["name"]])
        return {leaf for leaf, ps in pools_by_leaf.items() if len(ps) > 1}

    before = mixed({n["name"]: n["pool"] for n in nodes})
    after = mixed(result["targets"])
    assert before == set()
    assert len(after) <= 1


def test_prefers_moving_the_rest_of_a_leaf_that_is_mostly_in_the_target_pool():
    nodes = [{"name": f"a{i}", "leaf": "A", "pool": "slurm"} for i in range(4)]
    nodes += [{"name": f"b{i}", "leaf": "B", "pool": "k8s" if i < 3 else "slurm"} for i in range(4)]
    result = plan(nodes, {"pools": {"k8s": {"target": 4}, "slurm": {"target": 4}}})
    assert [m["node"] for m in result["moves"]] == ["b3"]


def test_takes_a_whole_leaf_of_the_right_size_rather_than_splitting_two():
    sizes = (("A", 5), ("B", 3), ("C", 4))
    nodes = [{"name": f"{leaf}{i}", "leaf": leaf, "pool": "slurm"}
             for leaf, size in sizes for i in range(size)]
    result = plan(nodes, {"pools": {"k8s": {"target": 3}, "slurm": {"target": 9}}})
    assert sorted(m["node"] for m in result["moves"]) == ["B0", "B1", "B2"]


# --- worked examples --------------------------------------------------------------------------------------


def twelve(pool=None):
    return [{"name": f"gpu{i:02d}", "gpus": 8, "leaf": f"leaf{i // 4}", "pool": pool} for i in range(12)]


def test_first_run_assigns_every_node_and_keeps_leaves_together():
    policy = {"pools": {"slurm": {"min": 2, "target": "75%"}, "k8s": {"min": 1, "target": "25%"}},
              "max_unavailable": 4}
    result = plan(twelve(), policy)
    assert result["pools_after"]["slurm"] == {"nodes": 9, "gpus": 72, "capacity_nodes": 9,
                                              "capacity_gpus": 72}
    assert result["pools_after"]["k8s"]["capacity_nodes"] == 3
    assert result["unassigned"] == {"before": 12, "after": 0}
    k8s = sorted(n for n, p in result["targets"].items() if p == "k8s")
    assert {int(n[3:]) // 4 for n in k8s} == {2}  # all three from one leaf
    # Nodes in no pool take nothing out of service: one batch, whatever max_unavailable.
    assert [len(b) for b in result["batches"]] == [12]
    assert all(m["reason"].startswith("assign:") for m in result["moves"])


def test_policy_change_moves_only_the_difference():
    state = [dict(n, pool="slurm" if i < 9 else "k8s") for i, n in enumerate(twelve())]
    policy = {"pools": {"slurm": {"min": 2, "target": "50%"}, "k8s": {"min": 1, "target": "50%"}},
              "max_unavailable": 2}
    result = plan(state, policy)
    assert sorted(m["node"] for m in result["moves"]) == ["gpu00", "gpu01", "gpu08"]
    assert all(m["from"] == "slurm" and m["to"] == "k8s" for m in result["moves"])
    assert result["moves"][0]["reason"] == "rebalance: slurm above its goal (9>6), k8s below (3<6)"
    assert [[m["batch"] for m in b] for b in result["batches"]] == [[0, 0], [1]]


def test_pinned_node_moves_to_its_pin_and_says_so():
    state = [dict(n, pool="slurm") for n in twelve()]
    state[0]["pinned"] = "k8s"
    result = plan(state, {"pools": {"slurm": {"min": 2, "target": 3}, "k8s": {"target": 0}}})
    assert [(m["node"], m["to"], m["reason"]) for m in result["moves"]] == [
        ("gpu00", "k8s", "pinned: cluster_pool_pin=k8s")]


def test_swap_of_two_pins_between_pools_at_their_minimum_is_reported_not_done():
    nodes = [{"name": "a", "pool": "slurm", "pinned": "k8s"}, {"name": "b", "pool": "k8s", "pinned": "slurm"}]
    result = plan(nodes, {"pools": {"slurm": {"min": 1, "target": 1}, "k8s": {"min": 1, "target": 1}},
                          "max_unavailable": 2})
    assert result["moves"] == []
    assert result["targets"] == {"a": "slurm", "b": "k8s"}
    assert {u["node"] for u in result["unmet"]} == {"a", "b"}
    assert "below its minimum of 1 in service" in result["unmet"][0]["reason"]


def test_excluded_and_unhealthy_nodes_stay_put_and_are_not_counted():
    state = [dict(n, pool="slurm") for n in twelve()]
    state[0]["excluded"] = True
    state[1]["healthy"] = False
    result = plan(state, {"pools": {"slurm": {"target": "50%"}, "k8s": {"target": "50%"}},
                          "excluded": ["gpu02"]})
    assert result["eligible"] == 9
    assert result["goals"] == {"k8s": {"min": 0, "target": 4, "want": 4},
                               "slurm": {"min": 0, "target": 4, "want": 4}}
    moved = {m["node"] for m in result["moves"]}
    assert not moved & {"gpu00", "gpu01", "gpu02"} and len(moved) == 4
    assert {h["node"] for h in result["held"]} == {"gpu00", "gpu01", "gpu02"}
    assert result["pools_after"]["slurm"]["nodes"] == 8
    assert result["pools_after"]["slurm"]["capacity_nodes"] == 5


def test_targets_beyond_the_healthy_nodes_are_reported_unmet_and_mins_come_first():
    nodes = [{"name": f"n{i}", "pool": "slurm"} for i in range(4)]
    result = plan(nodes, {"pools": {"slurm": {"min": 1, "target": 4}, "k8s": {"min": 2, "target": 3}}})
    assert result["goals"]["k8s"]["want"] >= 2 and result["goals"]["slurm"]["want"] >= 1
    assert result["pools_after"]["k8s"]["capacity_nodes"] >= 2
    assert {u["pool"] for u in result["unmet"]} == {"k8s", "slurm"}


def test_summary_lists_pools_and_moves():
    state = [dict(n, pool="slurm" if i < 9 else "k8s") for i, n in enumerate(twelve())]
    policy = {"pools": {"slurm": {"target": 6}, "k8s": {"target": 6}}, "max_unavailable": 3}
    text = summary(plan(state, policy))
    assert "slurm          9      72 ->       6      48" in text
    assert "moves: 3 in 1 batches of at most 3" in text
    assert "gpu00 slurm->k8s" in text


@pytest.mark.parametrize(("nodes", "match"), [
    ([{"name": "a"}, {"name": "a"}], "a: appears twice"),
    ([{"gpus": 8}], "needs a 'name'"),
    ([{"name": "a", "gpus": -1}], "a: gpus must be"),
    ([{"name": "a", "healthy": "yes"}], "a: healthy must be true or false"),
    ([{"name": "a", "pinned": "gpu"}], "a: cluster_pool_pin='gpu' is not a pool"),
    ([{"name": "a", "colour": "red"}], "a: unknown node keys colour"),
])
def test_bad_nodes_raise_naming_the_node(nodes, match):
    with pytest.raises(ValueError, match=match):
        plan(nodes, {"pools": {"slurm": {"target": 1}}})


def test_ten_thousand_nodes_plan_is_deterministic_under_shuffle():
    rnd = random.Random(7)
    nodes = [{"name": f"gpu{i:05d}", "gpus": 8, "leaf": f"leaf{i // 20:03d}",
              "pool": rnd.choice(["slurm", "k8s", None])} for i in range(2000)]
    policy = {"pools": {"slurm": {"min": 100, "target": "60%"}, "k8s": {"min": 100, "target": "40%"}},
              "max_unavailable": 50}
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    assert plan(shuffled, policy) == plan(nodes, policy)


# --- in service is what the schedulers say; no in-service node is fresh ------------------------------------


def test_policy_that_omits_a_pool_with_nodes_is_refused_naming_the_pool_and_the_variable():
    nodes = [dict(n, pool="slurm" if i < 8 else "k8s") for i, n in enumerate(twelve())]
    with pytest.raises(ValueError, match=r"cluster_pools\.pools: names no k8s pool, but gpu08, gpu09, gpu10, "
                                         r"gpu11 are in it"):
        plan(nodes, {"pools": {"slurm": {"min": 8, "target": "100%"}}, "max_unavailable": 1})
    # Named with target 0, the pool's nodes leave it one batch of max_unavailable at a time.
    result = plan(nodes, {"pools": {"slurm": {"min": 8, "target": "100%"}, "k8s": {"target": 0}},
                          "max_unavailable": 1})
    assert [[(m["node"], m["from"]) for m in b] for b in result["batches"]] == [
        [("gpu08", "k8s")], [("gpu09", "k8s")], [("gpu10", "k8s")], [("gpu11", "k8s")]]


def test_node_in_a_pool_the_planner_does_not_know_is_refused():
    with pytest.raises(ValueError, match=r"gpu00: pool 'batch' is not a pool \(known: k8s, slurm\)"):
        plan([{"name": "gpu00", "pool": "batch"}], {"pools": {"slurm": {"target": 1}, "k8s": {"target": 0}}})


GATE_HELD = "held for its gate (gpufleet:hold,to=slurm,run=r2,joining): not in service until the gate admits it"


def test_held_node_is_not_capacity_and_never_moves_even_when_pinned():
    state = [dict(n, pool="slurm") for n in twelve()]
    state[0].update(held="maintenance unfinished on gpu00: rerun maintain.yml (gpufleet:maint,to=slurm,"
                         "run=r1,drain)", pinned="k8s")
    state[1]["held"] = GATE_HELD
    result = plan(state, {"pools": {"slurm": {"min": 2, "target": 6}, "k8s": {"target": 6}}, "max_unavailable": 3})
    assert result["eligible"] == 10
    assert result["pools_before"]["slurm"]["capacity_nodes"] == 10
    moved = {m["node"] for m in result["moves"]}
    assert not moved & {"gpu00", "gpu01"} and len(moved) == 4
    assert result["targets"]["gpu00"] == "slurm"
    held = {h["node"]: h["reason"] for h in result["held"]}
    assert held["gpu00"] == state[0]["held"] and held["gpu01"] == state[1]["held"]
    assert {"node": "gpu00", "reason": f"cluster_pool_pin=k8s waits: {state[0]['held']}"} in result["unmet"]
    assert "held: gpu00: maintenance unfinished on gpu00: rerun maintain.yml" in summary(result)


def test_held_nodes_leave_a_pool_at_its_minimum_alone():
    # Four Slurm nodes, two of them held for their gate: two in service, the minimum. Nothing may leave.
    nodes = [{"name": f"gpu0{i}", "pool": "slurm"} for i in range(4)]
    nodes[0]["held"] = GATE_HELD
    nodes[1]["held"] = "held after a gate ERROR (gpufleet:hold,to=slurm,run=r2,gate_error:nccl): not in service"
    result = plan(nodes, {"pools": {"slurm": {"min": 2, "target": 2}, "k8s": {"min": 0, "target": 2}}})
    assert result["moves"] == []


def test_a_node_that_joins_adds_no_capacity_until_its_gate_so_a_pin_waits_for_the_next_run():
    # c joins Slurm held for its gate (the gate runs after the batches); a, pinned to k8s, may leave Slurm only
    # once c is in service, so this run joins c and reports a's move as waiting.
    nodes = [{"name": "a", "pool": "slurm", "pinned": "k8s"}, {"name": "b", "pool": "slurm"},
             {"name": "c", "pool": None}]
    result = plan(nodes, {"pools": {"slurm": {"min": 2, "target": 2}, "k8s": {"target": 1}},
                          "max_unavailable": 3})
    assert [[(m["node"], m["to"]) for m in b] for b in result["batches"]] == [[("c", "slurm")]]
    assert {"node": "a", "reason": "not moved to k8s: taking it out would leave slurm below its minimum of 2 "
                                   "in service"} in result["unmet"]


def test_plan_refuses_a_node_schedulable_in_both_schedulers_naming_it():
    nodes = [{"name": "gpu04", "pool": "k8s", "schedulers": ["k8s", "slurm"]}, {"name": "gpu05", "pool": "slurm",
                                                                               "schedulers": ["slurm"]}]
    with pytest.raises(ValueError, match=r"gpu04: Slurm and Kubernetes both schedule work on it now"):
        plan(nodes, {"pools": {"slurm": {"target": 1}, "k8s": {"target": 1}}})


def test_plan_refuses_a_node_kubernetes_runs_that_its_pool_does_not_say():
    for pool in (None, "slurm"):
        nodes = [{"name": "gpu06", "pool": pool, "schedulers": ["k8s"]}]
        with pytest.raises(ValueError, match=r"gpu06: k8s schedules work on it now, but its pool is "
                                             + (pool or "none")):
            plan(nodes, {"pools": {"slurm": {"target": 1}, "k8s": {"target": 0}}})
