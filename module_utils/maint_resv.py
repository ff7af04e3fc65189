"""Slurm reservation mode of rolling maintenance: a wave held by a MAINT reservation, not drained at once.

Pure functions (docs/maintenance.md, "Slurm reservation mode"). In reservation mode a wave's Slurm nodes go
into one reservation, ``gpufleet-maint-<run>-<first node>``, that starts when the last job running on them
ends (their time left, read with ``squeue``), so the scheduler stops starting jobs there that would run into
it (backfilling shorter ones) and the nodes fall idle together. Once it is active and the nodes are idle,
the executor holds them with the maintenance drain reason and deletes the reservation; from there the
steps are drain mode's (change, reboot, gate, resume).

Flags (scontrol(1), "RESERVATIONS", the same at slurm-22-05-8-1 and slurm-24-11-5-1): ``MAINT``
("Maintenance mode, receives special accounting treatment. This reservation is permitted to use resources
that are already in another reservation", so the gate's own NCCL pair reservation and a killed run's
reservation do not block it) and ``IGNORE_JOBS`` ("Ignore currently running jobs when creating the
reservation"): reservations.html says that without it "only resources which are not expected to have a
running job at the start time can be reserved", which fails for a job that overruns its limit, is still
COMPLETING, or has no time limit. A new reservation needs ``Users`` (or Groups/Accounts) and a
``Duration`` or ``EndTime``; the duration here is finite, so a reservation a killed run leaves ends by
itself.
"""

import math
import re

from ansible.module_utils.hostlist import hostlist_expand, hostlist_fold

PREFIX = "gpufleet-maint-"
FLAGS = ("MAINT", "IGNORE_JOBS")
# squeue for the jobs on a wave's nodes: id, state, time left, nodes (one line each, no header).
SQUEUE_STATES = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED"
SQUEUE_FORMAT = "%i|%T|%L|%N"
_TOKEN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_KEY_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_/:]*)=(.*)$")
_LEFT_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")
_NO_LIMIT = ("UNLIMITED", "NOT_SET", "INVALID", "N/A", "")


def reservation_name(run_id, nodes):
    """``gpufleet-maint-<run>-<first node>``: one per wave and run, found again by name after a kill."""
    if not nodes:
        raise ValueError("a reservation needs at least one node")
    first = sorted(nodes)[0]
    for what, value in (("run id", run_id), ("node", first)):
        if not isinstance(value, str) or not _TOKEN_RE.match(value):
            raise ValueError(f"reservation {what} {value!r} must be letters, digits, '.', '_' or '-'")
    return f"{PREFIX}{run_id}-{first}"


def squeue_argv(nodes):
    """The read-only squeue call whose output ``parse_squeue_jobs`` reads."""
    return ["squeue", "--noheader", f"--states={SQUEUE_STATES}", f"--nodelist={hostlist_fold(sorted(nodes))}",
            f"--format={SQUEUE_FORMAT}"]


def parse_time_left(text):
    """Seconds of a squeue ``%L`` (``[days-][hours:]minutes:seconds``); None for no limit (UNLIMITED,
    NOT_SET, INVALID). Anything else raises ValueError: a time not understood is never guessed."""
    value = (text or "").strip()
    if value.upper() in _NO_LIMIT:
        return None
    match = _LEFT_RE.match(value)
    if not match:
        raise ValueError(f"squeue time left {text!r} is not [days-][hours:]minutes:seconds")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def parse_squeue_jobs(text):
    """``[{job, state, left, nodes}]`` from ``squeue --noheader --format=%i|%T|%L|%N`` (``squeue_argv``).

    ``left`` is seconds or None (no time limit); ``nodes`` the expanded node names.
    """
    jobs = []
    for lineno, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.strip().split("|")
        if len(parts) != 4 or not parts[0]:
            raise ValueError(f"squeue line {lineno}: expected job|state|time left|nodes, got {line!r}")
        job, state, left, nodelist = parts
        jobs.append({"job": job, "state": state, "left": parse_time_left(left),
                     "nodes": hostlist_expand(nodelist) if nodelist else []})
    return jobs


def start_delay(jobs, nodes):
    """Minutes from now until the last job on *nodes* ends (rounded up), or 0 (start now).

    Returns ``(minutes, why)``. A job with no time limit has no end: the reservation starts now
    (IGNORE_JOBS lets it over the job) and the wave waits for the job as drain mode does.
    """
    wanted = set(nodes)
    mine = [j for j in jobs if wanted & set(j["nodes"])]
    if not mine:
        return 0, "no job runs on the wave's nodes"
    endless = sorted(j["job"] for j in mine if j["left"] is None)
    if endless:
        return 0, f"job(s) {', '.join(endless)} have no time limit: the reservation starts now"
    last = max(j["left"] for j in mine)
    return math.ceil(last / 60.0), f"the last of {len(mine)} job(s) ends in {last}s"


