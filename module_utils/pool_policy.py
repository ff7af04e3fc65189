"""The node-pool policy (``cluster_pools``): its shape, defaults, target arithmetic and validation.

Pure functions; ``validate`` returns every error at once, each naming the variable and, where one is
involved, the host. See docs/pools.md for the policy's shape.
"""

import math
import re

KNOWN_POOLS = ("k8s", "slurm")
POLICY_KEYS = ("pools", "max_unavailable", "drain_timeout", "excluded")
POOL_KEYS = ("min", "target")
DEFAULTS = {"max_unavailable": 1, "drain_timeout": 3600, "excluded": []}
PIN_VAR = "cluster_pool_pin"
VAR = "cluster_pools"

_PERCENT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def parse_target(value):
    """Return ``("count", n)`` or ``("fraction", f)`` for a target; raise ``ValueError`` when unreadable.

    Counts: a non-negative int (or a string of digits, as templating may produce). Fractions: ``"75%"`` or a
    float in ``[0, 1]`` (``0.75``).
    """
    if _is_int(value):
        if value < 0:
            raise ValueError(f"{value} is negative")
        return ("count", value)
    if isinstance(value, float):
        if not 0.0 <= value <= 1.0 or math.isnan(value):
            raise ValueError(f"{value} is not a fraction between 0 and 1 (write a node count as an integer)")
        return ("fraction", value)
    if isinstance(value, str):
        if value.strip().isdigit():
            return ("count", int(value))
        match = _PERCENT_RE.match(value)
        if match:
            pct = float(match.group(1))
            if pct > 100:
                raise ValueError(f"{value!r} is above 100%")
            return ("fraction", pct / 100.0)
    raise ValueError(f"{value!r} is neither a node count (3) nor a fraction ('75%' or 0.75)")


def resolve_target(value, eligible):
    """Return the node count a target means for *eligible* nodes (fractions round down)."""
    kind, number = parse_target(value)
    if kind == "count":
        return number
    return math.floor(number * eligible + 1e-9)


def normalize(policy):
    """Return ``(normalized, errors)``: the policy with defaults filled in, and every shape error found.

    ``normalized`` is ``{pools: {name: {min, target}}, max_unavailable, drain_timeout, excluded}`` with
    ``excluded`` a sorted list; pools or keys that fail are left out of it.
    """
    errors = []
    if not isinstance(policy, dict):
        return None, [f"{VAR}: must be a mapping with 'pools', got {type(policy).__name__}"]
    errors += [f"{VAR}.{key}: unknown key (known: {', '.join(POLICY_KEYS)})"
               for key in sorted(map(str, policy)) if key not in POLICY_KEYS]
    out = {"pools": {}}
    pools = policy.get("pools")
    if not isinstance(pools, dict) or not pools:
        errors.append(f"{VAR}.pools: must be a non-empty mapping of pool name to {{min, target}}")
        pools = {}
    for name in sorted(pools, key=str):
        spec = pools[name]
        where = f"{VAR}.pools.{name}"
        if name not in KNOWN_POOLS:
            errors.append(f"{where}: unknown pool {name!r} (known: {', '.join(KNOWN_POOLS)})")
            continue
        if not isinstance(spec, dict):
            errors.append(f"{where}: must be a mapping with 'target' (and optionally 'min')")
            continue
        errors += [f"{where}.{key}: unknown key (known: min, target)"
                   for key in sorted(map(str, spec)) if key not in POOL_KEYS]
        mn = spec.get("min", 0)
        ok = True
        if not _is_int(mn) or mn < 0:
            errors.append(f"{where}.min: must be a non-negative integer, got {mn!r}")
            ok = False
        if "target" not in spec:
            errors.append(f"{where}.target: is required (a node count or a fraction like '75%')")
            ok = False
        else:
            try:
                kind, number = parse_target(spec["target"])
            except ValueError as exc:
                errors.append(f"{where}.target: {exc}")
                ok = False
            else:
                if ok and kind == "count" and number < mn:
                    errors.append(f"{where}.target: {number} is below {where}.min {mn}")
                    ok = False
        if ok:
            out["pools"][name] = {"min": mn, "target": spec["target"]}
    mu = policy.get("max_unavailable", DEFAULTS["max_unavailable"])
    if not _is_int(mu) or mu < 1:
        errors.append(f"{VAR}.max_unavailable: must be an integer of at least 1, got {mu!r}")
    else:
        out["max_unavailable"] = mu
    dt = policy.get("drain_timeout", DEFAULTS["drain_timeout"])
    if not _is_int(dt) or dt < 0:
        errors.append(f"{VAR}.drain_timeout: must be a non-negative integer (seconds), got {dt!r}")
    else:
        out["drain_timeout"] = dt
    excluded = policy.get("excluded", DEFAULTS["excluded"])
    if excluded is None:
        excluded = []
    if not isinstance(excluded, (list, tuple)) or not all(isinstance(h, str) and h for h in excluded):
        errors.append(f"{VAR}.excluded: must be a list of host names, got {excluded!r}")
        excluded = []
    out["excluded"] = sorted(set(excluded))
    fractions = sum(parse_target(s["target"])[1] for s in out["pools"].values()
                    if parse_target(s["target"])[0] == "fraction")
    if fractions > 1.0 + 1e-9:
        errors.append(f"{VAR}.pools: fractional targets add up to {fractions:.0%}, above 100%")
    return out, errors


