"""Parse Slurm's live node state (``scontrol show node -o``, ``sinfo -R``) into plain dicts.

Pure functions: the caller runs the command and passes its text in. Input that cannot be read raises
``ValueError`` naming the line and the field; nothing is guessed.
"""

import re

from ansible.module_utils.node_reason import is_ours, parse_reason

# Base states Slurm prints first in State= (node_state_string_complete); DRAINING/DRAINED/ALLOC/MIX are the
# derived or short names older releases and sinfo print.
BASE_STATES = frozenset(
    {"UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE", "COMPLETING", "DRAINING", "DRAINED",
     "ALLOC", "MIX", "DRAIN", "CLOUD", "POWERED_DOWN", "PLANNED"}
)
_BASE_ALIASES = {"ALLOC": "ALLOCATED", "MIX": "MIXED"}
# Suffix characters Slurm appends to a state name (see sinfo(1) NODE STATE CODES).
SUFFIX_FLAGS = {
    "*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP", "!": "POWER_DOWN", "%": "POWERING_DOWN",
    "$": "MAINT", "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED", "-": "PLANNED",
}
BUSY_STATES = frozenset({"ALLOCATED", "MIXED", "COMPLETING", "DRAINING"})
SERVING_STATES = frozenset({"IDLE", "ALLOCATED", "MIXED", "COMPLETING"})
# Flags that keep a node from taking the pool's new jobs. An active MAINT reservation (scontrol prints the
# flag as MAINTENANCE, sinfo's "$" suffix reads as MAINT) lets only that reservation's jobs in.
HOLD_FLAGS = frozenset(
    {"DRAIN", "FAIL", "NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "POWERING_UP",
     "REBOOT_REQUESTED", "REBOOT_ISSUED", "INVALID_REG", "FUTURE", "BLOCKED", "MAINT", "MAINTENANCE"}
)

_KEY_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)=(.*)$")
# Reason=<text> [<user>@<time>]; the text may hold spaces and '=', so it is cut out before tokenising.
_REASON_RE = re.compile(r"(?:^|\s)Reason=(.*?)\s\[([^\]@\s]*)@([^\]\s]*)\]")
_REASON_BARE_RE = re.compile(r"(?:^|\s)Reason=(.*?)(?=\s(?:Comment|Extra|ExtSensors\w*|Instance\w*)=|$)")
# Comment= and Extra= (Slurm 22.05+) follow the reason, in that order, then InstanceId/InstanceType and
# ReservationName (slurm_sprint_node_table). Their text is free (an admin's note may hold spaces and "State=..."),
# so each is cut out before tokenising, where it could otherwise overwrite an earlier field.
_FREE_TEXT_RE = {
    "Comment": re.compile(r"(?:^|\s)Comment=(.*?)(?=\s(?:Extra|InstanceId|InstanceType|ReservationName)=|$)"),
    "Extra": re.compile(r"(?:^|\s)Extra=(.*?)(?=\s(?:InstanceId|InstanceType|ReservationName)=|$)"),
}


