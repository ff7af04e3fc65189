"""Slurm accounting policy as data: QOS, accounts (a tree) and users, compared per entity.

`validate(policy)` checks the policy from the inventory alone (preflight): every error at once, each
naming `cluster_slurm_accounting` and the entity. `read_state(outputs)` parses `sacctmgr --parsable2
--noheader show ...` for the formats in SHOW_FORMATS. `plan(policy, state, cluster, prune)` returns
the sacctmgr commands that bring the database to the policy, in a safe order (QOS, then accounts
parents first, then users; removals in reverse), plus the entities the policy does not name.

Why per entity and not `sacctmgr load`: a flat file carries no QOS (sacctmgr(1), "FLAT FILE DUMP AND
LOAD", 22.05 and 24.11), `load` only reconciles what the file names and never removes anything, and
`load clean` deletes every association first. Comparing entity by entity gives the exact change list
that check mode and `--diff` show, removes nothing unless `prune` says so, and reports the rest.

`prune` removes only what this cluster's policy owns: every command that names an association is scoped
by `cluster=`, and a user's association by `partition=''` as well (the association without a partition;
without it sacctmgr takes the user's per-partition associations too). The policy manages no per-partition
association, so an account with one under it is not deleted (deleting an account deletes everything under
it), and a QOS is not deleted while any association of any cluster of the database still lists it (QOS
are database-wide: `delete qos` strips it from every cluster's associations). Both are refused, named in
the plan's `refused`. A user's default account is per cluster: it is read and set with `cluster=`.

Only the attributes the policy sets are managed: an attribute left out keeps what the database has.
A TRES map is managed whole: a TRES the database holds and the policy leaves out is cleared (-1).
Text is compared in lower case: the database keeps it so. `show association` prints a user's
association with the values it inherits from its account (QOS, DefaultQOS, MaxWall), so a user's
attribute set to its account's value reads as already set.
"""

import re

SHOW_FORMATS = {
    "qos": ["Name", "Description", "Priority", "MaxWall", "GrpTRES", "MaxTRESPU", "MaxTRES", "MaxJobsPU",
            "Preempt", "PreemptMode", "Flags", "UsageFactor"],
    "account": ["Account", "Descr", "Org"],
    "user": ["User", "DefaultAccount"],
    "assoc": ["Cluster", "Account", "User", "Partition", "ParentName", "Share", "QOS", "DefaultQOS", "GrpTRES",
              "MaxWall"],
}

# Policy key -> (sacctmgr show column, sacctmgr set keyword, kind).
QOS_ATTRS = {
    "description": ("Description", "Description", "text"),
    "priority": ("Priority", "Priority", "int"),
    "max_wall": ("MaxWall", "MaxWall", "time"),
    "grp_tres": ("GrpTRES", "GrpTRES", "tres"),
    "max_tres_per_user": ("MaxTRESPU", "MaxTRESPerUser", "tres"),
    "max_tres_per_job": ("MaxTRES", "MaxTRESPerJob", "tres"),
    "max_jobs_per_user": ("MaxJobsPU", "MaxJobsPerUser", "int"),
    "preempt": ("Preempt", "Preempt", "list"),
    "preempt_mode": ("PreemptMode", "PreemptMode", "word"),
    "flags": ("Flags", "Flags", "list"),
    "usage_factor": ("UsageFactor", "UsageFactor", "float"),
}
ACCOUNT_TEXT_ATTRS = {
    "description": ("Descr", "Description", "text"),
    "organization": ("Org", "Organization", "text"),
}
ASSOC_ATTRS = {
    "fairshare": ("Share", "Fairshare", "share"),
    "qos": ("QOS", "QOS", "list"),
    "default_qos": ("DefaultQOS", "DefaultQOS", "word"),
    "grp_tres": ("GrpTRES", "GrpTRES", "tres"),
    "max_wall": ("MaxWall", "MaxWall", "time"),
}
ACCOUNT_KEYS = {"parent", *ACCOUNT_TEXT_ATTRS, *ASSOC_ATTRS}
USER_KEYS = {"default_account", "accounts", "fairshare", "qos", "default_qos"}
POLICY_KEYS = {"qos", "accounts", "users"}
# Entities Slurm creates itself: never reported as unmanaged, never pruned.
BUILTIN = {"qos": {"normal"}, "account": {"root"}, "user": {"root"}}

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
TRES_RE = re.compile(r"^[a-z]+(/[a-z0-9_.:-]+)?$")
TIME_RE = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
VAR = "cluster_slurm_accounting"
# A user's association without a partition: sacctmgr matches partition='' to exactly those (slurmdbd keeps
# an unset partition as ''); left out, a user command also takes the user's per-partition associations.
NO_PARTITION = "partition=''"


