"""The GPU node stack: the version lock's compatibility checks, the driver-change guard, the apt probe
of Slurm's NVML plugin (real captures), and the per-OS package data of the node-stack roles."""

import copy
import pathlib

import pytest
import yaml
from ansible.module_utils.node_stack import (
    COMPAT_RULES,
    OVERRIDES,
    apt_simulate_verdict,
    compat_errors,
    driver_change_decision,
    effective_versions,
    fleet_compat_errors,
)
from node_stack import FilterModule

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOCK_FILE = ROOT / "playbooks" / "vars" / "node_stack_versions.yml"
LAB_VARS = ROOT / "molecule" / "node_stack" / "inventory" / "group_vars" / "node_stack" / "node_stack.yml"
OSES = ["Debian_12", "Debian_13", "Ubuntu_22", "Ubuntu_24", "RedHat_9", "Rocky_9"]
STACK_ROLES = ["gpu_repos", "nvidia_driver", "rdma_userspace", "nccl_tests", "dcgm", "nvidia_container_toolkit"]


@pytest.fixture
def lock():
    return yaml.safe_load(LOCK_FILE.read_text())["cluster_node_stack_versions"]


# ------------------------------------------------------------------------------ the version lock


def test_the_shipped_lock_has_no_known_incompatibility(lock):
    assert compat_errors(lock) == []


def test_the_lab_overrides_for_bookworm_keep_the_lock_consistent(lock):
    lab = yaml.safe_load(LAB_VARS.read_text())
    assert fleet_compat_errors(lock, {"gpu01": lab}, ["gpu01"]) == []
    assert effective_versions(lock, lab)["driver"]["version"] == "535.309.01"


def test_the_lock_pins_a_checksummed_nccl_tests_release(lock):
    tests = lock["nccl_tests"]
    assert len(tests["sha256"]) == 64 and int(tests["sha256"], 16) >= 0
    assert tests["version"] in tests["url"] and tests["url"].startswith("https://")


def test_every_rule_names_its_source():
    assert all(rule["source"] and rule["name"] for rule in COMPAT_RULES)
    assert len({rule["name"] for rule in COMPAT_RULES}) == len(COMPAT_RULES)


BROKEN = [
    ("fabric_manager_equals_driver", {"fabric_manager": {"version": "550.144.03"}}, "must equal driver.version"),
    ("imex_equals_driver", {"imex": {"version": "550.90.07"}}, "imex.version 550.90.07 must equal"),
    ("driver_version_in_branch", {"driver": {"branch": "535"}}, "is not in driver.branch 535"),
    ("open_modules_min_driver", {"driver": {"version": "510.108.03", "branch": "510", "kernel_modules": "open"},
                                 "fabric_manager": {"version": "510.108.03"}, "imex": {"version": "510.108.03"},
                                 "cuda": {"version": "11.8"}, "nccl": {"cuda": "11.8"},
                                 "dcgm": {"version": "3.3.9", "exporter": "3.3.9-3.6.1"}},
     "needs driver >= 515.43.04"),
    ("dcgm3_min_driver", {"driver": {"version": "440.118.02", "branch": "440"},
                          "fabric_manager": {"version": "440.118.02"}, "imex": {"version": "440.118.02"},
                          "cuda": {"version": "10.2"}, "nccl": {"cuda": "10.2"},
                          "dcgm": {"version": "3.3.9", "exporter": "3.3.9-3.6.1"}}, "needs driver >= 450.80.02"),
    ("dcgm4_cuda_driver", {"dcgm": {"cuda_major": 13}}, "for CUDA 13 needs driver >= 580.65.06"),
    ("exporter_pairs_host_engine", {"dcgm": {"exporter": "3.3.9-3.6.1"}}, "is paired with DCGM 3.3.9"),
    ("exporter_pairs_host_engine", {"dcgm": {"version": "4.7.1", "exporter": "4.7.0-4.9.0"}},
     "DCGM 4.7.x needs the same patch"),
    ("cuda_min_driver", {"cuda": {"version": "13.0"}, "nccl": {"cuda": "13.0"}},
     "cuda.version 13.0 needs driver >= 580"),
    ("nccl_built_for_cuda_major", {"nccl": {"cuda": "11.8"}}, "different CUDA majors"),
]


