# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostlist expressions (``gpu[01-04]``) folded and expanded through ClusterShell.

Slurm reads node and switch lists as hostlist expressions (slurm.conf ``Nodes=``,
topology.conf ``Nodes=``/``Switches=``). ClusterShell's ``NodeSet`` is the reference
implementation used here; a fast path handles the common case (one trailing number per
name) without building ``NodeSet`` objects and gives the same text (a property test
checks that), so rendering 10,000 nodes costs milliseconds.

Only the last numeric run of a name is folded (``fold_axis=[-1]``): Slurm's hostlist
parser understands one bracket group per name, so ``rack1-n01,rack2-n01`` stays
as it is instead of becoming ClusterShell's two-dimensional ``rack[1-2]-n01``.
"""

import re

try:
    from ClusterShell.NodeSet import NodeSet, NodeSetParseError

    HAS_CLUSTERSHELL = True
except ImportError:  # pragma: no cover - exercised only where ClusterShell is missing
    NodeSet = None
    NodeSetParseError = ValueError
    HAS_CLUSTERSHELL = False

# A name the fast path can fold: a prefix without digits or NodeSet syntax, then digits.
_SIMPLE = re.compile(r"^([^\d\[\],!&^\s]*)(\d*)$")
_SPECIAL = re.compile(r"[\[\],!&^\s]")


class HostlistError(ValueError):
    """A hostlist that cannot be folded or expanded."""


def _require_clustershell():
    if not HAS_CLUSTERSHELL:
        raise HostlistError("ClusterShell is required for hostlists: pip install ClusterShell")


def _ranges(numbers):
    """Fold sorted, distinct ints into ``a-b`` runs, keeping each value's text."""
    out = []
    start = prev = None
    for value, text in numbers:
        if start is None:
            start = prev = (value, text)
        elif value == prev[0] + 1:
            prev = (value, text)
        else:
            out.append(start[1] if start == prev else f"{start[1]}-{prev[1]}")
            start = prev = (value, text)
    if start is not None:
        out.append(start[1] if start == prev else f"{start[1]}-{prev[1]}")
    return out


def _fast_fold(names):
    """Fold names of the form <letters><digits>; None where the fast path does not apply.

    Applies when, per prefix, the numbers either all have the same width or none has a
    leading zero: then zero-padding is unambiguous and the text equals NodeSet's.
    """
    groups = {}
    bare = set()
    for name in names:
        if not isinstance(name, str):
            return None
        m = _SIMPLE.match(name)
        if m is None or not name:
            return None
        prefix, digits = m.groups()
        if digits:
            numbers = groups.setdefault(prefix, {})
            if numbers.setdefault(int(digits), digits) != digits:
                return None  # "n1" and "n01": same value, different padding
        else:
            bare.add(prefix)
    parts = []
    for prefix, numbers in groups.items():
        widths = {len(t) for t in numbers.values()}
        padded = any(len(t) > 1 and t[0] == "0" for t in numbers.values())
        if len(widths) > 1 and padded:
            return None
        items = sorted(numbers.items())
        if len(items) == 1:
            parts.append((prefix + "%s", prefix + items[0][1]))
        else:
            parts.append((prefix + "%s", prefix + "[" + ",".join(_ranges(items)) + "]"))
    for prefix in bare:
        parts.append((prefix, prefix))
    parts.sort()
    return ",".join(text for _key, text in parts)


def hostlist_fold(names):
    """Fold an iterable of host names into one hostlist expression.

    ``["gpu01", "gpu02", "gpu04"]`` -> ``"gpu[01-02,04]"``. Duplicates collapse; the
    order is ClusterShell's (sorted). An empty input gives ``""``.
    """
    if isinstance(names, str):
        names = [names]
    names = [n for n in names if n is not None and n != ""]
    if not names:
        return ""
    fast = _fast_fold(set(names))
    if fast is not None:
        return fast
    return _nodeset_fold(names)


def _nodeset_fold(names):
    _require_clustershell()
    for name in names:
        if not isinstance(name, str) or _SPECIAL.search(name):
            raise HostlistError(f"cannot fold host name {name!r}: it contains hostlist syntax or spaces")
    try:
        nodeset = NodeSet.fromlist(names)
    except NodeSetParseError as exc:
        raise HostlistError(f"cannot fold {names!r}: {exc}") from exc
    nodeset.fold_axis = [-1]
    return str(nodeset)


def hostlist_expand(expression):
    """Expand a hostlist expression (or a list of them) into a sorted list of names.

    ``"gpu[01-03]"`` -> ``["gpu01", "gpu02", "gpu03"]``; ``""`` or ``None`` -> ``[]``.
    """
    if expression is None:
        return []
    if isinstance(expression, (list, tuple, set)):
        expression = ",".join(str(e) for e in expression if e)
    expression = str(expression).strip()
    if not expression:
        return []
    _require_clustershell()
    try:
        return list(NodeSet(expression))
    except NodeSetParseError as exc:
        raise HostlistError(f"invalid hostlist expression {expression!r}: {exc}") from exc


def hostlist_count(expression):
    """Number of distinct hosts in a hostlist expression."""
    if not expression:
        return 0
    _require_clustershell()
    try:
        return len(NodeSet(str(expression)))
    except NodeSetParseError as exc:
        raise HostlistError(f"invalid hostlist expression {expression!r}: {exc}") from exc
