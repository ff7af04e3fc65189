"""A converged host's receipt: what site.yml may trust on its next run instead of playing the host's roles.

At the end of a run that converged a host, the host keeps a receipt: the run's inputs digest (the code,
every host's inventory variables, every host's stable facts and discovered GPUs) and what its roles manage,
observed right then: the packages' versions, the units' states, and each path's type, owner, group, mode and
content digest, keyed by a random key of the host's own (``settle.key``, root-only beside the receipt) so the
receipt holds no plain hash of a secret file (slurmdbd.conf holds the database password). The next run
trusts the receipt only where the digest is the same and a fresh observation of the same things equals the
recorded one, so any difference (an input, a fact, a package, a stopped unit, an edited or re-moded file)
means the full run. Pure functions: the modules and the filter pass the data in.
"""

import hashlib
import hmac
import json

RECEIPT_VERSION = 2
# Bytes of the per-host key that the content digests of a receipt are keyed with.
KEY_BYTES = 32

# Facts that change between two gatherings of an unchanged host (measured: tests/fixtures/settle/facts-*).
# Leaving one out only costs the fast path; none of them may be read by a role (tests/unit/test_settle.py).
VOLATILE_FACTS = frozenset({
    "date_time",
    "env",
    "loadavg",
    "memfree_mb",
    "memory_mb",
    "mounts",
    "swapfree_mb",
    "uptime_seconds",
})

# Registered results of these modules name the packages, units and paths a role manages.
PROBE_KEYS = ("missing_packages", "paths_differ")
FILE_KEYS = ("dest", "path")


