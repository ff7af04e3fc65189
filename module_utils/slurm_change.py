# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that decides ``scontrol reconfigure`` versus a daemon restart.

Handlers in the Slurm roles call :func:`classify_change` with the old and new text of a
Slurm configuration file and the installed Slurm version, and act on ``action``:

* ``none``         nothing Slurm reads has changed (comments, blank lines, key order);
* ``reconfigure``  ``scontrol reconfigure`` is enough;
* ``restart``      restart the daemons listed in ``daemons`` (slurmctld first, then slurmd).

Each rule names its source. "slurm.conf(5)" and "scontrol(1)" are the man pages of the
Slurm release named next to them.
"""

import re
import shlex

from ansible.module_utils.hostlist import HostlistError, hostlist_expand, hostlist_fold

NONE = "none"
RECONFIGURE = "reconfigure"
RESTART = "restart"
_RANK = {NONE: 0, RECONFIGURE: 1, RESTART: 2}

CTLD = "slurmctld"
SLURMD = "slurmd"
BOTH = (CTLD, SLURMD)

# Slurm 23.11 reimplemented "scontrol reconfigure": the daemons start new processes that
# read the whole configuration and hand over when they come up (scontrol(1) 23.11,
# RELEASE_NOTES 23.11). Since then nodes can be added/removed and node definitions
# changed with a reconfigure; listening ports and the authentication mechanism still
# cannot ("This will not be able to change the daemons' listening TCP port settings or
# authentication mechanism", scontrol(1) 23.11).
RECONFIGURE_RESTARTS_DAEMONS = (23, 11)
# topology/block is new in Slurm 23.11 (topology.conf(5) 23.11, RELEASE_NOTES 23.11).
TOPOLOGY_BLOCK_SINCE = (23, 11)

# Global slurm.conf keys whose change needs a daemon restart on every Slurm version.
# key (lower case) -> (daemons to restart, source of the rule)
RESTART_KEYS = {
    # scontrol(1) <= 23.02 "reconfigure": "Slurm daemons should be shutdown and restarted
    # if any of these parameters are to be changed: AuthType, BackupAddr, BackupController,
    # ControlAddr, ControlMach, PluginDir, StateSaveLocation, SlurmctldPort or SlurmdPort."
    # SlurmctldHost (17.11+) replaces ControlMachine/BackupController.
    "authtype": (BOTH, "scontrol(1): AuthType; slurm.conf(5) AuthType: daemons must be restarted"),
    "backupaddr": (BOTH, "scontrol(1) reconfigure: BackupAddr"),
    "backupcontroller": (BOTH, "scontrol(1) reconfigure: BackupController"),
    "controladdr": (BOTH, "scontrol(1) reconfigure: ControlAddr"),
    "controlmachine": (BOTH, "scontrol(1) reconfigure: ControlMach"),
    "slurmctldhost": (BOTH, "scontrol(1) reconfigure: ControlMach/BackupController, now SlurmctldHost"),
    "plugindir": (BOTH, "scontrol(1) reconfigure: PluginDir"),
    "statesavelocation": (BOTH, "scontrol(1) reconfigure: StateSaveLocation"),
    "slurmctldport": (BOTH, "scontrol(1) reconfigure: SlurmctldPort; slurm.conf(5) 24.x: TCP listening"),
    "slurmdport": (BOTH, "scontrol(1) reconfigure: SlurmdPort; slurm.conf(5) 24.x: TCP listening"),
    # slurm.conf(5) 24.x DESCRIPTION: "Changes to TCP listening settings will require a
    # daemon restart."
    "slurmctldaddr": (BOTH, "slurm.conf(5) 24.x: changes to TCP listening settings need a restart"),
    "communicationparameters": (BOTH, "slurm.conf(5) 24.x: changes to TCP listening settings need a restart"),
    # slurm.conf(5) AuthAltTypes/CredType/CryptoType: plugins loaded once at start;
    # CryptoType: "The slurmctld daemon must be restarted for a change in CryptoType".
    "authalttypes": (BOTH, "slurm.conf(5): authentication plugins load at daemon start"),
    "credtype": (BOTH, "slurm.conf(5) CryptoType/CredType: slurmctld must be restarted"),
    "cryptotype": (BOTH, "slurm.conf(5) CryptoType: slurmctld must be restarted"),
    # slurm.conf(5) AccountingStorageEnforce: "a restart of the slurmctld daemon is
    # required (not just a scontrol reconfig)".
    "accountingstorageenforce": ((CTLD,), "slurm.conf(5) AccountingStorageEnforce: restart slurmctld"),
    "accountingstoragetype": ((CTLD,), "slurm.conf(5): accounting storage plugin loads at start"),
    # slurm.conf(5) SelectType: "Changing this value can only be done by restarting the
    # slurmctld daemon"; SelectTypeParameters carries the same note; slurmd builds its
    # resource layout from them too.
    "selecttype": (BOTH, "slurm.conf(5) SelectType: change only by restarting slurmctld"),
    "selecttypeparameters": (BOTH, "slurm.conf(5) SelectTypeParameters: restart slurmctld and slurmd"),
    # slurm.conf(5) GresTypes: restart slurmctld and all slurmd for a change.
    "grestypes": (BOTH, "slurm.conf(5) GresTypes: restart slurmctld and slurmd"),
    # slurm.conf(5) ProctrackType: changing it needs slurmctld and slurmd restarted
    # (running steps keep the old plugin).
    "proctracktype": (BOTH, "slurm.conf(5) ProctrackType: restart slurmctld and slurmd"),
    # slurm.conf(5) TaskPlugin: changes need slurmd (and slurmctld) restarted.
    "taskplugin": (BOTH, "slurm.conf(5) TaskPlugin: restart daemons"),
    # slurm.conf(5) SwitchType: "All Slurm daemons, commands and running jobs must be
    # restarted for a change in SwitchType to take effect."
    "switchtype": (BOTH, "slurm.conf(5) SwitchType: restart all daemons"),
    # slurm.conf(5) TopologyPlugin: the plugin is chosen at start; the topology.conf
    # it reads is reconfigurable (topology.conf(5)).
    "topologyplugin": (BOTH, "slurm.conf(5) TopologyPlugin: restart slurmctld and slurmd"),
    # slurm.conf(5) JobAcctGatherType: changes the messages between daemons; "only change
    # this configuration parameter when there are no running job steps".
    "jobacctgathertype": (BOTH, "slurm.conf(5) JobAcctGatherType: restart with no running steps"),
    # slurm.conf(5) SchedulerType: "The slurmctld daemon must be restarted for a change
    # in scheduler type to become effective".
    "schedulertype": ((CTLD,), "slurm.conf(5) SchedulerType: restart slurmctld"),
    "prioritytype": ((CTLD,), "slurm.conf(5) PriorityType: plugin loads at slurmctld start"),
    # slurm.conf(5) MaxJobCount: "This value may not be reset via scontrol reconfig. It
    # only takes effect upon restart of the slurmctld daemon."
    "maxjobcount": ((CTLD,), "slurm.conf(5) MaxJobCount: only takes effect on slurmctld restart"),
    # slurm.conf(5) ClusterName: slurmctld refuses to start with a changed ClusterName
    # until the clustername file in StateSaveLocation is removed.
    "clustername": ((CTLD,), "slurm.conf(5) ClusterName: restart slurmctld (and clear clustername state)"),
    "slurmuser": (BOTH, "slurm.conf(5) SlurmUser: daemons drop privileges at start"),
    "slurmduser": ((SLURMD,), "slurm.conf(5) SlurmdUser: slurmd drops privileges at start"),
    "slurmdspooldir": ((SLURMD,), "slurm.conf(5) SlurmdSpoolDir: slurmd opens it at start"),
    "jobcontainertype": ((SLURMD,), "slurm.conf(5) JobContainerType: plugin loads at slurmd start"),
}

# NodeName parameters that describe the node's hardware or how slurmd registers; changing
# them on Slurm < 23.11 needs slurmctld and the slurmd restarted, or the node registers
# with a mismatch and is drained ("gres/gpu count reported lower than configured",
# tests/fixtures/slurm_sinfo_R_gres_gpu_count_reported_lower.txt; stackhpc
# ansible-role-openhpc#199 "CoreSpec differ" after a CPUSpecList change).
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
# NodeName Port is a TCP listening setting: restart on every version (slurm.conf(5) 24.x).
NODE_ALWAYS_RESTART_KEYS = frozenset({"port"})

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
    """A slurm.conf that cannot be parsed, or an invalid version string."""


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

    ``topology/tree`` everywhere; ``topology/block`` only when asked for and Slurm >= 23.11
    (topology.conf(5) 23.11 introduced BlockName/BlockSizes).
    """
    if prefer not in ("tree", "block"):
        raise SlurmConfError(f"topology plugin must be 'tree' or 'block', not {prefer!r}")
    if prefer == "block":
        if version_tuple(version) < TOPOLOGY_BLOCK_SINCE:
            raise SlurmConfError(f"topology/block needs Slurm >= 23.11; the installed Slurm is {version}")
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


