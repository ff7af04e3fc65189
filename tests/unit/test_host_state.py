"""host_state parsers on real dpkg-query/systemctl captures, path comparison on real files, host_state_info."""

import hashlib
import itertools
import json
import os
import pathlib
import pwd

import ansible.module_utils.host_state as host_state
import host_state_info as module
import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.host_state import (
    mode_int,
    parse_dpkg_query,
    parse_rpm_query,
    parse_systemctl_show,
    path_differs,
    path_state,
    unit_query_name,
    unit_state,
    user_state,
)
from ansible.module_utils.testing import patch_module_args
from hypothesis import given
from hypothesis import strategies as st

CAPTURES = pathlib.Path(__file__).parent / "captures"


def capture(name):
    """(rc, stdout, stderr) of a capture: stdout without the #@ lines, rc and stderr from them."""
    lines = (CAPTURES / name).read_text().splitlines(keepends=True)
    meta = [line[3:].rstrip("\n") for line in lines if line.startswith("#@ ")]
    rc = next(int(m.split(":", 1)[1]) for m in meta if m.startswith("rc:"))
    err = "".join(m.split(": ", 1)[1] + "\n" for m in meta if m.startswith("stderr:"))
    return rc, "".join(line for line in lines if not line.startswith("#@")), err


CTL1_UNITS = ["munge", "slurmctld.service", "nosuch", "chrony"]
GPU01_UNITS = ["slurmd", "slurmctld", "proc-sys-fs-binfmt_misc.mount", "systemd-remount-fs", "dbus",
               "cryptdisks", "sshd"]
ME = pwd.getpwuid(os.getuid()).pw_name


# --- packages ---------------------------------------------------------------------------------------------

def test_dpkg_query_capture_lists_the_known_packages_despite_rc_1():
    rc, out, err = capture("dpkg_query_ctl1.txt")
    assert rc == 1 and "no packages found matching nosuchpkg" in err
    assert parse_dpkg_query(out) == {"munge": "0.5.15-2+deb12u1", "slurmctld": "22.05.8-4+deb12u3"}


# Constructed lines in dpkg-query's format (the bench has no package in these states): desired/status/error.
def test_dpkg_states_other_than_installed_are_not_installed():
    text = ("munge\t0.5.15-2\trc \n"          # removed, config files left
            "slurmd\t22.05.8-4\tiH \n"        # half-installed
            "slurmctld\t22.05.8-4\tiU \n"     # unpacked, not configured
            "mariadb-server\t1:10.11\tiF \n"  # half-configured
            "libpmix2\t4.2.2\tiiR\n"          # installed but reinstall required
            "nvidia-smi\t\tun \n"             # known, never installed
            "ghost\t\tii \n"                  # no version: unreadable, so not installed
            "slurmdbd\t22.05.8-4\thi \n")     # held, installed
    assert parse_dpkg_query(text) == {"slurmdbd": "22.05.8-4"}


@pytest.mark.parametrize(("desired", "status", "error"), list(itertools.product("uihrp", "nicUFHWt", " R")))
def test_only_status_i_without_error_flag_counts_as_installed(desired, status, error):
    installed = parse_dpkg_query(f"munge\t0.5.15-2\t{desired}{status}{error}\n")
    assert ("munge" in installed) == (status == "i" and error == " ")


def test_a_package_installed_for_one_architecture_of_two_is_installed():
    assert parse_dpkg_query("libc6\t2.36-9\trc \nlibc6\t2.36-9\tii \n") == {"libc6": "2.36-9"}


def test_rpm_query_ignores_not_installed_lines():
    # rpm -q --qf '%{NAME}\t%{VERSION}-%{RELEASE}\n' munge nosuch slurm (format per rpm(8); no RPM host here)
    text = "munge\t0.5.13-13.el9\npackage nosuch is not installed\nslurm\t22.05.9-1.el9\n"
    assert parse_rpm_query(text) == {"munge": "0.5.13-13.el9", "slurm": "22.05.9-1.el9"}