def canonical(value):
    """Bytes of ``value`` as sorted, compact JSON (non-JSON leaves as their text), the digest's input."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def digest(value):
    """Hex SHA-256 of ``canonical(value)``."""
    return hashlib.sha256(canonical(value)).hexdigest()


def keyed_paths(observed, key):
    """``observed`` with each path's ``checksum`` (a plain SHA-1) replaced by HMAC-SHA256 under ``key``.

    A plain hash of a file that holds a password lets whoever reads it test guesses offline; keyed by a
    random per-host key, the digest still shows that the content changed (same key, same content, same
    digest) and nothing else. ``observed`` is not modified.
    """
    if not isinstance(observed, dict) or not isinstance(observed.get("paths"), dict):
        return observed
    paths = {}
    for name, state in observed["paths"].items():
        if isinstance(state, dict) and isinstance(state.get("checksum"), str):
            state = {**state, "checksum": hmac.new(key, state["checksum"].encode(), hashlib.sha256).hexdigest()}
        paths[name] = state
    return {**observed, "paths": paths}


def _unordered(value):
    """``value`` with every list of strings sorted: facts list interfaces and virtualization roles in no set
    order (measured: two gatherings of one host gave [lo, eth0] and [eth0, lo])."""
    if isinstance(value, dict):
        return {key: _unordered(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [_unordered(item) for item in value]
        return sorted(items) if all(isinstance(item, str) for item in items) else items
    return value


def stable_facts(facts):
    """The facts without the volatile ones, lists of strings sorted; ``None`` for a host without facts."""
    if not isinstance(facts, dict) or not facts:
        return None
    return {key: _unordered(value) for key, value in facts.items() if key not in VOLATILE_FACTS}


def _add_path(paths, path):
    if isinstance(path, str) and path.startswith("/"):
        paths.add(path.rstrip("/") or "/")


def _collect(result, spec):
    """Fold one registered result (a loop's items included) into ``spec``.

    Ansible drops ``invocation`` from registered results, so only what a result itself returns counts.
    """
    if not isinstance(result, dict) or result.get("skipped"):
        return
    for item in result.get("results") or []:
        _collect(item, spec)
    if all(key in result for key in PROBE_KEYS):  # host_state_info: its answers are keyed by what it read
        for kind in ("packages", "units", "paths", "users"):
            names = result.get(kind)
            if isinstance(names, dict):
                for name in names:
                    (_add_path(spec["paths"], name) if kind == "paths" else spec[kind].add(str(name)))
        return
    for key in FILE_KEYS:  # file (path), template and copy (dest)
        _add_path(spec["paths"], result.get(key))
    if isinstance(result.get("managed"), list):  # slurm_config: the files it manages
        for path in result["managed"]:
            _add_path(spec["paths"], path)
    name = result.get("name")
    if isinstance(name, str) and name:
        if "status" in result or "enabled" in result:  # service, systemd_service
            spec["units"].add(name)
        elif "uid" in result:  # user
            spec["users"].add(name)


def spec_from_results(results):
    """``{packages, units, paths, users}`` (sorted lists) that the registered ``results`` name.

    ``results``: a mapping of register name to result. Read: every ``host_state_info`` result (its
    packages, units, users and paths), every result with an absolute ``path`` or ``dest`` (file, template,
    copy), slurm_config's ``managed`` files, every service result's unit and every user result's account.
    Skipped results name nothing. lineinfile and blockinfile return no path: a role that runs one outside
    its probe's guard names the file in its probe (tests/unit/test_settle.py).
    """
    spec = {"packages": set(), "units": set(), "paths": set(), "users": set()}
    for value in (results or {}).values():
        _collect(value, spec)
    return {key: sorted(values) for key, values in spec.items()}


def unit_view(state):
    """What is compared of a unit: its active state and unit file state (``exists`` follows from them)."""
    return {"active_state": state.get("active_state", "unknown"),
            "unit_file_state": state.get("unit_file_state", "unknown")}


def _describe(kind, name, before, now):
    """One difference in words. A file's content is named, never its checksum (the munge key's is one)."""
    if kind == "paths" and isinstance(before, dict) and isinstance(now, dict):
        changed = []
        for key in sorted(set(before) | set(now)):
            if before.get(key) == now.get(key):
                continue
            changed.append("content" if key == "checksum" else f"{key} {before.get(key)} -> {now.get(key)}")
        return f"path {name}: {', '.join(changed)}"
    if kind == "units" and isinstance(before, dict) and isinstance(now, dict):
        return (f"unit {name}: {before.get('active_state')}/{before.get('unit_file_state')} -> "
                f"{now.get('active_state')}/{now.get('unit_file_state')}")
    return f"{kind[:-1]} {name}: {_short(before)} -> {_short(now)}"


def differences(recorded, observed, limit=5):
    """Differences between two observations (``{packages, units, paths, users}``) in words, at most ``limit``."""
    found = []
    for kind in ("packages", "units", "paths", "users"):
        before = (recorded or {}).get(kind) or {}
        now = (observed or {}).get(kind) or {}
        for name in sorted(set(before) | set(now)):
            if before.get(name) != now.get(name):
                found.append(_describe(kind, name, before.get(name), now.get(name)))
    if not isinstance(recorded, dict):
        found.insert(0, "no observation recorded")
    return found[:limit] + ([f"and {len(found) - limit} more"] if len(found) > limit else [])


def _short(value):
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def verdict(receipt, want_digest, observed, now, max_age):
    """``(settled, reasons)`` for a parsed receipt against the run's digest and a fresh observation.

    Not settled where the receipt is missing or in another shape, was written by another receipt version,
    holds another digest, is older than ``max_age`` seconds (or from the future), or where the observation
    differs from the recorded one.
    """
    if not isinstance(receipt, dict):
        return False, ["no receipt"]
    if receipt.get("version") != RECEIPT_VERSION:
        return False, [f"receipt version {receipt.get('version')!r}, not {RECEIPT_VERSION}"]
    if receipt.get("digest") != want_digest:
        return False, ["the run's inputs differ (code, inventory, facts or discovered GPUs)"]
    written = receipt.get("written")
    if not isinstance(written, (int, float)) or isinstance(written, bool):
        return False, ["the receipt has no write time"]
    age = now - written
    if age < 0 or age > max_age:
        return False, [f"the receipt is {int(age)} s old (settle_max_age {int(max_age)} s)"]
    found = differences(receipt.get("observed"), observed)
    return (not found), found


def spec_shape_errors(spec):
    """Why ``spec`` is not ``{packages, units, paths, users}`` lists of strings (paths absolute)."""
    errors = []
    if not isinstance(spec, dict):
        return ["the spec is not a mapping"]
    for key in ("packages", "units", "paths", "users"):
        value = spec.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            errors.append(f"{key} must be a list of names")
    for path in spec.get("paths") or []:
        if isinstance(path, str) and not path.startswith("/"):
            errors.append(f"path {path!r} is not absolute")
    return errors