def _pairs(number, line):
    if '"' not in line and "'" not in line:
        return _split_pairs(number, line, line.split())  # shlex is ~20x slower; only quotes need it
    try:
        tokens = shlex.split(line, posix=True)
    except ValueError as exc:
        raise SlurmConfError(f"slurm.conf line {number}: {exc}: {line!r}") from exc
    return _split_pairs(number, line, tokens)


def _split_pairs(number, line, tokens):
    pairs = []
    for token in tokens:
        if "=" not in token:
            raise SlurmConfError(f"slurm.conf line {number}: {token!r} is not key=value: {line!r}")
        key, value = token.split("=", 1)
        pairs.append((key, value))
    return pairs


def _names(value, number):
    if value.upper() == "DEFAULT":
        return ["DEFAULT"]
    if not any(c in value for c in "[],"):
        return [value]  # one plain name: skip the NodeSet parser (10,000 NodeName lines)
    try:
        return hostlist_expand(value)
    except HostlistError as exc:
        raise SlurmConfError(f"slurm.conf line {number}: {exc}") from exc


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


def classify_change(old_text, new_text, slurm_version):
    """Decide what applying ``new_text`` over ``old_text`` (slurm.conf) needs.

    Returns ``{"action": "none"|"reconfigure"|"restart", "reasons": [str, ...],
    "daemons": [...]}``; ``daemons`` lists what to restart (empty unless ``restart``).
    ``old_text`` may be empty/None (first install): that is a restart of everything.
    """
    version = version_tuple(slurm_version)
    modern = version >= RECONFIGURE_RESTARTS_DAEMONS
    result = {"action": NONE, "reasons": [], "daemons": set()}

    def bump(action, reason, daemons=()):
        if _RANK[action] > _RANK[result["action"]]:
            result["action"] = action
        result["reasons"].append(reason)
        if action == RESTART:
            result["daemons"].update(daemons)

    if not (old_text or "").strip():
        bump(RESTART, "no previous slurm.conf: daemons start with the new file", BOTH)
        return _finish(result)

    old = parse_slurm_conf(old_text)
    new = parse_slurm_conf(new_text)

    for key, spelling, va, vb in _diff(old["globals"], new["globals"]):
        rule = RESTART_KEYS.get(key)
        change = f"{spelling} changed ({_fmt(va)} -> {_fmt(vb)})"
        if rule is not None:
            daemons, source = rule
            bump(RESTART, f"{change}: needs a restart of {' and '.join(daemons)} [{source}]", daemons)
        else:
            # slurm.conf(5) DESCRIPTION: changes take effect on "scontrol reconfigure"
            # unless otherwise noted.
            bump(RECONFIGURE, f"{change}: scontrol reconfigure")

    if old["includes"] != new["includes"]:
        bump(RECONFIGURE, "Include lines changed: scontrol reconfigure")

    _classify_nodes(old["nodes"], new["nodes"], modern, slurm_version, bump)

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
            # slurm.conf(5) PARTITION CONFIGURATION: partitions are re-read on reconfigure.
            bump(RECONFIGURE, f"{label} {', '.join(changed)} changed: scontrol reconfigure")
    return _finish(result)


