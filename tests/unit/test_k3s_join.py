"""k3s join (issue 20): agents join with a separate agent token in the secure K10 form built from the first
server's CA, and an HA cluster registers through a fixed address (VIP or DNS name) that tls-san covers."""

import datetime
import hashlib
import pathlib
import re
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from conftest import run_cases
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from k3s import k3s_ca_hash, k3s_join_token  # filter_plugins/k3s.py

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"
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


# Every case below is a set of hosts of its own (servers <case>-ctlN, agent <case>-gpu01; case "ha" keeps ctl1-3 and
# gpu01 in the groups k8s_server and k8s_agent, the roles' defaults) in one inventory, so that one ansible-playbook
# run per mode (plain, --check) plays them all; each test judges its case's hosts by their recorded results.
# Other cases name their servers through k3s_server_hosts / k3s_agent_server_hosts, whose default is the group.
HOST = re.compile(r"\b(ctl[0-9]|gpu01)\b")


def named(case, value):
    """value (a string, or the strings of a list or dict) with the host names of the case."""
    if isinstance(value, str):
        return value if case == "ha" else HOST.sub(lambda m: f"{case}-{m.group(1)}", value)
    if isinstance(value, dict):
        return {k: named(case, v) for k, v in value.items()}
    if isinstance(value, list):
        return [named(case, v) for v in value]
    return value


def group(case, kind):
    return f"k8s_{kind}" if case == "ha" else f"{case.replace('-', '_')}_{kind}"


def play(hosts, role, tasks_from="main", extra_tasks=()):
    return {"name": f"{role} {tasks_from}", "hosts": hosts, "gather_facts": False,
            "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
            "tasks": [{"name": "Run", "ansible.builtin.import_role": {"name": role, "tasks_from": tasks_from}},
                      *extra_tasks]}


def server_steps(hosts):
    """k3s_server's facts and config steps; the play ends before the restart handlers."""
    return play(hosts, "k3s_server", "facts",
                [{"name": "Configure", "ansible.builtin.import_role": {"name": "k3s_server", "tasks_from": "config"}},
                 {"name": "Stop before the restart handlers", "ansible.builtin.meta": "end_host"}])


def on(cases, kind):
    return ":".join(group(case, kind) for case in cases)


