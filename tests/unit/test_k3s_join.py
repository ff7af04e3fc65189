"""k3s join (issue 20): agents join with a separate agent token in the secure K10 form built from the first
server's CA, and an HA cluster registers through a fixed address (VIP or DNS name) that tls-san covers."""

import datetime
import hashlib
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from k3s import k3s_ca_hash, k3s_join_token  # filter_plugins/k3s.py

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"
PLAYBOOK = str(pathlib.Path(sys.executable).with_name("ansible-playbook"))
PASSWORD = "agent-password-0123456789"  # test value, not a real secret
SERVER_PASSWORD = "server-password-0123456789"


def self_signed_ca_pem(name="k3s-server-ca"):
    """A self-signed CA certificate in PEM, as k3s generates server-ca.crt (one certificate)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def test_ca_hash_is_the_sha256_of_the_pem_bytes_as_k3s_hashes_a_single_certificate():
    pem = self_signed_ca_pem()
    assert k3s_ca_hash(pem) == hashlib.sha256(pem.encode()).hexdigest()


@pytest.mark.parametrize("content", ["", "not a certificate", None])
def test_ca_hash_refuses_a_file_without_a_certificate(content):
    with pytest.raises(AnsibleFilterError, match="no PEM certificate"):
        k3s_ca_hash(content)


def test_ca_hash_refuses_a_bundle_k3s_would_hash_over_the_root_der():
    with pytest.raises(AnsibleFilterError, match="holds 2 certificates"):
        k3s_ca_hash(self_signed_ca_pem("a") + self_signed_ca_pem("b"))


def test_agent_token_is_the_secure_k10_form_with_the_node_user():
    ca_hash = k3s_ca_hash(self_signed_ca_pem())
    token = k3s_join_token(PASSWORD, ca_hash)
    assert token == f"K10{ca_hash}::node:{PASSWORD}" == k3s_join_token(PASSWORD, ca_hash, "node")
    assert re.fullmatch(r"K10[0-9a-f]{64}::node:[^:\s]{16,}", token)


def test_server_join_token_is_the_secure_k10_form_with_the_server_user():
    # Issue 33: servers after the first joined with the bare server token; k3s joins a server as user "server".
    ca_hash = k3s_ca_hash(self_signed_ca_pem())
    token = k3s_join_token(SERVER_PASSWORD, ca_hash, "server")
    assert token == f"K10{ca_hash}::server:{SERVER_PASSWORD}"
    assert re.fullmatch(r"K10[0-9a-f]{64}::server:[^:\s]{16,}", token)


@pytest.mark.parametrize("user", ["admin", "", None, "Server"])
def test_join_token_refuses_a_user_k3s_does_not_keep(user):
    with pytest.raises(AnsibleFilterError, match="the user must be one of node, server") as err:
        k3s_join_token(SERVER_PASSWORD, "0" * 64, user)
    assert SERVER_PASSWORD not in str(err.value)


@pytest.mark.parametrize(("password", "ca_hash"), [
    ("short", "0" * 64), ("has:a-colon-in-the-middle", "0" * 64), ("has a space in the middle!", "0" * 64),
    (PASSWORD, "0" * 63), (PASSWORD, "G" * 64),
], ids=["short", "colon", "space", "hash-length", "hash-hex"])
def test_agent_token_refuses_bad_input_without_echoing_the_password(password, ca_hash):
    with pytest.raises(AnsibleFilterError) as err:
        k3s_join_token(password, ca_hash)
    assert password not in str(err.value)
    with pytest.raises(AnsibleFilterError) as err:
        k3s_join_token(password, ca_hash, "server")
    assert password not in str(err.value)


def run_play(tmp, plays, servers, hostvars, check=False):
    hosts = {name: {"ansible_host": f"10.0.0.{i + 1}"} for i, name in enumerate(servers)}
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "k3s_server_render_dir": str(tmp / "out"), "k3s_agent_render_dir": str(tmp / "out"), **hostvars},
        "children": {"k8s_server": {"hosts": hosts}, "k8s_agent": {"hosts": {"gpu01": {"ansible_host": "10.0.1.1"}}}},
    }}
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    args = [PLAYBOOK, "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml")] + (["--check"] if check else [])
    result = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return result.returncode, result.stdout + result.stderr


def play(hosts, role, tasks_from="main", extra_tasks=()):
    return {"name": f"{role} {tasks_from}", "hosts": hosts, "gather_facts": False,
            "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
            "tasks": [{"name": "Run", "ansible.builtin.import_role": {"name": role, "tasks_from": tasks_from}},
                      *extra_tasks]}


RENDER = [play("k8s_server", "k3s_server", "render"), play("k8s_agent", "k3s_agent", "render")]


def rendered(tmp, host):
    return yaml.safe_load((tmp / "out" / host / "etc/rancher/k3s/config.yaml").read_text())


def test_ha_servers_and_agents_register_through_the_fixed_address_in_tls_san(tmp_path):
    rc, out = run_play(tmp_path, RENDER, ["ctl1", "ctl2", "ctl3"], {"cluster_k8s_api_endpoint": "k8s-api.lab"})
    assert rc == 0, out
    first, second, agent = rendered(tmp_path, "ctl1"), rendered(tmp_path, "ctl2"), rendered(tmp_path, "gpu01")
    assert first["cluster-init"] is True and "server" not in first
    assert second["server"] == "https://k8s-api.lab:6443" and "cluster-init" not in second
    assert agent["server"] == "https://k8s-api.lab:6443"
    assert first["tls-san"][0] == "k8s-api.lab" and second["tls-san"][0] == "k8s-api.lab"
    assert first["agent-token-file"] == "/etc/rancher/k3s/agent-token"
    assert first["token-file"] == "/etc/rancher/k3s/token"
    assert not {"token", "agent-token"} & (set(first) | set(second) | set(agent)), "no secret in config.yaml"


def test_one_server_may_register_through_its_own_address(tmp_path):
    rc, out = run_play(tmp_path, RENDER, ["ctl1"], {})
    assert rc == 0, out
    assert rendered(tmp_path, "gpu01")["server"] == "https://10.0.0.1:6443"
    assert rendered(tmp_path, "ctl1")["tls-san"] == ["10.0.0.1"]


@pytest.mark.parametrize(("hostvars", "expected"), [
    ({}, ["ctl1: k3s_server_api_endpoint (default cluster_k8s_api_endpoint) must be a fixed registration address",
          "with 3 servers (ctl1, ctl2, ctl3); is ''"]),
    ({"cluster_k8s_api_endpoint": "10.0.0.1"}, ["ctl2: k3s_server_api_endpoint", "is '10.0.0.1'"]),
    ({"k3s_server_api_endpoint": "vip.lab", "k3s_agent_server_endpoint": "ctl2"},
     ["gpu01: k3s_agent_server_endpoint (default cluster_k8s_api_endpoint) must be a fixed", "is 'ctl2'"]),
], ids=["unset", "first-server-ip", "agent-on-a-server-name"])
def test_ha_without_a_fixed_address_fails_naming_host_and_variable(tmp_path, hostvars, expected):
    rc, out = run_play(tmp_path, RENDER, ["ctl1", "ctl2", "ctl3"], hostvars)
    assert rc != 0, out
    flat = " ".join(out.split())
    for message in expected:
        assert message in flat, out


@pytest.mark.parametrize("count", [2, 4])
def test_an_even_server_count_is_refused_naming_the_variable(tmp_path, count):
    # Issue 33: two servers make a two-member etcd that stops when either server does.
    servers = [f"ctl{i}" for i in range(1, count + 1)]
    rc, out = run_play(tmp_path, RENDER, servers, {"cluster_k8s_api_endpoint": "k8s-api.lab"})
    assert rc != 0, out
    flat = " ".join(out.split())
    assert f"ctl1: k3s_server_hosts (default group k8s_server) has {count} servers" in flat, out
    assert "embedded etcd needs 1, 3, 5 or 7" in flat, out


def test_etcd_snapshot_and_s3_settings_are_accepted_but_not_their_secrets(tmp_path):
    extra = {"etcd-s3": True, "etcd-s3-bucket": "snapshots", "etcd-s3-endpoint": "s3.lab",
             "etcd-snapshot-compress": True, "cluster-reset-restore-path": "/var/lib/rancher/k3s/server/db/snapshots/x",
             "disable-default-registry-endpoint": True}
    rc, out = run_play(tmp_path, RENDER, ["ctl1"], {"k3s_server_config_extra": extra})
    assert rc == 0, out
    assert extra.items() <= rendered(tmp_path, "ctl1").items()
    rc, out = run_play(tmp_path, RENDER, ["ctl1"], {"k3s_server_config_extra": {"etcd-s3-secret-key": "hunter2"}})
    assert rc != 0 and "etcd-s3-secret-key" in out and "hunter2" not in out, out


@pytest.mark.parametrize(("hostvars", "message"), [
    ({"k3s_server_token": SERVER_PASSWORD}, "missing required arguments: k3s_server_agent_token"),
    ({"k3s_server_token": SERVER_PASSWORD, "k3s_server_agent_token": SERVER_PASSWORD},
     "ctl1: k3s_server_agent_token is required: the agent token's password"),
    ({"k3s_server_token": SERVER_PASSWORD, "k3s_server_agent_token": "K10" + "0" * 64 + "::node:" + PASSWORD},
     "ctl1: k3s_server_agent_token is required: the agent token's password"),
], ids=["missing", "same-as-server-token", "k10-form"])
def test_server_agent_token_is_a_separate_required_password(tmp_path, hostvars, message):
    site = {"k3s_node_install_method": "airgap", "k3s_node_airgap_dir": str(tmp_path / "airgap"), **hostvars}
    rc, out = run_play(tmp_path, [play("k8s_server", "k3s_server")], ["ctl1"], site, check=True)
    assert rc != 0, out
    assert message in " ".join(out.split()), out
    assert "changed=1" not in out and SERVER_PASSWORD not in out.replace("missing required", "")


@pytest.mark.parametrize("role", ["k3s_server", "k3s_agent"])
def test_token_variables_are_required_secrets_without_default(role):
    defaults = yaml.safe_load((ROLES / role / "defaults/main.yml").read_text())
    spec = yaml.safe_load((ROLES / role / "meta/argument_specs.yml").read_text())["argument_specs"]
    names = ["k3s_server_token", "k3s_server_agent_token"] if role == "k3s_server" else ["k3s_agent_token"]
    for name in names:
        option = spec["main"]["options"][name]
        assert name not in defaults and "default" not in option
        assert option["required"] is True and option["no_log"] is True
        assert name not in spec["render"]["options"], "render needs no secret"


def test_agent_builds_the_secure_token_from_the_first_servers_ca(tmp_path):
    pem = self_signed_ca_pem()
    ca_file = tmp_path / "server-ca.crt"
    ca_file.write_text(pem)
    out_file = tmp_path / "token"
    dump = {"name": "Keep the token the role built", "no_log": True,
            "ansible.builtin.copy": {"content": "{{ __k3s_agent_join_token }}", "dest": str(out_file), "mode": "0600"}}
    rc, out = run_play(tmp_path, [play("k8s_agent", "k3s_agent", "token", [dump])], ["ctl1"],
                       {"k3s_agent_token": PASSWORD, "k3s_agent_server_ca_file": str(ca_file)})
    assert rc == 0, out
    assert out_file.read_text() == f"K10{hashlib.sha256(pem.encode()).hexdigest()}::node:{PASSWORD}"
    assert PASSWORD not in out, "the secret never appears in the output"


def test_agent_stops_when_the_first_server_has_no_ca(tmp_path):
    rc, out = run_play(tmp_path, [play("k8s_agent", "k3s_agent", "token")], ["ctl1"],
                       {"k3s_agent_token": PASSWORD, "k3s_agent_server_ca_file": str(tmp_path / "absent.crt")})
    assert rc != 0, out
    assert "fatal: [gpu01" in out and "absent.crt" in out, out


def server_config(tmp, ca_pem, check=False, servers=("ctl1", "ctl2", "ctl3")):
    """k3s_server's facts and config steps on every server (config directory under tmp/<host>), the first server's CA
    at tmp/server-ca.crt unless ca_pem is None; the play ends before the restart handlers."""
    if ca_pem is not None:
        (tmp / "server-ca.crt").write_text(ca_pem)
    steps = play("k8s_server", "k3s_server", "facts",
                 [{"name": "Configure", "ansible.builtin.import_role": {"name": "k3s_server", "tasks_from": "config"}},
                  {"name": "Stop before the restart handlers", "ansible.builtin.meta": "end_host"}])
    site = {"k3s_server_token": SERVER_PASSWORD, "k3s_server_agent_token": PASSWORD,
            "cluster_k8s_api_endpoint": "k8s-api.lab", "k3s_server_ca_file": str(tmp / "server-ca.crt"),
            "k3s_server_config_dir": str(tmp) + "/{{ inventory_hostname }}"}
    return run_play(tmp, [steps], list(servers), site, check=check)


def test_servers_after_the_first_join_with_the_ca_pinned_server_token_in_0600_files(tmp_path):
    pem = self_signed_ca_pem()
    rc, out = server_config(tmp_path, pem)
    assert rc == 0, out
    pinned = f"K10{hashlib.sha256(pem.encode()).hexdigest()}::server:{SERVER_PASSWORD}\n"
    tokens = {host: (tmp_path / host / "token").read_text() for host in ("ctl1", "ctl2", "ctl3")}
    assert tokens == {"ctl1": SERVER_PASSWORD + "\n", "ctl2": pinned, "ctl3": pinned}
    for host in ("ctl1", "ctl2", "ctl3"):
        for name in ("token", "agent-token", "config.yaml"):
            assert (tmp_path / host / name).stat().st_mode & 0o777 == 0o600, f"{host}: {name}"
    assert SERVER_PASSWORD not in out and PASSWORD not in out, "the secrets never appear in the output"


def test_a_joining_server_without_the_first_servers_ca_stops_naming_host_and_variable(tmp_path):
    rc, out = server_config(tmp_path, None)
    assert rc != 0, out
    flat = " ".join(out.split())
    assert f"ctl2: ctl1:{tmp_path}/server-ca.crt (k3s_server_ca_file) is missing" in flat, out
    assert not (tmp_path / "ctl2" / "token").exists()
    assert SERVER_PASSWORD not in out
    # Under --check before the first server ran there is no CA yet: the run goes on and writes nothing.
    rc, out = server_config(tmp_path, None, check=True)
    assert rc == 0, out
    assert not (tmp_path / "ctl2" / "token").exists() and SERVER_PASSWORD not in out


@pytest.mark.parametrize("token", ["has:a-colon-in-the-middle", "has a space in the middle!"])
def test_a_server_token_the_secure_form_cannot_carry_is_refused_without_echoing_it(tmp_path, token):
    rc, out = run_play(tmp_path, [play("k8s_server", "k3s_server", "tokens")], ["ctl1"],
                       {"k3s_server_token": token, "k3s_server_agent_token": PASSWORD})
    assert rc != 0, out
    assert "ctl1: k3s_server_token is required: the server token's password" in " ".join(out.split()), out
    assert token not in out
