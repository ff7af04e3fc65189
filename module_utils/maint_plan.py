"""Rolling maintenance: which nodes, in which waves, and the upgrade orders Slurm and Kubernetes allow.

Pure functions. Maintenance is a pool move whose target is the node's own pool, with a change in the
middle: a wave takes nodes out of service (drain), changes them, gates them and puts them back. A wave
stays within ``max_unavailable`` and each pool's maintenance share, never takes a pool's in-service
nodes below its minimum, and keeps the nodes of a leaf switch together where those limits allow.
See docs/maintenance.md.
"""

import math
import re

from ansible.module_utils.pool_policy import normalize as pools_normalize
from ansible.module_utils.pool_policy import parse_target

VAR = "cluster_maintenance"
CHANGE_VAR = "maint_change"
POLICY_KEYS = ("share", "failure_threshold", "max_unavailable", "drain_timeout", "mode")
DEFAULTS = {"share": "10%", "failure_threshold": 0, "max_unavailable": None, "drain_timeout": 3600, "mode": "drain"}
# How a wave's Slurm nodes stop taking jobs: drain them at once, or put them in a MAINT reservation that
# starts when their running jobs end (module_utils/maint_resv.py), so the scheduler drains them.
MODES = ("drain", "reservation")
CHANGE_KINDS = ("packages", "reboot", "tasks", "version_lock")
CHANGE_KEYS = ("kind", "packages", "tasks", "reboot")

# Slurm major releases in order (the year.month of each, docs: slurm.schedmd.com/upgrades.html "Release
# Cycle"). A version outside this list is refused rather than guessed.
SLURM_RELEASES = ("17.02", "17.11", "18.08", "19.05", "20.02", "20.11", "21.08", "22.05", "23.02", "23.11",
                  "24.05", "24.11", "25.05", "25.11")

_VERSION_RE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def normalize_policy(policy, pools=None):
    """Return ``(normalized, errors)`` for ``cluster_maintenance`` (None or {} means every default).

    ``max_unavailable`` defaults to ``cluster_pools.max_unavailable`` (1 without a pool policy).
    ``share`` is a node count or a fraction (``"10%"``, ``0.1``) of each pool's nodes.
    """
    errors = []
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        return None, [f"{VAR}: must be a mapping, got {type(policy).__name__}"]
    errors += [f"{VAR}.{key}: unknown key (known: {', '.join(POLICY_KEYS)})"
               for key in sorted(map(str, policy)) if key not in POLICY_KEYS]
    out = dict(DEFAULTS)
    share = policy.get("share", DEFAULTS["share"])
    try:
        parse_target(share)
        out["share"] = share
    except ValueError as exc:
        errors.append(f"{VAR}.share: {exc}")
    ft = policy.get("failure_threshold", DEFAULTS["failure_threshold"])
    if not _is_int(ft) or ft < 0:
        errors.append(f"{VAR}.failure_threshold: must be a non-negative integer (failures a wave may have "
                      f"before the rollout stops), got {ft!r}")
    else:
        out["failure_threshold"] = ft
    fallback = 1
    if isinstance(pools, dict):
        fallback = pools.get("max_unavailable", 1) if _is_int(pools.get("max_unavailable", 1)) else 1
    mu = policy.get("max_unavailable")
    if mu is None:
        out["max_unavailable"] = fallback
    elif not _is_int(mu) or mu < 1:
        errors.append(f"{VAR}.max_unavailable: must be an integer of at least 1, got {mu!r}")
    else:
        out["max_unavailable"] = mu
    dt = policy.get("drain_timeout", DEFAULTS["drain_timeout"])
    if not _is_int(dt) or dt < 0:
        errors.append(f"{VAR}.drain_timeout: must be a non-negative integer (seconds), got {dt!r}")
    else:
        out["drain_timeout"] = dt
    mode = policy.get("mode", DEFAULTS["mode"])
    if mode not in MODES:
        errors.append(f"{VAR}.mode: must be one of {', '.join(MODES)}, got {mode!r}")
    else:
        out["mode"] = mode
    return out, errors