class AccountingError(ValueError):
    """sacctmgr output that does not have the expected shape."""


def time_seconds(value):
    """Slurm time (minutes, min:sec, h:m:s, d-h, d-h:m, d-h:m:s) in seconds; None for unset/infinite."""
    text = str(value).strip()
    if text in ("", "-1", "UNLIMITED", "INFINITE", "infinite", "unlimited"):
        return None
    match = TIME_RE.match(text)
    if not match:
        raise ValueError(f"not a Slurm time: {text!r}")
    days, first, second, third = match.groups()
    if days is not None:
        hours, minutes, seconds = int(first), int(second or 0), int(third or 0)
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if third is not None:
        return (int(first) * 60 + int(second)) * 60 + int(third)
    if second is not None:
        return int(first) * 60 + int(second)
    return int(first) * 60


def parse_tres(text):
    """`gres/gpu=8,cpu=16` -> {'gres/gpu': '8', 'cpu': '16'} (keys lower-cased)."""
    result = {}
    for item in filter(None, str(text).split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise AccountingError(f"TRES item without '=': {item!r}")
        result[key.strip().lower()] = value.strip()
    return result


def normalize(kind, value):
    """A comparable form of a policy value or a sacctmgr column."""
    if kind == "text":
        # sacctmgr(1): "The contents of Slurm's database are maintained in lower case."
        return "" if value is None else str(value).lower()
    if kind == "word":
        return "" if value is None else str(value).strip().lower()
    if kind == "int":
        text = str(value).strip()
        return None if text in ("", "-1") else int(text)
    if kind == "float":
        return round(float(value), 6)
    if kind == "time":
        return time_seconds(value)
    if kind == "share":
        text = str(value).strip().lower()
        return text if text == "parent" else int(text)
    if kind == "list":
        items = value.split(",") if isinstance(value, str) else list(value or [])
        return sorted({str(item).strip().lower() for item in items if str(item).strip()})
    if kind == "tres":
        if isinstance(value, dict):
            return {str(key).lower(): str(val) for key, val in value.items()}
        return parse_tres(value)
    raise ValueError(kind)


def render(kind, value):
    """The value as sacctmgr's set keyword takes it."""
    if kind == "list":
        items = normalize("list", value)
        return ",".join(items) if items else "''"
    if kind == "tres":
        return ",".join(f"{key}={val}" for key, val in sorted(value.items()))
    if kind == "text":
        return str(value)
    return str(value)


def _check_name(errors, where, name):
    if not isinstance(name, str) or not NAME_RE.match(name):
        errors.append(f"{VAR}: {where} name {name!r} must be lower-case letters, digits, '_', '.', '-' "
                      f"(Slurm keeps accounting names in lower case)")
        return False
    return True


def _check_attr(errors, where, key, kind, value):
    try:
        if kind == "tres":
            if not isinstance(value, dict):
                raise ValueError("a map of TRES to count, e.g. {gres/gpu: 8}")
            for tres, count in value.items():
                if not TRES_RE.match(str(tres).lower()):
                    raise ValueError(f"unknown TRES name {tres!r}")
                if not re.fullmatch(r"-?\d+", str(count)) or int(count) < -1:
                    raise ValueError(f"count for {tres} must be an integer >= -1")
        elif kind == "list":
            if not isinstance(value, list):
                raise ValueError("a list")
        elif kind == "text":
            if not isinstance(value, str) or "'" in value or '"' in value:
                raise ValueError("a string without quotes")
        else:
            normalize(kind, value)
    except (ValueError, TypeError) as err:
        errors.append(f"{VAR}: {where} {key}: {err}")


def validate(policy):
    """Every error in the policy, each naming the variable and the entity; [] when it is sound."""
    if policy is None:
        return []
    if not isinstance(policy, dict):
        return [f"{VAR} must be a map with keys qos, accounts and users"]
    errors = [f"{VAR}: unknown key {key!r} (known: {', '.join(sorted(POLICY_KEYS | {'prune'}))})"
              for key in sorted(set(policy) - POLICY_KEYS - {"prune"})]
    if not isinstance(policy.get("prune", False), bool):
        errors.append(f"{VAR}: prune must be true or false")
    sections = {}
    for section in POLICY_KEYS:
        value = policy.get(section) or {}
        if not isinstance(value, dict):
            errors.append(f"{VAR}: {section} must be a map of name to settings")
            value = {}
        sections[section] = {name: (spec or {}) for name, spec in value.items()}
    qos, accounts, users = sections["qos"], sections["accounts"], sections["users"]
    known_qos = set(qos) | BUILTIN["qos"]
    known_accounts = set(accounts) | BUILTIN["account"]

    for name, spec in sorted(qos.items()):
        where = f"qos {name}"
        if not _check_name(errors, "qos", name) or not isinstance(spec, dict):
            continue
        for key in sorted(set(spec) - set(QOS_ATTRS)):
            errors.append(f"{VAR}: {where}: unknown key {key!r} (known: {', '.join(sorted(QOS_ATTRS))})")
        for key, (_, _, kind) in QOS_ATTRS.items():
            if key in spec:
                _check_attr(errors, where, key, kind, spec[key])
        for other in spec.get("preempt") or []:
            if other not in known_qos:
                errors.append(f"{VAR}: {where} preempts unknown QOS {other!r}")
            if other == name:
                errors.append(f"{VAR}: {where} preempts itself")

    for name, spec in sorted(accounts.items()):
        where = f"account {name}"
        if not _check_name(errors, "account", name) or not isinstance(spec, dict):
            continue
        if name in BUILTIN["account"]:
            errors.append(f"{VAR}: account root is Slurm's own; set its children's parent instead")
        for key in sorted(set(spec) - ACCOUNT_KEYS):
            errors.append(f"{VAR}: {where}: unknown key {key!r} (known: {', '.join(sorted(ACCOUNT_KEYS))})")
        for key, (_, _, kind) in {**ACCOUNT_TEXT_ATTRS, **ASSOC_ATTRS}.items():
            if key in spec:
                _check_attr(errors, where, key, kind, spec[key])
        parent = spec.get("parent", "root")
        if parent not in known_accounts:
            errors.append(f"{VAR}: {where} has unknown parent account {parent!r}")
        _check_qos_refs(errors, where, spec, known_qos)
    errors.extend(_cycles(accounts))

    for name, spec in sorted(users.items()):
        where = f"user {name}"
        if not _check_name(errors, "user", name) or not isinstance(spec, dict):
            continue
        for key in sorted(set(spec) - USER_KEYS):
            errors.append(f"{VAR}: {where}: unknown key {key!r} (known: {', '.join(sorted(USER_KEYS))})")
        member = spec.get("accounts") or []
        if not isinstance(member, list) or not member:
            errors.append(f"{VAR}: {where} needs accounts, a non-empty list of the accounts it may charge")
            member = []
        for account in member:
            if account not in known_accounts:
                errors.append(f"{VAR}: {where} names unknown account {account!r}")
        default = spec.get("default_account")
        if default is None:
            errors.append(f"{VAR}: {where} needs default_account")
        elif default not in member:
            errors.append(f"{VAR}: {where} default_account {default!r} is not one of its accounts {member}")
        for key in ("fairshare", "qos", "default_qos"):
            if key in spec:
                _check_attr(errors, where, key, ASSOC_ATTRS[key][2], spec[key])
        _check_qos_refs(errors, where, spec, known_qos)
    return errors


def _check_qos_refs(errors, where, spec, known_qos):
    allowed = spec.get("qos")
    for ref in allowed or []:
        if ref not in known_qos:
            errors.append(f"{VAR}: {where} names unknown QOS {ref!r}")
    default = spec.get("default_qos")
    if default is not None:
        if default not in known_qos:
            errors.append(f"{VAR}: {where} default_qos names unknown QOS {default!r}")
        elif allowed is not None and default not in allowed:
            errors.append(f"{VAR}: {where} default_qos {default!r} is not in its qos list {allowed}")


def _cycles(accounts):
    errors = []
    for name in sorted(accounts):
        seen, current = [name], (accounts[name] or {}).get("parent", "root")
        while current in accounts:
            if current in seen:
                errors.append(f"{VAR}: account {name}: parent chain loops ({' -> '.join([*seen, current])})")
                break
            seen.append(current)
            current = (accounts[current] or {}).get("parent", "root")
    return errors


def policy_tres(policy):
    """Every TRES the policy names in a limit (e.g. gres/gpu, cpu), sorted."""
    names = set()
    for section, attrs in (("qos", QOS_ATTRS), ("accounts", ASSOC_ATTRS), ("users", ASSOC_ATTRS)):
        for spec in ((policy or {}).get(section) or {}).values():
            for key, (_, _, kind) in attrs.items():
                if kind == "tres" and isinstance((spec or {}).get(key), dict):
                    names.update(str(tres).lower() for tres in spec[key])
    return sorted(names)


def unknown_tres(policy, tres_text):
    """TRES the policy names that `sacctmgr show tres format=Type,Name` does not list.

    slurmdbd knows a TRES such as gres/gpu only once slurmctld has registered it (AccountingStorageTRES).
    """
    known = set()
    for row in parse_show(tres_text, ["Type", "Name"]):
        kind, name = row["Type"].lower(), row["Name"].lower()
        known.add(f"{kind}/{name}" if name else kind)
    return [tres for tres in policy_tres(policy) if tres not in known]


def parse_show(text, columns):
    """Rows of `sacctmgr --parsable2 --noheader show ... format=<columns>` as dicts."""
    rows = []
    for line in str(text).splitlines():
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != len(columns):
            raise AccountingError(f"expected {len(columns)} '|'-separated fields ({','.join(columns)}), "
                                  f"got {len(fields)}: {line!r}")
        rows.append(dict(zip(columns, fields, strict=True)))
    return rows


def read_state(outputs, cluster):
    """Current QOS, accounts, users and associations from the four show outputs.

    `user` is `show user cluster=<cluster>` (DefaultAccount is this cluster's). `assoc` is `show association`
    of every cluster: this cluster's rows are split into account, user and per-partition associations, and
    every row is kept in `assocs`, for the QOS each association of the database uses.

    Work at risk: none (read-only).
    """
    qos = {row["Name"].lower(): row for row in parse_show(outputs["qos"], SHOW_FORMATS["qos"])}
    accounts = {row["Account"].lower(): row for row in parse_show(outputs["account"], SHOW_FORMATS["account"])}
    users = {row["User"].lower(): row for row in parse_show(outputs["user"], SHOW_FORMATS["user"])}
    account_assocs, user_assocs, partition_assocs = {}, {}, []
    assocs = parse_show(outputs["assoc"], SHOW_FORMATS["assoc"])
    for row in assocs:
        if row["Cluster"].lower() != cluster.lower():
            continue
        if row["Partition"]:
            partition_assocs.append(row)
        elif row["User"]:
            user_assocs[(row["User"].lower(), row["Account"].lower())] = row
        else:
            account_assocs[row["Account"].lower()] = row
    return {"qos": qos, "accounts": accounts, "users": users, "account_assocs": account_assocs,
            "user_assocs": user_assocs, "partition_assocs": partition_assocs, "assocs": assocs}


def _changes(spec, row, attrs):
    """{policy key: (sacctmgr set keyword, rendered value, before, after)} for attributes that differ."""
    changes = {}
    for key, (column, keyword, kind) in attrs.items():
        if key not in spec:
            continue
        want = normalize(kind, spec[key])
        have = normalize(kind, row.get(column, "")) if row is not None else None
        if kind == "tres" and row is not None:
            cleared = {tres: "-1" for tres in have if tres not in want}
            if want == have:
                continue
            value = {**cleared, **want}
            changes[key] = (keyword, render(kind, value), row.get(column, ""), render(kind, want))
            continue
        if row is not None and want == have:
            continue
        value = spec[key]
        if kind == "time" and want is None:
            value = -1
        changes[key] = (keyword, render(kind, value), "" if row is None else row.get(column, ""),
                        render(kind, value))
    return changes


def _sets(changes):
    return [f"{keyword}={value}" for _, (keyword, value, _, _) in sorted(changes.items())]


def _action(kind, name, argv, what, changes=None):
    return {"entity": kind, "name": name, "what": what, "argv": ["sacctmgr", "--immediate", *argv],
            "changes": {key: {"before": before, "after": after}
                        for key, (_, _, before, after) in (changes or {}).items()}}


def _account_order(accounts):
    """Accounts with every parent before its children (root's children first), then by name."""
    ordered, placed = [], set(BUILTIN["account"])
    pending = sorted(accounts)
    while pending:
        ready = [name for name in pending if (accounts[name] or {}).get("parent", "root") in placed]
        if not ready:
            raise ValueError(f"{VAR}: accounts with unknown or looping parents: {pending}")
        ordered.extend(ready)
        placed.update(ready)
        pending = [name for name in pending if name not in placed]
    return ordered


def plan(policy, state, cluster, prune=None):
    """The sacctmgr actions that bring `state` to `policy`, and the entities the policy does not name.

    Returns {"actions": [...], "unmanaged": {"qos": [...], "accounts": [...], "users": [...],
    "user_associations": ["user@account", ...], "partition_associations": [...]}, "prune": bool,
    "refused": [...]}. Each action: entity, name, what (add/modify/delete), argv, changes ({key: {before,
    after}}). `refused`: with prune, each deletion the plan will not make, as an error naming the entity,
    the cluster and what it would take with it; the caller fails on any before running a command.

    Work at risk: `prune` deletes associations and QOS, and a job's association or QOS going away loses
    the job's charge (pending jobs can no longer run). Prune is off unless the policy or the caller sets
    it; it deletes only this cluster's associations without a partition (`cluster=` and `partition=''`
    on every association command), never a per-partition association, never an account that has one
    under it, and never a QOS that any association of any cluster still lists after this plan; each of
    those is refused in `refused`, naming the QOS and the cluster, accounts and users that use it.
    """
    policy = policy or {}
    prune = bool(policy.get("prune", False)) if prune is None else bool(prune)
    cluster = cluster.lower()
    qos = {name: spec or {} for name, spec in (policy.get("qos") or {}).items()}
    accounts = {name: spec or {} for name, spec in (policy.get("accounts") or {}).items()}
    users = {name: spec or {} for name, spec in (policy.get("users") or {}).items()}
    actions = []

    # QOS: add the missing ones first (preempt lists may name each other), then set attributes.
    for name in sorted(qos):
        if name not in state["qos"]:
            actions.append(_action("qos", name, ["add", "qos", name], "add"))
    for name, spec in sorted(qos.items()):
        changes = _changes(spec, state["qos"].get(name), QOS_ATTRS)
        if changes:
            actions.append(_action("qos", name, ["modify", "qos", "where", f"name={name}", "set", *_sets(changes)],
                                   "modify", changes))

    for name in _account_order(accounts):
        spec = accounts[name]
        parent = spec.get("parent", "root")
        assoc = state["account_assocs"].get(name)
        if assoc is None:
            argv = ["add", "account", name, f"cluster={cluster}", f"parent={parent}"]
            actions.append(_action("account", name, argv, "add", {"parent": ("parent", parent, "", parent)}))
        elif assoc["ParentName"].lower() != parent:
            changes = {"parent": ("parent", parent, assoc["ParentName"], parent)}
            argv = ["modify", "account", "where", f"name={name}", f"cluster={cluster}", "set", f"parent={parent}"]
            actions.append(_action("account", name, argv, "modify", changes))
        text = _changes(spec, state["accounts"].get(name) if assoc is not None else None, ACCOUNT_TEXT_ATTRS)
        if text:
            argv = ["modify", "account", "where", f"name={name}", "set", *_sets(text)]
            actions.append(_action("account", name, argv, "modify", text))
        limits = _changes(spec, assoc, ASSOC_ATTRS)
        if limits:
            argv = ["modify", "account", "where", f"name={name}", f"cluster={cluster}", "set", *_sets(limits)]
            actions.append(_action("account", name, argv, "modify", limits))

    for name, spec in sorted(users.items()):
        default = spec["default_account"]
        member = sorted(spec["accounts"], key=lambda account: (account != default, account))
        for account in member:
            assoc = state["user_assocs"].get((name, account))
            if assoc is None:
                argv = ["add", "user", name, f"account={account}", f"cluster={cluster}"]
                if name not in state["users"] and account == default:
                    argv.append(f"defaultaccount={default}")
                actions.append(_action("user", f"{name}@{account}", argv, "add"))
            limits = _changes(spec, assoc, ASSOC_ATTRS)
            if limits:
                argv = ["modify", "user", "where", f"name={name}", f"account={account}", f"cluster={cluster}",
                        NO_PARTITION, "set", *_sets(limits)]
                actions.append(_action("user", f"{name}@{account}", argv, "modify", limits))
        current_default = (state["users"].get(name) or {}).get("DefaultAccount", "").lower()
        if name in state["users"] and current_default != default:
            changes = {"default_account": ("DefaultAccount", default, current_default, default)}
            argv = ["modify", "user", "where", f"name={name}", f"cluster={cluster}", "set", f"defaultaccount={default}"]
            actions.append(_action("user", name, argv, "modify", changes))

    unmanaged = {
        "qos": sorted(set(state["qos"]) - set(qos) - BUILTIN["qos"]),
        "accounts": sorted(set(state["account_assocs"]) - set(accounts) - BUILTIN["account"]),
        "users": sorted({user for user, _ in state["user_assocs"]} - set(users) - BUILTIN["user"]),
        "user_associations": sorted(
            f"{user}@{account}" for user, account in state["user_assocs"]
            if user in users and account not in users[user]["accounts"]),
        "partition_associations": sorted(
            f"{row['User'] or '-'}@{row['Account']}@{row['Partition']}" for row in state["partition_assocs"]),
    }
    refused = []
    if prune:
        deleted = set()  # (account, user) of this cluster's associations without a partition that go
        for entry in unmanaged["user_associations"]:
            user, account = entry.split("@")
            argv = ["delete", "user", "where", f"name={user}", f"account={account}", f"cluster={cluster}",
                    NO_PARTITION]
            actions.append(_action("user", entry, argv, "delete"))
            deleted.add((account, user))
        for user in unmanaged["users"]:
            argv = ["delete", "user", "where", f"name={user}", f"cluster={cluster}", NO_PARTITION]
            actions.append(_action("user", user, argv, "delete"))
            deleted.update((account, name) for name, account in state["user_assocs"] if name == user)
        for account in _children_first(unmanaged["accounts"], state["account_assocs"]):
            below = _subtree(account, state["account_assocs"])
            kept = [row for row in state["partition_assocs"] if row["Account"].lower() in below]
            if kept:
                refused.append(
                    f"{VAR}: prune refuses to delete account {account} on cluster {cluster}: deleting an account "
                    f"deletes every association under it, and per-partition associations the policy does not "
                    f"manage are there ({', '.join(_assoc_name(row) for row in kept)}); delete them by hand "
                    f"first, or name the account in the policy")
                continue
            argv = ["delete", "account", "where", f"name={account}", f"cluster={cluster}"]
            actions.append(_action("account", account, argv, "delete"))
            deleted.update((name, "") for name in below)
            deleted.update((acct, user) for user, acct in state["user_assocs"] if acct in below)
        users_of = _qos_users(state["assocs"], cluster, deleted, accounts, users)
        for name in unmanaged["qos"]:
            if users_of.get(name):
                refused.append(
                    f"{VAR}: prune refuses to delete QOS {name}, which associations still list (a QOS belongs "
                    f"to the whole database: deleting it strips it from every cluster's associations): "
                    f"{'; '.join(users_of[name])}. Name it under qos, or move those associations off it "
                    f"first (an association that inherits its account's QOS shows it until that change is "
                    f"applied: apply once with prune false, then prune)")
                continue
            actions.append(_action("qos", name, ["delete", "qos", "where", f"name={name}"], "delete"))
    return {"actions": actions, "unmanaged": unmanaged, "prune": prune, "refused": refused}


def _assoc_name(row):
    """An association as the errors name it: `account ml`, `user alice@ml`, `user bob@research@gpu`."""
    if not row["User"]:
        return f"account {row['Account'].lower()}"
    partition = f"@{row['Partition'].lower()}" if row["Partition"] else ""
    return f"user {row['User'].lower()}@{row['Account'].lower()}{partition}"


def _subtree(account, assocs):
    """`account` and every account below it in this cluster's tree."""
    below, grew = {account}, True
    while grew:
        more = {name for name, row in assocs.items() if row["ParentName"].lower() in below} - below
        below |= more
        grew = bool(more)
    return below


def _qos_users(assocs, cluster, deleted, accounts, users):
    """QOS name -> ["cluster <c>: <association>, ...", ...] for each association that lists it after the plan.

    Every cluster's associations count. This cluster's ones the plan deletes do not; for the ones whose
    QOS or DefaultQOS the plan sets, the policy's value counts, for the others what the database shows
    (a user's association shows the QOS it inherits from its account).
    """
    found = {}
    for row in assocs:
        where, account, user = row["Cluster"].lower(), row["Account"].lower(), row["User"].lower()
        qos, default = normalize("list", row["QOS"]), normalize("word", row["DefaultQOS"])
        if where == cluster and not row["Partition"]:
            if (account, user) in deleted:
                continue
            spec = (accounts.get(account) if not user
                    else users[user] if user in users and account in users[user]["accounts"] else None)
            if spec is not None:
                qos = normalize("list", spec["qos"]) if "qos" in spec else qos
                default = normalize("word", spec["default_qos"]) if "default_qos" in spec else default
        for name in {*qos, default} - {""}:
            found.setdefault(name, {}).setdefault(where, []).append(_assoc_name(row))
    return {name: [f"cluster {where}: {', '.join(rows)}" for where, rows in sorted(by_cluster.items())]
            for name, by_cluster in found.items()}


def _children_first(names, assocs):
    def depth(name):
        steps, current = 0, name
        while current in assocs and steps < 64:
            current = assocs[current]["ParentName"].lower()
            steps += 1
        return steps

    return sorted(names, key=lambda name: (-depth(name), name))
