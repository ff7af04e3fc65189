"""Inventory validation for preflight: pure functions over host variables and groups.

Every error names the host and the variable, so an operator can fix the inventory
without reading a stack trace. Nothing here touches a node.
"""

from __future__ import annotations

import re

from ansible.module_utils.k8s_pool import declared_gpu_resources
from ansible.module_utils.pool_policy import PIN_VAR, VAR, validate

_TYPES = {
    "int": int,
    "str": str,
    "bool": bool,
    "list": list,
    "dict": dict,
}


def _missing(value):
    return value is None or (isinstance(value, str) and not value.strip())


def exclusive_group_errors(groups, exclusive):
    """Hosts that sit in two groups that must not share members."""
    errors = []
    for names in exclusive:
        seen = {}
        for group in names:
            for host in groups.get(group, []):
                if host in seen and seen[host] != group:
                    errors.append(
                        f"host {host}: is in both groups {seen[host]} and {group}, which are exclusive "
                        f"(variable preflight_exclusive_groups)"
                    )
                seen.setdefault(host, group)
    return errors


def required_var_errors(hostvars, groups, required):
    """Variables that members of a group must define (None and blank strings count as missing)."""
    errors = []
    for group in sorted(required):
        for host in groups.get(group, []):
            hv = hostvars[host]
            for var in required[group]:
                if var not in hv or _missing(hv[var]):
                    errors.append(f"host {host}: variable {var} is required for members of group {group}")
    return errors


_SECRET_WORDS = ("password", "secret", "token", "key")


def _shown(var, value):
    """A value for an error message; a variable whose name marks it as a secret is never echoed."""
    if any(word in var.lower() for word in _SECRET_WORDS):
        return f"a {type(value).__name__} (value hidden: {var} looks like a secret)"
    return repr(value)


def type_errors(hostvars, hosts, types):
    """Variables that, where set, must have a given type (int, str, bool, list, dict)."""
    errors = []
    for host in hosts:
        hv = hostvars[host]
        for var in sorted(types):
            if var not in hv or hv[var] is None:
                continue
            want = types[var]
            if want not in _TYPES:
                raise ValueError(f"preflight_var_types: unknown type {want!r} for {var}")
            value = hv[var]
            ok = isinstance(value, _TYPES[want])
            if want == "int" and isinstance(value, bool):
                ok = False
            if want == "int" and isinstance(value, str) and value.strip().isdigit():
                ok = True
            if not ok:
                errors.append(f"host {host}: variable {var} must be of type {want}, got {_shown(var, value)}")
    return errors


def pattern_errors(hostvars, hosts, patterns):
    """Variables that, where set, must match a regular expression (the whole value)."""
    errors = []
    for host in hosts:
        hv = hostvars[host]
        for var in sorted(patterns):
            if var not in hv or hv[var] is None:
                continue
            if not re.fullmatch(patterns[var], str(hv[var])):
                errors.append(f"host {host}: variable {var} must match {patterns[var]}, got {_shown(var, hv[var])}")
    return errors


def subset_group_errors(groups, subsets):
    """Members of a group that must also be members of another ([[inner, outer], ...])."""
    errors = []
    for inner, outer in subsets:
        for host in groups.get(inner, []):
            if host not in groups.get(outer, []):
                errors.append(
                    f"host {host}: is in group {inner} but not in group {outer}, which must hold every member "
                    f"of {inner} (variable preflight_subset_groups)"
                )
    return errors


def all_or_none_errors(hostvars, groups, rules):
    """Variables that every member of a group sets, or none: {group: [var, ...]}."""
    errors = []
    for group in sorted(rules):
        members = list(groups.get(group, []))
        for var in rules[group]:
            have = [h for h in members if var in hostvars[h] and not _missing(hostvars[h][var])]
            if not have or len(have) == len(members):
                continue
            shown = ", ".join(have[:3]) + (" ..." if len(have) > 3 else "")
            errors += [
                f"host {h}: variable {var} is missing, but {shown} of group {group} set it "
                f"(set it on every member or on none; variable preflight_all_or_none)"
                for h in members if h not in have
            ]
    return errors


def duplicate_name_errors(hostvars, hosts):
    """Two inventory hosts that would be one node: same short hostname or same ansible_host."""
    errors = []
    short = {}
    addr = {}
    for host in hosts:
        name = host.split(".", 1)[0]
        if name in short:
            errors.append(
                f"host {host}: short hostname {name} duplicates host {short[name]} "
                f"(variable inventory_hostname; Slurm and Kubernetes name nodes by short hostname)"
            )
        short.setdefault(name, host)
        target = hostvars[host].get("ansible_host") if hasattr(hostvars[host], "get") else None
        if target:
            if target in addr:
                errors.append(f"host {host}: variable ansible_host {target} duplicates host {addr[target]}")
            addr.setdefault(target, host)
    return errors