# case: (servers, variables of its hosts). The renders run the servers' then the agents' render.
RENDER_CASES = {
    "ha": (3, {"cluster_k8s_api_endpoint": "k8s-api.lab"}),
    "one": (1, {}),
    "unset": (3, {}),
    "first-server-ip": (3, {"cluster_k8s_api_endpoint": "10.0.0.1"}),
    "agent-on-a-server-name": (3, {"k3s_server_api_endpoint": "vip.lab", "k3s_agent_server_endpoint": "ctl2"}),
    "even2": (2, {"cluster_k8s_api_endpoint": "k8s-api.lab"}),
    "even4": (4, {"cluster_k8s_api_endpoint": "k8s-api.lab"}),
    "etcd": (1, {"k3s_server_config_extra": {
        "etcd-s3": True, "etcd-s3-bucket": "snapshots", "etcd-s3-endpoint": "s3.lab", "etcd-snapshot-compress": True,
        "cluster-reset-restore-path": "/var/lib/rancher/k3s/server/db/snapshots/x",
        "disable-default-registry-endpoint": True}}),
    "etcd-secret": (1, {"k3s_server_config_extra": {"etcd-s3-secret-key": "hunter2"}}),
}
SERVER_AGENT_TOKEN_CASES = {
    "missing": {"k3s_server_token": SERVER_PASSWORD},
    "same-as-server-token": {"k3s_server_token": SERVER_PASSWORD, "k3s_server_agent_token": SERVER_PASSWORD},
    "k10-form": {"k3s_server_token": SERVER_PASSWORD,
                 "k3s_server_agent_token": "K10" + "0" * 64 + "::node:" + PASSWORD},
}
SERVER_TOKEN_CASES = {"token-colon": "has:a-colon-in-the-middle", "token-space": "has a space in the middle!"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The cases' runs: "plain" and "check" (CaseRun each), the case directories and the CA each case was given."""
    tmp = tmp_path_factory.mktemp("k3s_join")
    dirs, cas, children = {}, {}, {}

    def case(name, servers, variables, ca=False):
        dirs[name] = tmp / name
        dirs[name].mkdir()
        if ca:
            cas[name] = self_signed_ca_pem()
            (dirs[name] / "server-ca.crt").write_text(cas[name])
        hosts = [named(name, f"ctl{i + 1}") for i in range(servers)]
        local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "k3s_server_render_dir": str(dirs[name] / "out"), "k3s_agent_render_dir": str(dirs[name] / "out")}
        if name != "ha":
            local |= {"k3s_server_hosts": hosts, "k3s_agent_server_hosts": hosts}
        children[f"case_{name.replace('-', '_')}"] = {"vars": local | named(name, variables), "children": {
            group(name, "server"): {"hosts": {h: {"ansible_host": f"10.0.0.{i + 1}"} for i, h in enumerate(hosts)}},
            group(name, "agent"): {"hosts": {named(name, "gpu01"): {"ansible_host": "10.0.1.1"}}}}}

    for name, (servers, variables) in RENDER_CASES.items():
        case(name, servers, variables)
    case("agent-token", 1, {"k3s_agent_token": PASSWORD, "k3s_agent_server_ca_file": str(tmp / "agent-token/ca")})
    (tmp / "agent-token/ca").write_text(cas.setdefault("agent-token", self_signed_ca_pem()))
    case("agent-no-ca", 1, {"k3s_agent_token": PASSWORD,
                            "k3s_agent_server_ca_file": str(tmp / "agent-no-ca/absent.crt")})
    for name, ca in (("server-config", True), ("server-no-ca", False), ("server-no-ca-check", False)):
        case(name, 3, {"k3s_server_token": SERVER_PASSWORD, "k3s_server_agent_token": PASSWORD,
                       "cluster_k8s_api_endpoint": "k8s-api.lab",
                       "k3s_server_ca_file": str(tmp / name / "server-ca.crt"),
                       "k3s_server_config_dir": str(tmp / name) + "/{{ inventory_hostname }}"}, ca=ca)
    for name, token in SERVER_TOKEN_CASES.items():
        case(name, 1, {"k3s_server_token": token, "k3s_server_agent_token": PASSWORD})
    for name, variables in SERVER_AGENT_TOKEN_CASES.items():
        case(name, 1, {"k3s_node_install_method": "airgap", "k3s_node_airgap_dir": str(tmp / name / "airgap"),
                       **variables})
    inventory = {"all": {"children": children}}

    keep = {"name": "Keep the token the role built", "no_log": True,
            "ansible.builtin.copy": {"content": "{{ __k3s_agent_join_token }}",
                                     "dest": str(tmp) + "/{{ inventory_hostname }}.token", "mode": "0600"}}
    # A play whose every host fails ends the playbook: the plays where every case fails come last.
    plain = [play(on(RENDER_CASES, "server"), "k3s_server", "render"),
             play(on(RENDER_CASES, "agent"), "k3s_agent", "render"),
             play(on(["agent-token", "agent-no-ca"], "agent"), "k3s_agent", "token", [keep]),
             server_steps(on(["server-config", "server-no-ca"], "server")),
             play(on(SERVER_TOKEN_CASES, "server"), "k3s_server", "tokens")]
    check = [server_steps(on(["server-no-ca-check"], "server")),
             play(on(SERVER_AGENT_TOKEN_CASES, "server"), "k3s_server")]
    (tmp / "plain").mkdir()
    (tmp / "check").mkdir()
    return {"plain": run_cases(tmp / "plain", plain, inventory), "check": run_cases(tmp / "check", check, inventory,
                                                                                      "--check"),
            "dirs": dirs, "cas": cas, "tmp": tmp}


