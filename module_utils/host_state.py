"""Read package, unit, path and user state for host_state_info and compare paths with what a role wants.

Pure functions: the caller runs the command and passes its text in. Every doubt leans to "not right": a
line that cannot be read is a package not installed, a unit that cannot be read is absent and stopped, and a
wanted mode that cannot be read differs. A role that skips its task on this answer never skips real drift.
"""

import grp
import hashlib
import os
import pwd
import stat

UNIT_PROPERTIES = ("Id", "LoadState", "ActiveState", "UnitFileState")
# `systemctl is-enabled` states (systemctl(1)) in which `systemctl enable` has nothing to do: enabled for
# good, or no [Install] section to enable. Not enabled-runtime (gone at reboot), indirect/alias/linked (the
# unit itself is not enabled), generated/transient (no unit file to enable; SysV scripts show as generated
# whatever rc.d says), masked, disabled, bad.
ENABLED_STATES = frozenset({"enabled", "static"})
UNKNOWN_UNIT = {"exists": False, "active": False, "enabled": False, "active_state": "unknown",
                "unit_file_state": "unknown"}
ABSENT_PATH = {"exists": False, "type": "absent", "owner": None, "group": None, "mode": None, "checksum": None,
               "target": None}


def parse_dpkg_query(text):
    r"""``{package: version}`` of the installed packages that ``dpkg-query -W`` lists.

    Expects ``-f='${Package}\t${Version}\t${db:Status-Abbrev}\n'``.
    Installed means status ``i`` (the abbreviation's second letter) and no error flag (its third): ``rc``
    (config files left), ``iU`` (unpacked), ``iH`` (half-installed), ``iF``, ``iW``, ``it`` and ``un`` are not.
    A package listed for several architectures is installed if any is. Lines in another shape are ignored.
    """
    installed = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        name, version, abbrev = fields
        if name and version and abbrev[1:2] == "i" and not abbrev[2:].strip():
            installed.setdefault(name, version)
    return installed


def parse_rpm_query(text):
    r"""``{package: version-release}`` from ``rpm -q --qf '%{NAME}\t%{VERSION}-%{RELEASE}\n'``.

    ``package X is not installed`` and other lines without exactly one tab are ignored; with several
    versions installed the first listed is kept.
    """
    installed = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 2 and all(fields) and " " not in fields[0]:
            installed.setdefault(fields[0], fields[1])
    return installed


def unit_query_name(name):
    """The name to query systemd with: ``.service`` appended where the name has no suffix."""
    return name if "." in name else f"{name}.service"


def unit_state(props):
    """``{exists, active, enabled, active_state, unit_file_state}`` from one unit's show properties."""
    loaded = props.get("LoadState") == "loaded"
    file_state = props.get("UnitFileState", "")
    return {
        "exists": loaded,
        "active": props.get("ActiveState") == "active",
        "enabled": loaded and file_state in ENABLED_STATES,
        "active_state": props.get("ActiveState", ""),
        "unit_file_state": file_state,
    }


def parse_systemctl_show(text, names):
    """``{name: unit_state}`` from ``systemctl show --property=Id,LoadState,ActiveState,UnitFileState -- ...``.

    systemctl prints one block per argument, in argument order, separated by blank lines; block i belongs
    to ``names[i]`` (an alias shows its target's Id). Raises ``ValueError`` where the block count differs
    from the number of names or a block lacks Id/LoadState/ActiveState, since then blocks cannot be matched.
    """
    blocks, block = [], {}
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if block:
                blocks.append(block)
            block = {}
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"systemctl show: cannot read {line!r}")
        block[key] = value
    if len(blocks) != len(names):
        raise ValueError(f"systemctl show printed {len(blocks)} units for {len(names)} names")
    for name, props in zip(names, blocks, strict=True):
        missing = [key for key in UNIT_PROPERTIES[:3] if key not in props]
        if missing:
            raise ValueError(f"systemctl show: no {', '.join(missing)} for {name}")
    return {name: unit_state(props) for name, props in zip(names, blocks, strict=True)}