def pool_errors(hostvars, groups, pool):
    """The pool policy and what it needs of the inventory, checked before any node is contacted.

    pool: {policy: cluster_pools or None, hosts: [the fleet it splits],
           static_group: group the plan builds (must be empty in the inventory),
           controller_group: group whose first host the planner reads Slurm on}.
    Without a policy there is nothing to check: the pools are the static groups.
    """
    policy = pool.get("policy")
    if policy is None:
        return []
    errors = []
    static_group = pool.get("static_group")
    static = list(groups.get(static_group, [])) if static_group else []
    if static:
        errors.append(
            f"variable {VAR}: the pool plan decides the Slurm pool, so the inventory must not define group "
            f"{static_group} (it has {', '.join(static)}; variable preflight_pool_static_group)"
        )
    controller_group = pool.get("controller_group")
    if controller_group and not groups.get(controller_group):
        errors.append(
            f"variable {VAR}: the pool plan reads Slurm on the first host of group {controller_group}, "
            f"which is empty (variable preflight_pool_controller_group)"
        )
    hosts = list(pool.get("hosts") or [])
    subset = {h: {PIN_VAR: hostvars[h][PIN_VAR]} if PIN_VAR in hostvars[h] else {} for h in hosts}
    errors += [f"host {e}" if e.split(":", 1)[0] in subset else f"variable {e}" for e in validate(policy, subset)]
    return errors


def forbidden_char_errors(hostvars, groups, hosts, forbidden):
    """Variables whose value must not hold some characters (a secret a config file cannot carry).

    forbidden: {var: {chars: "#\\\"", whitespace: bool, groups: [group, ...], why: text}}; the rule
    applies to the members of `groups` (every host when absent) that set the variable. The message
    names the host, the variable and the characters, never the value.
    """
    errors = []
    for var in sorted(forbidden):
        rule = forbidden[var] or {}
        chars = str(rule.get("chars") or "")
        spaces = bool(rule.get("whitespace"))
        if rule.get("groups"):
            members = {h for g in rule["groups"] for h in groups.get(g, [])}
            scope = [h for h in hosts if h in members]
        else:
            scope = list(hosts)
        for host in scope:
            hv = hostvars[host]
            if var not in hv or hv[var] is None:
                continue
            value = str(hv[var])
            if any(c in chars for c in value) or (spaces and any(c.isspace() for c in value)):
                listed = " ".join(chars) + (" or whitespace" if spaces else "")
                why = f": {rule['why']}" if rule.get("why") else ""
                errors.append(f"host {host}: variable {var} contains a character it must not hold ({listed}){why}")
    return errors


def shared_state_errors(hostvars, controllers, shared_var):
    """Several controllers need one StateSaveLocation on shared storage, declared by `shared_var`.

    Each controller that does not set `shared_var` true is named; one controller needs nothing.
    """
    controllers = list(controllers or [])
    if len(controllers) < 2 or not shared_var:
        return []
    errors = []
    for host in controllers:
        value = hostvars[host].get(shared_var) if hasattr(hostvars[host], "get") else None
        if value is not True and str(value).lower() not in ("true", "yes", "1"):
            errors.append(
                f"host {host}: variable {shared_var} must be true: {len(controllers)} controllers "
                f"({', '.join(controllers)}) need StateSaveLocation on storage they all mount, "
                f"else a failover loses every job"
            )
    return errors


def expected_count_errors(groups, expected, variable="cluster_expected_hosts"):
    """Groups whose host count differs from the count the site declares for the whole fleet.

    A run over a slice of the inventory (AWX/AAP job slicing, a partial inventory file) cannot tell its
    slice from a smaller fleet: slurm.conf's node list, topology.conf, the pool plan and the gate's pairs
    would be built from the slice alone. With the fleet's size declared, such a run stops here.
    """
    errors = []
    if not isinstance(expected, dict):
        return [f"variable {variable} must be a mapping of group names to host counts, got {type(expected).__name__}"]
    for group in sorted(expected):
        want = expected[group]
        if isinstance(want, bool) or not isinstance(want, int) or want < 0:
            errors.append(f"variable {variable}: group {group} must map to a host count (an integer >= 0), "
                          f"got {want!r}")
            continue
        have = len(groups.get(group) or [])
        if have != want:
            errors.append(
                f"variable {variable}: group {group} holds {have} host(s) in this inventory, the fleet has {want}: "
                f"this run sees a slice or a partial inventory and would write cluster-wide files (slurm.conf's "
                f"node list, topology.conf) and plan pools from it; run it on the whole inventory, unsliced, or "
                f"update {variable} when the fleet changes"
            )
    return errors