def hosts(case, servers=0, agent=False):
    return [named(case, f"ctl{i + 1}") for i in range(servers)] + ([named(case, "gpu01")] if agent else [])


def rendered(runs, case, host):
    return yaml.safe_load((runs["dirs"][case] / "out" / named(case, host) / "etc/rancher/k3s/config.yaml").read_text())


def test_ha_servers_and_agents_register_through_the_fixed_address_in_tls_san(runs):
    run = runs["plain"]
    assert not run.failed(*hosts("ha", 3, agent=True)), run.out
    first, second, agent = rendered(runs, "ha", "ctl1"), rendered(runs, "ha", "ctl2"), rendered(runs, "ha", "gpu01")
    assert first["cluster-init"] is True and "server" not in first
    assert second["server"] == "https://k8s-api.lab:6443" and "cluster-init" not in second
    assert agent["server"] == "https://k8s-api.lab:6443"
    assert first["tls-san"][0] == "k8s-api.lab" and second["tls-san"][0] == "k8s-api.lab"
    assert first["agent-token-file"] == "/etc/rancher/k3s/agent-token"
    assert first["token-file"] == "/etc/rancher/k3s/token"
    assert not {"token", "agent-token"} & (set(first) | set(second) | set(agent)), "no secret in config.yaml"


def test_one_server_may_register_through_its_own_address(runs):
    run = runs["plain"]
    assert not run.failed(*hosts("one", 1, agent=True)), run.out
    assert rendered(runs, "one", "gpu01")["server"] == "https://10.0.0.1:6443"
    assert rendered(runs, "one", "ctl1")["tls-san"] == ["10.0.0.1"]


@pytest.mark.parametrize(("case", "expected"), [
    ("unset", ["ctl1: k3s_server_api_endpoint (default cluster_k8s_api_endpoint) must be a fixed registration address",
               "with 3 servers (ctl1, ctl2, ctl3); is ''"]),
    ("first-server-ip", ["ctl2: k3s_server_api_endpoint", "is '10.0.0.1'"]),
    ("agent-on-a-server-name",
     ["gpu01: k3s_agent_server_endpoint (default cluster_k8s_api_endpoint) must be a fixed", "is 'ctl2'"]),
], ids=["unset", "first-server-ip", "agent-on-a-server-name"])
def test_ha_without_a_fixed_address_fails_naming_host_and_variable(runs, case, expected):
    run, case_hosts = runs["plain"], hosts(case, 3, agent=True)
    assert run.failed(*case_hosts), run.out
    flat = run.messages(*case_hosts)
    for message in named(case, expected):
        assert message in flat, run.out


@pytest.mark.parametrize("count", [2, 4])
def test_an_even_server_count_is_refused_naming_the_variable(runs, count):
    # Issue 33: two servers make a two-member etcd that stops when either server does.
    run, case = runs["plain"], f"even{count}"
    assert run.failed(*hosts(case, count)), run.out
    flat = run.messages(*hosts(case, count))
    assert named(case, f"ctl1: k3s_server_hosts (default group k8s_server) has {count} servers") in flat, run.out
    assert "embedded etcd needs 1, 3, 5 or 7" in flat, run.out


def test_etcd_snapshot_and_s3_settings_are_accepted_but_not_their_secrets(runs):
    run = runs["plain"]
    assert not run.failed(*hosts("etcd", 1, agent=True)), run.out
    assert RENDER_CASES["etcd"][1]["k3s_server_config_extra"].items() <= rendered(runs, "etcd", "ctl1").items()
    assert run.failed(*hosts("etcd-secret", 1)), run.out
    assert "etcd-s3-secret-key" in run.messages(*hosts("etcd-secret", 1)) and "hunter2" not in run.out, run.out