def _id_name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def file_sha1(path):
    """Hex SHA-1 of a file's bytes (Ansible's stat checksum), or ``None`` where it cannot be read."""
    digest = hashlib.sha1()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(65536), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def path_state(path, want_checksum=False):
    """``{exists, type, owner, group, mode, checksum, target}`` of ``path`` without following a final symlink.

    ``type`` is file, directory, link, other or absent; unknown owner/group ids come back as the number;
    ``target`` is a symlink's text as ``readlink`` gives it (not resolved), else ``None``.
    A path under a non-directory is absent; any other ``lstat`` error (permission) is raised. Trailing
    slashes are dropped, since ``lstat('link/')`` would follow the link.
    """
    try:
        st = os.lstat(path.rstrip("/") or "/")
    except (FileNotFoundError, NotADirectoryError):
        return dict(ABSENT_PATH)
    if stat.S_ISREG(st.st_mode):
        kind = "file"
    elif stat.S_ISDIR(st.st_mode):
        kind = "directory"
    elif stat.S_ISLNK(st.st_mode):
        kind = "link"
    else:
        kind = "other"
    return {
        "exists": True,
        "type": kind,
        "owner": _id_name(pwd.getpwuid, st.st_uid),
        "group": _id_name(grp.getgrgid, st.st_gid),
        "mode": f"{stat.S_IMODE(st.st_mode):04o}",
        "checksum": file_sha1(path) if want_checksum and kind == "file" else None,
        "target": os.readlink(path.rstrip("/")) if kind == "link" else None,
    }


def resolved(path):
    """The existing file ``path`` resolves to (every link followed), or ``None`` where it does not exist."""
    real = os.path.realpath(path)
    return real if os.path.exists(real) else None


def mode_int(mode):
    """A wanted mode as an integer: octal text (``'0644'``, ``'644'``), or an int taken as is (the file
    module's rule, so an unquoted YAML ``0644`` works); ``None`` for anything else (symbolic modes)."""
    if isinstance(mode, int) and not isinstance(mode, bool):
        return mode
    if isinstance(mode, str):
        try:
            return int(mode.strip(), 8)
        except ValueError:
            return None
    return None


def path_differs(actual, wanted):
    """Whether ``actual`` (from ``path_state``) differs from ``wanted`` (``state``, ``owner``, ``group``, ``mode``,
    ``src``).

    No wanted ``state`` never differs (report only). ``absent`` differs where the path exists; ``file`` and
    ``directory`` differ unless the path is one (a symlink is neither), or where a given owner, group or mode
    does not match. ``link`` differs unless the path is a symlink whose text is exactly ``src`` (no ``src``
    always differs), or where a given owner or group does not match; a link's mode is not compared (Linux has
    none). With ``resolve``, a symlink differs unless it resolves to an existing file, the one ``src`` resolves
    to from the link's directory (``actual["resolved"]`` and ``wanted["src_resolved"]``, filled in by the
    caller); its text is then not compared. A mode that cannot be read as octal always differs.
    """
    state = wanted.get("state")
    if state is None:
        return False
    if state == "absent":
        return actual["exists"]
    if state not in ("file", "directory", "link") or actual["type"] != state:
        return True
    if state == "link":
        if not wanted.get("src"):
            return True
        if wanted.get("resolve"):
            if not actual.get("resolved") or actual["resolved"] != wanted.get("src_resolved"):
                return True
        elif actual.get("target") != wanted["src"]:
            return True
    for key in ("owner", "group"):
        if wanted.get(key) is not None and wanted[key] != actual[key]:
            return True
    if wanted.get("mode") is not None and state != "link":
        want = mode_int(wanted["mode"])
        return want is None or want != int(actual["mode"], 8)
    return False


