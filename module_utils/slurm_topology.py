# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology.conf for Slurm's topology/tree and topology/block plugins.

Input is a ``{host: leaf switch}`` map (the inventory's ``cluster_leaf_switch`` per host,
or ``ibnetdiscover.leaf_of``) and, for trees, an optional ``{leaf: spine}`` map.

topology.conf(5) facts used:

* tree: one line per switch, ``SwitchName=<s> Nodes=<hostlist>`` for leaves and
  ``SwitchName=<s> Switches=<hostlist>`` above them; "Slurm's hostlist expression parser
  is used", so names are folded with ClusterShell. "Jobs can only span nodes connected by
  the same switch fabric": with several top-level switches and no common parent a job
  cannot cross them, so a root switch joins the top level unless ``root=None``.
* block (Slurm >= 23.11): ``BlockName=<b> Nodes=<hostlist>`` per block and an optional
  ``BlockSizes=<base>[,<size>...]``; blocks are the unit a job is packed into, and every
  block should hold at least the base block size.

Switch names pass through :func:`slurm_safe_name`: Slurm's hostlist parser treats a
trailing digit run as a range and fails on very long ones (GUIDs, serial numbers), and
spaces, ``;``, ``:``, ``/``, ``,`` or brackets break the line.
"""

import hashlib
import re

from ansible.module_utils.hostlist import hostlist_fold

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_LONG_DIGITS = re.compile(r"\d{7,}")
MAX_DIGITS = 6
MAX_LENGTH = 48


class TopologyError(ValueError):
    """A host/switch map that cannot become a topology.conf."""


def _letters_hash(text, length=8):
    """A short hash written with letters only (a-p), so it adds no digit run."""
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:length]
    return "".join(chr(ord("a") + int(c, 16)) for c in digest)


def slurm_safe_name(name):
    """A switch/block name Slurm's parsers accept, stable and collision-free.

    Names that are already safe (``[A-Za-z0-9_-]``, no digit run longer than 6, at most
    48 characters) are kept as they are. Others are sanitised (other characters become
    ``-``, digit runs longer than 6 keep their last 4 digits) and get ``-h`` plus an
    8-letter hash of the original name, so two names that sanitise alike still differ.
    ``"MF0;leaf1:MQM8700/U1"`` -> ``"MF0-leaf1-MQM8700-U1-h<hash>"``.
    """
    name = str(name)
    if (
        name
        and not _UNSAFE.search(name)
        and not _LONG_DIGITS.search(name)
        and len(name) <= MAX_LENGTH
        and not name.startswith("-")
    ):
        return name
    cleaned = _UNSAFE.sub("-", name).strip("-")
    cleaned = _LONG_DIGITS.sub(lambda m: m.group(0)[-4:], cleaned)
    cleaned = re.sub(r"-{2,}", "-", cleaned)[: MAX_LENGTH - 11].strip("-") or "sw"
    return f"{cleaned}-h{_letters_hash(name)}"


def slurm_safe_names(names):
    """``{original: safe}`` for many names; raises if two originals map to one name."""
    mapping = {}
    taken = {}
    for name in sorted({str(n) for n in names}):
        safe = slurm_safe_name(name)
        if safe in taken and taken[safe] != name:
            raise TopologyError(f"switch names {taken[safe]!r} and {name!r} both become {safe!r}")
        taken[safe] = name
        mapping[name] = safe
    return mapping


def _invert(host_switch, what):
    groups = {}
    for host, switch in sorted(host_switch.items()):
        if switch is None or str(switch).strip() == "":
            raise TopologyError(f"host {host}: {what} is empty")
        groups.setdefault(str(switch), []).append(host)
    return groups


def tree_lines(host_leaf, leaf_parent=None, root="root"):
    """topology/tree lines from ``{host: leaf}`` and optionally ``{leaf: spine}``.

    Leaves with no entry in ``leaf_parent`` are top-level, like every spine. When more than
    one top-level switch remains, a ``root`` switch is added above them so jobs may span
    the whole fabric (``root=None`` leaves the fabric split).
    """
    if not host_leaf:
        return []
    leaves = _invert(host_leaf, "cluster_leaf_switch")
    leaf_parent = {str(k): str(v) for k, v in (leaf_parent or {}).items() if k in leaves}
    spines = _invert(leaf_parent, "spine switch") if leaf_parent else {}
    safe = slurm_safe_names(list(leaves) + list(spines) + ([root] if root else []))
    clash = set(leaves) & set(spines)
    if clash:
        raise TopologyError(f"switch {sorted(clash)[0]!r} is both a leaf and a spine")
    lines = []
    for leaf in sorted(leaves, key=lambda s: safe[s]):
        lines.append(f"SwitchName={safe[leaf]} Nodes={hostlist_fold(leaves[leaf])}")
    for spine in sorted(spines, key=lambda s: safe[s]):
        lines.append(f"SwitchName={safe[spine]} Switches={hostlist_fold(safe[x] for x in spines[spine])}")
    top = sorted({safe[s] for s in spines} | {safe[leaf] for leaf in leaves if leaf not in leaf_parent})
    if root and len(top) > 1:
        if safe[root] in top:
            raise TopologyError(f"root switch name {root!r} is already a switch in the fabric")
        lines.append(f"SwitchName={safe[root]} Switches={hostlist_fold(top)}")
    return lines


def block_lines(host_block, block_sizes=None):
    """topology/block lines from ``{host: block}`` (a block is usually a leaf or NVL domain).

    ``block_sizes``: ints for ``BlockSizes=`` (first = base block size); each must be a
    positive node count and the base may not exceed the smallest block. Without it Slurm's
    default applies and no ``BlockSizes`` line is written.
    """
    if not host_block:
        return []
    blocks = _invert(host_block, "block")
    safe = slurm_safe_names(blocks)
    lines = [
        f"BlockName={safe[b]} Nodes={hostlist_fold(blocks[b])}" for b in sorted(blocks, key=lambda s: safe[s])
    ]
    if block_sizes:
        sizes = [int(s) for s in block_sizes]
        if any(s <= 0 for s in sizes):
            raise TopologyError(f"BlockSizes must be positive node counts, got {sizes}")
        smallest = min(len(hosts) for hosts in blocks.values())
        if sizes[0] > smallest:
            raise TopologyError(
                f"base block size {sizes[0]} is larger than the smallest block ({smallest} nodes)"
            )
        lines.append("BlockSizes=" + ",".join(str(s) for s in sizes))
    return lines


def topology_conf(host_switch, plugin="topology/tree", leaf_parent=None, root="root", block_sizes=None):
    """topology.conf text for ``plugin`` (``topology/tree`` or ``topology/block``)."""
    if plugin in ("topology/tree", "tree"):
        lines = tree_lines(host_switch, leaf_parent, root)
    elif plugin in ("topology/block", "block"):
        lines = block_lines(host_switch, block_sizes)
    else:
        raise TopologyError(f"unsupported topology plugin {plugin!r} (topology/tree or topology/block)")
    return "".join(line + "\n" for line in lines)


def missing_hosts(hosts, host_switch):
    """Hosts with no switch: topology.conf(5) "All nodes in the network must be connected
    to at least one switch"; the role should fail naming them and cluster_leaf_switch."""
    return sorted(h for h in hosts if not host_switch.get(h))