def test_rpm_query_keeps_the_first_of_several_installed_versions():
    assert parse_rpm_query("kernel\t5.14.0-362.el9\nkernel\t5.14.0-427.el9\n") == {"kernel": "5.14.0-362.el9"}


# --- units ------------------------------------------------------------------------------------------------

def test_systemctl_capture_reports_running_and_not_found_units():
    rc, out, _ = capture("systemctl_show_ctl1.txt")
    units = parse_systemctl_show(out, CTL1_UNITS)
    assert rc == 0
    assert units["munge"] == {"exists": True, "active": True, "enabled": True, "active_state": "active",
                              "unit_file_state": "enabled"}
    assert units["slurmctld.service"]["enabled"] is True
    for name in ("nosuch", "chrony"):
        assert units[name] == {"exists": False, "active": False, "enabled": False, "active_state": "inactive",
                               "unit_file_state": ""}


def test_only_enabled_and_static_count_as_enabled():
    _, out, _ = capture("systemctl_show_gpu01.txt")
    units = parse_systemctl_show(out, GPU01_UNITS)
    assert {name: units[name]["enabled"] for name in GPU01_UNITS} == {
        "slurmd": True, "slurmctld": False, "proc-sys-fs-binfmt_misc.mount": False, "systemd-remount-fs": False,
        "dbus": True, "cryptdisks": False, "sshd": True}


# Every state `systemctl is-enabled` can print (systemctl(1)); show reports the same UnitFileState values.
@pytest.mark.parametrize("file_state", ["enabled", "enabled-runtime", "linked", "linked-runtime", "alias", "masked",
                                        "masked-runtime", "static", "indirect", "disabled", "generated",
                                        "transient", "bad", ""])
@pytest.mark.parametrize("load_state", ["loaded", "not-found", "bad-setting", "error", "masked"])
def test_enabled_only_where_systemctl_enable_has_nothing_to_do(file_state, load_state):
    unit = unit_state({"Id": "munge.service", "LoadState": load_state, "ActiveState": "active",
                       "UnitFileState": file_state})
    assert unit["enabled"] is (load_state == "loaded" and file_state in ("enabled", "static"))
    assert unit["exists"] is (load_state == "loaded")


@pytest.mark.parametrize("active_state", ["active", "reloading", "inactive", "failed", "activating", "deactivating",
                                          "maintenance", "refreshing", ""])
def test_active_only_when_systemd_says_active(active_state):
    unit = unit_state({"Id": "munge.service", "LoadState": "loaded", "ActiveState": active_state,
                       "UnitFileState": "enabled"})
    assert unit["active"] is (active_state == "active") and unit["active_state"] == active_state


def test_a_disabled_unit_can_be_active():
    _, out, _ = capture("systemctl_show_gpu01.txt")
    mount = parse_systemctl_show(out, GPU01_UNITS)["proc-sys-fs-binfmt_misc.mount"]
    assert mount["active"] is True and mount["enabled"] is False and mount["unit_file_state"] == "disabled"


def test_a_masked_unit_does_not_exist_and_is_not_enabled():
    _, out, _ = capture("systemctl_show_gpu01.txt")
    masked = parse_systemctl_show(out, GPU01_UNITS)["cryptdisks"]
    assert masked["exists"] is False and masked["enabled"] is False


def test_blocks_that_do_not_match_the_names_are_refused():
    _, out, _ = capture("systemctl_show_invalid_name.txt")
    with pytest.raises(ValueError, match="1 units for 3 names"):
        parse_systemctl_show(out, ["munge", "foo@", "ssh"])
    with pytest.raises(ValueError, match="no LoadState"):
        parse_systemctl_show("Id=munge.service\nActiveState=active\n", ["munge"])


def test_a_name_without_a_suffix_is_a_service():
    assert [unit_query_name(n) for n in ("munge", "munge.socket", "getty@tty1")] == \
        ["munge.service", "munge.socket", "getty@tty1.service"]


# --- paths ------------------------------------------------------------------------------------------------