def validate_change(change):
    """Return every error in ``maint_change`` (the change a maintenance run applies, given as data).

    Kinds: ``packages`` ({name: version}, applied with apt), ``reboot`` (nothing but a reboot), ``tasks``
    (a site task file), ``version_lock`` (the node stack roles converge the node to the version lock,
    playbooks/vars/node_stack_versions.yml; it reboots where the driver changed). ``reboot`` defaults to
    true for ``reboot``, false otherwise (version_lock: the driver decides).
    """
    if not isinstance(change, dict):
        return [f"{CHANGE_VAR}: must be a mapping with 'kind' ({', '.join(CHANGE_KINDS)}), "
                f"got {type(change).__name__}"]
    errors = [f"{CHANGE_VAR}.{key}: unknown key (known: {', '.join(CHANGE_KEYS)})"
              for key in sorted(map(str, change)) if key not in CHANGE_KEYS]
    kind = change.get("kind")
    if kind not in CHANGE_KINDS:
        errors.append(f"{CHANGE_VAR}.kind: must be one of {', '.join(CHANGE_KINDS)}, got {kind!r}")
    pkgs = change.get("packages")
    if kind == "packages":
        if not isinstance(pkgs, dict) or not pkgs:
            errors.append(f"{CHANGE_VAR}.packages: kind packages needs a mapping of package name to version")
        else:
            for name, version in sorted(pkgs.items(), key=lambda kv: str(kv[0])):
                if not isinstance(name, str) or not name or not isinstance(version, str) or not version.strip():
                    errors.append(f"{CHANGE_VAR}.packages.{name}: the version must be a non-empty string "
                                  f"(quote it in YAML), got {version!r}")
    elif pkgs is not None:
        errors.append(f"{CHANGE_VAR}.packages: only kind packages takes packages (kind is {kind!r})")
    tasks = change.get("tasks")
    if kind == "tasks":
        if not isinstance(tasks, str) or not tasks.endswith((".yml", ".yaml")):
            errors.append(f"{CHANGE_VAR}.tasks: kind tasks needs the path of a site task file (.yml), got {tasks!r}")
    elif tasks is not None:
        errors.append(f"{CHANGE_VAR}.tasks: only kind tasks takes a task file (kind is {kind!r})")
    reboot = change.get("reboot")
    if reboot is not None and not isinstance(reboot, bool):
        errors.append(f"{CHANGE_VAR}.reboot: must be true or false, got {reboot!r}")
    return errors


def change_reboots(change):
    """Whether *change* (valid) needs a reboot: its ``reboot`` key, else true for kind reboot only."""
    if change.get("reboot") is not None:
        return bool(change["reboot"])
    return change.get("kind") == "reboot"


def drifted(installed, wanted):
    """Packages whose installed version differs from the wanted one: ``{name: {installed, wanted}}``.

    *installed*: Ansible's package facts (``{name: [{version: ...}, ...]}``) or ``{name: version}``; a
    package that is not installed drifts (installed None).
    """
    out = {}
    for name, want in sorted((wanted or {}).items()):
        have = (installed or {}).get(name)
        if isinstance(have, list):
            versions = [str(p.get("version")) for p in have if isinstance(p, dict)]
        elif have is None:
            versions = []
        else:
            versions = [str(have)]
        if str(want) not in versions:
            out[name] = {"installed": versions[0] if versions else None, "wanted": str(want)}
    return out


def _share_count(share, size):
    kind, number = parse_target(share)
    if kind == "count":
        return number
    # A fraction rounds down, but a pool with nodes always lets one go (10% of 4 nodes is one node,
    # not none); the minimum below still decides whether even that one may go.
    return max(1, math.floor(number * size + 1e-9)) if size else 0


NODE_KEYS = ("name", "pool", "leaf", "in_service", "selected", "unfinished")


def _check_nodes(nodes):
    errors = []
    if not isinstance(nodes, (list, tuple)):
        return [f"nodes: expected a list of node dicts, got {type(nodes).__name__}"]
    seen = set()
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("name"), str) or not n.get("name"):
            errors.append(f"nodes[{i}]: needs a 'name' (string), got {n!r}")
            continue
        if n["name"] in seen:
            errors.append(f"{n['name']}: appears twice in nodes")
        seen.add(n["name"])
        unknown = sorted(set(map(str, n)) - set(NODE_KEYS))
        if unknown:
            errors.append(f"{n['name']}: unknown node keys {', '.join(unknown)} (known: {', '.join(NODE_KEYS)})")
        for key in ("pool", "leaf"):
            if n.get(key) is not None and not isinstance(n.get(key), str):
                errors.append(f"{n['name']}: {key} must be a string or null, got {n.get(key)!r}")
    return errors