# A host name must be a DNS name of lowercase RFC 1123 labels: Kubernetes names its node after it
# (lowercased), Slurm's NodeName is its first label and is read as a hostlist where it holds [ ] , or
# a space. Slurm compares its reserved words without case: NodeName "DEFAULT" sets defaults and "ALL"
# is fatal (slurm.conf(5), read_config.c), and `scontrol reboot` reads "ASAP" as its flag.
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
HOST_NAME = rf"{_LABEL}(\.{_LABEL})*"
SLURM_RESERVED = ("all", "default", "asap")


def host_name_errors(hosts):
    """Host names Slurm or Kubernetes would read as another name, several nodes or a keyword.

    Work at risk: a name Slurm reads as a hostlist (gpu[01-04]) or a keyword (ALL) makes `scontrol update
    NodeName=<host> State=DRAIN` act on other nodes and their jobs; two names Kubernetes lowercases to one
    make one node take the other's labels and cordon. Refused here, before any host is contacted.
    """
    errors = []
    folded = {}
    for host in hosts:
        name = str(host)
        short = name.split(".", 1)[0]
        if len(name) > 253 or not re.fullmatch(HOST_NAME, name):
            errors.append(
                f"host {name}: variable inventory_hostname {name!r} is not a DNS name of lowercase RFC 1123 labels "
                f"(a-z, 0-9 and '-', at most 63 each): Slurm would read it as a hostlist or reject it and "
                f"Kubernetes would rename its node"
            )
        elif short.lower() in SLURM_RESERVED:
            errors.append(
                f"host {name}: variable inventory_hostname {name!r} is a word Slurm reserves "
                f"(NodeName={short.upper()} in slurm.conf(5), or scontrol's {short.upper()})"
            )
        key = name.lower()
        if key in folded and folded[key] != name:
            errors.append(
                f"host {name}: variable inventory_hostname: {name} and {folded[key]} are one node to Kubernetes "
                f"(names are lowercased)"
            )
        folded.setdefault(key, name)
    return errors


def count_range_errors(hostvars, hosts, ranges):
    """Per-node counts outside what a real node has: {var: [lowest, highest]}.

    Work at risk: a mistyped cluster_gpu_count (80 for 8) makes GPU discovery find every node short and
    drain it, with its jobs' node. Refused here, naming host, variable and range, before any host is
    contacted. A value that is not an integer is left to type_errors.
    """
    errors = []
    for host in hosts:
        hv = hostvars[host]
        for var in sorted(ranges or {}):
            if var not in hv or hv[var] is None or isinstance(hv[var], bool):
                continue
            value = hv[var]
            if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]+\s*", value):
                value = int(value)
            if not isinstance(value, int):
                continue
            low, high = ranges[var]
            if not low <= value <= high:
                errors.append(f"host {host}: variable {var} is {value}, outside {low}..{high} "
                              f"(preflight_count_ranges: a GPU node has {low} to {high} GPUs)"
                              if var == "cluster_gpu_count" else
                              f"host {host}: variable {var} is {value}, outside {low}..{high} (preflight_count_ranges)")
    return errors


# useradd's default NAME_REGEX, at most 32 characters: a user name never holds ':' (pam_succeed_if's
# separator), whitespace or a newline (which would start a new line of sshd's PAM stack).
USER_NAME = r"[a-z_][a-z0-9_-]{0,31}"


def pam_exempt_errors(hostvars, rule):
    """pam_slurm_adopt's exempt users: valid user names, and Ansible's login among them.

    rule: {hosts: [host, ...], enabled_var, users_var, default_enabled, default_users}: the role variables
    (and their role defaults, which hostvars do not hold) of the hosts that may run slurmd.
    Work at risk: an exempt "user" holding a newline writes its own line into sshd's PAM stack; an
    ansible_user outside the exemptions is shut out of every node without a job of its own, so the run
    that would undrain, gate or repair the node cannot reach it. Refused here, before any host is
    contacted. An unset ansible_user (the controller's login) is not known here and not checked.
    """
    errors = []
    users_var = rule.get("users_var")
    if not users_var:
        return []
    for host in rule.get("hosts") or []:
        hv = hostvars[host]
        enabled = hv[rule["enabled_var"]] if rule.get("enabled_var") in hv else rule.get("default_enabled", True)
        users = hv[users_var] if users_var in hv else list(rule.get("default_users") or [])
        if isinstance(users, str) or not isinstance(users, (list, tuple)):
            errors.append(f"host {host}: variable {users_var} must be a list of user names, got {users!r}")
            continue
        bad = [u for u in users if not isinstance(u, str) or not re.fullmatch(USER_NAME, u)]
        errors += [f"host {host}: variable {users_var} holds {u!r}, which is not a user name (^{USER_NAME}$); "
                   f"it is written into sshd's PAM stack" for u in bad]
        login = hv.get("ansible_user")
        if str(enabled).lower() in ("true", "yes", "1", "on") and login is not None and login not in users:
            errors.append(
                f"host {host}: variable ansible_user {login} is not in {users_var} {list(users)!r}: "
                f"pam_slurm_adopt would refuse Ansible's own login on a node without a job of {login}"
            )
    return errors


