"""OS data lives in vars/<os_family>.yml and vars/<distribution>_<major>.yml and every role loads it one way
(STYLE: "OS-specific data lives in vars/<os>.yml"): the family's file (required: an unknown family fails at the
load, before anything changes), then the release's file where one exists, which overrides the family's."""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if p.is_dir())

FAMILY_TASK = {"ansible.builtin.include_vars": "{{ ansible_facts['os_family'] }}.yml"}
RELEASE_TASK = {
    "ansible.builtin.include_vars": "{{ item }}",
    "loop": "{{ query('ansible.builtin.first_found',\n"
            "         files=[ansible_facts['distribution'] ~ '_' ~ "
            "ansible_facts['distribution_major_version'] ~ '.yml'],\n"
            "         paths=[role_path ~ '/vars'], skip=true) }}",
}
# The roles whose OS data issue 12 asks for, Debian 12 and 13 complete (slurm_common was the model).
OS_DATA_ROLES = ["base", "munge", "slurm_common", "slurm_dbd", "slurm_controller", "slurm_nvml", "gpu_repos",
                 "nvidia_driver", "rdma_userspace", "nccl_tests", "dcgm", "nvidia_container_toolkit", "containerd",
                 "kubeadm_node"]
# distribution_major -> os_family, as Ansible's facts name them.
RELEASES = {"Debian_12": "Debian", "Debian_13": "Debian", "Ubuntu_22": "Debian", "Ubuntu_24": "Debian",
            "RedHat_9": "RedHat", "Rocky_9": "RedHat"}


def tasks_of(role):
    for path in sorted((ROOT / "roles" / role / "tasks").glob("*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            yield path, task
            for key in ("block", "rescue", "always"):
                for inner in task.get(key, []):
                    yield path, inner


def loads(task):
    return {k: v for k, v in task.items() if k not in ("name",)}


def os_files(role):
    return sorted(p.name for p in (ROOT / "roles" / role / "vars").glob("*.yml") if p.name != "main.yml")


def effective(role, release):
    """What the loader leaves for a host of ``release``: the family's data overridden by the release's."""
    family = ROOT / "roles" / role / "vars" / f"{RELEASES[release]}.yml"
    data = dict(yaml.safe_load(family.read_text()) or {})
    own = ROOT / "roles" / role / "vars" / f"{release}.yml"
    if own.exists():
        data.update(yaml.safe_load(own.read_text()) or {})
    return data


@pytest.mark.parametrize("role", ROLES)
def test_every_vars_load_is_the_family_then_the_release(role):
    found = [(path.name, loads(t)) for path, t in tasks_of(role)
             if "ansible.builtin.include_vars" in t or "include_vars" in t or "with_first_found" in t]
    for name, task in found:
        assert task in (FAMILY_TASK, RELEASE_TASK), f"{role}/tasks/{name}: {task}"
    bodies = [task for _, task in found]
    if FAMILY_TASK in bodies:  # the release's file is read right after its family's
        assert bodies[bodies.index(FAMILY_TASK) + 1] == RELEASE_TASK, role
    if os_files(role):
        assert FAMILY_TASK in bodies and RELEASE_TASK in bodies, f"{role} has {os_files(role)} but does not load them"


@pytest.mark.parametrize("role", ROLES)
def test_os_files_are_named_for_a_family_or_a_release(role):
    for name in os_files(role):
        stem = name[:-4]
        assert stem in ("Debian", "RedHat") or stem in RELEASES or stem.split("_")[0] in ("Debian", "Ubuntu"), (
            f"{role}/vars/{name}: name it <os_family>.yml or <distribution>_<major>.yml")


@pytest.mark.parametrize("role", OS_DATA_ROLES)
def test_debian_12_and_13_are_complete(role):
    assert (ROOT / "roles" / role / "vars" / "Debian.yml").exists(), f"{role}: vars/Debian.yml"
    twelve, thirteen = effective(role, "Debian_12"), effective(role, "Debian_13")
    assert twelve and set(twelve) == set(thirteen), role
    family_keys = set(yaml.safe_load((ROOT / "roles" / role / "vars" / "Debian.yml").read_text()) or {})
    for other in os_files(role):  # a release or another family never adds a key the others lack
        keys = set(yaml.safe_load((ROOT / "roles" / role / "vars" / other).read_text()) or {})
        assert keys <= family_keys | set(twelve), f"{role}/vars/{other}: {keys - family_keys}"


@pytest.mark.parametrize("role", [r for r in OS_DATA_ROLES if (ROOT / "roles" / r / "vars" / "RedHat.yml").exists()])
def test_a_rhel_rebuild_takes_the_family_data_like_rhel(role):
    assert effective(role, "Rocky_9") == effective(role, "RedHat_9")


def test_the_release_file_overrides_the_family_file():
    # gpu_repos: the Debian family knows no source; Debian 12 and 13 bring their own releases' sources.
    assert effective("gpu_repos", "Debian_12")["__gpu_repos_default_sources"] == ["debian_nonfree"]
    assert yaml.safe_load((ROOT / "roles/gpu_repos/vars/Debian.yml").read_text())["__gpu_repos_catalog"] == {}
    assert "bookworm" in str(effective("gpu_repos", "Debian_12"))
    assert "trixie" in str(effective("gpu_repos", "Debian_13"))


def test_no_role_default_holds_debian_paths_or_packages_its_vars_own():
    # The input defaults to empty (= this OS's); the Debian value lives once, in vars/Debian.yml.
    for role, key, os_key in [("slurm_controller", "slurm_controller_packages", "__slurm_controller_os_packages"),
                              ("slurm_nvml", "slurm_nvml_package", "__slurm_nvml_os_package"),
                              ("slurm_nvml", "slurm_nvml_library", "__slurm_nvml_os_library"),
                              ("slurm_nvml", "slurm_nvml_plugin_dirs", "__slurm_nvml_os_plugin_dirs"),
                              ("containerd", "containerd_apt_repo_url", "__containerd_os_apt_repo_url"),
                              ("kubeadm_node", "kubeadm_node_apt_repo_url", "__kubeadm_node_os_apt_repo_url")]:
        default = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())[key]
        assert default in ("", []), (role, key)
        assert effective(role, "Debian_12")[os_key], (role, os_key)