def create_argv(name, nodes, minutes, duration, users):
    """``scontrol create reservation`` for *nodes*, starting *minutes* from now, lasting *duration* minutes."""
    if not _is_int(minutes) or minutes < 0:
        raise ValueError(f"reservation start must be a non-negative number of minutes, got {minutes!r}")
    if not _is_int(duration) or duration < 1:
        raise ValueError(f"reservation duration must be a positive number of minutes, got {duration!r}")
    if not users or not all(isinstance(u, str) and _TOKEN_RE.match(u) for u in users):
        raise ValueError(f"reservation users must be a non-empty list of user names, got {users!r}")
    start = "now" if minutes == 0 else f"now+{minutes}minutes"
    return ["scontrol", "create", "reservation", f"ReservationName={name}", f"Nodes={hostlist_fold(sorted(nodes))}",
            f"StartTime={start}", f"Duration={duration}", f"Users={','.join(users)}", f"Flags={','.join(FLAGS)}"]


def delete_argv(name):
    return ["scontrol", "delete", f"ReservationName={name}"]


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _fields(chunk):
    fields, key = {}, None
    for word in chunk.split():
        match = _KEY_RE.match(word)
        if match:
            key = match.group(1)
            fields[key] = match.group(2)
        elif key is None:
            raise ValueError(f"cannot read {word!r} before ReservationName=")
        else:
            fields[key] = f"{fields[key]} {word}" if fields[key] else word
    return fields


def parse_reservations(text):
    """``{name: {name, state, start, end, nodes, flags, users}}`` from ``scontrol show reservation``
    (one line each with ``-o``, or the multi-line form). "No reservations in the system" is ``{}``.

    A reservation without a name, a State or its nodes raises ValueError (never read as absent).
    """
    body = (text or "").strip()
    if not body or body.startswith("No reservations in the system"):
        return {}
    chunks = re.split(r"(?=(?:^|\s)ReservationName=)", body)
    out = {}
    for chunk in chunks:
        if not chunk.strip():
            continue
        fields = _fields(chunk)
        name = fields.get("ReservationName")
        if not name:
            raise ValueError(f"scontrol show reservation: no ReservationName in {chunk.strip()[:80]!r}")
        for key in ("State", "Nodes"):
            if key not in fields:
                raise ValueError(f"scontrol show reservation: {name} has no {key}=")
        nodes = fields["Nodes"]
        out[name] = {
            "name": name,
            "state": fields["State"].upper(),
            "start": fields.get("StartTime"),
            "end": fields.get("EndTime"),
            "nodes": [] if nodes in ("", "(null)") else hostlist_expand(nodes),
            "flags": [f for f in (fields.get("Flags") or "").upper().split(",") if f],
            "users": [u for u in (fields.get("Users") or "").split(",") if u and u != "(null)"],
        }
    return out


def ours(reservations):
    """The reservations this toolkit made for maintenance (by name)."""
    return {n: r for n, r in (reservations or {}).items() if n.startswith(PREFIX)}


def plan_wave(nodes, reservations, jobs, run_id, timeout, duration, users):
    """What a wave in reservation mode does: ``{name, create, argv, minutes, why, wait, stale, delete}``.

    - An existing reservation of ours that holds every node of the wave (a killed run's) is taken over:
      nothing is created, the wave waits for it as it is.
    - Otherwise a new one starts when the last job on the nodes ends (``start_delay``).
    - ``wait``: whether this run waits for it (it starts within *timeout* seconds); if not, the nodes
      are drained at once and the wave goes on as drain mode (the jobs keep running, the node waits).
    - ``stale``: other reservations of ours over any of the wave's nodes (killed runs): deleted with the
      wave's own once its nodes are held by the maintenance drain (``delete``: every name to delete).
    """
    if not nodes:
        return {"name": None, "create": False, "argv": [], "minutes": 0, "why": "no node to reserve",
                "wait": False, "stale": [], "delete": []}
    wanted = set(nodes)
    mine = ours(reservations)
    taken = sorted(n for n, r in mine.items() if wanted <= set(r["nodes"]) and r["state"] in ("ACTIVE", "INACTIVE"))
    if taken:
        name = taken[0]
        minutes, why = 0, f"reservation {name} of an earlier run holds the wave's nodes: taken over"
        create, argv = False, []
        wait = True
    else:
        name = reservation_name(run_id, nodes)
        minutes, why = start_delay(jobs, nodes)
        create = name not in mine
        argv = create_argv(name, nodes, minutes, duration, users) if create else []
        wait = minutes * 60 <= int(timeout)
    stale = sorted(n for n, r in mine.items() if n != name and wanted & set(r["nodes"]))
    return {"name": name, "create": create, "argv": argv, "minutes": minutes, "why": why, "wait": wait,
            "stale": stale, "delete": sorted({name, *stale})}


def ready(reservations, name, views, nodes):
    """Whether the wave may be held now: its reservation is ACTIVE and none of *nodes* runs a job.

    *views*: slurm_node_info's ``nodes``. A reservation that is gone, or a node Slurm does not report,
    is not ready (fail closed); the caller's timeout decides what happens then.
    """
    resv = (reservations or {}).get(name)
    if not resv or resv["state"] != "ACTIVE":
        return False
    for node in nodes:
        view = (views or {}).get(node)
        if not view or view.get("busy"):
            return False
    return True