def planner_nodes(hosts, views, leaves, k8s=None):
    """The planner's nodes (``plan_waves``'s input) from the live state.

    *views*: ``{host: slurm_node_info view}``; *leaves*: ``{host: cluster_leaf_switch}``; *k8s*:
    ``{host: maint_k8s.live_view}`` read from Kubernetes, or None where Kubernetes was not read. A node's
    pool is Slurm's (a partition, or our move/hold reason), else its Node's pool label. A Slurm-pool node
    is in service when neither drained nor down in Slurm, unfinished when drained for maintenance. A
    Kubernetes-pool node is parked in Slurm (drained, slurmd down), so Slurm says nothing about its service:
    it is in service when its Node is Ready, schedulable and not tainted out, unfinished when it carries our
    maintenance annotation.

    Work at risk: ``in_service`` decides how many nodes a wave may take from a pool. Guarded: a Kubernetes-pool
    node Kubernetes cannot show (not read, no Node) is never counted in service, so a pool's minimum is kept
    from the nodes proven in service.
    """
    nodes = []
    for host in sorted(hosts):
        view = (views or {}).get(host) or {}
        ours = view.get("ours") or {}
        kview = (k8s or {}).get(host)
        pool = view.get("pool") or ("slurm" if view.get("in_partition") else None)
        if pool is None and kview and kview.get("pool") in ("slurm", "k8s"):
            pool = kview["pool"]
        if pool == "k8s":
            in_service = bool(kview) and bool(kview.get("in_service"))
            unfinished = bool(kview) and kview.get("step") is not None
        else:
            in_service = bool(view) and not view.get("drained") and not view.get("down")
            unfinished = ours.get("kind") == "maint"
        nodes.append({"name": host, "pool": pool, "leaf": (leaves or {}).get(host), "in_service": in_service,
                      "unfinished": unfinished})
    return nodes


