"""Plan which pool each GPU node belongs to, and the moves and batches that get it there.

``plan(nodes, policy)`` is pure and deterministic (the node order of the input does not matter). It makes the
fewest moves that meet the policy, picks the nodes to move so that each leaf switch stays in one pool where it
can, and orders the moves into batches of at most ``max_unavailable`` that never take a pool's in-service
nodes below its minimum. See docs/pools.md.
"""

import heapq

from ansible.module_utils.pool_policy import (
    KNOWN_POOLS,
    PIN_VAR,
    normalize,
    resolve_target,
    unnamed_pool_errors,
    validate,
)

NODE_KEYS = ("name", "gpus", "leaf", "healthy", "pool", "pinned", "excluded", "held", "schedulers")
_ASSIGN, _PIN, _REBALANCE = 0, 1, 2


def normalize_nodes(nodes):
    """Return ``(nodes, errors)``: node dicts with every key of ``NODE_KEYS`` filled in, sorted by name.

    ``held`` is why the node is out of service until something else finishes (a gate hold, a hold after a gate
    ERROR, a maintenance a killed run left), or None; ``schedulers`` the sorted schedulers (``slurm``, ``k8s``)
    that place work on the node now, live. A ``pool`` must be a known pool or None.

    Work at risk: a node whose pool or scheduler is not understood would be planned as fresh. Refused: an
    error names the node and the key.
    """
    errors = []
    out = []
    seen = set()
    if not isinstance(nodes, (list, tuple)):
        return [], [f"nodes: expected a list of node dicts, got {type(nodes).__name__}"]
    for i, raw in enumerate(nodes):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw.get("name"):
            errors.append(f"nodes[{i}]: needs a 'name' (string), got {raw!r}")
            continue
        name = raw["name"]
        if name in seen:
            errors.append(f"{name}: appears twice in nodes")
            continue
        seen.add(name)
        unknown = sorted(set(map(str, raw)) - set(NODE_KEYS))
        if unknown:
            errors.append(f"{name}: unknown node keys {', '.join(unknown)} (known: {', '.join(NODE_KEYS)})")
        gpus = raw.get("gpus", 0)
        if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
            errors.append(f"{name}: gpus must be a non-negative integer, got {gpus!r}")
            gpus = 0
        node = {
            "name": name,
            "gpus": gpus,
            "leaf": raw.get("leaf") or None,
            "healthy": raw.get("healthy", True),
            "pool": raw.get("pool") or None,
            "pinned": raw.get("pinned") or None,
            "excluded": raw.get("excluded", False),
            "held": raw.get("held") or None,
            "schedulers": raw.get("schedulers") or [],
        }
        for key in ("healthy", "excluded"):
            if not isinstance(node[key], bool):
                errors.append(f"{name}: {key} must be true or false, got {node[key]!r}")
        for key in ("leaf", "pool", "pinned", "held"):
            if node[key] is not None and not isinstance(node[key], str):
                errors.append(f"{name}: {key} must be a string or null, got {node[key]!r}")
        if isinstance(node["pool"], str) and node["pool"] not in KNOWN_POOLS:
            errors.append(f"{name}: pool {node['pool']!r} is not a pool (known: {', '.join(KNOWN_POOLS)})")
        scheds = node["schedulers"]
        if not isinstance(scheds, (list, tuple)) or any(s not in KNOWN_POOLS for s in scheds):
            errors.append(f"{name}: schedulers must be a list of {', '.join(KNOWN_POOLS)}, got {scheds!r}")
            node["schedulers"] = []
        else:
            node["schedulers"] = sorted(set(scheds))
        out.append(node)
    out.sort(key=lambda n: n["name"])
    return out, errors


def _fill(levels, cur, budget, pools):
    """Water-fill *budget* nodes over pools up to *levels*, keeping current counts first (fewest moves)."""
    alloc = dict.fromkeys(pools, 0)
    for level in levels:
        for p in pools:  # first what each pool already holds: costs no move
            add = max(0, min(level[p], cur[p]) - alloc[p])
            add = min(add, budget)
            alloc[p] += add
            budget -= add
        while budget > 0:  # then the largest remaining gap, one node at a time
            gaps = [(level[p] - alloc[p], p) for p in pools if level[p] > alloc[p]]
            if not gaps:
                break
            best = min(gaps, key=lambda g: (-g[0], g[1]))[1]
            alloc[best] += 1
            budget -= 1
    return alloc