@pytest.mark.parametrize(("case", "message"), [
    ("missing", "missing required arguments: k3s_server_agent_token"),
    ("same-as-server-token", "ctl1: k3s_server_agent_token is required: the agent token's password"),
    ("k10-form", "ctl1: k3s_server_agent_token is required: the agent token's password"),
], ids=["missing", "same-as-server-token", "k10-form"])
def test_server_agent_token_is_a_separate_required_password(runs, case, message):
    run = runs["check"]
    assert run.failed(*hosts(case, 1)), run.out
    assert named(case, message) in run.messages(*hosts(case, 1)), run.out
    assert run.changed(*hosts(case, 1)) == 0, run.out
    assert SERVER_PASSWORD not in run.out.replace("missing required", "")


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


def test_agent_builds_the_secure_token_from_the_first_servers_ca(runs):
    run = runs["plain"]
    assert not run.failed(*hosts("agent-token", agent=True)), run.out
    pem = runs["cas"]["agent-token"]
    token = (runs["tmp"] / f"{named('agent-token', 'gpu01')}.token").read_text()
    assert token == f"K10{hashlib.sha256(pem.encode()).hexdigest()}::node:{PASSWORD}"
    assert PASSWORD not in run.out, "the secret never appears in the output"


def test_agent_stops_when_the_first_server_has_no_ca(runs):
    run = runs["plain"]
    assert run.failed(*hosts("agent-no-ca", agent=True)), run.out
    assert "absent.crt" in run.messages(*hosts("agent-no-ca", agent=True)), run.out


def test_servers_after_the_first_join_with_the_ca_pinned_server_token_in_0600_files(runs):
    run, case = runs["plain"], "server-config"
    assert not run.failed(*hosts(case, 3)), run.out
    pinned = f"K10{hashlib.sha256(runs['cas'][case].encode()).hexdigest()}::server:{SERVER_PASSWORD}\n"
    base = runs["dirs"][case]
    tokens = {host: (base / host / "token").read_text() for host in hosts(case, 3)}
    assert tokens == dict(zip(hosts(case, 3), [SERVER_PASSWORD + "\n", pinned, pinned], strict=True))
    for host in hosts(case, 3):
        for name in ("token", "agent-token", "config.yaml"):
            assert (base / host / name).stat().st_mode & 0o777 == 0o600, f"{host}: {name}"
    assert SERVER_PASSWORD not in run.out and PASSWORD not in run.out, "the secrets never appear in the output"


def test_a_joining_server_without_the_first_servers_ca_stops_naming_host_and_variable(runs):
    run, case = runs["plain"], "server-no-ca"
    assert run.failed(*hosts(case, 3)), run.out
    flat = run.messages(*hosts(case, 3))
    missing = f"ctl2: ctl1:{runs['dirs'][case]}/server-ca.crt (k3s_server_ca_file) is missing"
    assert named(case, missing) in flat, run.out
    assert not (runs["dirs"][case] / named(case, "ctl2") / "token").exists()
    assert SERVER_PASSWORD not in run.out
    # Under --check before the first server ran there is no CA yet: the run goes on and writes nothing.
    run, case = runs["check"], "server-no-ca-check"
    assert not run.failed(*hosts(case, 3)), run.out
    assert not (runs["dirs"][case] / named(case, "ctl2") / "token").exists() and SERVER_PASSWORD not in run.out


@pytest.mark.parametrize("case", SERVER_TOKEN_CASES)
def test_a_server_token_the_secure_form_cannot_carry_is_refused_without_echoing_it(runs, case):
    run = runs["plain"]
    assert run.failed(*hosts(case, 1)), run.out
    assert named(case, "ctl1: k3s_server_token is required: the server token's password") in run.messages(
        *hosts(case, 1)), run.out
    assert SERVER_TOKEN_CASES[case] not in run.out