def _lines(text):
    """Lines as the file modules split them (bytes, ends kept: blockinfile's ``splitlines(True)``)."""
    return (text if isinstance(text, bytes) else str(text).encode()).splitlines(True)


def text_differs(data, contains=(), lacks=()):
    """Whether file bytes ``data`` (``None``: absent or unreadable) lack a wanted block or hold an unwanted line.

    ``contains``: blocks of whole lines (a final newline optional), each of which must appear once, as
    consecutive lines ending in a newline, with its first and its last line nowhere else: then
    ``ansible.builtin.blockinfile`` (markers first and last) and ``lineinfile`` (an exact line) leave
    the file as it is. ``lacks``: lines none of which may appear (compared without ``\r\n``). Leans to
    "differs": a file that is absent or unreadable differs, and so does one that holds a block twice, and a
    non-empty one whose last line has no newline (lineinfile may add one: found by the property test).
    """
    if data is None:
        return True
    if data and not bytes(data).endswith(b"\n"):
        return True
    lines = _lines(data)
    for block in contains:
        want = _lines(block if str(block).endswith("\n") else f"{block}\n")
        if not want:
            continue
        first, last = want[0], want[-1]
        if lines.count(first) != 1 or lines.count(last) != 1:
            return True
        start = lines.index(first)
        if lines[start:start + len(want)] != want:
            return True
    unwanted = {str(line).encode() for line in lacks}
    return any(line.rstrip(b"\r\n") in unwanted for line in lines)


def file_bytes(path):
    """A regular file's bytes, or ``None`` where it is absent, not a regular file or unreadable."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def user_state(name):
    """``{uid, gid, home, shell}`` of a local account, or ``None`` where there is none."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return {"uid": entry.pw_uid, "gid": entry.pw_gid, "home": entry.pw_dir, "shell": entry.pw_shell}


# The readers below run commands through an AnsibleModule (host_state_info, settle_receipt).
SYSTEMD_RUN_DIR = "/run/systemd/system"  # exists only where systemd is PID 1 (sd_booted)


def run(module, argv):
    # No ~ or $VAR expansion: the query formats hold ${Package} and the names are data.
    return module.run_command(argv, expand_user_and_vars=False)


def installed_packages(module, names):
    """{name: version} of the installed ones among names; empty where nothing can be read."""
    dpkg = module.get_bin_path("dpkg-query")
    if dpkg:
        rc, out, err = run(module, [dpkg, "-W", r"-f=${Package}\t${Version}\t${db:Status-Abbrev}\n", "--", *names])
        if rc in (0, 1):  # 1: some names are unknown, the known ones are still listed
            return parse_dpkg_query(out)
        module.warn(f"dpkg-query failed (rc={rc}): {err.strip()}; reporting every package as missing")
        return {}
    rpm = module.get_bin_path("rpm")
    if rpm:  # rc is the number of names not installed; only listed packages count
        return parse_rpm_query(run(module, [rpm, "-q", "--qf", r"%{NAME}\t%{VERSION}-%{RELEASE}\n", "--", *names])[1])
    return {}


def unit_states(module, names):
    """{name: unit_state} of systemd units; every one absent (with a warning) where they cannot be read."""
    systemctl = module.get_bin_path("systemctl")
    if not systemctl or not os.path.isdir(SYSTEMD_RUN_DIR):
        return {name: dict(UNKNOWN_UNIT) for name in names}
    argv = [systemctl, "show", f"--property={','.join(UNIT_PROPERTIES)}", "--", *map(unit_query_name, names)]
    rc, out, err = run(module, argv)
    problem = f"rc={rc}: {err.strip()}"
    if rc == 0:
        try:
            return parse_systemctl_show(out, names)
        except ValueError as exc:
            problem = str(exc)
    module.warn(f"cannot read the units with systemctl show ({problem}); reporting every unit as absent")
    return {name: dict(UNKNOWN_UNIT) for name in names}