class _Leaves:
    """Per-leaf node counts by planned pool, updated as the planner decides."""

    def __init__(self, nodes, planned):
        self.count = {}
        self.total = {}
        for n in nodes:
            leaf = n["leaf"]
            if leaf is None:
                continue
            self.total[leaf] = self.total.get(leaf, 0) + 1
            pool = planned[n["name"]]
            if pool is not None:
                per = self.count.setdefault(leaf, {})
                per[pool] = per.get(pool, 0) + 1

    def move(self, node, old, new):
        leaf = node["leaf"]
        if leaf is None:
            return
        per = self.count.setdefault(leaf, {})
        if old is not None:
            per[old] -= 1
        if new is not None:
            per[new] = per.get(new, 0) + 1

    def in_pool(self, leaf, pool):
        return self.count.get(leaf, {}).get(pool, 0) if leaf is not None else 0

    def majority(self, leaf, pools):
        per = self.count.get(leaf, {}) if leaf is not None else {}
        best = max((per.get(p, 0) for p in pools), default=0)
        return [p for p in pools if per.get(p, 0) == best] if best else list(pools)


def _groups(candidates):
    """Group candidate nodes by leaf; a node without a leaf is a group of its own."""
    groups = {}
    for n in candidates:
        key = ("L", n["leaf"]) if n["leaf"] is not None else ("N", n["name"])
        groups.setdefault(key, []).append(n)
    return groups


def _select(candidates, dest, k, leaves):
    """Pick *k* of *candidates* to move into *dest*: whole leaves first, mixed leaves completed first."""
    if k <= 0:
        return []
    groups = _groups(candidates)
    scored = []
    for key, members in groups.items():
        leaf = members[0]["leaf"]
        total = leaves.total.get(leaf, 1) if leaf is not None else 1
        have = leaves.in_pool(leaf, dest)
        m = len(members)
        pure_after = have + m == total
        # (leaf ends in one pool, share of the leaf already in dest, bigger groups first, name)
        scored.append(((not pure_after, -have * 1.0 / total, -m, key), members))
    scored.sort(key=lambda s: s[0])
    chosen = []
    need = k
    rest = []
    for score, members in scored:
        if len(members) <= need:
            chosen.extend(members)
            need -= len(members)
        else:
            rest.append((score, members))
        if need == 0:
            return chosen
    # Split as few leaves as possible: the one most already in dest first.
    rest.sort(key=lambda s: (s[0][1], s[0][3]))
    for _score, members in rest:
        take = members[:need]
        chosen.extend(take)
        need -= len(take)
        if need == 0:
            break
    return chosen


def _census(nodes, where, pools, capacity):
    out = {p: {"nodes": 0, "gpus": 0, "capacity_nodes": 0, "capacity_gpus": 0} for p in pools}
    unassigned = 0
    for n in nodes:
        p = where[n["name"]]
        if p not in out:
            unassigned += 1
            continue
        row = out[p]
        row["nodes"] += 1
        row["gpus"] += n["gpus"]
        if capacity[n["name"]]:
            row["capacity_nodes"] += 1
            row["capacity_gpus"] += n["gpus"]
    return out, unassigned


def service_errors(nodes, policy):
    """Errors for the live state no plan may start from, each naming the node (*nodes* normalized).

    Work at risk: a node both Slurm and Kubernetes place work on has its GPUs double-booked now; a node one
    scheduler places work on while its pool says the other (or none) would be moved, or joined as fresh,
    without that scheduler's drain; a pool *policy* (``cluster_pools``) does not name would have its nodes join
    another pool at once, past ``max_unavailable``. Refused: the plan fails closed with every such error.
    """
    errors = unnamed_pool_errors(policy, {n["name"]: n["pool"] for n in nodes})
    for n in nodes:
        scheds = n["schedulers"]
        if len(scheds) > 1:
            errors.append(f"{n['name']}: Slurm and Kubernetes both schedule work on it now (its GPUs are "
                          "double-booked): drain it in Slurm or cordon it in Kubernetes, then plan again")
        elif scheds and scheds[0] != n["pool"]:
            errors.append(f"{n['name']}: {scheds[0]} schedules work on it now, but its pool is "
                          f"{n['pool'] or 'none'}: hold it in {scheds[0]} (drain or cordon) or move it "
                          "there by hand, then plan again")
    return errors


