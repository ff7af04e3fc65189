# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What slurm.conf(5) says, per Slurm release series: the keys it documents, and the sentences that
make a change need a restart, a live check that no job is lost, or a refusal.

Read from SchedMD/slurm at the tags in :data:`TAGS` (22.05.8 is Debian 12's Slurm, 24.11.5
Debian 13's): doc/man/man5/slurm.conf.5 for the keys (each ``.TP`` entry at the top level of
PARAMETERS, NODE CONFIGURATION, DOWN NODE CONFIGURATION, FRONTEND NODE CONFIGURATION, NODESET
CONFIGURATION and PARTITION CONFIGURATION) and for the sentences, doc/man/man1/scontrol.1 for the
reconfigure sentences. Data only: module_utils/slurm_change.py decides; the unit tests check that
no decision is weaker than :data:`MAN_RULES`.
"""

from collections import namedtuple

# Release series -> the tag its man pages were read at.
TAGS = {
    (22, 5): "slurm-22-05-8-1",
    (23, 2): "slurm-23-02-8-1",
    (23, 11): "slurm-23-11-11-1",
    (24, 5): "slurm-24-05-8-1",
    (24, 11): "slurm-24-11-5-1",
}

# Keys slurm.conf(5) slurm-22-05-8-1 documents, by the line they sit on: "globals", or the first key
# of an object line (NodeName=..., PartitionName=..., NodeSet=..., DownNodes=..., FrontendName=...),
# whose own name is listed with its keys.
_BASE = {
    "globals": """
        AccountingStorageBackupHost AccountingStorageEnforce AccountingStorageExternalHost
        AccountingStorageHost AccountingStorageParameters AccountingStoragePass
        AccountingStoragePort AccountingStorageTRES AccountingStorageType AccountingStorageUser
        AccountingStoreFlags AcctGatherEnergyType AcctGatherFilesystemType
        AcctGatherInterconnectType AcctGatherNodeFreq AcctGatherProfileType AllowSpecResourcesUsage
        AuthAltParameters AuthAltTypes AuthInfo AuthType BackupAddr BackupController
        BatchStartTimeout BcastExclude BcastParameters BurstBufferType CliFilterPlugins ClusterName
        CommunicationParameters CompleteWait ControlAddr ControlMachine CoreSpecPlugin CpuFreqDef
        CpuFreqGovernors CredType DebugFlags DefCpuPerGPU DefMemPerCPU DefMemPerGPU DefMemPerNode
        DependencyParameters DisableRootJobs EioTimeout EnforcePartLimits Epilog EpilogMsgTime
        EpilogSlurmctld ExtSensorsFreq ExtSensorsType FairShareDampeningFactor FederationParameters
        FirstJobId GetEnvTimeout GpuFreqDef GresTypes GroupUpdateForce GroupUpdateTime
        HealthCheckInterval HealthCheckNodeState HealthCheckProgram InactiveLimit
        InteractiveStepOptions JobAcctGatherFrequency JobAcctGatherParams JobAcctGatherType
        JobCompHost JobCompLoc JobCompParams JobCompPass JobCompPort JobCompType JobCompUser
        JobContainerType JobFileAppend JobRequeue JobSubmitPlugins KillOnBadExit KillWait
        LaunchParameters LaunchType Licenses LogTimeFormat MailDomain MailProg MaxArraySize
        MaxDBDMsgs MaxJobCount MaxJobId MaxMemPerCPU MaxMemPerNode MaxNodeCount MaxStepCount
        MaxTasksPerNode MCSParameters MCSPlugin MessageTimeout MinJobAge MpiDefault MpiParams
        NodeFeaturesPlugins OverTimeLimit PluginDir PlugStackConfig PowerParameters PowerPlugin
        PreemptExemptTime PreemptMode PreemptType PrEpParameters PrEpPlugins PriorityCalcPeriod
        PriorityDecayHalfLife PriorityFavorSmall PriorityFlags PriorityMaxAge PriorityParameters
        PrioritySiteFactorParameters PrioritySiteFactorPlugin PriorityType PriorityUsageResetPeriod
        PriorityWeightAge PriorityWeightAssoc PriorityWeightFairshare PriorityWeightJobSize
        PriorityWeightPartition PriorityWeightQOS PriorityWeightTRES PrivateData ProctrackType
        Prolog PrologEpilogTimeout PrologFlags PrologSlurmctld PropagatePrioProcess
        PropagateResourceLimits PropagateResourceLimitsExcept RebootProgram ReconfigFlags
        RequeueExit RequeueExitHold ResumeFailProgram ResumeProgram ResumeRate ResumeTimeout
        ResvEpilog ResvOverRun ResvProlog ReturnToService RoutePlugin SchedulerParameters
        SchedulerTimeSlice SchedulerType ScronParameters SelectType SelectTypeParameters
        SlurmctldAddr SlurmctldDebug SlurmctldHost SlurmctldLogFile SlurmctldParameters
        SlurmctldPidFile SlurmctldPlugstack SlurmctldPort SlurmctldPrimaryOffProg
        SlurmctldPrimaryOnProg SlurmctldSyslogDebug SlurmctldTimeout SlurmdDebug SlurmdLogFile
        SlurmdParameters SlurmdPidFile SlurmdPort SlurmdSpoolDir SlurmdSyslogDebug SlurmdTimeout
        SlurmdUser SlurmSchedLogFile SlurmSchedLogLevel SlurmUser SrunEpilog SrunPortRange
        SrunProlog StateSaveLocation SuspendExcNodes SuspendExcParts SuspendProgram SuspendRate
        SuspendTime SuspendTimeout SwitchParameters SwitchType TaskEpilog TaskPlugin TaskPluginParam
        TaskProlog TCPTimeout TmpFS TopologyParam TopologyPlugin TrackWCKey TreeWidth
        UnkillableStepProgram UnkillableStepTimeout UsePAM VSizeFactor WaitTime X11Parameters
    """,
    "nodename": """
        BcastAddr Boards CoreSpecCount CoresPerSocket CpuBind CPUs CpuSpecList Features Gres
        MemSpecLimit NodeAddr NodeHostname NodeName Port Procs RealMemory Reason Sockets
        SocketsPerBoard State ThreadsPerCore TmpDisk Weight
    """,
    "partitionname": """
        AllocNodes AllowAccounts AllowGroups AllowQos Alternate CpuBind Default DefaultTime
        DefCpuPerGPU DefMemPerCPU DefMemPerGPU DefMemPerNode DenyAccounts DenyQos DisableRootJobs
        ExclusiveUser GraceTime Hidden LLN MaxCPUsPerNode MaxMemPerCPU MaxMemPerNode MaxNodes
        MaxTime MinNodes Nodes OverSubscribe OverTimeLimit PartitionName PreemptMode
        PriorityJobFactor PriorityTier QOS ReqResv ResumeTimeout RootOnly SelectTypeParameters
        Shared State SuspendTime SuspendTimeout TRESBillingWeights
    """,
    "nodeset": "Feature Nodes NodeSet",
    "downnodes": "DownNodes Reason State",
    "frontendname": "AllowGroups AllowUsers DenyGroups DenyUsers FrontendAddr FrontendName Port Reason State",
}

# What each later tag's page adds and drops against the tag before it: {line: (added, dropped)}.
_CHANGES = {
    (23, 2): {
        "globals": ("MaxBatchRequeue PreemptParameters SuspendExcStates", "LaunchType SlurmctldPlugstack"),
        "partitionname": ("MaxCPUsPerSocket PowerDownOnIdle", ""),
    },
    (23, 11): {
        "globals": ("", "ExtSensorsFreq ExtSensorsType RoutePlugin"),
    },
    (24, 5): {
        "globals": ("HashPlugin", "CoreSpecPlugin PowerParameters PowerPlugin"),
        "nodename": ("RestrictedCoresPerGPU", ""),
        "partitionname": ("ExclusiveTopo", ""),
    },
    (24, 11): {
        "globals": ("DataParserParameters", ""),
    },
}

# Keys Slurm still reads under an old spelling that the page no longer documents, and what it reads
# them as: src/common/read_config.c (22.05 and 24.11) reads CryptoType when CredType is unset.
OLD_SPELLINGS = {"cryptotype": "CredType"}


def _build():
    keys, current = {}, {line: frozenset(text.split()) for line, text in _BASE.items()}
    for series in sorted(TAGS):
        for line, (added, dropped) in _CHANGES.get(series, {}).items():
            current[line] = (current[line] - frozenset(dropped.split())) | frozenset(added.split())
        keys[series] = dict(current)
    return keys


# {series: {line: frozenset(key spellings)}}; compare in lower case (Slurm's parser ignores case).
KEYS = _build()

ManRule = namedtuple("ManRule", "series where key need daemons page sentence example")
ManRule.__doc__ = """One man-page sentence and the least a change it speaks of needs.

