"""The driver-change guard reads a driver installed by NVIDIA's runfile (no package) from the loaded kernel module.

module_utils/node_stack.py: ``loaded_module`` reads /proc/driver/nvidia/version (present whenever the nvidia
module is loaded; the kernel module writes ``NVRM version: <id>`` then ``GCC version:  <compiler>``), and
``installed_driver`` reads a loaded module with no driver package as an installed driver, so
``driver_change_decision`` takes the guarded change path for it - never the unguarded first install, never
"keep" (the locked packages would go in over it). A module that is loaded but whose version cannot be read is
unknown, never none.
"""

import base64
import pathlib

import ansible.module_utils.node_stack as ns
import node_stack as ns_filters
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parents[2]
WANTED = "550.163.01"

# /proc/driver/nvidia/version as the proprietary and the open kernel modules write it (x86_64, aarch64).
PROPRIETARY_550 = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
                   "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n")
OPEN_550 = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.163.01  Release Build  "
            "(dvs-builder@U16-I3-B03-4-3)  Tue Apr  8 23:33:49 UTC 2025\n"
            "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n")
OPEN_ARM = ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  540.4.0  Release Build  "
            "(buildbrain@mobile-u64-6336-d8000)  Tue Jan  7 17:35:12 PST 2025\n"
            "GCC version:  collect2: error: ld returned 1 exit status\n")

# Ansible's package facts of a GPU node whose driver came from the runfile: no driver package at all.
RUNFILE_NODE = {
    "libc6": [{"name": "libc6", "version": "2.35-0ubuntu3.8", "arch": "amd64", "source": "apt"}],
    "dkms": [{"name": "dkms", "version": "2.8.7-2ubuntu2.2", "arch": "all", "source": "apt"}],
}


def slurm(busy=False, drained=False):
    return {"pool": "slurm", "busy": busy, "drained": drained, "down": False, "reason": None, "in_partition": True}


def read(text, present=True):
    return ns.installed_driver(RUNFILE_NODE, "apt", ns.loaded_module(present, text))


def test_the_kernel_modules_version_line_gives_the_driver_version():
    assert ns.loaded_module(True, PROPRIETARY_550) == {
        "loaded": True, "version": "550.54.15", "reason": "nvidia kernel module 550.54.15 loaded"}
    assert ns.loaded_module(True, OPEN_550)["version"] == "550.163.01"
    assert ns.loaded_module(True, OPEN_ARM)["version"] == "540.4.0"
    assert ns.loaded_module(False, None)["loaded"] is False


def test_a_runfile_driver_loaded_without_a_package_reads_installed_not_none():
    got = read(PROPRIETARY_550)
    assert got["state"] == "installed" and got["version"] == "550.54.15"
    assert got["source"] == "module" and "runfile" in got["reason"]


def test_a_busy_node_with_a_runfile_driver_is_refused_not_installed():
    decision = ns.driver_change_decision(read(PROPRIETARY_550), WANTED, slurm(busy=True))
    assert decision["action"] == "refuse", decision
    assert "550.54.15" in decision["reason"]


def test_a_runfile_driver_at_the_locked_version_takes_the_guarded_change_not_keep():
    # The packages at the locked version would go in over the runfile's files: a change, guarded like any.
    busy = ns.driver_change_decision(read(OPEN_550), WANTED, slurm(busy=True))
    assert busy["action"] == "refuse", busy
    idle = ns.driver_change_decision(read(OPEN_550), WANTED, slurm(drained=True))
    assert idle["action"] == "change", idle


def test_a_loaded_module_whose_version_cannot_be_read_is_unknown_never_none():
    for present, text in ((True, None), (True, ""), (True, "NVRM version: NVIDIA UNIX Kernel Module\n"),
                          (None, None)):
        got = read(text, present)
        assert got["state"] == "unknown", (present, text, got)
        decision = ns.driver_change_decision(got, WANTED, slurm(busy=True))
        assert decision["action"] == "refuse", decision


def test_no_module_loaded_and_no_package_is_still_a_first_install():
    got = read(None, present=False)
    assert got["state"] == "none"
    assert ns.driver_change_decision(got, WANTED, slurm(busy=True))["action"] == "install"


def test_a_packaged_driver_reads_from_its_packages_whatever_module_is_loaded():
    pkgs = {"nvidia-driver-550-server": [{"name": "nvidia-driver-550-server",
                                          "version": "550.163.01-0ubuntu0.22.04.1", "source": "apt"}]}
    got = ns.installed_driver(pkgs, "apt", ns.loaded_module(True, PROPRIETARY_550))
    assert got["state"] == "installed" and got["version"] == "550.163.01" and got.get("source") != "module"


def test_the_filter_reads_the_stat_and_slurp_the_guard_registers():
    filters = ns_filters.FilterModule().filters()
    stat = {"changed": False, "stat": {"exists": True, "path": "/proc/driver/nvidia/version", "size": 0}}
    slurp = {"changed": False, "content": base64.b64encode(PROPRIETARY_550.encode()).decode(), "encoding": "base64",
             "source": "/proc/driver/nvidia/version"}
    assert filters["node_stack_loaded_module"](stat, slurp)["version"] == "550.54.15"
    absent = filters["node_stack_loaded_module"]({"changed": False, "stat": {"exists": False}},
                                                 {"changed": False, "skipped": True, "skip_reason": "Conditional"})
    assert absent["loaded"] is False
    unreadable = filters["node_stack_loaded_module"](stat, {"failed": True, "msg": "Permission denied"})
    assert unreadable["loaded"] is True and unreadable["version"] is None
    assert filters["node_stack_loaded_module"]({"failed": True, "msg": "stat failed"}, None)["loaded"] is None
    assert filters["node_stack_installed_driver"](RUNFILE_NODE, "apt", absent)["state"] == "none"


MODULES = st.one_of(st.just((False, None)), st.just((None, None)),
                    st.tuples(st.just(True), st.sampled_from([PROPRIETARY_550, OPEN_550, OPEN_ARM, None, "", "NVRM"])))


@settings(max_examples=150, deadline=None)
@given(module=MODULES, busy=st.booleans(), drained=st.booleans(), wanted=st.sampled_from([WANTED, "550.54.15"]))
def test_property_a_loaded_or_unreadable_module_is_never_installed_over_unguarded(module, busy, drained, wanted):
    present, text = module
    decision = ns.driver_change_decision(read(text, present), wanted, slurm(busy=busy, drained=drained))
    if present is not False:
        assert decision["action"] in ("change", "refuse")
        if busy or not drained:
            assert decision["action"] == "refuse"


def test_the_guard_reads_the_loaded_module_and_asks_the_schedulers_for_a_runfile_driver():
    tasks = yaml.safe_load((ROOT / "roles/nvidia_driver/tasks/guard.yml").read_text())
    by_name = {t.get("name"): t for t in tasks}
    stat = next(t for t in tasks if "ansible.builtin.stat" in t)
    assert stat["ansible.builtin.stat"]["path"] == "/proc/driver/nvidia/version" and stat.get("check_mode") is False
    slurp = next(t for t in tasks if "ansible.builtin.slurp" in t)
    assert slurp.get("check_mode") is False and slurp.get("failed_when") is False
    record = str(by_name["guard | Record the installed driver"])
    assert "node_stack_installed_driver(__nvidia_driver_pkg_manager, __nvidia_driver_module)" in record
    for block in (t for t in tasks if "block" in t):
        assert any("'module'" in str(cond) for cond in block["when"]), block["name"]
