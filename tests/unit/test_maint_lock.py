"""Maintenance to the version lock (module_utils/maint_lock.py): which nodes differ from the lock."""
import pathlib

import maint as filters
import yaml
from ansible.module_utils.maint_lock import (
    DRIVER_VERSION_PACKAGES,
    driver_version_package,
    fleet_lock_drift,
    installed_version,
    lock_drift,
)
from ansible.module_utils.maint_plan import change_reboots, validate, validate_change

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOCK_FILE = ROOT / "playbooks" / "vars" / "node_stack_versions.yml"
LOCK = yaml.safe_load(LOCK_FILE.read_text())["cluster_node_stack_versions"]
BOOKWORM = {"distribution": "Debian", "os_family": "Debian", "distribution_major_version": "12"}
JAMMY = {"distribution": "Ubuntu", "os_family": "Debian", "distribution_major_version": "22"}
ROCKY = {"distribution": "Rocky", "os_family": "RedHat", "distribution_major_version": "9"}


def ml1(version):
    # The shape of Ansible's package facts (apt): {name: [{name, version, arch, source}]}.
    return {"libnvidia-ml1": [{"name": "libnvidia-ml1", "version": version, "arch": "amd64", "source": "apt"}]}


def test_driver_version_packages_equal_the_driver_roles_vars_files():
    vars_dir = ROOT / "roles" / "nvidia_driver" / "vars"
    from_role = {p.stem: yaml.safe_load(p.read_text())["__nvidia_driver_version_package"]
                 for p in sorted(vars_dir.glob("*.yml")) if p.name != "main.yml"}
    assert from_role == DRIVER_VERSION_PACKAGES


def test_version_package_is_picked_as_the_driver_role_picks_its_vars_file():
    assert driver_version_package(BOOKWORM, "535") == "libnvidia-ml1"
    assert driver_version_package(JAMMY, "550") == "libnvidia-compute-550-server"
    # Rocky has no file of its own: the os_family file (RedHat.yml) applies, as the role's loader does.
    assert driver_version_package(ROCKY, "550") == "nvidia-driver-cuda-libs"
    assert driver_version_package({"distribution": "Debian", "os_family": "Debian",
                                   "distribution_major_version": "11"}, "535") == "libnvidia-ml1"
    assert driver_version_package({"distribution": "SLES", "os_family": "Suse",
                                   "distribution_major_version": "15"}, "535") is None


def test_installed_version_drops_the_debian_revision_and_none_when_absent():
    assert installed_version(ml1("535.261.03-1~deb12u1"), "libnvidia-ml1") == "535.261.03"
    assert installed_version({}, "libnvidia-ml1") is None
    assert installed_version({"libnvidia-ml1": []}, "libnvidia-ml1") is None


def test_node_at_the_locked_driver_does_not_drift():
    host_vars = {"nvidia_driver_version": "535.309.01", "nvidia_driver_branch": "535"}
    assert lock_drift("gpu01", BOOKWORM, ml1("535.309.01-1~deb12u1"), LOCK, host_vars) == ({}, None)


def test_node_with_another_driver_drifts_and_names_the_package():
    host_vars = {"nvidia_driver_version": "535.309.01", "nvidia_driver_branch": "535"}
    drift, error = lock_drift("gpu01", BOOKWORM, ml1("535.261.03-1~deb12u1"), LOCK, host_vars)
    assert error is None
    assert drift == {"driver": {"installed": "535.261.03", "wanted": "535.309.01", "package": "libnvidia-ml1"}}


def test_the_lock_applies_where_the_host_overrides_nothing():
    drift, error = lock_drift("gpu01", BOOKWORM, ml1("535.309.01-1"), LOCK, {})
    assert error is None
    assert drift["driver"]["wanted"] == LOCK["driver"]["version"]


def test_node_without_a_driver_drifts():
    drift, error = lock_drift("gpu01", BOOKWORM, {}, LOCK, {})
    assert error is None and drift["driver"]["installed"] is None


def test_errors_name_the_host_and_the_variable():
    assert "host gpu01: cluster_node_stack_versions is not set" in lock_drift("gpu01", BOOKWORM, {}, None, {})[1]
    bad = {"driver": {"version": "", "branch": "535"}}
    assert "host gpu02: cluster_node_stack_versions.driver.version" in lock_drift("gpu02", BOOKWORM, {}, bad, {})[1]
    sles = {"distribution": "SLES", "os_family": "Suse", "distribution_major_version": "15"}
    assert "host gpu03: no driver package data for SLES 15" in lock_drift("gpu03", sles, {}, LOCK, {})[1]


def test_fleet_drift_lists_drifting_hosts_and_hosts_it_could_not_read():
    hostvars = {h: {"ansible_facts": BOOKWORM, "nvidia_driver_version": "535.309.01", "nvidia_driver_branch": "535"}
                for h in ("gpu01", "gpu02", "gpu03")}
    out = fleet_lock_drift(["gpu03", "gpu01", "gpu02"], hostvars,
                           {"gpu01": ml1("535.309.01-1"), "gpu02": ml1("535.261.03-1")}, LOCK)
    assert list(out["drift"]) == ["gpu02"]
    assert out["errors"] == ["host gpu03: its installed packages could not be read (package facts)"]


def test_filter_reads_only_facts_and_overrides_from_hostvars():
    class Strict(dict):
        # A host's variables: templating any other key would fail the run.
        def __getitem__(self, key):
            if key not in ("ansible_facts", "nvidia_driver_version", "nvidia_driver_branch"):
                raise AssertionError(f"read {key}")
            return super().__getitem__(key)

    hv = {"gpu01": Strict(ansible_facts=BOOKWORM, nvidia_driver_version="535.309.01", nvidia_driver_branch="535",
                          unrelated="{{ undefined_thing }}")}
    out = filters.maint_lock_drift(["gpu01"], hv, {"gpu01": ml1("535.261.03-1")}, LOCK)
    assert out == {"drift": {"gpu01": {"driver": {"installed": "535.261.03", "wanted": "535.309.01",
                                                  "package": "libnvidia-ml1"}}}, "errors": []}


def test_version_lock_change_is_valid_and_takes_no_packages_or_tasks():
    assert validate_change({"kind": "version_lock"}) == []
    assert validate_change({"kind": "version_lock", "reboot": True}) == []
    assert any("maint_change.packages: only kind packages" in e
               for e in validate_change({"kind": "version_lock", "packages": {"libnvidia-ml1": "1"}}))
    assert any("maint_change.tasks: only kind tasks" in e
               for e in validate_change({"kind": "version_lock", "tasks": "site.yml"}))
    # Without maint_nodes the lock selects the nodes (the other kinds without versions need a list).
    assert validate(None, None, {"kind": "version_lock"}, [], ["gpu01"]) == []


def test_version_lock_reboots_where_the_driver_changed_unless_told():
    # The plan's reboot flag stays off: maint_reboot reboots the nodes whose driver changed.
    assert not change_reboots({"kind": "version_lock"})
    assert change_reboots({"kind": "version_lock", "reboot": True})