def plan_waves(nodes, policy=None, pools=None):
    """Plan the maintenance waves.

    *nodes*: ``[{name, pool, leaf, in_service, selected, unfinished}]``: every GPU node (the pools are
    counted over all of them); ``selected`` marks the ones to maintain, ``unfinished`` those an earlier
    run left drained for maintenance (they always go, first: they are out of service already).
    *policy*: ``cluster_maintenance``; *pools*: ``cluster_pools`` (its minimums; none without it).

    Rules, each a unit test:
    - a wave holds at most ``max_unavailable`` nodes;
    - a wave takes at most the pool's share of the pool's nodes out of service (``share``, default 10%,
      at least one node);
    - a wave never takes a pool's in-service nodes below its minimum; a node that would is left out,
      with the reason;
    - the nodes of one leaf switch go in one wave where the limits allow (leaf groups are placed whole,
      first fit), and a leaf larger than a wave is split into as few waves as possible;
    - unfinished nodes (drained by an earlier run) go in the first wave; they count as in service (they
      return after their wave) and take a place in it like any other node.
    Returns ``{waves, left_out, pools, max_unavailable, failure_threshold, drain_timeout, share}``.
    Raises ValueError on invalid input (validate first for messages that name hosts).

    Work at risk: ``in_service`` and the pools' minimums decide how many nodes a wave takes out. A node
    that would take its pool's in-service nodes below the minimum is left out with the reason; the plan
    is guarded again before each wave by :func:`wave_check` against the live state.
    """
    norm, errors = normalize_policy(policy, pools)
    mins = {}
    if pools is not None:
        pnorm, perrors = pools_normalize(pools)
        errors += perrors
        if pnorm:
            mins = {p: spec["min"] for p, spec in pnorm["pools"].items()}
    errors += _check_nodes(nodes)
    if errors:
        raise ValueError("; ".join(errors))
    nodes = sorted(nodes, key=lambda n: n["name"])
    size, in_service = {}, {}
    for n in nodes:
        p = n.get("pool")
        if p is None:
            continue
        size[p] = size.get(p, 0) + 1
        # An unfinished node is out now but back after its wave: it counts as in service, and costs a
        # place in its wave like any other node.
        if n.get("in_service", True) or n.get("unfinished"):
            in_service[p] = in_service.get(p, 0) + 1
    pool_info = {}
    for p in sorted(size):
        share = _share_count(norm["share"], size[p])
        mn = mins.get(p, 0)
        spare = in_service.get(p, 0) - mn
        pool_info[p] = {"nodes": size[p], "in_service": in_service.get(p, 0), "min": mn,
                        "share": share, "per_wave": max(0, min(share, spare))}
    mu = norm["max_unavailable"]
    left_out = []
    cands = []
    for n in nodes:
        if not (n.get("selected") or n.get("unfinished")):
            continue
        p = n.get("pool")
        costs = (bool(n.get("in_service", True)) or bool(n.get("unfinished"))) and p is not None
        if costs and pool_info[p]["per_wave"] <= 0:
            info = pool_info[p]
            why = (f"taking it out would leave pool {p} below its minimum of {info['min']} "
                   f"({info['in_service']} in service)") if info["share"] > 0 else \
                f"pool {p}'s maintenance share ({norm['share']}) allows no node"
            left_out.append({"node": n["name"], "reason": why})
            continue
        cands.append((n, costs))
    # Groups: unfinished nodes first (one group each), then whole leaves, then leafless nodes.
    groups = {}
    for n, costs in cands:
        if n.get("unfinished"):
            key = (0, "", n["name"])
        elif n.get("leaf"):
            key = (1, n["leaf"], "")
        else:
            key = (2, "", n["name"])
        groups.setdefault(key, []).append((n, costs))
    waves = []  # each: {"nodes": [...], "use": {pool: n}}

    def fits(wave, members):
        if len(wave["nodes"]) + len(members) > mu:
            return False
        use = dict(wave["use"])
        for n, costs in members:
            if costs:
                use[n["pool"]] = use.get(n["pool"], 0) + 1
                if use[n["pool"]] > pool_info[n["pool"]]["per_wave"]:
                    return False
        return True

    def add(wave, members):
        for n, costs in members:
            wave["nodes"].append(n["name"])
            if costs:
                wave["use"][n["pool"]] = wave["use"].get(n["pool"], 0) + 1

    for key in sorted(groups):
        members = groups[key]
        target = next((w for w in waves if fits(w, members)), None)
        if target is not None:
            add(target, members)
            continue
        # The leaf does not fit whole in any wave: split it, filling the waves in order.
        for m in members:
            target = next((w for w in waves if fits(w, [m])), None)
            if target is None:
                target = {"nodes": [], "use": {}}
                waves.append(target)
            add(target, [m])
    return {
        "waves": [sorted(w["nodes"]) for w in waves],
        "left_out": left_out,
        "pools": pool_info,
        "max_unavailable": mu,
        "failure_threshold": norm["failure_threshold"],
        "drain_timeout": norm["drain_timeout"],
        "share": norm["share"],
        "mode": norm["mode"],
    }


POOL_PLAYS = {"slurm": "maintain.yml's Slurm wave play", "k8s": "maintain_k8s.yml's Kubernetes wave play"}


def wave_schedule(plan, nodes, k8s=False):
    """Split the plan's waves between the wave plays by each node's pool, as the planner read it.

    *nodes*: :func:`planner_nodes`' list (the plan's input), so a node's pool is the one the plan counted it
    in: Slurm's (a partition, or our move/hold reason), else its Node's pool label. *k8s*: the inventory has
    a Kubernetes server (the Kubernetes wave play runs). Returns ``{slurm: {order, serial}, k8s: {order,
    serial}, left_out: [{node, reason}]}``: each play's hosts in wave order and its serial batch sizes (one
    per wave that has any of its nodes; ``[1]`` when none), and the wave nodes neither play takes.

    Work at risk: a wave node's pool decides which play drains, changes and reboots it. Guarded: a node
    goes only to the play of the pool the planner counted it in, so a Kubernetes-pool node (parked in
    Slurm, or absent from it) is never drained through Slurm while pods run on it. Refused: a node whose
    pool no scheduler shows, or one the planner did not read, goes to neither play and is left out with the
    reason; so is a Kubernetes-pool node where no Kubernetes server can drain it.
    """
    pool_of = {n["name"]: n.get("pool") for n in nodes or [] if isinstance(n, dict) and n.get("name")}
    out = {"slurm": {"order": [], "serial": []}, "k8s": {"order": [], "serial": []}, "left_out": []}
    for wave in (plan or {}).get("waves") or []:
        take = {"slurm": [], "k8s": []}
        for node in wave:
            pool = pool_of.get(node)
            if node not in pool_of:
                why = "the planner did not read it: maintained in neither wave"
            elif pool not in POOL_PLAYS:
                why = (f"its pool is unknown ({pool!r}): neither Slurm (no partition, no move or hold reason) "
                       "nor Kubernetes (no Node with the pool label) shows it, so it is maintained in neither wave")
            elif pool == "k8s" and not k8s:
                why = ("Kubernetes-pool node and no Kubernetes server (group k8s_server) to drain it: maintain.yml "
                       "executes Slurm-pool nodes only (docs/maintenance.md)")
            else:
                take[pool].append(node)
                continue
            out["left_out"].append({"node": node, "reason": why})
        for pool, members in take.items():
            if members:
                out[pool]["order"].extend(members)
                out[pool]["serial"].append(len(members))
    for pool in ("slurm", "k8s"):
        out[pool]["serial"] = out[pool]["serial"] or [1]
    return out


