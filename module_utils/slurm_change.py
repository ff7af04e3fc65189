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
* ``guards``   one ``{"reason", "partition"}`` per change that must not be applied while jobs
  it would lose exist: ``partition`` None for the whole cluster (SelectType: "all job information
  (running and pending) will be lost"; SwitchType: their records "may be lost"), else the removed
  partition whose jobs Slurm cancels. The role reads ``squeue`` on the first controller before any
  host writes and refuses while :func:`needs_no_jobs_refusals` names a job;
* ``needs_no_jobs``  the guards' reasons, one line each.

A change no handler can apply without losing work (ClusterName, moving the primary controller
under either spelling, moving StateSaveLocation) and a key the installed Slurm's slurm.conf(5) does
not document raise :class:`SlurmConfError` naming the key, before any host writes.

Every rule quotes its source: the man page and the Slurm release it was read from
(slurm.conf(5), scontrol(1), gres.conf(5), cgroup.conf(5), topology.conf(5) at the tags
slurm-22-05-8-1, slurm-23-11-11-1 and slurm-24-11-5-1), or, where the man page is silent, the
Slurm source file that shows the behaviour. docs/slurm-changes.md has the table.
"""

import posixpath
import re
import shlex
from collections import namedtuple

from ansible.module_utils.hostlist import HostlistError, hostlist_expand, hostlist_fold
from ansible.module_utils.slurm_keys import KEYS, OLD_SPELLINGS, TAGS

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
    # The auth plugins start once (source src/common/slurm_auth.c 22.05) and auth/jwt reads its
    # jwt_key then (source src/plugins/auth/jwt/auth_jwt.c 22.05, init).
    "authaltparameters": _rule(BOTH, "source src/plugins/auth/jwt/auth_jwt.c 22.05: key read once, at plugin start"),
    # slurmctld becomes SlurmUser once, at start (source src/slurmctld/controller.c 22.05,
    # _become_slurm_user); slurmd checks its user against SlurmdUser at start (slurmd.c, main).
    "slurmuser": _rule((CTLD,), "source src/slurmctld/controller.c 22.05: slurmctld becomes SlurmUser at start"),
    "slurmduser": _rule((SLURMD,), "source src/slurmd/slurmd/slurmd.c 22.05: slurmd checks SlurmdUser at start"),
}
# CryptoType is the old spelling of CredType that Slurm still reads (NEWS: "Change CryptoType
# option to CredType"; src/common/read_config.c reads CryptoType when CredType is unset).
LEGACY_RESTART_KEYS["cryptotype"] = LEGACY_RESTART_KEYS["credtype"]

_SC24 = "slurm.conf(5) 24.11"
_TCP = f'{_SC24} DESCRIPTION: "Changes to TCP listening settings will require a daemon restart."'
_AUTH = 'scontrol(1) 24.11 reconfigure: "This will not be able to change the daemons\' ... authentication mechanism."'

# 23.02 only: slurm.conf(5) 23.02 JobCompLoc: "NOTE: The librdkafka parameters configured in the
# file referenced by this option take effect upon slurmctld restart." (gone from the 23.11 page).
RESTART_KEYS_23_02 = {
    "jobcomploc": _rule(
        (CTLD,), 'slurm.conf(5) 23.02 JobCompLoc: librdkafka parameters "take effect upon slurmctld restart"'
    ),
}
SINCE_23_02 = (23, 2)

# slurm.conf keys that still need a restart on Slurm >= 23.11. Everything else, node
# changes and SlurmctldHost included, is a reconfigure.
REEXEC_RESTART_KEYS = {
    "slurmctldport": _rule(BOTH, _TCP),
    "slurmdport": _rule(BOTH, _TCP),
    "communicationparameters": _rule(BOTH, _TCP + " (address family and bind options)"),
    "authaltparameters": _rule(BOTH, _AUTH + " (AuthAltParameters jwt_key: the auth/jwt key)"),
    # The new processes a reconfigure starts inherit the running user (source
    # src/slurmctld/controller.c 24.11: become_slurm_user at start; slurmd.c checks SlurmdUser).
    "slurmuser": _rule((CTLD,), "source src/slurmctld/controller.c 24.11: slurmctld becomes SlurmUser at start"),
    "slurmduser": _rule((SLURMD,), "source src/slurmd/slurmd/slurmd.c 24.11: slurmd checks SlurmdUser at start"),
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
# cluster (the same sentences on the 22.05 to 24.11 pages, module_utils/slurm_keys.py MAN_RULES).
# From 23.11 the reconfigure starts a new slurmctld, which is the restart they speak of.
NO_JOBS_KEYS = {
    "selecttype": '{page} SelectType: "When changed, all job information (running and pending) will be lost, '
    'since the job state save format used by each plugin is different."',
    "switchtype": '{page} SwitchType: "If running jobs exist at the time slurmctld is restarted with a new '
    'value of SwitchType, records of all jobs in any state may be lost."',
}
# slurm.conf(5) 22.05 and 24.11 PARTITION CONFIGURATION: a removed partition's jobs are canceled.
_PARTITION_REMOVED = (
    '{page} PARTITION CONFIGURATION: "If a partition that is in use is deleted from the configuration and '
    'slurm is restarted or reconfigured (scontrol reconfigure), jobs using the partition are canceled."'
)
# The keys that name the controllers: SlurmctldHost, and the old spellings slurm.conf(5) 22.05 and
# 24.11 still list ("Deprecated option, see SlurmctldHost."), which src/common/read_config.c reads
# when no SlurmctldHost is set.
_CONTROLLER_KEYS = ("slurmctldhost", "controlmachine", "controladdr", "backupcontroller", "backupaddr")

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


# The roles' version of a host where Slurm is not installed yet (their dry run on a fresh host).
NOT_INSTALLED = (0, 0)
_LINE_NAMES = {"nodename": "NodeName", "partitionname": "PartitionName", "nodeset": "NodeSet"}
_LINE_NAMES.update(downnodes="DownNodes", frontendname="FrontendName")


def _series(slurm_version):
    """The release series of ``slurm_version`` that slurm_keys.py has a key list for, else None."""
    version = version_tuple(slurm_version)
    return version[:2] if version[:2] in TAGS else None


def unknown_keys(text, slurm_version, variables=None):
    """The keys of slurm.conf ``text`` that slurm.conf(5) of ``slurm_version`` does not document.

    One message per unknown key, naming it, its line, the Slurm version and the tag its page was
    read at (module_utils/slurm_keys.py), and, where ``variables`` (``{"globals" or a line's
    first key (NodeName, PartitionName, ...): variable name}``) names one, the variable the line
    comes from. Keys compare without case, as Slurm's parser does. ``Include`` lines are not
    followed. Version 0.0 is the roles' "Slurm not installed yet" (a dry run on a fresh host):
    nothing runs there that a key could stop, and nothing is checked.

    Work at risk: none (read-only). It fails closed: a release with no key list raises
    :class:`SlurmConfError` rather than pass every key.
    """
    check = _KeyCheck(slurm_version, variables)
    for number, line in _logical_lines(text):
        if not _INCLUDE.match(line):
            check(number, _pairs(number, line))
    return check.errors


class _KeyCheck:
    """Collects the unknown keys of slurm.conf lines, one call per line's (number, pairs)."""

    def __init__(self, slurm_version, variables=None):
        self.errors = []
        self.keys = None
        if version_tuple(slurm_version)[:2] == NOT_INSTALLED:
            return
        series = _series(slurm_version)
        if series is None:
            known = ", ".join(f"{m}.{n:02d}" for m, n in sorted(TAGS))
            raise SlurmConfError(
                f"Slurm {slurm_version}: gpufleet has no slurm.conf(5) key list for this release (it has "
                f"{known}: module_utils/slurm_keys.py), so it cannot tell which keys Slurm {slurm_version} "
                f"knows; refused"
            )
        self.keys = {line: {k.lower() for k in names} for line, names in KEYS[series].items()}
        self.keys["globals"] |= set(OLD_SPELLINGS)
        self.where = {k.lower(): v for k, v in (variables or {}).items()}
        self.source = f"Slurm {str(slurm_version).strip()} (SchedMD/slurm {TAGS[series]})"

    def __call__(self, number, pairs):
        if self.keys is None:
            return
        kind = pairs[0][0].lower() if pairs and pairs[0][0].lower() in _LINE_NAMES else "globals"
        known = self.keys[kind]
        for key, _value in pairs:
            if key.lower() in known:
                continue
            label = "slurm.conf key" if kind == "globals" else f"slurm.conf {_LINE_NAMES[kind]} key"
            prefix = f"variable {self.where[kind]}: " if kind in self.where else ""
            self.errors.append(f"{prefix}{label} {key!r} (line {number}) is not in slurm.conf(5) of {self.source}")


def needs_no_jobs_refusals(result, squeue):
    """Why the guarded changes of ``result`` cannot be applied now, one line per guard; [] when
    nothing is guarded or no job is in the way.

    ``result``: a classification (``guards``, or ``needs_no_jobs`` lines that guard the whole
    cluster). ``squeue``: the registered result of ``squeue --all --noheader --format='%i %T %u
    %P'`` on the first controller (``rc``, ``stdout_lines``, ``stderr``); ``%P`` of a pending job
    lists every partition it may run in, comma-separated.

    Work at risk: every job a guarded change would lose. A cluster-wide guard is refused while any
    job exists, a removed partition's guard while a job lists that partition. It fails closed: a
    squeue that did not run or failed refuses every guard, and a line it cannot read is a job in
    every partition.
    """
    guards = _guards_of(result or {})
    if not guards:
        return []
    squeue = squeue or {}
    rc = squeue.get("rc")
    if rc != 0:
        why = (squeue.get("stderr") or squeue.get("msg") or "it did not run").strip()
        return [f"{g['reason']}: squeue could not list the jobs (rc {rc}): {why}" for g in guards]
    jobs = [(line.strip(), line.split()) for line in squeue.get("stdout_lines") or [] if line.strip()]
    refusals = []
    for g in guards:
        partition = g.get("partition")
        if partition is None:
            held, holder = [line for line, _f in jobs], "slurmctld"
        else:
            held = [line for line, f in jobs if len(f) < 4 or partition in f[3].split(",")]
            holder = f"partition {partition}"
        if held:
            refusals.append(f"{g['reason']}: {holder} holds {len(held)} job(s): {', '.join(held[:5])}")
    return refusals


def parse_slurm_conf(text, check=None):
    """Parse slurm.conf text into a comparable structure.

    Returns ``{"globals": {key: value}, "nodes": {node: {key: value}},
    "partitions": {name: {key: value}}, "nodesets": {...}, "downnodes": {...},
    "frontends": {...}, "includes": [path, ...]}``. Keys keep their spelling from the
    file; compare them with :func:`_ci`. ``NodeName=gpu[01-04]`` is expanded per node and
    ``NodeName=DEFAULT`` / ``PartitionName=DEFAULT`` values are applied to the lines
    after them, as Slurm does. Repeatable keys (SlurmctldHost) become lists. ``check``, if given,
    is called with each line's number and ``[(key, value)]`` (:func:`unknown_keys` uses it).
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
        if check is not None:
            check(number, pairs)
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
        self.guards = []

    def guard(self, reason, partition=None):
        """Apply this change only while no job (in ``partition``; None: in the cluster) exists."""
        self.guards.append({"reason": reason, "partition": partition})

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
        self.guards.extend(_guards_of(other))

    def finish(self):
        restart = self.action == RESTART
        return {
            "action": self.action,
            "reasons": self.reasons,
            "daemons": [d for d in BOTH if d in self.daemons] if restart else [],
            "order": self.order if restart else None,
            "guards": self.guards,
            "needs_no_jobs": [g["reason"] for g in self.guards],
        }


def _guards_of(result):
    """A result's guards; a result with only ``needs_no_jobs`` lines guards the whole cluster."""
    if "guards" in result:
        return list(result["guards"])
    return [{"reason": line, "partition": None} for line in result.get("needs_no_jobs", [])]


def _reexec(slurm_version):
    return version_tuple(slurm_version) >= REEXEC_SINCE


def _host_name(entry):
    """``ctl1(10.0.0.1)`` -> ``ctl1``: the host part of a SlurmctldHost value (of ControlMachine's
    comma list, the first name)."""
    return entry.split("(", 1)[0].split(",", 1)[0].strip()


def _as_list(value):
    return value if isinstance(value, list) else ([] if value is None else [value])


def _primary(conf):
    """The primary controller's host in a case-insensitive globals view: the first SlurmctldHost,
    else ControlMachine (src/common/read_config.c 22.05 and 24.11 reads ControlMachine only when no
    SlurmctldHost is set); None when neither is set."""
    hosts = _as_list(conf.get("slurmctldhost", (None, None))[1])
    if hosts:
        return _host_name(hosts[0])
    machine = conf.get("controlmachine", (None, None))[1]
    return _host_name(machine) if machine else None


def _refuse_primary_move(olds, news):
    old, new = _primary(olds), _primary(news)
    if old is None or new is None or old == new:
        return
    changed = [
        f"{(news.get(k) or olds.get(k))[0]} ({_fmt(olds.get(k, (None, None))[1])} -> "
        f"{_fmt(news.get(k, (None, None))[1])})"
        for k in _CONTROLLER_KEYS
        if olds.get(k, (None, None))[1] != news.get(k, (None, None))[1]
    ]
    # slurm.conf(5) 22.05 and 24.11 RELOCATING CONTROLLERS: "1. Stop the Slurm daemons on the old
    # controller and nodes. ... 3. Copy the files from the StateSaveLocation to the new controller
    # ..." A handler cannot do that; refuse before anything changes.
    raise SlurmConfError(
        f"{', '.join(changed)} changed: the primary controller moves from {old} to {new}; refused. Follow "
        f"slurm.conf(5) RELOCATING CONTROLLERS (stop the daemons, copy StateSaveLocation to the new "
        f"controller, then deploy)."
    )


def _refuse_state_save_move(spelling, old, new):
    def norm(value):
        return posixpath.normpath(value) if value else None

    if norm(old) == norm(new):
        return
    # slurm.conf(5) 22.05 and 24.11 StateSaveLocation: "Since all running and pending job information
    # is stored here, ..."; slurmctld(8) 24.11 -c (a start without that state): "all jobs, including
    # both running and queued, and all node states, will be deleted."
    raise SlurmConfError(
        f"{spelling} changed ({_fmt(old)} -> {_fmt(new)}): refused. slurmctld keeps every running and "
        f"pending job, the DOWN and DRAINED nodes with their reasons, and the reservations there "
        f'(slurm.conf(5) StateSaveLocation: "Since all running and pending job information is stored '
        f'here"); started on another directory it loses them all, as slurmctld -c does. To move it: '
        f"stop slurmctld on every controller, copy {_fmt(old)} to {_fmt(new)} (owner SlurmUser), set "
        f"StateSaveLocation={_fmt(new)} in slurm.conf on every host that has the file, start slurmctld, "
        f"then run again."
    )


def _refuse_cluster_name(old, new):
    raise SlurmConfError(
        f"ClusterName changed ({_fmt(old)} -> {_fmt(new)}): refused. slurmctld stops with "
        f'"CLUSTER NAME MISMATCH" when ClusterName differs from the clustername file in '
        f"StateSaveLocation (source src/slurmctld/controller.c, 22.05 and 24.11), so no restart "
        f"applies it. Keep ClusterName, or build a new cluster: stop slurmctld, move "
        f"StateSaveLocation aside, register the new name with sacctmgr, then deploy."
    )


def _controller_change(spelling, old, new, reexec, slurm_version, result):
    """A controller key changed without moving the primary (a backup, an address, a spelling)."""
    change = f"{spelling} changed ({_fmt(old)} -> {_fmt(new)})"
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


def _global_rule(key, reexec, version):
    key = _ALIASES.get(key, key)
    if reexec:
        return REEXEC_RESTART_KEYS.get(key)
    if version >= SINCE_23_02 and key in RESTART_KEYS_23_02:
        return RESTART_KEYS_23_02[key]
    return LEGACY_RESTART_KEYS.get(key)


def _classify_globals(old, new, reexec, slurm_version, result):
    olds, news = _ci(old), _ci(new)
    # CryptoType=crypto/munge and CredType=cred/munge are one setting (Slurm swaps the prefix).
    for conf in (olds, news):
        if "cryptotype" in conf and "credtype" not in conf:
            spelling, value = conf.pop("cryptotype")
            conf["credtype"] = (spelling, str(value).replace("crypto/", "cred/"))
        else:
            conf.pop("cryptotype", None)
    _refuse_primary_move(olds, news)
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
            result.guard(f"{change}: only with no job in the cluster [{source}]")
        if key == "clustername":
            _refuse_cluster_name(va, vb)
        if key == "statesavelocation":
            _refuse_state_save_move(spelling, va, vb)
            continue
        if key in _CONTROLLER_KEYS:
            _controller_change(spelling, va, vb, reexec, slurm_version, result)
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
        rule = _global_rule(key, reexec, version_tuple(slurm_version))
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
    "daemons": [...], "order": "restart"|"stop_all_then_start"|None,
    "guards": [{"reason", "partition"}, ...], "needs_no_jobs": [str, ...]}``.
    ``old_text`` may be empty/None (first install): that is a restart of everything.

    Work at risk: ``new_text`` can lose every job slurmctld holds or the jobs of one partition.
    A change no handler applies without loss raises :class:`SlurmConfError` naming the key:
    ClusterName, the primary controller moving (SlurmctldHost or its old spelling ControlMachine),
    StateSaveLocation moving, and any key slurm.conf(5) of ``slurm_version`` does not document
    (22.05 daemons stop on it at reconfigure); a release with no key list in slurm_keys.py is
    refused too, except for a first install, where nothing runs yet. SelectType and SwitchType
    changes are guarded cluster-wide and a removed partition is guarded by its own jobs
    (``guards``): the caller applies them only while :func:`needs_no_jobs_refusals` finds no job.
    A key whose man page or source says a restart is needed is never a reconfigure.
    """
    reexec = _reexec(slurm_version)
    result = _Result()
    if not (old_text or "").strip():
        if _series(slurm_version) is not None:  # a first install on a release without a list passes
            _refuse_unknown(unknown_keys(new_text, slurm_version))
        result.bump(RESTART, "no previous slurm.conf: daemons start with the new file", BOTH)
        return result.finish()

    check = _KeyCheck(slurm_version)
    new = parse_slurm_conf(new_text, check)
    _refuse_unknown(check.errors)
    old = parse_slurm_conf(old_text)
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
            result.bump(RECONFIGURE, f"{label} {', '.join(changed)} changed: scontrol reconfigure")
    page = _SC24 if reexec else _SC22
    for name in sorted(set(old["partitions"]) - set(new["partitions"])):
        source = _PARTITION_REMOVED.format(page=page)
        result.guard(f"PartitionName {name} removed: only with no job in partition {name} [{source}]", name)
    return result.finish()


def _refuse_unknown(errors):
    if errors:
        raise SlurmConfError(
            "; ".join(errors) + ". Refused before any host writes it: Slurm stops on a key it does not know "
            "(22.05: every daemon that re-reads the file on scontrol reconfigure)"
        )


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


def kept_gpu_report(node, slurm_conf_text, gres_conf_text):
    """What the files in place say of ``node``'s GPUs: ``{"gres": its slurm.conf ``Gres=`` or None, "lines": its
    gres.conf lines without ``NodeName=``, in file order}``. Both are empty where the node is in neither file
    (a node the cluster does not know yet).

    Work at risk: a node whose own GPU report gpu_discovery refused is held, and the cluster's files must not
    change because of it: without its report, slurm.conf would lose its ``Gres=`` and gres.conf its lines, and
    slurmctld would reconfigure or restart every daemon for a node that reported nothing valid. So its part of
    both files is kept as the files in place have it (slurm_common renders it back): Refused (SlurmConfError) for a
    file that does not parse, so nothing is written.
    """
    short = str(node).split(".", 1)[0]
    entry = parse_slurm_conf(slurm_conf_text or "")["nodes"].get(short) or {}
    gres = _ci_get(entry, "Gres")
    lines = []
    for number, line in _logical_lines(gres_conf_text or ""):
        pairs = _pairs(number, line, "gres.conf")
        names = [value for key, value in pairs if key.lower() == "nodename"]
        if not names or short not in _names(names[0], number, "gres.conf"):
            continue
        lines.append(" ".join(f"{key}={value}" for key, value in pairs if key.lower() != "nodename"))
    return {"gres": gres if gres not in (None, "", "(null)") else None, "lines": lines}


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

    Work at risk: the jobs a slurm.conf change can lose (see :func:`classify_change`). A file's
    refusal refuses the whole change; every file's ``guards`` are kept in the merged result, which
    the role checks with :func:`needs_no_jobs_refusals` before any host writes.
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

    Work at risk: none it decides; it runs after the files are written, and keeps every guard's
    reason in ``needs_no_jobs`` (the live check ran before the write, on :func:`classify_changes`).
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
        "needs_no_jobs": [g["reason"] for g in merged.guards],
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