@pytest.mark.parametrize("rule,change,message", BROKEN, ids=[f"{b[0]}-{i}" for i, b in enumerate(BROKEN)])
def test_each_known_incompatibility_is_caught(lock, rule, change, message):
    broken = copy.deepcopy(lock)
    for key, sub in change.items():
        broken[key].update(sub)
    errors = compat_errors(broken)
    assert any(e.startswith(rule + ":") and message in e for e in errors), errors


def test_dcgm4_without_a_cuda_major_is_an_error(lock):
    broken = copy.deepcopy(lock)
    del broken["dcgm"]["cuda_major"]
    assert compat_errors(broken) == ["dcgm4_cuda_driver: dcgm.version 4.2.3 needs dcgm.cuda_major "
                                     "(DCGM 4 ships one package per CUDA major)"]


def test_a_malformed_version_is_an_error_not_a_pass(lock):
    broken = copy.deepcopy(lock)
    broken["dcgm"]["version"] = "latest"
    assert any("not a dotted version: 'latest'" in e for e in compat_errors(broken))


def test_a_host_override_is_checked_and_named(lock):
    hostvars = {"gpu01": {"nvidia_driver_version": "570.133.20", "nvidia_driver_branch": "570"},
                "gpu02": {}}
    errors = fleet_compat_errors(lock, hostvars, ["gpu01", "gpu02"])
    assert errors == [
        "host gpu01: fabric_manager_equals_driver: fabric_manager.version 550.163.01 must equal driver.version "
        "570.133.20 (host overrides: nvidia_driver_branch, nvidia_driver_version)",
        "host gpu01: imex_equals_driver: imex.version 550.163.01 must equal driver.version 570.133.20 "
        "(host overrides: nvidia_driver_branch, nvidia_driver_version)",
    ]


def test_a_missing_lock_is_an_error():
    assert fleet_compat_errors({}, {}, []) == ["version lock: cluster_node_stack_versions is missing or empty"]


def test_every_override_points_at_a_lock_key(lock):
    for var, dotted in OVERRIDES.items():
        node = lock
        for key in dotted.split("."):
            assert key in node, f"{var} -> {dotted}: {key} is not in the lock"
            node = node[key]


# ------------------------------------------------------------------------- the driver-change guard


@pytest.mark.parametrize("installed,view,scheduler,drained,action", [
    ("", None, True, False, "install"),
    ("535.309.01", {"busy": True, "drained": False}, True, False, "keep"),
    ("535.261.03", {"busy": True, "drained": True}, True, False, "refuse"),
    ("535.261.03", {"busy": False, "drained": False}, True, False, "refuse"),
    ("535.261.03", {"busy": False, "drained": True}, True, False, "change"),
    ("535.261.03", None, True, False, "change"),
    ("535.261.03", None, False, False, "refuse"),
    ("535.261.03", None, False, True, "change"),
])
def test_a_driver_change_needs_a_drained_idle_node(installed, view, scheduler, drained, action):
    decision = driver_change_decision(installed, "535.309.01", view, scheduler, drained)
    assert decision["action"] == action, decision


def test_a_refusal_says_what_to_do():
    busy = driver_change_decision("535.261.03", "535.309.01", {"busy": True, "drained": True})
    assert busy["reason"] == ("driver 535.261.03 -> 535.309.01: the node runs jobs; drain it (pools.yml or "
                              "scontrol) and wait for them to end")
    alone = driver_change_decision("535.261.03", "535.309.01", None, scheduler=False)
    assert "nvidia_driver_node_drained: true" in alone["reason"]


