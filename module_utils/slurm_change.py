# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that decides ``scontrol reconfigure`` versus a daemon restart.

Handlers in the Slurm roles classify the old and new text of the Slurm configuration files
(slurm.conf, gres.conf, cgroup.conf, topology.conf) for the installed Slurm version and act
on the result:

* ``action``   ``none`` (nothing Slurm reads has changed: comments, blank lines, key order),
  ``reconfigure`` (``scontrol reconfigure`` is enough) or ``restart``;
* ``daemons``  what to restart (empty unless ``restart``), slurmctld first;
* ``order``    for a restart: ``restart`` (restart the listed daemons) or
  ``stop_all_then_start`` (AuthType: stop every Slurm daemon on every host first, then start
  them); ``None`` otherwise;
* ``reasons``  one line per change, each naming the rule it follows;
* ``needs_no_jobs``  one line per change that must not be applied while slurmctld holds jobs
  (SwitchType: their records may be lost), each naming its rule; the role refuses such a change
  before any host writes it while ``squeue`` lists a job.

A change Slurm cannot take by any restart (ClusterName, moving the primary controller)
raises :class:`SlurmConfError` naming the key, before a handler runs.

Every rule quotes its source: the man page and the Slurm release it was read from
(slurm.conf(5), scontrol(1), gres.conf(5), cgroup.conf(5), topology.conf(5) at the tags
slurm-22-05-8-1, slurm-23-11-11-1 and slurm-24-11-5-1), or, where the man page is silent, the
Slurm source file that shows the behaviour. docs/slurm-changes.md has the table.
"""

import re
import shlex
from collections import namedtuple

from ansible.module_utils.hostlist import HostlistError, hostlist_expand, hostlist_fold

NONE = "none"
RECONFIGURE = "reconfigure"
RESTART = "restart"
_RANK = {NONE: 0, RECONFIGURE: 1, RESTART: 2}

ORDER_RESTART = "restart"
ORDER_STOP_ALL = "stop_all_then_start"

CTLD = "slurmctld"
SLURMD = "slurmd"
BOTH = (CTLD, SLURMD)

# scontrol(1) 23.11.11 and 24.11 "reconfigure": "Starting in 23.11, this command operates by
# creating new processes for the daemons, then passing control to the new processes when or if
# they start up successfully. ... This will not be able to change the daemons' listening TCP
# port settings or authentication mechanism." From here on a reconfigure does what a restart
# did, with a fallback to the old configuration on error. (NEWS 23.11.0: "Rework 'scontrol
# reconfigure'"; the 23.11.0 man pages still carried the 23.02 restart notes.)
REEXEC_SINCE = (23, 11)
RECONFIGURE_RESTARTS_DAEMONS = REEXEC_SINCE  # old name, kept for callers
# topology.conf(5) 23.11: topology/block with "BlockLevels"; RELEASE_NOTES 24.05:
# "topology/block - Replaced the BlockLevels with BlockSizes in topology.conf."
TOPOLOGY_BLOCK_SINCE = (24, 5)

Rule = namedtuple("Rule", "daemons source order")


def _rule(daemons, source, order=ORDER_RESTART):
    return Rule(tuple(daemons), source, order)


_SC22 = "slurm.conf(5) 22.05"
_NEED_CTLD = 'says "A restart of slurmctld is required for changes to this parameter to take effect."'

# slurm.conf keys that need a restart on Slurm < 23.11 (22.05 and 23.02, whose pages agree).
# slurm.conf(5) 22.05 DESCRIPTION: "Changes to the configuration file take effect upon restart
# of Slurm daemons, daemon receipt of the SIGHUP signal, or execution of the command "scontrol
# reconfigure" unless otherwise noted." Each entry is a noted exception, or (marked "source")
# a plugin the 22.05 daemons load once: its init function returns early when the plugin is
# already loaded, so a reconfigure keeps the old plugin.
LEGACY_RESTART_KEYS = {
    "accountingstorageenforce": _rule((CTLD,), f"{_SC22} AccountingStorageEnforce {_NEED_CTLD}"),
    # "All Slurm daemons and commands must be terminated prior to changing the value of
    # AuthType and later restarted."
    "authtype": _rule(
        BOTH, f"{_SC22} AuthType: all daemons terminated before the change, then restarted", ORDER_STOP_ALL
    ),
    "corespecplugin": _rule((SLURMD,), f'{_SC22} CoreSpecPlugin: "A restart of the slurmd daemons is required"'),
    "credtype": _rule((CTLD,), f"{_SC22} CredType {_NEED_CTLD}"),
    "grestypes": _rule(BOTH, f'{_SC22} GresTypes: "A restart of slurmctld and the slurmd daemons is required"'),
    "jobcontainertype": _rule((CTLD,), f"{_SC22} JobContainerType {_NEED_CTLD}"),
    "maxjobcount": _rule((CTLD,), f"{_SC22} MaxJobCount {_NEED_CTLD}"),
    "maxnodecount": _rule((CTLD,), f'{_SC22} MaxNodeCount: "The slurmctld daemon must be restarted"'),
    "plugindir": _rule(BOTH, f'{_SC22} PluginDir: "A restart of slurmctld and the slurmd daemons is required"'),
    "powerplugin": _rule((CTLD,), f"{_SC22} PowerPlugin {_NEED_CTLD}"),
    "proctracktype": _rule((CTLD,), f"{_SC22} ProctrackType {_NEED_CTLD}"),
    "schedulertype": _rule((CTLD,), f"{_SC22} SchedulerType {_NEED_CTLD}"),
    "selecttype": _rule(BOTH, f'{_SC22} SelectType: "A restart of slurmctld and slurmd is required"'),
    "selecttypeparameters": _rule((CTLD,), f"{_SC22} SelectTypeParameters {_NEED_CTLD}"),
    # The sentence sits under enable_configless but speaks of "this parameter"; many
    # SlurmctldParameters options are read once at start, so any change restarts.
    "slurmctldparameters": _rule((CTLD,), f"{_SC22} SlurmctldParameters {_NEED_CTLD}"),
    "slurmctldport": _rule((CTLD,), f"{_SC22} SlurmctldPort {_NEED_CTLD}"),
    # The page names slurmctld; slurmd listens on this port and its reconfigure does not
    # reopen the socket (source: src/slurmd/slurmd/slurmd.c 22.05, _reconfigure).
    "slurmdport": _rule(BOTH, f"{_SC22} SlurmdPort {_NEED_CTLD}; slurmd keeps its socket (source slurmd.c)"),
    "statesavelocation": _rule((CTLD,), f'{_SC22} StateSaveLocation: "A restart of slurmctld is required"'),
    # No note on the page; its address-family and bind options shape the listening sockets,
    # which the 22.05 daemons open once (source: src/slurmd/slurmd/slurmd.c, _reconfigure).
    "communicationparameters": _rule(BOTH, "source src/slurmd/slurmd/slurmd.c 22.05: listening sockets kept"),
    # "All Slurm daemons, commands and running jobs must be restarted for a change in
    # SwitchType to take effect."
    "switchtype": _rule(BOTH, f"{_SC22} SwitchType: all daemons, commands and running jobs must be restarted"),
    # Plugins the 22.05 man page is silent about, loaded once (source, tag slurm-22-05-8-1).
    "accountingstoragetype": _rule((CTLD,), "source src/common/slurm_accounting_storage.c 22.05: plugin loaded once"),
    "authalttypes": _rule(BOTH, "source src/common/slurm_auth.c 22.05: auth plugins loaded once"),
    "authinfo": _rule(BOTH, "source src/common/slurm_auth.c 22.05: auth plugins loaded once"),
    "burstbuffertype": _rule(
        (CTLD,), "source src/slurmctld/read_config.c 22.05: reconfigure keeps the old BurstBufferType"
    ),
    "jobacctgathertype": _rule(BOTH, "source src/common/slurm_jobacct_gather.c 22.05: plugin loaded once"),
    "prioritytype": _rule((CTLD,), "source src/common/slurm_priority.c 22.05: plugin loaded once"),
    "taskplugin": _rule((SLURMD,), "source src/slurmd/common/task_plugin.c 22.05: plugin loaded once"),
    "topologyplugin": _rule(BOTH, "source src/common/slurm_topology.c 22.05: plugin loaded once"),
}
# CryptoType is the old spelling of CredType that Slurm still reads (NEWS: "Change CryptoType
# option to CredType"; src/common/read_config.c reads CryptoType when CredType is unset).
LEGACY_RESTART_KEYS["cryptotype"] = LEGACY_RESTART_KEYS["credtype"]

_SC24 = "slurm.conf(5) 24.11"
_TCP = f'{_SC24} DESCRIPTION: "Changes to TCP listening settings will require a daemon restart."'
_AUTH = 'scontrol(1) 24.11 reconfigure: "This will not be able to change the daemons\' ... authentication mechanism."'

# slurm.conf keys that still need a restart on Slurm >= 23.11. Everything else, node
# changes and SlurmctldHost included, is a reconfigure.
REEXEC_RESTART_KEYS = {
    "slurmctldport": _rule(BOTH, _TCP),
    "slurmdport": _rule(BOTH, _TCP),
    "communicationparameters": _rule(BOTH, _TCP + " (address family and bind options)"),
    "authtype": _rule(
        BOTH,
        f'{_SC24} AuthType: "All Slurm daemons and commands must be terminated prior to changing '
        f'the value of AuthType and later restarted."',
        ORDER_STOP_ALL,
    ),
    "authalttypes": _rule(BOTH, _AUTH),
    "authinfo": _rule(BOTH, _AUTH),
}

# Changes that may cost the jobs slurmctld holds, on every version: applied only with no job in the
# cluster. slurm.conf(5) 22.05 and 24.11 SwitchType (the same sentence on both pages): "If running
# jobs exist at the time slurmctld is restarted with a new value of SwitchType, records of all jobs
# in any state may be lost." From 23.11 the reconfigure starts a new slurmctld, which is that restart.
NO_JOBS_KEYS = {
    "switchtype": '{page} SwitchType: "If running jobs exist at the time slurmctld is restarted with a new '
    'value of SwitchType, records of all jobs in any state may be lost."',
}

# Reconfigure on >= 23.11, with what the 24.11 page adds.
REEXEC_NOTES = {
    "switchtype": f"scontrol(1) 24.11: new processes read the file; {_SC24} SwitchType: "
    f'"All Slurm daemons, commands and running jobs must be restarted or reconfigured"; '
    f"running jobs keep the old SwitchType",
}

# NodeName parameters that describe the node's hardware or how slurmd registers. slurm.conf(5)
# 22.05 NODE CONFIGURATION: "Changes in node configuration (e.g. adding nodes, changing their
# processor count, etc.) require restarting both the slurmctld daemon and the slurmd daemons."
# 24.11: "... require restarting or reconfiguring all slurmctld and slurmd daemons."
NODE_RESTART_KEYS = frozenset(
    k.lower()
    for k in (
        "Boards",
        "CoreSpecCount",
        "CoresPerSocket",
        "CPUs",
        "CpuSpecList",
        "Gres",
        "MemSpecLimit",
        "NodeAddr",
        "NodeHostname",
        "Procs",
        "RealMemory",
        "Sockets",
        "SocketsPerBoard",
        "ThreadsPerCore",
        "TmpDisk",
    )
)
# NodeName Port: "The port number that the Slurm compute node daemon, slurmd, listens to for
# work on this particular node" (slurm.conf(5)); a TCP listening setting on every version.
NODE_ALWAYS_RESTART_KEYS = frozenset({"port"})

# Keys that have aliases Slurm reads under another name.
_ALIASES = {"cryptotype": "credtype"}

# cgroup.conf(5) 22.05/24.11 DESCRIPTION: "Changes to the configuration file take effect upon
# restart of Slurm daemons, daemon receipt of the SIGHUP signal, or execution of the command
# "scontrol reconfigure" unless otherwise noted" (no exception is noted). On 22.05 slurmd
# re-reads cgroup.conf on reconfigure (source src/slurmd/slurmd/slurmd.c, cgroup_conf_reinit)
# but the cgroup plugin and its mount are set up once (source src/common/cgroup.c 22.05).
LEGACY_CGROUP_RESTART_KEYS = {
    key.lower(): _rule((SLURMD,), "source src/common/cgroup.c 22.05: cgroup plugin set up once at slurmd start")
    for key in ("CgroupPlugin", "CgroupMountpoint", "CgroupAutomount")
}
# RELEASE_NOTES 23.11: "Remove CgroupAutomount= option from cgroup.conf." 24.11 slurmd logs an
# error for it; templates must not render it on >= 23.11 (see defunct_settings).
CGROUP_AUTOMOUNT_REMOVED = (23, 11)

# Lines that define one named object each; the first key names the object type.
_ENTITY_KEYS = {
    "nodename": "nodes",
    "partitionname": "partitions",
    "nodeset": "nodesets",
    "downnodes": "downnodes",
    "frontendname": "frontends",
}
# Keys Slurm allows more than once at the global level.
_REPEATABLE = {"slurmctldhost"}

_INCLUDE = re.compile(r"^include\s+(.+)$", re.IGNORECASE)
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class SlurmConfError(ValueError):
    """A Slurm configuration that cannot be parsed or applied, or an invalid version string."""


def version_tuple(version):
    """``"22.05.8"`` -> ``(22, 5, 8)``; accepts ``"slurm 23.11.4-1ubuntu"`` and ``"24.11"``."""
    if isinstance(version, (tuple, list)):
        return tuple(int(v) for v in version) + (0,) * (3 - len(version))
    m = _VERSION.search(str(version or ""))
    if m is None:
        raise SlurmConfError(f"cannot read a Slurm version from {version!r} (expected e.g. 23.11.4)")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def topology_plugin(version, prefer="tree"):
    """The TopologyPlugin value for this Slurm version.

    ``topology/tree`` everywhere; ``topology/block`` only when asked for and Slurm >= 24.05:
    topology.conf(5) 24.05 and 24.11 define ``BlockSizes``; 23.11 had only ``BlockLevels``
    (RELEASE_NOTES 24.05 "Replaced the BlockLevels with BlockSizes in topology.conf").
    """
    if prefer not in ("tree", "block"):
        raise SlurmConfError(f"topology plugin must be 'tree' or 'block', not {prefer!r}")
    if prefer == "block":
        if version_tuple(version) < TOPOLOGY_BLOCK_SINCE:
            raise SlurmConfError(
                f"topology/block with BlockSizes needs Slurm >= 24.05 (23.11 had BlockLevels); "
                f"the installed Slurm is {version}"
            )
        return "topology/block"
    return "topology/tree"


def _logical_lines(text):
    """Yield (line number, text) with comments removed and ``\\`` continuations joined."""
    pending = ""
    start = None
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if start is None:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        if pending.strip():
            yield start, pending.strip()
        pending = ""
        start = None
    if pending.strip():
        yield start, pending.strip()


def _pairs(number, line, label="slurm.conf"):
    if '"' not in line and "'" not in line:
        return _split_pairs(number, line, line.split(), label)  # shlex is ~20x slower; only quotes need it
    try:
        tokens = shlex.split(line, posix=True)
    except ValueError as exc:
        raise SlurmConfError(f"{label} line {number}: {exc}: {line!r}") from exc
    return _split_pairs(number, line, tokens, label)


def _split_pairs(number, line, tokens, label="slurm.conf"):
    pairs = []
    for token in tokens:
        if "=" not in token:
            raise SlurmConfError(f"{label} line {number}: {token!r} is not key=value: {line!r}")
        key, value = token.split("=", 1)
        pairs.append((key, value))
    return pairs


def _names(value, number, label="slurm.conf"):
    if value.upper() == "DEFAULT":
        return ["DEFAULT"]
    if not any(c in value for c in "[],"):
        return [value]  # one plain name: skip the NodeSet parser (10,000 NodeName lines)
    try:
        return hostlist_expand(value)
    except HostlistError as exc:
        raise SlurmConfError(f"{label} line {number}: {exc}") from exc


def parse_slurm_conf(text):
    """Parse slurm.conf text into a comparable structure.

    Returns ``{"globals": {key: value}, "nodes": {node: {key: value}},
    "partitions": {name: {key: value}}, "nodesets": {...}, "downnodes": {...},
    "frontends": {...}, "includes": [path, ...]}``. Keys keep their spelling from the
    file; compare them with :func:`_ci`. ``NodeName=gpu[01-04]`` is expanded per node and
    ``NodeName=DEFAULT`` / ``PartitionName=DEFAULT`` values are applied to the lines
    after them, as Slurm does. Repeatable keys (SlurmctldHost) become lists.
    """
    conf = {"globals": {}, "includes": []}
    for kind in _ENTITY_KEYS.values():
        conf[kind] = {}
    defaults = {}
    for number, line in _logical_lines(text):
        include = _INCLUDE.match(line)
        if include:
            # slurm.conf(5): a line "Include <file>" includes that file inline.
            conf["includes"].append(include.group(1).strip())
            continue
        pairs = _pairs(number, line)
        if not pairs:
            continue
        first_key, first_value = pairs[0]
        kind = _ENTITY_KEYS.get(first_key.lower())
        if kind is None:
            for key, value in pairs:
                if key.lower() in _REPEATABLE:
                    existing = _ci_get(conf["globals"], key)
                    merged = ([] if existing is None else existing) + [value]
                    _ci_set(conf["globals"], key, merged)
                else:
                    _ci_set(conf["globals"], key, value)
            continue
        params = dict(pairs[1:])
        names = _names(first_value, number) if kind in ("nodes", "downnodes") else [first_value]
        if names == ["DEFAULT"] or first_value.upper() == "DEFAULT":
            defaults.setdefault(kind, {}).update(params)
            continue
        for name in names:
            entry = conf[kind].setdefault(name, {})
            for key, value in defaults.get(kind, {}).items():
                _ci_set(entry, key, value)
            for key, value in params.items():
                _ci_set(entry, key, value)
    return conf


def _ci_get(mapping, key):
    for k, v in mapping.items():
        if k.lower() == key.lower():
            return v
    return None


def _ci_set(mapping, key, value):
    for k in list(mapping):
        if k.lower() == key.lower():
            del mapping[k]
    mapping[key] = value


def _ci(mapping):
    """Case-insensitive view: lower-case key -> (spelling, value)."""
    return {k.lower(): (k, v) for k, v in mapping.items()}


def _diff(old, new):
    """Changed keys between two mappings: [(lower key, spelling, old, new)]."""
    a, b = _ci(old), _ci(new)
    out = []
    for key in sorted(set(a) | set(b)):
        va = a.get(key, (None, None))[1]
        vb = b.get(key, (None, None))[1]
        if va != vb:
            out.append((key, (b.get(key) or a.get(key))[0], va, vb))
    return out


def _fmt(value):
    if value is None:
        return "unset"
    if isinstance(value, list):
        return ",".join(value)
    return value


def _fold(names):
    return hostlist_fold(sorted(names))


class _Result:
    """Accumulates one classification: the strongest action wins, every reason is kept."""

    def __init__(self):
        self.action = NONE
        self.reasons = []
        self.daemons = set()
        self.order = ORDER_RESTART
        self.needs_no_jobs = []

    def bump(self, action, reason, daemons=(), order=ORDER_RESTART):
        if _RANK[action] > _RANK[self.action]:
            self.action = action
        self.reasons.append(reason)
        if action == RESTART:
            self.daemons.update(daemons)
            if order == ORDER_STOP_ALL:
                self.order = ORDER_STOP_ALL

    def merge(self, other):
        for_restart = other["daemons"] if other["action"] == RESTART else ()
        if _RANK[other["action"]] > _RANK[self.action]:
            self.action = other["action"]
        self.reasons.extend(other["reasons"])
        self.daemons.update(for_restart)
        if other.get("order") == ORDER_STOP_ALL:
            self.order = ORDER_STOP_ALL
        self.needs_no_jobs.extend(other.get("needs_no_jobs", []))

    def finish(self):
        restart = self.action == RESTART
        return {
            "action": self.action,
            "reasons": self.reasons,
            "daemons": [d for d in BOTH if d in self.daemons] if restart else [],
            "order": self.order if restart else None,
            "needs_no_jobs": self.needs_no_jobs,
        }


def _reexec(slurm_version):
    return version_tuple(slurm_version) >= REEXEC_SINCE


def _host_name(entry):
    """``ctl1(10.0.0.1)`` -> ``ctl1``: the host part of a SlurmctldHost value."""
    return entry.split("(", 1)[0].strip()


def _refuse_cluster_name(old, new):
    raise SlurmConfError(
        f"ClusterName changed ({_fmt(old)} -> {_fmt(new)}): refused. slurmctld stops with "
        f'"CLUSTER NAME MISMATCH" when ClusterName differs from the clustername file in '
        f"StateSaveLocation (source src/slurmctld/controller.c, 22.05 and 24.11), so no restart "
        f"applies it. Keep ClusterName, or build a new cluster: stop slurmctld, move "
        f"StateSaveLocation aside, register the new name with sacctmgr, then deploy."
    )


def _slurmctld_host(old, new, reexec, slurm_version, result):
    old_list = old if isinstance(old, list) else ([] if old is None else [old])
    new_list = new if isinstance(new, list) else ([] if new is None else [new])
    change = f"SlurmctldHost changed ({_fmt(old)} -> {_fmt(new)})"
    if old_list and new_list and _host_name(old_list[0]) != _host_name(new_list[0]):
        # slurm.conf(5) 22.05 and 24.11 RELOCATING CONTROLLERS: "1. Stop the Slurm daemons on
        # the old controller and nodes. ... 3. Copy the files from the StateSaveLocation to the
        # new controller ..." A handler cannot do that; refuse before anything changes.
        raise SlurmConfError(
            f"{change}: the primary controller moves from {_host_name(old_list[0])} to "
            f"{_host_name(new_list[0])}; refused. Follow slurm.conf(5) RELOCATING CONTROLLERS "
            f"(stop the daemons, copy StateSaveLocation to the new controller, then deploy)."
        )
    if reexec:
        # slurm.conf(5) 24.11 SlurmctldHost: "Slurm daemons need to be reconfigured (e.g.
        # "scontrol reconfig") for changes to this parameter to take effect."
        result.bump(RECONFIGURE, f"{change}: scontrol reconfigure of every daemon [{_SC24} SlurmctldHost]")
    else:
        result.bump(
            RESTART,
            f"{change}: Slurm {slurm_version} < 23.11 needs slurmctld restarted, then a reconfigure "
            f"[{_SC22} SlurmctldHost {_NEED_CTLD}]",
            (CTLD,),
        )


def _options(value):
    return {o.strip().split("=", 1)[0].lower() for o in str(value or "").split(",") if o.strip()}


def _global_rule(key, reexec):
    table = REEXEC_RESTART_KEYS if reexec else LEGACY_RESTART_KEYS
    return table.get(_ALIASES.get(key, key))


def _classify_globals(old, new, reexec, slurm_version, result):
    olds, news = _ci(old), _ci(new)
    # CryptoType=crypto/munge and CredType=cred/munge are one setting (Slurm swaps the prefix).
    for conf in (olds, news):
        if "cryptotype" in conf and "credtype" not in conf:
            spelling, value = conf.pop("cryptotype")
            conf["credtype"] = (spelling, str(value).replace("crypto/", "cred/"))
        else:
            conf.pop("cryptotype", None)
    for key in sorted(set(olds) | set(news)):
        va = olds.get(key, (None, None))[1]
        vb = news.get(key, (None, None))[1]
        if va == vb:
            continue
        spelling = (news.get(key) or olds.get(key))[0]
        change = f"{spelling} changed ({_fmt(va)} -> {_fmt(vb)})"
        if key in NO_JOBS_KEYS:
            page = _SC24 if reexec else _SC22
            source = NO_JOBS_KEYS[key].format(page=page)
            result.needs_no_jobs.append(f"{change}: only with no job in the cluster [{source}]")
        if key == "clustername":
            _refuse_cluster_name(va, vb)
        if key == "slurmctldhost":
            _slurmctld_host(va, vb, reexec, slurm_version, result)
            continue
        if (
            key == "schedulerparameters"
            and not reexec
            and (("no_backup_scheduling" in _options(va)) != ("no_backup_scheduling" in _options(vb)))
        ):
            result.bump(
                RESTART,
                f"{change}: no_backup_scheduling changed, restart slurmctld [{_SC22} SchedulerParameters "
                f'no_backup_scheduling: "A restart of slurmctld is required"]',
                (CTLD,),
            )
            continue
        rule = _global_rule(key, reexec)
        if rule is not None:
            result.bump(
                RESTART,
                f"{change}: Slurm {slurm_version} needs {' and '.join(rule.daemons)} restarted"
                f"{' (stop every daemon first, then start)' if rule.order == ORDER_STOP_ALL else ''} "
                f"[{rule.source}]",
                rule.daemons,
                rule.order,
            )
        elif reexec:
            note = REEXEC_NOTES.get(key, "scontrol(1) 24.11: new processes read the file")
            result.bump(RECONFIGURE, f"{change}: scontrol reconfigure [{note}]")
        else:
            result.bump(RECONFIGURE, f"{change}: scontrol reconfigure [{_SC22} DESCRIPTION: unless otherwise noted]")


def classify_change(old_text, new_text, slurm_version):
    """Decide what applying ``new_text`` over ``old_text`` (slurm.conf) needs.

    Returns ``{"action": "none"|"reconfigure"|"restart", "reasons": [str, ...],
    "daemons": [...], "order": "restart"|"stop_all_then_start"|None, "needs_no_jobs": [str, ...]}``.
    ``old_text`` may be empty/None (first install): that is a restart of everything. Raises
    :class:`SlurmConfError` for a change no restart applies (ClusterName, a new primary
    SlurmctldHost).
    """
    reexec = _reexec(slurm_version)
    result = _Result()
    if not (old_text or "").strip():
        result.bump(RESTART, "no previous slurm.conf: daemons start with the new file", BOTH)
        return result.finish()

    old = parse_slurm_conf(old_text)
    new = parse_slurm_conf(new_text)
    _classify_globals(old["globals"], new["globals"], reexec, slurm_version, result)

    if old["includes"] != new["includes"]:
        result.bump(RECONFIGURE, "Include lines changed: scontrol reconfigure")

    _classify_nodes(old["nodes"], new["nodes"], reexec, slurm_version, result)

    for kind, label in (
        ("partitions", "PartitionName"),
        ("nodesets", "NodeSet"),
        ("downnodes", "DownNodes"),
        ("frontends", "FrontendName"),
    ):
        changed = sorted(
            name
            for name in set(old[kind]) | set(new[kind])
            if _ci(old[kind].get(name, {})) != _ci(new[kind].get(name, {}))
        )
        if changed:
            # slurm.conf(5) 22.05 and 24.11 PARTITION CONFIGURATION: "If a partition that is in
            # use is deleted from the configuration and slurm is restarted or reconfigured
            # (scontrol reconfigure), jobs using the partition are canceled."
            result.bump(RECONFIGURE, f"{label} {', '.join(changed)} changed: scontrol reconfigure")
    return result.finish()


def _classify_nodes(old_nodes, new_nodes, reexec, slurm_version, result):
    added = set(new_nodes) - set(old_nodes)
    removed = set(old_nodes) - set(new_nodes)
    for names, verb in ((added, "added"), (removed, "removed")):
        if not names:
            continue
        if reexec:
            result.bump(
                RECONFIGURE,
                f"nodes {verb} ({_fold(names)}): scontrol reconfigure of every daemon on Slurm "
                f"{slurm_version} [{_SC24} NODE CONFIGURATION: restarting or reconfiguring all "
                f"slurmctld and slurmd daemons]",
            )
        else:
            result.bump(
                RESTART,
                f"nodes {verb} ({_fold(names)}): Slurm {slurm_version} < 23.11 needs slurmctld and "
                f'every slurmd restarted [scontrol(1) 22.05 reconfigure: "The slurmctld daemon and '
                f'all slurmd daemons must also be restarted if nodes are added to or removed from the cluster."]',
                BOTH,
            )

    by_key = {}
    for node in sorted(set(old_nodes) & set(new_nodes)):
        for key, spelling, _old, _new in _diff(old_nodes[node], new_nodes[node]):
            by_key.setdefault((key, spelling), []).append(node)
    for (key, spelling), nodes in sorted(by_key.items()):
        where = f"NodeName {spelling} changed on {_fold(nodes)}"
        if key in NODE_ALWAYS_RESTART_KEYS:
            source = _TCP if reexec else f"{_SC22} NodeName Port: the port slurmd listens on"
            result.bump(RESTART, f"{where}: slurmd listening port, restart slurmctld and slurmd [{source}]", BOTH)
        elif key in NODE_RESTART_KEYS and not reexec:
            result.bump(
                RESTART,
                f"{where}: Slurm {slurm_version} < 23.11 needs slurmctld and slurmd restarted "
                f"[{_SC22} NODE CONFIGURATION: changing their processor count, etc. require "
                f"restarting both the slurmctld daemon and the slurmd daemons]",
                BOTH,
            )
        elif reexec:
            result.bump(RECONFIGURE, f"{where}: scontrol reconfigure of every daemon [{_SC24} NODE CONFIGURATION]")
        else:
            result.bump(RECONFIGURE, f"{where}: scontrol reconfigure")


# --- gres.conf --------------------------------------------------------------------------


def parse_gres_conf(text):
    """gres.conf text -> ``{(node, Name): [{key: value}, ...]}`` (``node`` ``*`` when the line
    has no NodeName) and ``{"globals": {...}}`` under the key ``None`` for lines without Name
    (``AutoDetect=nvml``)."""
    entries = {}
    for number, line in _logical_lines(text):
        params = {}
        for key, value in _pairs(number, line, "gres.conf"):
            _ci_set(params, key, value)
        node_value = _ci_get(params, "NodeName")
        name = _ci_get(params, "Name")
        nodes = _names(node_value, number, "gres.conf") if node_value else ["*"]
        for node in nodes:
            entries.setdefault((node, name), []).append(
                {k.lower(): v for k, v in params.items() if k.lower() != "nodename"}
            )
    return entries


def _values(lines, key):
    return sorted(str(line.get(key, "")) for line in lines)


def classify_gres_change(old_text, new_text, slurm_version):
    """What a gres.conf change needs; same result shape as :func:`classify_change`.

    gres.conf(5) 22.05 and 24.11 DESCRIPTION: changes take effect on "scontrol reconfigure"
    "unless otherwise noted". Noted: Type (22.05: "A restart of the slurmctld and slurmd daemons
    is required for changes to the Type option to take effect."; 24.11: reconfigure works when
    "all affected slurmd daemons" are "responding to the slurmctld") and Cores ("A restart of the
    slurmctld is needed for changes to the Cores option to take effect." in both; on >= 23.11
    the reconfigure starts a new slurmctld, which is that restart).
    """
    reexec = _reexec(slurm_version)
    result = _Result()
    if not (old_text or "").strip():
        if (new_text or "").strip():
            result.bump(RESTART, "no previous gres.conf: slurmd starts with the new file", BOTH)
        return result.finish()
    old, new = parse_gres_conf(old_text), parse_gres_conf(new_text)
    type_changed, cores_changed, other_changed = [], [], []
    for where in sorted(set(old) | set(new), key=lambda k: (str(k[0]), str(k[1]))):
        a, b = old.get(where, []), new.get(where, [])
        if a == b:
            continue
        label = f"{where[0]}:{where[1]}" if where[1] else f"{where[0]}"
        if _values(a, "type") != _values(b, "type"):
            type_changed.append(label)
        elif _values(a, "cores") != _values(b, "cores"):
            cores_changed.append(label)
        else:
            other_changed.append(label)
    if type_changed:
        what = f"gres.conf Type changed ({', '.join(type_changed)})"
        if reexec:
            result.bump(
                RECONFIGURE,
                f"{what}: scontrol reconfigure; every affected slurmd must be responding to "
                f"slurmctld, else restart both [gres.conf(5) 24.11 Type]",
            )
        else:
            result.bump(
                RESTART,
                f"{what}: Slurm {slurm_version} < 23.11 needs slurmctld and slurmd restarted "
                f'[gres.conf(5) 22.05 Type: "A restart of the slurmctld and slurmd daemons is required"]',
                BOTH,
            )
    if cores_changed:
        what = f"gres.conf Cores changed ({', '.join(cores_changed)})"
        if reexec:
            result.bump(
                RECONFIGURE,
                f"{what}: scontrol reconfigure starts a new slurmctld [gres.conf(5) 24.11 Cores: "
                f"slurmctld restart; scontrol(1) 24.11: reconfigure creates new processes]",
            )
        else:
            result.bump(
                RESTART,
                f'{what}: restart slurmctld [gres.conf(5) 22.05 Cores: "A restart of the slurmctld is needed"]',
                (CTLD,),
            )
    if other_changed:
        result.bump(
            RECONFIGURE,
            f"gres.conf changed ({', '.join(other_changed)}): scontrol reconfigure [gres.conf(5) DESCRIPTION]",
        )
    return result.finish()


# --- cgroup.conf ------------------------------------------------------------------------


def _parse_flat(text, label):
    values = {}
    for number, line in _logical_lines(text):
        for key, value in _pairs(number, line, label):
            _ci_set(values, key, value)
    return values


def classify_cgroup_change(old_text, new_text, slurm_version):
    """What a cgroup.conf change needs; same result shape as :func:`classify_change`."""
    reexec = _reexec(slurm_version)
    result = _Result()
    if not (old_text or "").strip():
        if (new_text or "").strip():
            result.bump(RESTART, "no previous cgroup.conf: slurmd starts with the new file", (SLURMD,))
        return result.finish()
    for key, spelling, va, vb in _diff(_parse_flat(old_text, "cgroup.conf"), _parse_flat(new_text, "cgroup.conf")):
        change = f"cgroup.conf {spelling} changed ({_fmt(va)} -> {_fmt(vb)})"
        rule = None if reexec else LEGACY_CGROUP_RESTART_KEYS.get(key)
        if rule is not None:
            result.bump(RESTART, f"{change}: restart slurmd [{rule.source}]", rule.daemons)
        else:
            version = "24.11" if reexec else "22.05"
            result.bump(RECONFIGURE, f"{change}: scontrol reconfigure [cgroup.conf(5) {version} DESCRIPTION]")
    return result.finish()


# --- any file ---------------------------------------------------------------------------


def _strip(text):
    return [line for _n, line in _logical_lines(text)]


def classify_file_change(filename, old_text, new_text, slurm_version):
    """Classify a change of slurm.conf, gres.conf, cgroup.conf or topology.conf by name.

    Any other file has no rule here: a change restarts both daemons (fail closed).
    """
    base = filename.rsplit("/", 1)[-1]
    if base == "slurm.conf":
        return classify_change(old_text, new_text, slurm_version)
    if base == "gres.conf":
        return classify_gres_change(old_text, new_text, slurm_version)
    if base == "cgroup.conf":
        return classify_cgroup_change(old_text, new_text, slurm_version)
    version_tuple(slurm_version)  # validate
    result = _Result()
    if _strip(old_text) == _strip(new_text):
        return result.finish()
    if base == "topology.conf":
        # topology.conf(5) 22.05 and 24.11: "Changes to the configuration file take effect upon
        # restart of Slurm daemons, daemon receipt of the SIGHUP signal, or execution of the
        # command "scontrol reconfigure" unless otherwise noted." Nothing is noted.
        result.bump(RECONFIGURE, "topology.conf changed: scontrol reconfigure [topology.conf(5) DESCRIPTION]")
    else:
        result.bump(RESTART, f"{base} changed: no rule for this file, restart slurmctld and slurmd (fail closed)", BOTH)
    return result.finish()


def classify_changes(changes, slurm_version):
    """Classify several files changed together (slurm.conf + gres.conf + cgroup.conf + ...).

    ``changes``: ``[{"name", "before", "after"}]`` as ``slurm_config`` returns them. One result
    for the whole change, shape of :func:`classify_change`, so a gres.conf change and the
    matching NodeName ``Gres=`` change in slurm.conf are applied in one step.
    """
    result = _Result()
    for change in changes:
        result.merge(classify_file_change(change["name"], change.get("before"), change.get("after"), slurm_version))
    return result.finish()


def plan_apply(changes, daemons):
    """Merge per-file classifications into what one host does.

    ``changes`` are ``classify_file_change`` results; ``daemons`` are the Slurm daemons this host
    runs. Restart the daemons a change needs that run here; a change that needs a daemon restarted
    elsewhere (slurmctld, seen from a compute node) still needs at least ``scontrol reconfigure``.
    Returns ``{"action": none|reconfigure|restart, "restart": [daemons], "order":
    restart|stop_all_then_start|None, "reasons": [...], "needs_no_jobs": [...]}``.
    """
    merged = _Result()
    for change in changes:
        merged.merge(change)
    restart = [d for d in BOTH if d in merged.daemons and d in set(daemons)] if merged.action == RESTART else []
    if restart:
        action = RESTART
    elif merged.action in (RECONFIGURE, RESTART):
        action = RECONFIGURE
    else:
        action = NONE
    return {
        "action": action,
        "restart": restart,
        "order": merged.order if restart else None,
        "reasons": merged.reasons,
        "needs_no_jobs": merged.needs_no_jobs,
    }


# --- data for the templates -------------------------------------------------------------


def apply_plan(changes, slurm_version, daemons):
    """What one host does for its written files: classify each ``{name, before, after}`` change
    (slurm_config's ``changes``) and merge them with :func:`plan_apply` for the daemons it runs."""
    results = [classify_file_change(c["name"], c["before"], c["after"], slurm_version) for c in changes]
    return plan_apply(results, list(daemons))


def defunct_settings(slurm_version):
    """What the configuration templates must not render, or must render differently, on this
    Slurm version: ``{file: {key: reason}}``.

    * cgroup.conf CgroupAutomount on >= 23.11: RELEASE_NOTES 23.11 "Remove CgroupAutomount=
      option from cgroup.conf."; the cgroup.conf(5) 23.11 page no longer lists it.
    * slurm.conf CryptoType on every version: the old spelling of CredType (NEWS "Change
      CryptoType option to CredType"); slurm.conf(5) 22.05 and 24.11 document only CredType.
    * slurm.conf SlurmctldPidFile on >= 23.11: RELEASE_NOTES 23.11 "The reference slurmctld and
      slurmdbd service files now run under User=slurm"; the upstream 24.11 unit
      (etc/slurmctld.service.in) sets User=slurm and RuntimeDirectory=slurmctld, so the pid file
      belongs in /run/slurmctld/ (slurm.conf(5)
      24.11 FILE AND DIRECTORY PERMISSIONS: SlurmctldPidFile "Preferably writable and
      removable by SlurmUser").
    """
    version = version_tuple(slurm_version)
    out = {"slurm.conf": {"CryptoType": "use CredType (cred/munge); CryptoType is the old spelling"}}
    if version >= CGROUP_AUTOMOUNT_REMOVED:
        out["cgroup.conf"] = {
            "CgroupAutomount": "removed in 23.11 (RELEASE_NOTES 23.11); 24.11 parses it as defunct and logs an error"
        }
        out["slurm.conf"]["SlurmctldPidFile"] = (
            "slurmctld runs as User=slurm: use /run/slurmctld/slurmctld.pid (RuntimeDirectory=slurmctld)"
        )
    return out