def plan(nodes, policy):
    """Return the pool plan for *nodes* under *policy* (``cluster_pools``).

    *nodes*: list of ``{name, gpus, leaf, healthy, pool, pinned, excluded, held, schedulers}`` (see
    ``normalize_nodes``). Returns ``{targets, moves, batches, pools_before, pools_after, unassigned, goals,
    eligible, held, unmet}``; each move is ``{node, from, to, reason, leaf, gpus, batch}``. Raises
    ``ValueError`` on an invalid policy or node list, and on live state no plan may start from
    (``service_errors``); run ``pool_policy.validate`` first for messages that name hosts.

    Work at risk: a node with running jobs or pods, a pool's minimum in service, an admin's drain or
    cordon, and a held node's unfinished gate or maintenance. Guarded: capacity is only what the schedulers
    say is in service (healthy, not excluded, not held); a node out of service (excluded, held, unhealthy)
    is never moved, except an unhealthy one onto its pin, and a held one never; a node in a pool leaves it
    only through that pool's drain, in batches that never take the pool below its minimum in service
    (``_batch``); only nodes in no pool, where no scheduler places work, join without a drain. Refused:
    ``service_errors``.
    """
    norm, errors = normalize(policy)
    nodes, node_errors = normalize_nodes(nodes)
    errors = errors + node_errors
    if not errors:
        errors = service_errors(nodes, policy)
    if errors:
        raise ValueError("; ".join(errors))
    pools = sorted(norm["pools"])
    pool_set = set(pools)
    excl = set(norm["excluded"])
    for n in nodes:
        n["excluded"] = n["excluded"] or n["name"] in excl
        if n["pinned"] is not None and n["pinned"] not in pool_set and not n["excluded"]:
            raise ValueError(f"{n['name']}: {PIN_VAR}={n['pinned']!r} is not a pool of the policy")

    current = {n["name"]: n["pool"] for n in nodes}
    capacity = {n["name"]: n["healthy"] and not n["excluded"] and n["held"] is None for n in nodes}
    planned = dict(current)
    forced, unassigned, movable, held, unmet = [], [], {p: [] for p in pools}, [], []
    for n in nodes:
        name = n["name"]
        if n["held"] is not None:
            held.append({"node": name, "pool": n["pool"], "reason": n["held"]})
            if n["pinned"] is not None and n["pinned"] != n["pool"]:
                unmet.append({"node": name, "reason": f"{PIN_VAR}={n['pinned']} waits: {n['held']}"})
        elif n["excluded"]:
            held.append({"node": name, "pool": n["pool"], "reason": "excluded (maintenance)"})
            if n["pinned"] is not None:
                why = f"{PIN_VAR}={n['pinned']} ignored: the node is excluded"
                unmet.append({"node": name, "reason": why})
        elif n["pinned"] is not None:
            if n["pool"] != n["pinned"]:
                forced.append(n)
            planned[name] = n["pinned"]
        elif not n["healthy"]:
            held.append({"node": name, "pool": n["pool"], "reason": "unhealthy: not moved, not capacity"})
        elif n["pool"] in pool_set:
            movable[n["pool"]].append(n)
        else:
            unassigned.append(n)

    eligible = sum(1 for n in nodes if capacity[n["name"]])
    cur = dict.fromkeys(pools, 0)
    for n in nodes:
        p = planned[n["name"]]
        if capacity[n["name"]] and p in pool_set:
            cur[p] += 1
    mins = {p: norm["pools"][p]["min"] for p in pools}
    targets = {p: resolve_target(norm["pools"][p]["target"], eligible) for p in pools}
    wants = {p: max(mins[p], targets[p]) for p in pools}
    if sum(wants.values()) > eligible:
        wants = _fill([mins, wants], cur, eligible, pools)
    goals = {p: {"min": mins[p], "target": targets[p], "want": wants[p]} for p in pools}

    leaves = _Leaves(nodes, planned)
    count = dict(cur)
    decided = []  # (class, node, to, reason)
    for n in forced:
        decided.append((_PIN, n, n["pinned"], f"pinned: {PIN_VAR}={n['pinned']}"))

    def deficit(p):
        return max(0, wants[p] - count[p])

    def take(group, dest, klass, reason):
        for n in group:
            leaves.move(n, planned[n["name"]] if planned[n["name"]] in pool_set else None, dest)
            planned[n["name"]] = dest
            count[dest] += 1
            decided.append((klass, n, dest, reason))

    # 1. Unassigned nodes fill the pools below their goal first (they must be assigned anyway).
    left = list(unassigned)
    for p in sorted(pools, key=lambda q: (-deficit(q), q)):
        k = min(deficit(p), len(left))
        if k:
            chosen = _select(left, p, k, leaves)
            ids = {n["name"] for n in chosen}
            left = [n for n in left if n["name"] not in ids]
            take(chosen, p, _ASSIGN, f"assign: {p} below its goal ({count[p]}/{wants[p]})")
    # 2. Unassigned nodes beyond the goals follow their leaf (or go where there is most room).
    for _key, members in sorted(_groups(left).items()):
        options = leaves.majority(members[0]["leaf"], pools)
        dest = min(options, key=lambda q: (count[q] - wants[q], q))
        why = (f"assign: leaf {members[0]['leaf']} is mostly {dest}" if len(options) == 1
               else f"assign: {dest} has the most room")
        take(members, dest, _ASSIGN, why)
    # 3. Pools still below their goal take from pools above it (only unpinned, healthy nodes move).
    for p in sorted(pools, key=lambda q: (-deficit(q), q)):
        for q in sorted(pools, key=lambda d: (-(count[d] - wants[d]), d)):
            if deficit(p) == 0:
                break
            spare = count[q] - wants[q]
            if q == p or spare <= 0:
                continue
            cands = [n for n in movable[q] if planned[n["name"]] == q]
            k = min(deficit(p), spare, len(cands))
            if not k:
                continue
            reason = (f"rebalance: {q} above its goal ({count[q]}>{wants[q]}), "
                      f"{p} below ({count[p]}<{wants[p]})")
            chosen = _select(cands, p, k, leaves)
            count[q] -= len(chosen)
            take(chosen, p, _REBALANCE, reason)

    batches, blocked = _batch(decided, current, capacity, cur_in_service(nodes, current, capacity, pool_set),
                              mins, norm["max_unavailable"], pool_set)
    for move in blocked:
        planned[move["node"]] = current[move["node"]]
        unmet.append({"node": move["node"], "reason": f"not moved to {move['to']}: taking it out would leave "
                      f"{move['from']} below its minimum of {mins.get(move['from'], 0)} in service"})

    pools_before, unassigned_before = _census(nodes, current, pools, capacity)
    pools_after, unassigned_after = _census(nodes, planned, pools, capacity)
    for p in pools:
        have = pools_after[p]["capacity_nodes"]
        if have < mins[p]:
            unmet.append({"pool": p, "want": mins[p], "have": have,
                          "reason": f"{p} has {have} healthy nodes, below its minimum {mins[p]}"})
        elif have < targets[p]:
            unmet.append({"pool": p, "want": targets[p], "have": have,
                          "reason": f"{p} has {have} healthy nodes, below its target {targets[p]}"})
    moves = [m for batch in batches for m in batch]
    return {
        "targets": planned,
        "moves": moves,
        "batches": batches,
        "pools_before": pools_before,
        "pools_after": pools_after,
        "unassigned": {"before": unassigned_before, "after": unassigned_after},
        "goals": goals,
        "eligible": eligible,
        "max_unavailable": norm["max_unavailable"],
        "drain_timeout": norm["drain_timeout"],
        "held": held,
        "unmet": unmet,
    }