def validate(policy, hosts):
    """Return every error in *policy* (``cluster_pools``) against *hosts* (``{name: hostvars subset}``).

    Each message names the variable and, where one is involved, the host. Checks: shape and types, unknown
    pools, ``max_unavailable`` < 1, excluded names that are not hosts, pins to unknown pools or on excluded
    hosts, and targets that cannot be met (minimums or targets above the eligible nodes, also once pins to
    other pools are taken out). An empty list means the policy is usable.
    """
    norm, errors = normalize(policy)
    if norm is None:
        return errors
    if not isinstance(hosts, dict):
        return [*errors, f"hosts: expected a mapping of host name to host variables, "
                         f"got {type(hosts).__name__}"]
    excluded = set(norm["excluded"])
    errors += [f"{VAR}.excluded: {h} is not a host of the inventory"
               for h in norm["excluded"] if h not in hosts]
    pools = norm["pools"]
    pins = {}
    for host in sorted(hosts):
        hv = hosts[host] or {}
        pin = hv.get(PIN_VAR)
        if pin in (None, ""):
            continue
        if not isinstance(pin, str):
            errors.append(f"{host}: {PIN_VAR} must be a pool name, got {pin!r}")
        elif pin not in KNOWN_POOLS:
            errors.append(f"{host}: {PIN_VAR}={pin!r} is not a pool (known: {', '.join(KNOWN_POOLS)})")
        elif pin not in (policy.get("pools") or {}):
            errors.append(f"{host}: {PIN_VAR}={pin!r} names a pool that {VAR}.pools does not define")
        elif host in excluded:
            errors.append(f"{host}: {PIN_VAR}={pin!r} conflicts with {VAR}.excluded "
                          "(an excluded node is never moved); drop one of them")
        else:
            pins[host] = pin
    eligible = sum(1 for h in hosts if h not in excluded)
    resolved = {}
    for name, spec in pools.items():
        resolved[name] = resolve_target(spec["target"], eligible)
        where = f"{VAR}.pools.{name}"
        if resolved[name] > eligible:
            errors.append(f"{where}.target: {spec['target']!r} means {resolved[name]} nodes, "
                          f"but only {eligible} are eligible ({len(hosts)} hosts, "
                          f"{len(hosts) - eligible} excluded)")
        elif resolved[name] < spec["min"]:
            errors.append(f"{where}.target: {spec['target']!r} means {resolved[name]} of {eligible} "
                          f"eligible nodes, below {where}.min {spec['min']}")
        others = sorted(h for h, p in pins.items() if p != name)
        free = eligible - len(others)
        need = max(spec["min"], resolved[name])
        if others and need > free and need <= eligible:
            errors.append(f"{where}: needs {need} nodes but only {free} eligible nodes are not pinned "
                          f"elsewhere ({PIN_VAR} on {', '.join(others[:5])}"
                          f"{' ...' if len(others) > 5 else ''})")
    total_min = sum(s["min"] for s in pools.values())
    if total_min > eligible:
        errors.append(f"{VAR}.pools: the minimums add up to {total_min} nodes, but only {eligible} "
                      f"are eligible ({len(hosts)} hosts, {len(hosts) - eligible} excluded)")
    total = sum(max(s["min"], resolved[n]) for n, s in pools.items())
    if total > eligible and total_min <= eligible and all(r <= eligible for r in resolved.values()):
        errors.append(f"{VAR}.pools: the targets add up to {total} nodes, but only {eligible} are eligible")
    return errors


def unnamed_pool_errors(policy, node_pools):
    """Return an error for each pool that holds nodes but that *policy* (``cluster_pools``) does not name.

    *node_pools*: ``{node: pool or None}``, each node's live pool. A pool the policy leaves out would have its
    nodes read as in no pool, and nodes in no pool join another pool all at once, without a drain and
    whatever ``max_unavailable`` says. To empty a pool, the policy names it with ``target: 0``.

    Work at risk: every node of a pool the policy leaves out (its running jobs or pods, and that pool's
    minimum). Refused: one error per such pool, naming the pool, its nodes and the variable to set.
    """
    named = set((policy or {}).get("pools") or {}) if isinstance(policy, dict) else set()
    by_pool = {}
    for node, pool in sorted(node_pools.items()):
        if pool in KNOWN_POOLS and pool not in named:
            by_pool.setdefault(pool, []).append(node)
    errors = []
    for pool, nodes in sorted(by_pool.items()):
        shown = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
        errors.append(f"{VAR}.pools: names no {pool} pool, but {shown} {'is' if len(nodes) == 1 else 'are'} in "
                      f"it; name it ({VAR}.pools.{pool}, target 0 to empty it one drained batch at a time)")
    return errors