@pytest.fixture
def tree(tmp_path):
    (tmp_path / "etc").mkdir(mode=0o755)
    os.chmod(tmp_path / "etc", 0o755)
    key = tmp_path / "etc" / "munge.key"
    key.write_bytes(b"hello\n")
    os.chmod(key, 0o400)
    (tmp_path / "link").symlink_to(tmp_path / "etc")
    (tmp_path / "etc" / "libpmix.so").symlink_to("libpmix.so.2")   # dangling, as Debian 12's would be without libpmix2
    return tmp_path


def test_path_state_reads_type_owner_mode_and_stat_checksum(tree):
    key = path_state(str(tree / "etc" / "munge.key"), want_checksum=True)
    assert key == {"exists": True, "type": "file", "owner": ME, "group": key["group"], "mode": "0400",
                   "checksum": "f572d396fae9206628714fb2ce00f72e94f2258f", "target": None}  # sha1sum of "hello\n"
    assert path_state(str(tree / "etc"), want_checksum=True)["checksum"] is None
    assert path_state(str(tree / "etc" / "munge.key"))["checksum"] is None


def test_a_symlink_is_a_link_not_its_target(tree):
    assert path_state(str(tree / "link"))["type"] == path_state(f"{tree / 'link'}/")["type"] == "link"
    assert path_state("/")["type"] == "directory"
    assert path_differs(path_state(str(tree / "link")), {"state": "directory"}) is True
    assert path_state(str(tree / "link"))["target"] == str(tree / "etc")
    assert path_state(str(tree / "etc" / "libpmix.so"))["target"] == "libpmix.so.2"   # its text, even dangling


def test_a_missing_path_and_a_path_under_a_file_are_absent(tree):
    for path in (tree / "nope", tree / "etc" / "munge.key" / "below"):
        assert path_state(str(path)) == {"exists": False, "type": "absent", "owner": None, "group": None,
                                         "mode": None, "checksum": None, "target": None}


def test_an_unknown_owner_falls_back_to_the_number(tree, monkeypatch):
    def no_name(number):
        raise KeyError(number)

    monkeypatch.setattr(pwd, "getpwuid", no_name)
    assert path_state(str(tree / "etc"))["owner"] == str(os.getuid())


@pytest.mark.parametrize(("name", "wanted", "differs"), [
    ("etc", {"state": "directory", "mode": "0755", "owner": ME}, False),
    ("etc", {"state": "directory", "mode": "755"}, False),
    ("etc", {"state": "directory", "mode": 0o755}, False),
    ("etc", {"state": "directory", "mode": "0700"}, True),           # wrong-mode directory
    ("etc", {"state": "directory", "mode": "u=rwx,go=rx"}, True),     # symbolic: cannot compare
    ("etc", {"state": "directory", "mode": "755", "owner": "nosuch-gf-user"}, True),
    ("etc", {"state": "directory", "group": "nosuch-gf-group"}, True),
    ("etc", {"state": "file"}, True),
    ("etc/munge.key", {"state": "directory"}, True),                 # a file where a directory is wanted
    ("etc/munge.key", {"state": "file", "mode": "0400"}, False),
    ("etc/munge.key", {"state": "file", "mode": "0644"}, True),
    ("etc/munge.key", {"state": "absent"}, True),
    ("link", {"state": "file"}, True),
    ("link", {"state": "absent"}, True),
    ("nope", {"state": "absent"}, False),
    ("nope", {"state": "file"}, True),                               # missing path
    ("nope", {"state": "directory", "mode": "0755"}, True),
    ("nope", {"state": None, "mode": "0755"}, False),                # no state: report only
    ("etc", {"state": None, "mode": "0700"}, False),
    ("etc/libpmix.so", {"state": "link", "src": "libpmix.so.2"}, False),
    ("etc/libpmix.so", {"state": "link", "src": "libpmix.so.2", "owner": ME, "mode": "0644"}, False),  # no mode
    ("etc/libpmix.so", {"state": "link", "src": "libpmix.so.2.6.2"}, True),   # another text
    ("etc/libpmix.so", {"state": "link", "src": "./libpmix.so.2"}, True),     # same file, other text
    ("etc/libpmix.so", {"state": "link"}, True),                              # no src: cannot tell
    ("etc/libpmix.so", {"state": "link", "src": "libpmix.so.2", "owner": "nosuch-gf-user"}, True),
    ("etc/libpmix.so", {"state": "file"}, True),
    ("etc/munge.key", {"state": "link", "src": "munge.key"}, True),          # a file where a link is wanted
    ("nope", {"state": "link", "src": "x"}, True),
])
def test_path_differs(tree, name, wanted, differs):
    assert path_differs(path_state(str(tree / name)), wanted) is differs