def cur_in_service(nodes, where, capacity, pool_set):
    """Count capacity nodes per pool in *where* (the in-service nodes a batch sequence starts from)."""
    out = dict.fromkeys(pool_set, 0)
    for n in nodes:
        p = where[n["name"]]
        if capacity[n["name"]] and p in pool_set:
            out[p] += 1
    return out


def _batch(decided, current, capacity, in_service, mins, max_unavailable, pool_set):
    """Order moves into batches of at most *max_unavailable*; a pool never drops below its minimum in service.

    Nodes that are in no pool (a fresh fleet's nodes, or ones an earlier run left out) take nothing out of
    service and have nothing to drain: they all join in the first batch, whatever *max_unavailable*, so a
    fleet's first run is one batch, not one per node. The other moves queue per source pool (nodes that
    are in a pool but not in service there form one queue); each later batch takes at most
    *max_unavailable* of the lowest-keyed heads of the queues that still have room. A node that joins a
    pool is held for its gate until after the run's batches, so it adds nothing to *in_service*.
    Returns ``(batches, blocked)``.

    Work at risk: a pool's minimum in service, and the jobs of the nodes that leave a pool. Guarded: a
    batch takes a node that is in service out of its pool only while ``in service - min`` leaves room,
    counting no joining node; a move that never finds room is returned in *blocked*, not made.
    """
    queues = {}
    fresh = []
    for klass, n, dest, reason in decided:
        src = current[n["name"]]
        qkey = src if (capacity[n["name"]] and src in pool_set) else None
        key = (klass, dest, n["leaf"] or "", n["name"])
        move = {"node": n["name"], "from": src, "to": dest, "reason": reason, "leaf": n["leaf"],
                "gpus": n["gpus"], "batch": None}
        if src not in pool_set:
            fresh.append((key, move, capacity[n["name"]]))
            continue
        queues.setdefault(qkey, []).append((key, move, capacity[n["name"]]))
    batches = []
    if fresh:
        fresh.sort(key=lambda item: item[0])
        for _key, move, _counted in fresh:
            move["batch"] = 0
        batches.append([move for _key, move, _counted in fresh])
    for q in queues.values():
        q.sort(key=lambda item: item[0])
    pos = dict.fromkeys(queues, 0)
    order = sorted(queues, key=lambda k: (k is not None, k or ""))
    remaining = sum(len(q) for q in queues.values())
    while remaining:
        room = {k: (max_unavailable if k is None else in_service[k] - mins[k]) for k in order}
        heap = [(queues[k][pos[k]][0], i, k) for i, k in enumerate(order)
                if pos[k] < len(queues[k]) and room[k] > 0]
        heapq.heapify(heap)
        batch = []
        while heap and len(batch) < max_unavailable:
            _key, i, k = heapq.heappop(heap)
            _, move, counted = queues[k][pos[k]]
            pos[k] += 1
            room[k] -= 1
            move["batch"] = len(batches)
            batch.append((move, counted, k))
            if pos[k] < len(queues[k]) and room[k] > 0:
                heapq.heappush(heap, (queues[k][pos[k]][0], i, k))
        if not batch:
            break
        for _move, _counted, k in batch:
            if k is not None:
                in_service[k] -= 1
        batches.append([m for m, _c, _k in batch])
        remaining -= len(batch)
    blocked = [item[1] for k in order for item in queues[k][pos[k]:]]
    return batches, blocked


