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
* block (Slurm >= 24.05, the first release with ``BlockSizes``; 23.11 had ``BlockLevels``):
  ``BlockName=<b> Nodes=<hostlist>`` per block in fabric order and an optional
  ``BlockSizes=<base>[,<size>...]``; every block holds at least the base block size and each
  further size is the previous one times a power of two (:func:`block_errors`).

Switch names pass through :func:`slurm_safe_name`: Slurm's hostlist parser treats a
trailing digit run as a range and fails on very long ones (GUIDs, serial numbers), and
spaces, ``;``, ``:``, ``/``, ``,`` or brackets break the line.
"""

import hashlib
import itertools
import re

from ansible.module_utils.hostlist import hostlist_fold
from ansible.module_utils.slurm_change import TOPOLOGY_BLOCK_SINCE, SlurmConfError, version_tuple

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_LONG_DIGITS = re.compile(r"\d{7,}")
MAX_DIGITS = 6
MAX_LENGTH = 48


class TopologyError(ValueError):
    """A host/switch map that cannot become a topology.conf."""


def letters_hash(text, length=8):
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
    return f"{cleaned}-h{letters_hash(name)}"


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


def fabric_block_order(blocks, leaf_parent=None):
    """Blocks (leaf switches) in fabric order: the leaves under one spine next to each other.

    Spines rank by their first leaf in ``blocks`` (the inventory order of the hosts), leaves keep
    that order within their spine; a leaf without a spine (``leaf_parent``) ranks on its own.
    Names never decide the order.
    """
    parent = {str(k): str(v) for k, v in (leaf_parent or {}).items()}
    leaves = list(dict.fromkeys(str(b) for b in blocks))
    rank = {}
    for leaf in leaves:
        rank.setdefault(("spine", parent[leaf]) if leaf in parent else ("leaf", leaf), len(rank))
    return sorted(leaves, key=lambda leaf: rank[("spine", parent[leaf]) if leaf in parent else ("leaf", leaf)])


def _block_groups(host_block, block_order=None, leaf_parent=None):
    """``{block: [hosts]}`` in fabric order.

    Slurm pairs each block with the next one in the file into larger blocks (topology.conf(5)
    24.11: "Defined blocks of nodes are paired with other contiguous blocks, to create a higher
    level block of nodes"; block_record.c 24.11 aggregates block i with the blocks after it by
    index), so the order must follow the fabric, never the names. The order is ``block_order``
    when given (every block exactly once), else :func:`fabric_block_order`: leaves under one
    spine (``leaf_parent``, cluster_leaf_spine) together, in the inventory order of their hosts.
    """
    groups = {}
    for host, block in host_block.items():
        if block is None or str(block).strip() == "":
            raise TopologyError(f"host {host}: cluster_leaf_switch (block) is empty")
        groups.setdefault(str(block), []).append(host)
    if block_order is None:
        return {b: groups[b] for b in fabric_block_order(groups, leaf_parent)}
    order = [str(b) for b in block_order]
    unknown = [b for b in order if b not in groups]
    missing = [b for b in groups if b not in order]
    repeated = sorted({b for b in order if order.count(b) > 1})
    if unknown or missing or repeated:
        raise TopologyError(
            f"block order must list every block once: unknown {unknown}, missing {missing}, repeated {repeated}"
        )
    return {b: groups[b] for b in order}


def _is_power_of_two(n):
    return n >= 1 and n & (n - 1) == 0


def block_errors(
    host_block,
    block_sizes=None,
    slurm_version=None,
    block_order=None,
    block_var="cluster_leaf_switch",
    sizes_var="slurm_common_topology_block_sizes",
    leaf_parent=None,
):
    """Every reason ``host_block``/``block_sizes`` would make a bad topology/block file.

    Returns a list of messages naming the variable (empty when the topology is sound); the
    preflight filter ``preflight_slurm_block_errors`` returns it. Rules, topology.conf(5) 24.11
    BlockSizes: "Each block must have at least the planning base block size count of nodes.
    Successive BlockSizes must be a power of two larger than the prior values." Without
    BlockSizes the first block's node count is the base (source
    src/plugins/topology/block/block_record.c 24.11: slurmctld stops when a later block has fewer
    nodes). A size may be at most 2**15 times the base (same source: 16 block levels).
    """
    errors = []
    if slurm_version is not None:
        try:
            too_old = version_tuple(slurm_version) < TOPOLOGY_BLOCK_SINCE
        except SlurmConfError as exc:
            return [f"{sizes_var}: {exc}"]
        if too_old:
            errors.append(
                f"{sizes_var}: topology/block with BlockSizes needs Slurm >= 24.05 (23.11 had BlockLevels); "
                f"the installed Slurm is {slurm_version}"
            )
    if not host_block:
        return [*errors, f"{block_var}: topology/block needs at least one block, none is set"]
    try:
        groups = _block_groups(host_block, block_order, leaf_parent)
    except TopologyError as exc:
        return [*errors, f"{block_var}: {exc}"]
    sizes = []
    for raw in block_sizes or []:
        try:
            size = int(raw)
        except (TypeError, ValueError):
            errors.append(f"{sizes_var}: {raw!r} is not a node count")
            continue
        if isinstance(raw, bool) or size <= 0:
            errors.append(f"{sizes_var}: {raw!r} is not a positive node count")
            continue
        sizes.append(size)
    if len(sizes) != len(block_sizes or []):
        return errors
    for prior, size in itertools.pairwise(sizes):
        if size <= prior or size % prior or not _is_power_of_two(size // prior):
            errors.append(
                f"{sizes_var}: {size} after {prior}: successive BlockSizes must be the prior size times a "
                f"power of two (topology.conf(5) 24.11), e.g. {prior},{prior * 2},{prior * 4}"
            )
    if sizes and sizes[-1] // sizes[0] > 2**15:
        errors.append(f"{sizes_var}: {sizes[-1]} is more than 2**15 times the base block size {sizes[0]}")
    first = next(iter(groups))
    base = sizes[0] if sizes else len(groups[first])
    where = f"the base block size {base} ({sizes_var})" if sizes else f"the first block {first} ({base} nodes)"
    for block, hosts in groups.items():
        if len(hosts) < base:
            errors.append(
                f"{block_var}: block {block} has {len(hosts)} nodes ({hostlist_fold(hosts)}), fewer than "
                f"{where}; each block must hold at least the base block size (topology.conf(5) 24.11)"
            )
    return errors


def check_block_topology(host_block, block_sizes=None, slurm_version=None, block_order=None, **names):
    """Raise :class:`TopologyError` with every message of :func:`block_errors`."""
    errors = block_errors(host_block, block_sizes, slurm_version, block_order, **names)
    if errors:
        raise TopologyError("; ".join(errors))


def block_lines(host_block, block_sizes=None, block_order=None, leaf_parent=None):
    """topology/block lines from ``{host: block}`` (a block is usually a leaf or NVL domain).

    Blocks keep fabric order (see :func:`_block_groups`); ``block_sizes``: ints for
    ``BlockSizes=`` (first = base block size). The block rules of :func:`block_errors` are
    checked; without ``block_sizes`` no ``BlockSizes`` line is written and Slurm takes the first
    block's size as the base.
    """
    if not host_block:
        return []
    check_block_topology(host_block, block_sizes, block_order=block_order, leaf_parent=leaf_parent)
    blocks = _block_groups(host_block, block_order, leaf_parent)
    safe = slurm_safe_names(blocks)
    lines = [f"BlockName={safe[b]} Nodes={hostlist_fold(hosts)}" for b, hosts in blocks.items()]
    if block_sizes:
        lines.append("BlockSizes=" + ",".join(str(int(s)) for s in block_sizes))
    return lines


def topology_conf(
    host_switch, plugin="topology/tree", leaf_parent=None, root="root", block_sizes=None, block_order=None
):
    """topology.conf text for ``plugin`` (``topology/tree`` or ``topology/block``)."""
    if plugin in ("topology/tree", "tree"):
        lines = tree_lines(host_switch, leaf_parent, root)
    elif plugin in ("topology/block", "block"):
        lines = block_lines(host_switch, block_sizes, block_order, leaf_parent)
    else:
        raise TopologyError(f"unsupported topology plugin {plugin!r} (topology/tree or topology/block)")
    return "".join(line + "\n" for line in lines)


def missing_hosts(hosts, host_switch):
    """Hosts with no switch: topology.conf(5) "All nodes in the network must be connected
    to at least one switch"; the role should fail naming them and cluster_leaf_switch."""
    return sorted(h for h in hosts if not host_switch.get(h))
