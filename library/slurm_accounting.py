#!/usr/bin/python
"""Bring Slurm's accounting database (QOS, accounts, users) to a policy given as data."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_accounting
short_description: Apply QOS, accounts and users to Slurm's accounting database, per entity
description:
  - Reads the QOS, accounts, users and this cluster's associations with C(sacctmgr show), compares them
    entity by entity with O(policy) and runs the C(sacctmgr) commands that differ, in order (QOS; accounts,
    parents first; users). A second run with the same policy changes nothing.
  - Only the attributes the policy sets are managed. Entities the policy does not name are returned in
    RV(unmanaged) and removed only when O(prune) (or the policy's C(prune)) is true.
  - Prune removes only this cluster's associations without a partition (every association command carries
    C(cluster=), a user's also C(partition='')). It fails before any change, returning RV(refused), when it
    would delete an account that has per-partition associations under it, or a QOS that an association of
    any cluster of the database still lists (the error names the QOS and the clusters, accounts and users).
  - A user's default account is read and set for O(cluster) only.
  - Why not C(sacctmgr load) - a flat file carries no QOS, C(load) never removes anything and
    C(load clean) deletes every association first (sacctmgr(1), FLAT FILE DUMP AND LOAD).
  - Supports check mode (the planned commands are returned, none runs) and diff mode.
  - Must run where C(sacctmgr) reaches slurmdbd as root or a Slurm administrator, after slurmctld has
    registered its TRES (a limit on C(gres/gpu) needs it); a TRES slurmdbd does not know fails the task
    before any change, returning RV(unknown_tres).
options:
  policy:
    description:
      - The accounting policy, C(cluster_slurm_accounting) (docs/slurm-policy.md) - maps C(qos),
        C(accounts) and C(users), and C(prune).
    type: dict
    required: true
  cluster:
    description: The cluster whose associations are managed (ClusterName, lower case in the database).
    type: str
    required: true
  prune:
    description: Remove entities the policy does not name. Unset - the policy's own C(prune) key (default false).
    type: bool
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Apply the accounting policy
  slurm_accounting:
    cluster: gpulab
    policy:
      qos:
        high: {priority: 100, grp_tres: {gres/gpu: 8}, preempt: [low]}
        low: {priority: 0}
      accounts:
        research: {fairshare: 60, qos: [normal, high, low], default_qos: normal}
      users:
        alice: {accounts: [research], default_account: research}
"""

RETURN = r"""
actions:
  description: The sacctmgr commands run (or, in check mode, planned), in order.
  type: list
  elements: dict
  returned: always
  contains:
    entity:
      description: qos, account or user.
      type: str
    name:
      description: The entity (user@account for a user's association).
      type: str
    what:
      description: add, modify or delete.
      type: str
    argv:
      description: The command.
      type: list
      elements: str
    changes:
      description: Per attribute, before and after.
      type: dict
unknown_tres:
  description: On failure only, the TRES the policy names that slurmdbd does not know yet.
  type: list
  elements: str
  returned: failure
unmanaged:
  description: Entities in the database the policy does not name (qos, accounts, users, user_associations,
    partition_associations); with prune, the first four are removed, unless refused.
  type: dict
  returned: always
refused:
  description: On failure only, each deletion prune refuses, naming the entity, the cluster and what uses it.
  type: list
  elements: str
  returned: failure
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.slurm_accounting import (
    SHOW_FORMATS,
    AccountingError,
    plan,
    read_state,
    unknown_tres,
    validate,
)

SHOW = {
    "qos": ["show", "qos"],
    "account": ["show", "account"],
    "user": ["show", "user"],
    "assoc": ["show", "association"],
}


def _sacctmgr(module, argv):
    rc, out, err = module.run_command(["sacctmgr", "--noheader", "--parsable2", *argv])
    if rc != 0:
        module.fail_json(msg=f"sacctmgr {' '.join(argv)} failed (rc {rc}): {(err or out).strip()}")
    return out


def _read(module, cluster):
    outputs = {}
    for kind, argv in SHOW.items():
        # A user's DefaultAccount is per cluster; every cluster's associations are read, for the QOS they use.
        extra = [f"cluster={cluster}"] if kind == "user" else []
        outputs[kind] = _sacctmgr(module, [*argv, *extra, f"format={','.join(SHOW_FORMATS[kind])}"])
    try:
        return read_state(outputs, cluster)
    except AccountingError as err:
        module.fail_json(msg=f"sacctmgr printed what this module does not understand: {err}")


def _diff(result):
    lines = []
    for action in result["actions"]:
        head = f"{action['what']} {action['entity']} {action['name']}"
        details = ", ".join(f"{key}: {val['before']!r} -> {val['after']!r}" for key, val in action["changes"].items())
        lines.append(f"{head}{': ' + details if details else ''}")
    return {"before_header": "sacctmgr", "after_header": "policy", "before": "", "after": "\n".join(lines) + "\n"}


def main():
    module = AnsibleModule(
        argument_spec={
            "policy": {"type": "dict", "required": True},
            "cluster": {"type": "str", "required": True},
            "prune": {"type": "bool"},
        },
        supports_check_mode=True,
    )
    policy, cluster = module.params["policy"], module.params["cluster"].lower()
    errors = validate(policy)
    if errors:
        module.fail_json(msg="; ".join(errors), errors=errors)
    missing = unknown_tres(policy, _sacctmgr(module, ["show", "tres", "format=Type,Name"]))
    if missing:
        module.fail_json(
            msg=f"slurmdbd knows no TRES {', '.join(missing)}, which the policy's limits name: slurmctld registers "
                "TRES from AccountingStorageTRES when it connects to slurmdbd (is it running, and does "
                "AccountingStorageTRES list them?). Nothing was changed.",
            unknown_tres=missing)
    result = plan(policy, _read(module, cluster), cluster, module.params["prune"])
    if result["refused"]:
        module.fail_json(msg="; ".join(result["refused"]) + ". Nothing was changed.", refused=result["refused"],
                         actions=result["actions"], unmanaged=result["unmanaged"])
    if not module.check_mode:
        for action in result["actions"]:
            rc, out, err = module.run_command(action["argv"])
            if rc != 0:
                module.fail_json(msg=f"{' '.join(action['argv'])} failed (rc {rc}): {(err or out).strip()}",
                                 done=result["actions"][: result["actions"].index(action)])
    output = {"changed": bool(result["actions"]), "actions": result["actions"], "unmanaged": result["unmanaged"]}
    if module._diff and result["actions"]:
        output["diff"] = _diff(result)
    module.exit_json(**output)


if __name__ == "__main__":
    main()