class PlanError(ValueError):
    """The nodes or the policy cannot be planned; ``errors`` lists every reason."""

    def __init__(self, message, errors):
        super().__init__(message)
        self.errors = errors


def checked_plan(nodes, policy):
    """``plan`` of validated input, with its ``summary``: what the pool_plan module and filter return.

    Every error of the nodes and the policy (pool_policy.validate, pins on excluded nodes) and of the live
    state (``service_errors``) is raised at once as ``PlanError``, before anything is planned.

    Work at risk: as ``plan``. Refused: every error at once, each naming the host or the variable.
    """
    nodes, errors = normalize_nodes(nodes)
    hosts = {n["name"]: ({PIN_VAR: n["pinned"]} if n["pinned"] else {}) for n in nodes}
    errors += validate(policy, hosts)
    errors += [f"{n['name']}: {PIN_VAR}={n['pinned']!r} conflicts with the node's excluded flag "
               "(an excluded node is never moved)" for n in nodes if n["pinned"] and n["excluded"]]
    errors += service_errors(nodes, policy)
    if errors:
        raise PlanError("pool policy is invalid:\n" + "\n".join(errors), errors)
    try:
        result = plan(nodes, policy)
    except ValueError as exc:
        raise PlanError(f"pool plan failed: {exc}", [str(exc)]) from exc
    return dict(result, summary=summary(result))


def summary(result):
    """Return a short human table of a plan: pools before/after, the moves by batch, what is unmet and held.

    Work at risk: none (read-only).
    """
    head = f"{'pool':<8} {'nodes':>7} {'gpus':>7} -> {'nodes':>7} {'gpus':>7}   (healthy, in the pool)"
    lines = [head]
    for p in sorted(result["pools_after"]):
        b, a = result["pools_before"][p], result["pools_after"][p]
        lines.append(f"{p:<8} {b['capacity_nodes']:>7} {b['capacity_gpus']:>7} -> "
                     f"{a['capacity_nodes']:>7} {a['capacity_gpus']:>7}")
    un = result["unassigned"]
    if un["before"] or un["after"]:
        lines.append(f"{'(none)':<8} {un['before']:>7} {'':>7} -> {un['after']:>7}")
    lines.append(f"moves: {len(result['moves'])} in {len(result['batches'])} batches "
                 f"of at most {result['max_unavailable']}")
    for i, batch in enumerate(result["batches"][:20]):
        shown = ", ".join(f"{m['node']} {m['from'] or 'none'}->{m['to']}" for m in batch[:8])
        lines.append(f"  batch {i}: {shown}{' ...' if len(batch) > 8 else ''}")
    if len(result["batches"]) > 20:
        lines.append(f"  ... {len(result['batches']) - 20} more batches")
    lines.extend(f"unmet: {item['reason']}" for item in result["unmet"])
    lines.extend(f"held: {item['node']}: {item['reason']}" for item in result["held"][:20])
    if len(result["held"]) > 20:
        lines.append(f"held: ... {len(result['held']) - 20} more")
    return "\n".join(lines)