def wave_check(wave, views, pools, pool_of):
    """Split a planned *wave* against the live state before it starts: ``{go: [...], left_out: [...]}``.

    A wave continues only where each pool's minimum still holds (an earlier wave's FAIL node stays out,
    so a later wave may no longer fit). A node drained by anyone but maintenance (an admin, a gate FAIL,
    a pool move) is left as it is. *views*: ``{node: {drained, down, reason, ours}}`` (slurm_node_info, or
    maint_k8s.live_view for the Kubernetes pool); *pools*: ``cluster_pools`` or None; *pool_of*: ``{node: pool}``.

    Work at risk: *views* decide which nodes go out now. Guarded: a node that would take its pool's nodes in service
    now below the minimum is left out with the reason; a node someone else drained or cordoned is left as
    it is (their drain stands); only nodes of a known pool that are neither drained nor down count in service.
    Refused: a pool policy it cannot read raises ValueError (no wave starts), never "no minimum".
    """
    mins = {}
    if pools:
        pnorm, perrors = pools_normalize(pools)
        if perrors or not pnorm:
            raise ValueError("; ".join(perrors) or "cluster_pools: cannot be read")
        mins = {p: s["min"] for p, s in pnorm["pools"].items()}
    up = {}
    for node, view in (views or {}).items():
        p = pool_of.get(node)
        if p is not None and not view.get("drained") and not view.get("down"):
            up[p] = up.get(p, 0) + 1
    go, left = [], []
    for node in sorted(wave):
        p = pool_of.get(node)
        view = (views or {}).get(node) or {}
        ours = view.get("ours") or {}
        if view.get("drained") and ours.get("kind") != "maint":
            left.append({"node": node, "reason": f"drained with {view.get('reason') or 'no reason'!r}, "
                                                 "not by maintenance: left as it is"})
            continue
        out_already = bool(view.get("drained")) or bool(view.get("down"))
        if p is None or out_already:
            go.append(node)
            continue
        if up.get(p, 0) - 1 < mins.get(p, 0):
            left.append({"node": node, "reason": f"pool {p} has {up.get(p, 0)} nodes in service now, "
                                                 f"its minimum is {mins.get(p, 0)}: the wave goes on without it"})
            continue
        up[p] -= 1
        go.append(node)
    return {"go": go, "left_out": left}


def rollout_stops(failures, threshold):
    """Whether a wave with *failures* FAIL/ERROR nodes stops the rollout (more than *threshold*).

    Work at risk: *failures* must count every node of the wave that did not succeed (:func:`wave_failures`),
    or a later wave starts after a failed one. Guarded: its callers count them with :func:`wave_failures`,
    where a node without an outcome is a failure.
    """
    return int(failures) > int(threshold)


# Outcomes that are not failures: back in service, still draining (the next run goes on), left as it is.
NOT_FAILED = ("resumed", "pending", "left_out")