def _classify_nodes(old_nodes, new_nodes, modern, slurm_version, bump):
    added = set(new_nodes) - set(old_nodes)
    removed = set(old_nodes) - set(new_nodes)
    for names, verb in ((added, "added"), (removed, "removed")):
        if not names:
            continue
        if modern:
            bump(
                RECONFIGURE,
                f"nodes {verb} ({_fold(names)}): scontrol reconfigure on Slurm "
                f"{slurm_version} >= 23.11 [scontrol(1) 23.11]",
            )
        else:
            # scontrol(1) <= 23.02: "The slurmctld daemon and all slurmd daemons must be
            # restarted if nodes are added to or removed from the cluster."
            bump(
                RESTART,
                f"nodes {verb} ({_fold(names)}): Slurm {slurm_version} < 23.11 needs "
                f"slurmctld and all slurmd restarted [scontrol(1) reconfigure]",
                BOTH,
            )

    by_key = {}
    for node in sorted(set(old_nodes) & set(new_nodes)):
        for key, spelling, _old, _new in _diff(old_nodes[node], new_nodes[node]):
            by_key.setdefault((key, spelling), []).append(node)
    for (key, spelling), nodes in sorted(by_key.items()):
        where = f"NodeName {spelling} changed on {_fold(nodes)}"
        if key in NODE_ALWAYS_RESTART_KEYS:
            bump(
                RESTART,
                f"{where}: slurmd listening port, restart slurmctld and slurmd "
                f"[slurm.conf(5) 24.x: TCP listening settings]",
                BOTH,
            )
        elif key in NODE_RESTART_KEYS and not modern:
            bump(
                RESTART,
                f"{where}: Slurm {slurm_version} < 23.11 re-reads node hardware only "
                f"when slurmctld and slurmd restart (else the node registers with a "
                f"mismatch and drains)",
                BOTH,
            )
        else:
            bump(RECONFIGURE, f"{where}: scontrol reconfigure")