def parse_state(value, where="State"):
    """Split a Slurm state such as ``IDLE+DRAIN`` or ``DOWN*+DRAIN`` into ``(base, flags)``.

    ``DRAINING``/``DRAINED``/``DRAIN`` as a base add the ``DRAIN`` flag; suffix characters (``*``, ``~``, ...)
    become flags. An unknown base state raises ``ValueError``.
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: empty Slurm state")
    parts = value.strip().upper().split("+")
    flags = set()
    words = []
    for part in parts:
        word = part
        while word and word[-1] in SUFFIX_FLAGS:
            flags.add(SUFFIX_FLAGS[word[-1]])
            word = word[:-1]
        if not word:
            raise ValueError(f"{where}: cannot read Slurm state {value!r}")
        words.append(word)
    base = _BASE_ALIASES.get(words[0], words[0])
    if base not in BASE_STATES:
        raise ValueError(f"{where}: unknown Slurm base state {words[0]!r} in {value!r}")
    flags.update(words[1:])
    if base in ("DRAINING", "DRAINED", "DRAIN"):
        flags.add("DRAIN")
    if base == "DRAIN":
        base = "IDLE"
    return base, flags


def _tokenise(line):
    """Return ``{key: value}`` for one ``scontrol -o`` line; a word without ``=`` continues the value."""
    fields = {}
    key = None
    for word in line.split():
        match = _KEY_RE.match(word)
        if match:
            key = match.group(1)
            fields[key] = match.group(2)
        elif key is None:
            raise ValueError(f"cannot read {word!r} before the first key")
        else:
            fields[key] = f"{fields[key]} {word}" if fields[key] else word
    return fields


def _int(fields, key, where):
    value = fields.get(key)
    if value in (None, "", "N/A", "n/a"):
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{where}: {key}={value!r} is not an integer") from None


def _none(value):
    return None if value in (None, "", "(null)", "N/A", "none", "None") else value


def parse_scontrol_node_line(line, lineno=1):
    """Parse one ``scontrol show node -o`` line into the node dict described in ``parse_scontrol_nodes``."""
    where = f"scontrol line {lineno}"
    text = line.strip()
    if not text.startswith("NodeName="):
        raise ValueError(f"{where}: does not start with NodeName= (is this `scontrol show node -o` output?)")
    reason = reason_user = reason_time = None
    match = _REASON_RE.search(text)
    if match:
        reason, reason_user, reason_time = match.group(1).strip(), match.group(2), match.group(3)
        text = text[: match.start()] + " " + text[match.end():]
    else:
        match = _REASON_BARE_RE.search(text)
        if match:
            reason = match.group(1).strip()
            text = text[: match.start()] + " " + text[match.end():]
    free = {}
    for key, pattern in _FREE_TEXT_RE.items():
        match = pattern.search(text)
        if match:
            free[key] = match.group(1).strip()
            text = text[: match.start()] + " " + text[match.end():]
    try:
        fields = _tokenise(text)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    fields.update(free)
    name = fields.get("NodeName", "")
    if not name:
        raise ValueError(f"{where}: NodeName is empty")
    where = f"{where} (node {name})"
    if "State" not in fields:
        raise ValueError(f"{where}: no State= field")
    base, flags = parse_state(fields["State"], where=f"{where} State")
    busy = base in BUSY_STATES or "COMPLETING" in flags
    partitions = [p for p in (_none(fields.get("Partitions")) or "").split(",") if p]
    return {
        "name": name,
        "state": base,
        "flags": flags,
        "state_raw": fields["State"],
        "reason": _none(reason),
        "reason_user": reason_user,
        "reason_time": reason_time,
        "comment": _none(free.get("Comment")),
        "extra": _none(free.get("Extra")),
        "partitions": partitions,
        "gres": _none(fields.get("Gres")),
        "cpu_alloc": _int(fields, "CPUAlloc", where),
        "cpu_total": _int(fields, "CPUTot", where),
        "alloc_tres": _none(fields.get("AllocTRES")),
        "cfg_tres": _none(fields.get("CfgTRES")),
        "busy": busy,
        "fields": fields,
    }


def parse_scontrol_nodes(text):
    """Parse ``scontrol show node -o`` (one line per node) into ``{name: node}``, in input order.

    Each node: ``name``, ``state`` (base, e.g. ``IDLE``), ``flags`` (set, e.g. ``{"DRAIN"}``), ``state_raw``,
    ``reason`` / ``reason_user`` / ``reason_time`` (``None`` when unset), ``comment`` and ``extra`` (Slurm
    22.05's free-text node fields, ``None`` when unset), ``partitions`` (list), ``gres``,
    ``cpu_alloc``, ``cpu_total``, ``alloc_tres``, ``cfg_tres``, ``busy`` (jobs running: ALLOCATED, MIXED,
    COMPLETING or DRAINING) and ``fields`` (every key as printed). Raises ``ValueError`` on unreadable input.
    """
    if not isinstance(text, str):
        raise ValueError("scontrol output must be text")
    nodes = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.strip() == "No nodes in the system":
            continue
        node = parse_scontrol_node_line(line, lineno)
        if node["name"] in nodes:
            raise ValueError(f"scontrol line {lineno}: node {node['name']} appears twice")
        nodes[node["name"]] = node
    return nodes


def node_pool_state(node):
    """Derive what the pool executor needs from one parsed Slurm node.

    Returns ``{in_service, drained_by_us, draining, idle, held_by_admin, reason_parsed}``: ``in_service``
    is a node that takes new jobs (a serving base state, no holding flag, in at least one partition);
    ``drained_by_us`` is a drain whose reason carries the toolkit's tag (only those may be resumed);
    ``draining`` is drained with jobs still running; ``idle`` is no job running; ``held_by_admin`` is a
    drain whose reason is not ours.
    """
    for key in ("state", "flags", "busy", "partitions"):
        if key not in node:
            raise ValueError(f"node_pool_state: {node.get('name', '?')}: parsed node lacks {key!r}")
    flags = node["flags"]
    drained = "DRAIN" in flags
    ours = is_ours(node.get("reason"))
    serving = node["state"] in SERVING_STATES and not (flags & HOLD_FLAGS) and bool(node["partitions"])
    return {
        "in_service": serving,
        "drained_by_us": drained and ours,
        "draining": drained and node["busy"],
        "idle": not node["busy"],
        "held_by_admin": drained and not ours,
        "reason_parsed": parse_reason(node.get("reason")),
    }


def parse_sinfo_reasons(text):
    """Parse ``sinfo -R`` (default format: REASON USER TIMESTAMP NODELIST) into a list of dicts.

    Columns are cut at the header's positions, so a reason with spaces survives; note that sinfo's default
    format cuts the reason to 20 characters. Lines starting with ``#`` are skipped.
    """
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines:
        return []
    header = lines[0]
    cols = ("REASON", "USER", "TIMESTAMP", "NODELIST")
    starts = [header.find(c) for c in cols]
    if starts[0] != 0 or any(s < 0 for s in starts) or starts != sorted(starts):
        raise ValueError(f"sinfo -R: header {header!r} is not REASON USER TIMESTAMP NODELIST")
    rows = []
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        if not cells[3]:
            raise ValueError(f"sinfo -R: no node list in {line!r}")
        rows.append(dict(zip(("reason", "user", "timestamp", "nodelist"), cells, strict=True)))
    return rows