# ------------------------------------------------------------- Slurm's NVML plugin (real captures)


def test_bookworm_nvml_plugin_is_uninstallable_and_says_why(fixture_output):
    verdict = apt_simulate_verdict(100, fixture_output("apt_simulate_slurm_nvml_plugin_bookworm_unmet.txt"))
    assert verdict == {"installable": False, "reason": "slurm-wlm-nvml-plugin : Depends: slurm-wlm-basic-plugins "
                                                       "(= 22.05.8-4+deb12u2) but it is not going to be installed"}


def test_trixie_nvml_plugin_installs(fixture_output):
    text = fixture_output("apt_simulate_slurm_nvml_plugin_trixie_ok.txt")
    assert "Inst slurm-wlm-nvml-plugin (24.11.5-2" in text
    assert apt_simulate_verdict(0, text) == {"installable": True, "reason": ""}


@pytest.mark.parametrize("rc,text", [(0, ""), (1, "E: Could not get lock /var/lib/dpkg/lock-frontend"),
                                     (100, "E: something else")])
def test_an_apt_answer_not_understood_is_an_error(rc, text):
    with pytest.raises(ValueError, match="without a result I understand"):
        apt_simulate_verdict(rc, text)


def test_the_filter_reads_a_registered_probe(fixture_output):
    probe = {"rc": 100, "stdout": fixture_output("apt_simulate_slurm_nvml_plugin_bookworm_unmet.txt"),
             "stderr": ""}
    assert FilterModule().filters()["node_stack_apt_simulate"](probe)["installable"] is False


# ---------------------------------------------------------------------------- per-OS package data


# distribution_major -> os_family, as Ansible's facts give them (Rocky: a rebuild with no file of its own).
FAMILY = {"Debian_12": "Debian", "Debian_13": "Debian", "Ubuntu_22": "Debian", "Ubuntu_24": "Debian",
          "RedHat_9": "RedHat", "Rocky_9": "RedHat"}


def _files(role, os_name):
    """The vars files the roles' OS loader reads, in order: vars/<os_family>.yml (required), then
    vars/<distribution>_<major>.yml where it exists (tests/unit/test_os_vars.py keeps the loader one)."""
    family = ROOT / "roles" / role / "vars" / f"{FAMILY[os_name]}.yml"
    release = ROOT / "roles" / role / "vars" / f"{os_name}.yml"
    return [family] + ([release] if release.exists() and release != family else [])


def _vars(role, os_name):
    data = {}
    for path in _files(role, os_name):
        data.update(yaml.safe_load(path.read_text()) or {})
    return data


@pytest.mark.parametrize("role", STACK_ROLES)
@pytest.mark.parametrize("os_name", OSES)
def test_every_stack_role_has_data_for_every_supported_os(role, os_name):
    assert _vars(role, os_name), f"{role}: vars/{os_name}.yml is empty"


@pytest.mark.parametrize("os_name", OSES)
def test_not_proven_sources_are_labelled_and_debian_is_not(os_name):
    text = _files("gpu_repos", os_name)[-1].read_text()
    if os_name.startswith("Debian"):
        assert "proven in the lab" in text and "debian_nonfree" in text
    else:
        assert "Rendered, not proven in the lab." in text


@pytest.mark.parametrize("os_name,release", [("Debian_12", "bookworm"), ("Debian_13", "trixie")])
def test_debian_adds_contrib_and_non_free_of_its_own_release(os_name, release):
    entries = _vars("gpu_repos", os_name)["__gpu_repos_catalog"]["debian_nonfree"]
    assert [e["suites"] for e in entries] == [[release, f"{release}-updates"], [f"{release}-security"]]
    assert all(e["components"] == ["contrib", "non-free"] for e in entries)
    assert all(e["signed_by"] == "/usr/share/keyrings/debian-archive-keyring.gpg" for e in entries)
    assert "main" not in {c for e in entries for c in e["components"]}  # no duplicate of the image's main


