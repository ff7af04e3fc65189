"""What site.yml leaves on the hosts, checked on the hosts themselves with testinfra.

Hosts come from an Ansible inventory through testinfra's ansible backend; each host's groups say what it
must run. molecule/slurm_policy/verify_lab.yml runs this suite against its lab:

    python -m pytest tests/integration --hosts='ansible://lab_nodes' --ansible-inventory=molecule/slurm_policy/inventory

(with ANSIBLE_SSH_COMMON_ARGS set to the rendered ProxyCommand, which `ansible-inventory` does not template).
pytest.ini's testpaths keep it out of the unit run.
"""

import pytest

SLURM_HOST_GROUPS = {"slurm_controller", "slurm_dbd", "gpu_nodes"}
BASE_PACKAGES = ["ca-certificates", "curl", "jq", "rsync", "iproute2", "procps"]
MUNGE_SOCKET = "/run/munge/munge.socket.2"


@pytest.fixture(scope="module")
def groups(host):
    return set(host.ansible.get_variables()["group_names"])


def expected_packages(groups):
    packages = list(BASE_PACKAGES)
    if groups & SLURM_HOST_GROUPS:
        packages += ["munge", "slurm-client", "slurm-wlm-basic-plugins"]
    if "slurm_controller" in groups:
        packages += ["slurmctld"]
    if "gpu_nodes" in groups:
        packages += ["slurmd"]
    if "slurm_dbd" in groups:
        packages += ["slurmdbd", "mariadb-server"]
    return packages


def expected_daemons(groups):
    daemons = ["munge"] if groups & SLURM_HOST_GROUPS else []
    if "slurm_controller" in groups:
        daemons.append("slurmctld")
    if "slurm_compute" in groups:
        daemons.append("slurmd")
    if "slurm_dbd" in groups:
        daemons += ["mariadb", "slurmdbd"]
    return daemons


def test_the_hosts_packages_are_installed(host, groups):
    missing = [name for name in expected_packages(groups) if not host.package(name).is_installed]
    assert missing == [], f"{host.backend.hostname}: not installed: {missing}"


def test_the_hosts_daemons_are_running_and_enabled(host, groups):
    daemons = expected_daemons(groups)
    assert daemons, f"{host.backend.hostname}: no Slurm role in its groups {sorted(groups)}"
    wrong = [name for name in daemons if not (host.service(name).is_running and host.service(name).is_enabled)]
    assert wrong == [], f"{host.backend.hostname}: not running or not enabled: {wrong}"


def test_munge_listens_on_its_socket_and_round_trips_a_credential(host):
    assert host.file(MUNGE_SOCKET).is_socket, f"{MUNGE_SOCKET} is not a socket"
    decoded = host.run("munge -n | unmunge")
    assert decoded.rc == 0 and "STATUS:          Success (0)" in decoded.stdout, decoded.stdout + decoded.stderr


def test_munge_key_is_readable_by_munge_only(host):
    key = host.file("/etc/munge/munge.key")
    assert key.is_file
    assert (key.user, key.group, key.mode) == ("munge", "munge", 0o400)
    assert key.size >= 32, "a munge key shorter than 32 bytes"


def test_slurm_conf_is_root_owned_and_world_readable(host):
    conf = host.file("/etc/slurm/slurm.conf")
    assert conf.is_file
    assert (conf.user, conf.group, conf.mode) == ("root", "root", 0o644)
    assert conf.contains(f"^ClusterName={host.ansible.get_variables()['cluster_name']}$")


def test_slurmdbd_conf_holds_the_password_readable_by_slurm_only(host, groups):
    conf = host.file("/etc/slurm/slurmdbd.conf")
    if "slurm_dbd" not in groups:
        assert not conf.exists, "slurmdbd.conf (it holds the database password) on a host without slurmdbd"
        return
    assert (conf.user, conf.group, conf.mode) == ("slurm", "slurm", 0o600)
    assert conf.contains("^StoragePass=")


def test_slurm_daemons_listen_on_their_ports(host, groups):
    # 0.0.0.0 also matches a socket bound to :: (all IPv4 and IPv6 addresses).
    ports = {"slurm_controller": 6817, "slurm_compute": 6818, "slurm_dbd": 6819}
    closed = [port for group, port in ports.items()
              if group in groups and not host.socket(f"tcp://0.0.0.0:{port}").is_listening]
    assert closed == [], f"{host.backend.hostname}: nothing listens on {closed}"