def classify_file_change(filename, old_text, new_text, slurm_version):
    """Classify a change of slurm.conf, gres.conf, topology.conf or cgroup.conf by name."""
    base = filename.rsplit("/", 1)[-1]
    if base == "slurm.conf":
        return classify_change(old_text, new_text, slurm_version)
    if _strip(old_text) == _strip(new_text):
        return {"action": NONE, "reasons": [], "daemons": []}
    modern = version_tuple(slurm_version) >= RECONFIGURE_RESTARTS_DAEMONS
    if base == "gres.conf" and not modern:
        # gres.conf is the node side of NodeName Gres=: slurmd builds its GRES list at
        # start and registers it; on < 23.11 treat it like a NodeName Gres change.
        return {
            "action": RESTART,
            "daemons": [CTLD, SLURMD],
            "reasons": [
                f"gres.conf changed: Slurm {slurm_version} < 23.11 needs slurmd "
                f"(and slurmctld) restarted to register new GRES"
            ],
        }
    if base == "cgroup.conf":
        # cgroup.conf(5): read by slurmd at start (cgroup plugin init).
        return {
            "action": RESTART,
            "daemons": [SLURMD],
            "reasons": ["cgroup.conf changed: slurmd reads it when it starts [cgroup.conf(5)]"],
        }
    # topology.conf(5), gres.conf(5): "Changes ... take effect upon restart of Slurm
    # daemons, daemon receipt of the SIGHUP signal, or execution of scontrol reconfigure".
    return {
        "action": RECONFIGURE,
        "daemons": [],
        "reasons": [f"{base} changed: scontrol reconfigure [{base}(5)]"],
    }


def _strip(text):
    return [line for _n, line in _logical_lines(text)]


def _finish(result):
    daemons = result["daemons"] if result["action"] == RESTART else set()
    result["daemons"] = [d for d in BOTH if d in daemons]
    return result


def plan_apply(changes, daemons):
    """Merge per-file classifications into what one host does.

    ``changes`` are ``classify_file_change`` results; ``daemons`` are the Slurm daemons this host
    runs. Restart the daemons a change needs that run here; a change that needs a daemon restarted
    elsewhere (slurmctld, seen from a compute node) still needs at least ``scontrol reconfigure``.
    Returns ``{"action": none|reconfigure|restart, "restart": [daemons], "reasons": [...]}``.
    """
    restart = sorted({d for c in changes if c["action"] == RESTART for d in c["daemons"]} & set(daemons))
    if restart:
        action = RESTART
    elif any(c["action"] in (RECONFIGURE, RESTART) for c in changes):
        action = RECONFIGURE
    else:
        action = NONE
    return {"action": action, "restart": restart, "reasons": [r for c in changes for r in c["reasons"]]}