@pytest.mark.parametrize("os_name,repo", [("Debian_12", "debian12"), ("Debian_13", "debian13"),
                                          ("Ubuntu_22", "ubuntu2204"), ("Ubuntu_24", "ubuntu2404"),
                                          ("RedHat_9", "rhel9"), ("Rocky_9", "rhel9")])
def test_the_cuda_repository_is_nvidia_s_for_this_release_with_its_key(os_name, repo):
    (entry,) = _vars("gpu_repos", os_name)["__gpu_repos_catalog"]["cuda"]
    url = entry.get("uris") or entry["baseurl"]
    key = entry.get("signed_by") or entry["gpgkey"]
    assert url == f"https://developer.download.nvidia.com/compute/cuda/repos/{repo}/x86_64/"
    assert key.startswith(url) and key.endswith(".pub")
    assert entry["mirror_key"] == "cuda"


@pytest.mark.parametrize("os_name", OSES)
def test_every_source_can_be_replaced_by_a_mirror(os_name):
    catalog = _vars("gpu_repos", os_name)["__gpu_repos_catalog"]
    keys = {e["mirror_key"] for entries in catalog.values() for e in entries}
    spec = yaml.safe_load((ROOT / "roles" / "gpu_repos" / "meta" / "argument_specs.yml").read_text())
    documented = spec["argument_specs"]["main"]["options"]["gpu_repos_mirrors"]["description"]
    assert keys <= {"debian", "debian_security", "cuda", "container_toolkit", "doca"}
    assert all(k in documented for k in keys)


@pytest.mark.parametrize("os_name", OSES)
def test_driver_packages_are_pinned_and_the_version_package_is_installed(os_name):
    data = _vars("nvidia_driver", os_name)
    assert data["__nvidia_driver_pin_suffix"] in ("={version}-*", "-{version}")
    assert set(data["__nvidia_driver_kernel"]) == {"proprietary", "open"}
    assert data["__nvidia_driver_version_package"] in data["__nvidia_driver_userspace"]
    assert data["__nvidia_driver_fabric_manager_packages"] and data["__nvidia_driver_imex_packages"]


def test_debian_driver_userspace_is_what_the_lab_installs():
    for os_name in ("Debian_12", "Debian_13"):
        data = _vars("nvidia_driver", os_name)
        assert data["__nvidia_driver_userspace"] == ["nvidia-smi", "libnvidia-ml1"]
        assert data["__nvidia_driver_unpinned"] == ["python3-pynvml"]


@pytest.mark.parametrize("os_name", OSES)
def test_rdma_and_mpi_packages_cover_the_gate_tools(os_name):
    rdma = _vars("rdma_userspace", os_name)["__rdma_userspace_packages"]
    assert "perftest" in rdma["distro"] and "infiniband-diags" in rdma["distro"] and "rdma-core" in rdma["distro"]
    assert "doca-ofed" in rdma["doca"]
    mpi = _vars("nccl_tests", os_name)["__nccl_tests_mpi_packages"]
    assert any("pmix" in p for p in mpi) and any("openmpi" in p for p in mpi)


@pytest.mark.parametrize("os_name", OSES)
def test_nccl_packages_carry_the_locked_version(os_name):
    data = _vars("nccl_tests", os_name)
    assert all("{nccl}" in p for p in data["__nccl_tests_nccl_packages"])


def test_the_gate_runs_nccl_tests_from_the_role_s_prefix():
    gate = yaml.safe_load((ROOT / "roles" / "health_gate" / "defaults" / "main.yml").read_text())
    tests = yaml.safe_load((ROOT / "roles" / "nccl_tests" / "defaults" / "main.yml").read_text())
    assert gate["health_gate_nccl_tests_bin"] == tests["nccl_tests_prefix"] + "/current/bin"
    assert gate["health_gate_nccl_pair_command"][0] == "{{ health_gate_nccl_tests_bin }}/all_reduce_perf"