ACTUAL = st.one_of(
    st.just(path_state("/nonexistent/gpufleet")),
    st.builds(lambda kind, owner, group, mode, target: {"exists": True, "type": kind, "owner": owner, "group": group,
                                                         "mode": f"{mode:04o}", "checksum": None,
                                                         "target": target if kind == "link" else None},
              st.sampled_from(["file", "directory", "link", "other"]), st.sampled_from(["root", "munge", "0"]),
              st.sampled_from(["root", "munge"]), st.integers(0, 0o7777), st.sampled_from(["a", "b", ""])),
)
WANTED = st.fixed_dictionaries({"state": st.sampled_from(["file", "directory", "absent", "link"])}, optional={
    "src": st.sampled_from(["a", "b", ""]),
    "owner": st.sampled_from(["root", "munge"]), "group": st.sampled_from(["root", "munge"]),
    "mode": st.one_of(st.integers(0, 0o7777), st.integers(0, 0o7777).map(lambda m: f"{m:o}"),
                      st.sampled_from(["u+x", "", "0999"]))})


@given(ACTUAL, WANTED)
def test_a_path_reported_right_is_right(actual, wanted):
    if path_differs(actual, wanted):
        return
    if wanted["state"] == "absent":
        assert actual["exists"] is False
        return
    assert actual["type"] == wanted["state"]
    assert wanted.get("owner") in (None, actual["owner"]) and wanted.get("group") in (None, actual["group"])
    if wanted["state"] == "link":
        assert wanted["src"] and actual["target"] == wanted["src"]
    elif "mode" in wanted:
        assert mode_int(wanted["mode"]) == int(actual["mode"], 8)


def test_user_state_knows_root_and_not_an_unknown_user():
    assert user_state("root") == {"uid": 0, "gid": 0, "home": pwd.getpwnam("root").pw_dir,
                                  "shell": pwd.getpwnam("root").pw_shell}
    assert user_state("nosuch-gf-user") is None


# --- module -----------------------------------------------------------------------------------------------

def run(args, capsys, monkeypatch, answers=None, tools=("dpkg-query", "systemctl"), systemd=True):
    """Run host_state_info with (rc, out, err) answers keyed by the tool's basename -> (result, argvs, warnings)."""
    calls, warned = [], []

    def fake_run_command(self, argv, **kwargs):
        assert isinstance(argv, list) and kwargs.get("expand_user_and_vars") is False
        calls.append(argv)
        tool = os.path.basename(argv[0])
        if answers is None or tool not in answers:
            raise AssertionError(f"unexpected command {argv}")
        return answers[tool]

    monkeypatch.setattr(AnsibleModule, "run_command", fake_run_command)
    monkeypatch.setattr(AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: f"/usr/bin/{name}" if name in tools else None)
    monkeypatch.setattr(AnsibleModule, "warn", lambda self, msg: warned.append(msg))
    monkeypatch.setattr(host_state, "SYSTEMD_RUN_DIR", "/" if systemd else "/nonexistent/gpufleet")
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out), calls, warned