series   the release series (keys of TAGS) whose page has the sentence;
where    ``global`` (a global key changes), ``node`` (a NodeName key changes), ``node added``,
         ``partition removed`` or ``primary controller`` (the first SlurmctldHost moves);
key      the key; need: ``restart`` (the daemons named), ``stop_all`` (every daemon stops, then
         starts), ``no_jobs`` (only with no job in the cluster), ``no_jobs_in_partition`` or
         ``refuse``;
page     man page and section; sentence: the one sentence it follows, as the page words it;
example  (old value, new value) where any change will not do; None: any change.
"""

_22 = ((22, 5), (23, 2))
_24 = ((23, 11), (24, 5), (24, 11))
_ALL = _22 + _24
_CTLD = ("slurmctld",)
_BOTH = ("slurmctld", "slurmd")
_SC = "slurm.conf(5)"
_NEED_CTLD = "A restart of slurmctld is required for changes to this parameter to take effect."
_NEED_BOTH = "A restart of slurmctld and the slurmd daemons is required for changes to this parameter to take effect."
_TCP = "Changes to TCP listening settings will require a daemon restart."
_AUTH = "This will not be able to change the daemons' listening TCP port settings or authentication mechanism."


def _restart(series, key, daemons, sentence, page=_SC, example=None, where="global"):
    return ManRule(series, where, key, "restart", daemons, page, sentence, example)


MAN_RULES = (
    # Restart notes of the 22.05 and 23.02 pages.
    _restart(_22, "AccountingStorageEnforce", _CTLD, _NEED_CTLD),
    _restart(
        _22,
        "CoreSpecPlugin",
        ("slurmd",),
        "A restart of the slurmd daemons is required for changes to this parameter to take effect.",
    ),
    _restart(_22, "CredType", _CTLD, _NEED_CTLD),
    _restart(
        _22, "GresTypes", _BOTH, "A restart of slurmctld and the slurmd daemons is required for this to take effect."
    ),
    _restart(_22, "JobContainerType", _CTLD, _NEED_CTLD),
    _restart(_22, "MaxJobCount", _CTLD, _NEED_CTLD),
    _restart(
        _22,
        "MaxNodeCount",
        _CTLD,
        "The slurmctld daemon must be restarted for changes to this parameter to take effect.",
    ),
    _restart(_22, "PluginDir", _BOTH, _NEED_BOTH),
    _restart(_22, "PowerPlugin", _CTLD, _NEED_CTLD),
    _restart(_22, "ProctrackType", _CTLD, _NEED_CTLD),
    _restart(
        _22,
        "SchedulerParameters",
        _CTLD,
        _NEED_CTLD,
        page=f"{_SC} SchedulerParameters no_backup_scheduling",
        example=("bf_interval=30", "bf_interval=30,no_backup_scheduling"),
    ),
    _restart(_22, "SchedulerType", _CTLD, _NEED_CTLD),
    _restart(
        _22,
        "SelectType",
        _BOTH,
        "A restart of slurmctld and slurmd is required for changes to this parameter to take effect.",
    ),
    _restart(_22, "SelectTypeParameters", _CTLD, _NEED_CTLD),
    _restart(_22, "SlurmctldHost", _CTLD, _NEED_CTLD, example=("ctl3", "ctl4")),
    _restart(_22, "SlurmctldParameters", _CTLD, _NEED_CTLD, page=f"{_SC} SlurmctldParameters enable_configless"),
    _restart(_22, "SlurmctldPort", _CTLD, _NEED_CTLD),
    _restart(_22, "SlurmdPort", _CTLD, _NEED_CTLD),
    _restart(_22, "StateSaveLocation", _CTLD, _NEED_CTLD),
    _restart(
        _22,
        "SwitchType",
        _BOTH,
        "All Slurm daemons, commands and running jobs must be restarted for a change in SwitchType to take effect.",
    ),
    _restart(
        ((23, 2),),
        "JobCompLoc",
        _CTLD,
        "NOTE: The librdkafka parameters configured in the file referenced by this option take effect upon "
        "slurmctld restart.",
    ),
    _restart(
        _22,
        "CPUs",
        _BOTH,
        "Changes in node configuration (e.g. adding nodes, changing their processor count, etc.) require "
        "restarting both the slurmctld daemon and the slurmd daemons.",
        page=f"{_SC} NODE CONFIGURATION",
        example=("8", "16"),
        where="node",
    ),
    _restart(
        _22,
        "NodeName",
        _BOTH,
        "The slurmctld daemon and all slurmd daemons must also be restarted if nodes are added to or removed "
        "from the cluster.",
        page="scontrol(1) reconfigure",
        where="node added",
    ),
    # Restart notes from 23.11 on, where a reconfigure starts new daemon processes.
    _restart(_24, "SlurmctldPort", _BOTH, _TCP, page=f"{_SC} DESCRIPTION"),
    _restart(_24, "SlurmdPort", _BOTH, _TCP, page=f"{_SC} DESCRIPTION"),
    _restart(_24, "Port", _BOTH, _TCP, page=f"{_SC} DESCRIPTION", example=("6818", "7818"), where="node"),
    _restart(_24, "AuthAltTypes", _BOTH, _AUTH, page="scontrol(1) reconfigure"),
    _restart(_24, "AuthAltParameters", _BOTH, _AUTH, page="scontrol(1) reconfigure"),
    _restart(_24, "AuthInfo", _BOTH, _AUTH, page="scontrol(1) reconfigure"),
    # Every release.
    ManRule(
        _ALL,
        "global",
        "AuthType",
        "stop_all",
        _BOTH,
        f"{_SC} AuthType",
        "All Slurm daemons and commands must be terminated prior to changing the value of AuthType and later "
        "restarted.",
        None,
    ),
    # What loses jobs.
    ManRule(
        _ALL,
        "global",
        "SelectType",
        "no_jobs",
        (),
        f"{_SC} SelectType",
        "When changed, all job information (running and pending) will be lost, since the job state save format "
        "used by each plugin is different.",
        None,
    ),
    ManRule(
        _ALL,
        "global",
        "SwitchType",
        "no_jobs",
        (),
        f"{_SC} SwitchType",
        "If running jobs exist at the time slurmctld is restarted with a new value of SwitchType, records of "
        "all jobs in any state may be lost.",
        None,
    ),
    ManRule(
        _ALL,
        "global",
        "StateSaveLocation",
        "no_jobs",
        (),
        f"{_SC} StateSaveLocation",
        "Since all running and pending job information is stored here, the use of a reliable file system "
        "(e.g. RAID) is recommended.",
        None,
    ),
    ManRule(
        _ALL,
        "partition removed",
        "PartitionName",
        "no_jobs_in_partition",
        (),
        f"{_SC} PARTITION CONFIGURATION",
        "If a partition that is in use is deleted from the configuration and slurm is restarted or reconfigured "
        "(scontrol reconfigure), jobs using the partition are canceled.",
        None,
    ),
    ManRule(
        _22,
        "primary controller",
        "SlurmctldHost",
        "refuse",
        (),
        f"{_SC} RELOCATING CONTROLLERS",
        "1. Stop the Slurm daemons",
        None,
    ),
    ManRule(
        _24,
        "primary controller",
        "SlurmctldHost",
        "refuse",
        (),
        f"{_SC} RELOCATING CONTROLLERS",
        "3. Copy the files from the StateSaveLocation to the new controller or ensure that they are accessible "
        "to the new controller via a shared drive.",
        None,
    ),
)