def wave_failures(wave, records):
    """The nodes of *wave* that count against ``failure_threshold``: ``[{node, outcome, reason}]``.

    *records*: ``{node: record or None}``, each node's latest maintenance record (maint_executor's,
    maint_reboot's, maint_record's; maint_k8s's, maint_k8s_result's). A node counts when its outcome is
    ``failed`` or ``error``, or when its record has no outcome: it started its wave and stopped in the
    middle (never back from its reboot, a step that failed), so Ansible dropped it from the play before
    its outcome was recorded. A node without any record never started (check mode, a wave not reached).

    Work at risk: *records* decide whether the rollout goes on to the next wave. Guarded: a node that stopped
    mid-wave, or an outcome this function does not know, counts as a failure, never as a success.
    """
    out = []
    for node in sorted(set(wave or [])):
        rec = (records or {}).get(node)
        if not isinstance(rec, dict):
            continue
        outcome = rec.get("outcome")
        if outcome in NOT_FAILED:
            continue
        if outcome is None:
            out.append({"node": node, "outcome": "error", "reason": "stopped in its wave with no outcome (never back "
                                                                    "from its reboot, or a step failed)"})
        else:
            out.append({"node": node, "outcome": str(outcome), "reason": rec.get("reason") or str(outcome)})
    return out


def rollout_stop(records, threshold):
    """Why the rollout stops: the first wave whose failures (:func:`wave_failures`) exceed *threshold*, as a
    line naming the wave and its failed nodes; ``""`` when none does.

    *records*: ``{node: record}`` or a list of records; each record's ``wave`` (the nodes of its serial
    batch) groups them. Run before a wave starts it finds an earlier wave that no node was left to count
    (every other node of it ended early); run after the waves it tells the report.

    Work at risk: *records* decide whether a later wave starts. Guarded: a wave with more failures than
    *threshold* is always named, so no later wave starts after it.
    """
    if isinstance(records, dict):
        by_node = {n: r for n, r in records.items() if isinstance(r, dict)}
    else:
        by_node = {r["node"]: r for r in records or [] if isinstance(r, dict) and r.get("node")}
    waves = sorted({tuple(sorted(set(r.get("wave") or [n]))) for n, r in by_node.items()})
    for wave in waves:
        failures = wave_failures(wave, by_node)
        if rollout_stops(len(failures), threshold):
            why = "; ".join(f"{f['node']}: {f['reason']}" for f in failures)
            return (f"wave {','.join(wave)} had {len(failures)} FAIL/ERROR nodes ({why}), above the failure "
                    f"threshold {threshold}")
    return ""


def _major_minor(version, what):
    match = _VERSION_RE.match(str(version)) if version is not None else None
    if not match:
        raise ValueError(f"{what}: {version!r} is not a version (major.minor[.patch])")
    return int(match.group(1)), int(match.group(2))


def slurm_upgrade_errors(current, target, var="slurm_version"):
    """Errors for a Slurm upgrade from *current* to *target* (empty: Slurm supports it in place).

    Rule (Slurm's upgrade guide, https://slurm.schedmd.com/upgrades.html "Compatibility Window", and each
    release's RELEASE_NOTES, e.g. 24.11: "Slurm can be upgraded from version 23.02, 23.11 or 24.05 to
    version 24.11 without loss of jobs or other state information. Upgrading directly from an earlier
    version of Slurm will result in loss of state information."): a release up to 24.05 upgrades in place
    from the two previous major releases; from 24.11 on, from the three previous ones. A downgrade is
    never supported.
    """
    cur = "{:02d}.{:02d}".format(*_major_minor(current, f"{var} (installed)"))
    tgt = "{:02d}.{:02d}".format(*_major_minor(target, f"{var} (target)"))
    errors = []
    for name, rel in (("installed", cur), ("target", tgt)):
        if rel not in SLURM_RELEASES:
            errors.append(f"{var}: {name} Slurm {rel} is not a known major release "
                          f"(known: {SLURM_RELEASES[0]} .. {SLURM_RELEASES[-1]})")
    if errors:
        return errors
    i, j = SLURM_RELEASES.index(cur), SLURM_RELEASES.index(tgt)
    if j < i:
        return [f"{var}: Slurm {tgt} is older than the installed {cur}; Slurm does not support downgrades"]
    window = _slurm_window(tgt)
    if j - i > window:
        allowed = ", ".join(SLURM_RELEASES[max(0, j - window):j])
        # The newest release the installed one upgrades to in place (each release has its own window).
        step = [r for k, r in enumerate(SLURM_RELEASES) if i < k < j and k - i <= _slurm_window(r)][-1]
        return [f"{var}: Slurm {tgt} upgrades in place only from {allowed}; the installed {cur} skips "
                f"{j - i - 1} releases: upgrade through {step} first"]
    return []