def test_module_reads_packages_and_units_from_the_captures(capsys, monkeypatch):
    out, calls, _ = run({"packages": ["slurmctld", "nosuchpkg", "munge"], "units": CTL1_UNITS}, capsys, monkeypatch,
                     {"dpkg-query": capture("dpkg_query_ctl1.txt"), "systemctl": capture("systemctl_show_ctl1.txt")})
    assert out["changed"] is False
    assert out["packages"] == {"slurmctld": "22.05.8-4+deb12u3", "nosuchpkg": None, "munge": "0.5.15-2+deb12u1"}
    assert out["missing_packages"] == ["nosuchpkg"]
    assert [name for name, unit in out["units"].items() if unit["active"] and unit["enabled"]] == \
        ["munge", "slurmctld.service"]
    assert calls == [
        ["/usr/bin/dpkg-query", "-W", r"-f=${Package}\t${Version}\t${db:Status-Abbrev}\n", "--",
         "slurmctld", "nosuchpkg", "munge"],
        ["/usr/bin/systemctl", "show", "--property=Id,LoadState,ActiveState,UnitFileState", "--",
         "munge.service", "slurmctld.service", "nosuch.service", "chrony.service"],
    ]


def test_module_runs_nothing_for_empty_lists(capsys, monkeypatch):
    out, calls, _ = run({"_ansible_check_mode": True}, capsys, monkeypatch)
    assert calls == [] and out["changed"] is False
    assert {key: out[key] for key in ("packages", "missing_packages", "units", "paths", "paths_differ", "users")} \
        == {"packages": {}, "missing_packages": [], "units": {}, "paths": {}, "paths_differ": [], "users": {}}


def test_module_falls_back_to_rpm(capsys, monkeypatch):
    out, calls, _ = run({"packages": ["munge", "nosuch"]}, capsys, monkeypatch,
                     {"rpm": (1, "munge\t0.5.13-13.el9\npackage nosuch is not installed\n", "")}, tools=("rpm",))
    assert out["missing_packages"] == ["nosuch"] and out["packages"]["munge"] == "0.5.13-13.el9"
    assert calls[0][:4] == ["/usr/bin/rpm", "-q", "--qf", r"%{NAME}\t%{VERSION}-%{RELEASE}\n"]


def test_without_a_package_tool_every_package_is_missing(capsys, monkeypatch):
    out, calls, _ = run({"packages": ["munge", "slurmd"]}, capsys, monkeypatch, tools=())
    assert calls == [] and out["missing_packages"] == ["munge", "slurmd"]


def test_a_failing_dpkg_query_reports_every_package_missing(capsys, monkeypatch):
    _, text, _ = capture("dpkg_query_ctl1.txt")
    out, _, warned = run({"packages": ["munge"]}, capsys, monkeypatch, {"dpkg-query": (2, text, "dpkg-query: error")})
    assert out["missing_packages"] == ["munge"] and "dpkg-query failed (rc=2)" in warned[0]


@pytest.mark.parametrize(("tools", "systemd"), [(("systemctl",), False), ((), True)])
def test_without_systemd_every_unit_is_absent(capsys, monkeypatch, tools, systemd):
    out, calls, _ = run({"units": ["munge", "ssh"]}, capsys, monkeypatch, tools=tools, systemd=systemd)
    assert calls == []
    assert all(not (u["exists"] or u["active"] or u["enabled"]) for u in out["units"].values())


def test_unreadable_systemctl_output_reports_every_unit_absent(capsys, monkeypatch):
    out, _, warned = run({"units": ["munge", "foo@", "ssh"]}, capsys, monkeypatch,
                         {"systemctl": capture("systemctl_show_invalid_name.txt")})
    assert [unit["enabled"] for unit in out["units"].values()] == [False, False, False]
    assert "foo@.service" in warned[0]