def gpu_count_majority_error(hosts, hostvars, found_var, expected_var, variable="cluster_gpu_count"):
    """The run's stop when most GPU nodes of a play disagree with the inventory's GPU count ("" if not).

    A node whose count disagrees is short of GPUs; most nodes disagreeing means the inventory is wrong.
    Only hosts with both a found and an expected count are weighed (status.yml expects none). One node
    alone proves nothing about the inventory: a one-node play (a gate run, a maintenance wave of one) whose
    node lost a GPU drains that node, as a node short of GPUs should be (a drain lets its jobs end).
    Work at risk: draining every node of a play on a mistyped count drains their jobs' nodes. Refused:
    when at least two nodes, and more than half of the weighed ones, disagree the run stops, draining no node.
    """
    checked = []
    for host in hosts:
        hv = hostvars[host]
        if found_var not in hv or expected_var not in hv or hv[expected_var] is None or hv[found_var] is None:
            continue
        checked.append((host, int(hv[found_var]), int(hv[expected_var])))
    wrong = [(h, f, e) for h, f, e in checked if f != e]
    if len(wrong) < 2 or 2 * len(wrong) <= len(checked):
        return ""
    shown = "; ".join(f"{h} found {f}, expected {e}" for h, f, e in wrong[:8]) + (" ..." if len(wrong) > 8 else "")
    return (
        f"variable {variable}: {len(wrong)} of {len(checked)} GPU nodes in this play disagree with the inventory "
        f"({shown}): the inventory is wrong, not the nodes; stopping the run, draining no node. Fix {variable}"
    )


def gpu_resources_errors(hostvars, hosts, var):
    """Hosts whose declared Kubernetes GPU resources (``var``, cluster_k8s_gpu_resources) are not understood.

    Work at risk: admission compares a node's allocatable GPU resources with these; a name or count misread
    would admit a node whose GPUs are not ready, or hold one forever. Refused here, naming host and variable.
    """
    errors = []
    for host in hosts if var else []:
        hv = hostvars[host]
        if var in hv and hv[var] is not None:
            value = hv[var]
            try:
                declared_gpu_resources(value, var)
            except ValueError as exc:
                errors.append(f"host {host}: variable {exc}")
    return errors


def inventory_errors(hostvars, groups, rules):
    """All preflight errors for an inventory, in a stable order.

    rules: {exclusive_groups: [[g1, g2], ...], required_vars: {group: [var, ...]},
            var_types: {var: type}, var_patterns: {var: regex}, subset_groups: [[inner, outer], ...],
            all_or_none: {group: [var, ...]}, forbidden_chars: {var: rule}, hosts: [host, ...],
            controllers: [host, ...], controllers_shared_var: var, pool: see pool_errors,
            expected_hosts: {group: count}, count_ranges: {var: [low, high]}, pam_exempt: see
            pam_exempt_errors, gpu_resources_var: see gpu_resources_errors}
    Host names are always checked (host_name_errors).
    """
    hosts = list(rules.get("hosts") or groups.get("all", []))
    errors = []
    errors += host_name_errors(hosts)
    errors += duplicate_name_errors(hostvars, hosts)
    errors += exclusive_group_errors(groups, rules.get("exclusive_groups") or [])
    errors += required_var_errors(hostvars, groups, rules.get("required_vars") or {})
    errors += type_errors(hostvars, hosts, rules.get("var_types") or {})
    errors += pattern_errors(hostvars, hosts, rules.get("var_patterns") or {})
    errors += subset_group_errors(groups, rules.get("subset_groups") or [])
    errors += all_or_none_errors(hostvars, groups, rules.get("all_or_none") or {})
    errors += pool_errors(hostvars, groups, rules.get("pool") or {})
    errors += forbidden_char_errors(hostvars, groups, hosts, rules.get("forbidden_chars") or {})
    errors += shared_state_errors(hostvars, rules.get("controllers"), rules.get("controllers_shared_var"))
    errors += expected_count_errors(groups, rules.get("expected_hosts") or {})
    errors += count_range_errors(hostvars, hosts, rules.get("count_ranges") or {})
    errors += pam_exempt_errors(hostvars, rules.get("pam_exempt") or {})
    errors += gpu_resources_errors(hostvars, hosts, rules.get("gpu_resources_var"))
    return errors