def _slurm_window(release):
    """Major releases a release upgrades from in place: three from 24.11 on, two before."""
    return 3 if SLURM_RELEASES.index(release) >= SLURM_RELEASES.index("24.11") else 2


def slurm_upgrade_phases(dbd, controllers, computes, waves):
    """The order Slurm documents: slurmdbd first (its database backed up first), then slurmctld, then
    slurmd in the given *waves* of compute nodes (RELEASE_NOTES: "If using the slurmdbd ... you must update
    this first"; the upgrade guide: slurmdbd, then slurmctld, then slurmd).
    """
    phases = []
    if dbd:
        phases.append({"phase": "slurmdbd", "nodes": sorted(dbd), "backup_database": True})
    for ctl in sorted(controllers or []):
        phases.append({"phase": "slurmctld", "nodes": [ctl]})
    cset = set(computes or [])
    for wave in waves or []:
        nodes = [n for n in wave if n in cset]
        if nodes:
            phases.append({"phase": "slurmd", "nodes": sorted(nodes)})
    return phases


def k8s_upgrade_errors(current, target, var="k8s_version"):
    """Errors for a Kubernetes upgrade (empty: allowed). kubeadm and k3s upgrade one minor at a time:
    skipping a minor (1.29 -> 1.31) and downgrading are refused; a patch upgrade within a minor is fine."""
    cmaj, cmin = _major_minor(current, f"{var} (installed)")
    tmaj, tmin = _major_minor(target, f"{var} (target)")
    if (tmaj, tmin) < (cmaj, cmin):
        return [f"{var}: Kubernetes {tmaj}.{tmin} is older than the installed {cmaj}.{cmin}; no downgrades"]
    if tmaj != cmaj or tmin - cmin > 1:
        return [f"{var}: Kubernetes {cmaj}.{cmin} -> {tmaj}.{tmin} skips a minor version; upgrade one minor "
                f"at a time ({cmaj}.{cmin} -> {cmaj}.{cmin + 1} first)"]
    return []


def k8s_upgrade_phases(control_plane, workers, waves):
    """The control plane one node at a time, then the workers in *waves*."""
    phases = [{"phase": "control_plane", "nodes": [n]} for n in sorted(control_plane or [])]
    wset = set(workers or []) - set(control_plane or [])
    for wave in waves or []:
        nodes = [n for n in wave if n in wset]
        if nodes:
            phases.append({"phase": "workers", "nodes": sorted(nodes)})
    return phases


def validate(policy, pools, change, requested, hosts):
    """Every error in the maintenance inputs, each naming the variable and, where one is involved, the host.

    *requested*: ``maint_nodes`` (host names; empty means "every node that drifts from the wanted versions");
    *hosts*: the GPU node names of the inventory.
    """
    _norm, errors = normalize_policy(policy, pools if isinstance(pools, dict) else None)
    errors += validate_change(change)
    if not isinstance(requested, (list, tuple)) or not all(isinstance(h, str) and h for h in requested):
        errors.append(f"maint_nodes: must be a list of host names, got {requested!r}")
    else:
        hostset = set(hosts or [])
        errors += [f"maint_nodes: {h} is not a host of the GPU fleet (group gpu_nodes)"
                   for h in requested if h not in hostset]
    if isinstance(change, dict) and change.get("kind") in ("reboot", "tasks") and not requested:
        errors.append(f"maint_nodes: {CHANGE_VAR}.kind {change.get('kind')} has no version to compare, so it "
                      "needs the nodes to maintain (a list of hosts)")
    return errors


def summary(result):
    """Short human lines: the pools' limits, the waves, and what is left out."""
    lines = [f"waves of at most {result['max_unavailable']} nodes, share {result['share']} per pool, "
             f"stop when a wave has more than {result['failure_threshold']} failures"]
    for p, info in sorted(result["pools"].items()):
        lines.append(f"  {p}: {info['in_service']}/{info['nodes']} in service, min {info['min']}, "
                     f"at most {info['per_wave']} out per wave")
    for i, wave in enumerate(result["waves"]):
        lines.append(f"  wave {i}: {', '.join(wave)}")
    lines.extend(f"  left out: {item['node']}: {item['reason']}" for item in result["left_out"])
    if not result["waves"]:
        lines.append("  nothing to maintain")
    return "\n".join(lines)