def test_module_lists_the_differing_paths_in_order(capsys, monkeypatch, tree):
    paths = [
        {"path": str(tree / "etc" / "munge.key"), "state": "file", "owner": ME, "mode": "0400"},
        {"path": str(tree / "etc"), "state": "directory", "mode": "0700"},
        {"path": str(tree / "nope"), "state": "absent"},
        {"path": str(tree / "link"), "state": "directory"},
        {"path": str(tree / "gone"), "state": "file"},
        {"path": str(tree / "gone")},
        {"path": str(tree / "etc"), "state": "directory", "mode": "0700"},
        {"path": str(tree / "etc" / "munge.key"), "checksum": True},
    ]
    out, _, _ = run({"paths": paths, "users": ["root", "nosuch-gf-user"]}, capsys, monkeypatch)
    assert out["paths_differ"] == [str(tree / "etc"), str(tree / "link"), str(tree / "gone")]
    assert out["paths"][str(tree / "etc" / "munge.key")]["checksum"] == hashlib.sha1(b"hello\n").hexdigest()
    assert out["paths"][str(tree / "link")]["type"] == "link"
    assert out["users"]["root"]["uid"] == 0 and out["users"]["nosuch-gf-user"] is None


def test_a_relative_path_fails(capsys, monkeypatch):
    out, _, _ = run({"paths": [{"path": "etc/munge", "state": "directory"}]}, capsys, monkeypatch)
    assert out["failed"] is True and "not an absolute path" in out["msg"]


def test_a_path_that_cannot_be_inspected_fails(capsys, monkeypatch, tree):
    def denied(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "lstat", denied)
    out, _, _ = run({"paths": [{"path": "/root/secret", "state": "absent"}]}, capsys, monkeypatch)
    assert out["failed"] is True and "cannot inspect /root/secret" in out["msg"]


@pytest.fixture
def pmix(tmp_path):
    """Debian 12's pmix2/lib as libpmix2 leaves it (the library and its SONAME link) and libpmix-dev adds."""
    lib = tmp_path / "pmix2" / "lib"
    lib.mkdir(parents=True)
    (lib / "libpmix.so.2.6.2").write_bytes(b"\x7fELF")
    (lib / "libpmix.so.2").symlink_to("libpmix.so.2.6.2")
    return lib


@pytest.mark.parametrize(("link", "differs"), [
    ("libpmix.so.2", False),          # what slurm_common writes
    ("libpmix.so.2.6.2", False),      # what libpmix-dev ships: the same library by another name
    (None, True),                     # no link
    ("libpmix.so.1", True),           # dangling
    ("../../nowhere", True),
])
def test_a_resolved_link_is_right_where_it_leads_to_the_library(capsys, monkeypatch, pmix, link, differs):
    path = pmix / "libpmix.so"
    if link:
        path.symlink_to(link)
    want = {"path": str(path), "state": "link", "src": "libpmix.so.2", "resolve": True}
    out, _, _ = run({"paths": [want]}, capsys, monkeypatch)
    assert (out["paths_differ"] == [str(path)]) is differs
    assert out["paths"][str(path)]["resolved"] == (None if differs else str(pmix / "libpmix.so.2.6.2"))
    # By text (no resolve), only the exact text is right.
    out, _, _ = run({"paths": [dict(want, resolve=False)]}, capsys, monkeypatch)
    assert (out["paths_differ"] == [str(path)]) is (link != "libpmix.so.2")


def test_a_resolved_link_differs_where_its_library_is_missing(capsys, monkeypatch, pmix):
    (pmix / "libpmix.so").symlink_to("libpmix.so.2")
    (pmix / "libpmix.so.2.6.2").unlink()
    want = {"path": str(pmix / "libpmix.so"), "state": "link", "src": "libpmix.so.2", "resolve": True}
    out, _, _ = run({"paths": [want]}, capsys, monkeypatch)
    assert out["paths_differ"] == [str(pmix / "libpmix.so")]


def test_a_file_where_a_resolved_link_is_wanted_differs(capsys, monkeypatch, pmix):
    (pmix / "libpmix.so").write_bytes(b"\x7fELF")
    want = {"path": str(pmix / "libpmix.so"), "state": "link", "src": "libpmix.so.2", "resolve": True}
    out, _, _ = run({"paths": [want]}, capsys, monkeypatch)
    assert out["paths_differ"] == [str(pmix / "libpmix.so")]
