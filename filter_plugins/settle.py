"""Settle filters: the run's inputs digest, what a host's roles manage, and which hosts may skip their roles.

See module_utils/settle.py and docs/performance.md ("Settled hosts").
"""

import os
import pathlib

import ansible.module_utils
from ansible.errors import AnsibleError
from jinja2.exceptions import TemplateError

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils.filter_errors import filter_map
from ansible.module_utils.gate_hold import slurm_gate_pending
from ansible.module_utils.settle import digest, spec_from_results, stable_facts

# What the code digest reads, relative to the repository root: everything a run executes.
CODE_DIRS = ("roles", "playbooks", "library", "module_utils", "filter_plugins", "callback_plugins")
CODE_FILES = ("ansible.cfg",)
# Variables of hostvars[host] that are not the host's inputs: connection and run settings (ansible_*),
# the test harness's own (molecule adds molecule_* to the runs it starts, and a run started by hand lacks
# them), the inventory's location, and the run's magic variables. `groups` is digested once, whole.
SKIP_PREFIXES = ("ansible_", "molecule_")
SKIP_VARS = frozenset({"groups", "inventory_dir", "inventory_file", "inventory_hostname", "inventory_hostname_short",
                       "omit", "playbook_dir", "role_names", "play_hosts"})


def code_digest(root):
    """SHA-256 over the path and bytes of every file a run executes (compiled Python left out)."""
    base = pathlib.Path(root)
    files = []
    for name in CODE_DIRS:
        top = base / name
        if top.is_dir():
            files.extend(path for path in top.rglob("*")
                         if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc")
    files.extend(base / name for name in CODE_FILES if (base / name).is_file())
    return digest({str(path.relative_to(base)): digest(path.read_bytes().decode("latin-1"))
                   for path in sorted(files)})


def _host_inputs(hostvars, host):
    """A host's variables, templated; a variable that does not template is digested as its raw text."""
    host_vars = hostvars[host]
    raw = None
    values = {}
    for key in sorted(host_vars.keys()):
        if key in SKIP_VARS or key.startswith(SKIP_PREFIXES):
            continue
        # Digested inside the try: Ansible 2.19 raises for an undefined value (a group variable that reads
        # hostvars, which a host's own variables do not hold) as a jinja2 UndefinedError (MarkerError), or
        # hands back a value that raises only when it is read. Such a variable is digested as its text.
        try:
            values[key] = digest(host_vars[key])
        except (AnsibleError, TemplateError):
            if raw is None:
                raw = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else {}
            values[key] = ["untemplated", str(raw.get(key))]
    return values


def settle_inputs(groups, hostvars, root):
    """Digest of the run's code and every inventory host's variables, taken before the run sets any fact.

    ``groups``: the run's ``groups`` (every host of group ``all``, and the membership itself);
    ``root``: the repository root (the code digest).
    """
    hosts = sorted(groups.get("all", []))
    return digest({
        "code": code_digest(root),
        "groups": {name: sorted(members) for name, members in groups.items()},
        "hosts": {host: _host_inputs(hostvars, host) for host in hosts},
    })


def settle_digest(inputs, hostvars, hosts, gpus_var):
    """The run's digest: ``inputs`` (settle_inputs), every host's stable facts and discovered GPUs.

    A host without facts (unreachable, or outside --limit) counts as unknown, so a run that reaches other
    hosts than the last one has another digest.
    """
    facts, gpus = {}, {}
    for host in sorted(hosts):
        host_vars = hostvars[host]
        facts[host] = stable_facts(host_vars.get("ansible_facts"))
        gpus[host] = host_vars.get(gpus_var)
    return digest({"inputs": inputs, "facts": facts, "gpus": gpus})


def settle_spec(host_vars):
    """What the host's roles managed in this run: ``{packages, units, paths, users}`` from its registered
    results (the roles' internal ``__``-prefixed variables; see module_utils/settle.py)."""
    results = {}
    for key in list(host_vars):
        if key.startswith("__"):
            try:
                results[key] = host_vars[key]
            except (AnsibleError, TemplateError):  # a role's internal template, not a registered result
                continue
    return spec_from_results(results)


def settle_choose(checks, views, slurm_nodes, coupled):
    """``{settled: [hosts], full: {host: reason}, lines: ["host: reason"]}`` from the hosts' receipt checks.

    ``checks``: ``{host: settle_receipt result}`` of the play's hosts; ``views``: Slurm's view of
    ``slurm_nodes`` (slurm_node_info's ``nodes``; ``None`` where it could not be read); ``coupled``: the
    hosts whose roles read or write what every host shares (controllers, slurmdbd, munge's key source). A
    host settles only where its receipt holds and, for one of ``slurm_nodes``, Slurm's view was read and
    does not hold it for its gate (slurm_compute hands such a node to the gate, in a full run only). Where a
    coupled host does not settle, no host does; where any host does not settle, the coupled hosts do not
    either.
    """
    full = {}
    for host in sorted(checks):
        check = checks[host] or {}
        if not check.get("settled"):
            full[host] = "; ".join(check.get("reasons") or ["no receipt check"])
        elif host in slurm_nodes and views is None:
            full[host] = "Slurm's view could not be read"
        elif host in slurm_nodes and slurm_gate_pending([host], views):
            full[host] = f"Slurm holds it for its gate ({views[host].get('reason')})"
    coupled = sorted(set(coupled) & set(checks))
    blocking = [host for host in coupled if host in full]
    if blocking:
        for host in checks:
            full.setdefault(host, f"coupled host {blocking[0]} runs in full")
    elif full:
        first = sorted(full)[0]
        for host in coupled:
            full.setdefault(host, f"{first} runs in full")
    full = dict(sorted(full.items()))
    return {"settled": sorted(set(checks) - set(full)), "full": full,
            "lines": [f"{host}: {reason}" for host, reason in full.items()]}


class FilterModule:
    def filters(self):
        return filter_map({
            "settle_inputs": settle_inputs,
            "settle_digest": settle_digest,
            "settle_spec": settle_spec,
            "settle_choose": settle_choose,
        }, (OSError, TypeError, ValueError))
