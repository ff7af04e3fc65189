"""kubeadm roles: v1beta4 documents rendered from data, checked structurally, held out of service, secrets required."""

import pathlib
import re
import sys

import pytest
import yaml
from conftest import run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"
REDACTED = "000000.0000000000000000"

# Top-level fields of the kubeadm v1beta4 and kubelet v1beta1 kinds, from the upstream API reference
# (kept here independently of the roles' vars/main.yml, so a wrong list in a role shows up as a failure).
KUBEADM_V1BETA4 = {
    "InitConfiguration": {"bootstrapTokens", "dryRun", "nodeRegistration", "localAPIEndpoint", "certificateKey",
                          "skipPhases", "patches", "timeouts"},
    "ClusterConfiguration": {"etcd", "networking", "kubernetesVersion", "controlPlaneEndpoint", "apiServer",
                             "controllerManager", "scheduler", "dns", "proxy", "certificatesDir", "imageRepository",
                             "featureGates", "clusterName", "encryptionAlgorithm", "certificateValidityPeriod",
                             "caCertificateValidityPeriod"},
    "JoinConfiguration": {"dryRun", "nodeRegistration", "caCertPath", "discovery", "controlPlane", "skipPhases",
                          "patches", "timeouts"},
}
NODE_REGISTRATION = {"name", "criSocket", "taints", "kubeletExtraArgs", "ignorePreflightErrors", "imagePullPolicy",
                     "imagePullSerial"}
BOOTSTRAP_TOKEN_DISCOVERY = {"token", "apiServerEndpoint", "caCertHashes", "unsafeSkipCAVerification"}
KUBELET_SOME = {"cgroupDriver", "registerWithTaints", "failSwapOn", "maxPods", "evictionHard", "featureGates"}


def check_structure(doc):
    """Structural v1beta4 check: apiVersion/kind and known top-level (and node registration) fields."""
    kind = doc.get("kind")
    if kind == "KubeletConfiguration":
        assert doc["apiVersion"] == "kubelet.config.k8s.io/v1beta1"
        return
    assert kind in KUBEADM_V1BETA4, f"unexpected kind {kind}"
    assert doc["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    unknown = set(doc) - KUBEADM_V1BETA4[kind] - {"apiVersion", "kind"}
    assert not unknown, f"{kind}: unknown fields {unknown}"
    if "nodeRegistration" in doc:
        assert set(doc["nodeRegistration"]) <= NODE_REGISTRATION
        for arg in doc["nodeRegistration"].get("kubeletExtraArgs", []):
            assert set(arg) == {"name", "value"}, "v1beta4 kubeletExtraArgs are name/value lists"
    if "discovery" in doc:
        assert set(doc["discovery"]["bootstrapToken"]) <= BOOTSTRAP_TOKEN_DISCOVERY


def make_inventory(tmp, hostvars):
    inventory = {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                     "kubeadm_control_plane_render_dir": str(tmp / "out"),
                     "kubeadm_worker_render_dir": str(tmp / "out"), **hostvars},
            "children": {"k8s_server": {"hosts": {"ctl1": {"ansible_host": "10.0.0.1"}}},
                         "k8s_agent": {"hosts": {"gpu01": {"ansible_host": "10.0.0.21"}}}},
        }
    }
    return inventory


def run_play(tmp, plays, hostvars=None, check=False):
    result = run_plays(tmp, plays, make_inventory(tmp, hostvars or {}), *(["--check"] if check else []))
    return result.returncode, result.stdout + result.stderr


def play(hosts, role, tasks_from="main", become=False):
    return {
        "name": f"{role} {tasks_from}", "hosts": hosts, "gather_facts": False, "become": become,
        "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
        "tasks": [{"name": "Run", "ansible.builtin.import_role": {"name": role, "tasks_from": tasks_from}}],
    }


RENDER = [play("k8s_server", "kubeadm_control_plane", "render"), play("k8s_agent", "kubeadm_worker", "render")]
SITE_DATA = {
    # Merged over the defaults (networking.serviceSubnet stays), as the k3s roles' *_config_extra.
    "kubeadm_control_plane_config_extra": {
        "ClusterConfiguration": {"networking": {"podSubnet": "10.32.0.0/12"}, "clusterName": "gpuprod"},
        "KubeletConfiguration": {"maxPods": 200},
    },
    "kubeadm_worker_node_labels": ["gpufleet.io/leaf=ib-leaf1"],
    "kubeadm_worker_kubelet_config": {"maxPods": 110},
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kubeadm")
    rc, out = run_play(tmp, RENDER, SITE_DATA)
    assert rc == 0, out
    base = tmp / "out"
    return {
        "init": list(yaml.safe_load_all((base / "ctl1/etc/kubernetes/gpufleet/kubeadm.yaml").read_text())),
        "join": yaml.safe_load((base / "gpu01/etc/kubernetes/gpufleet/kubeadm-join.yaml").read_text()),
        "patch": yaml.safe_load(
            (base / "gpu01/etc/kubernetes/gpufleet/patches/kubeletconfiguration+merge.yaml").read_text()),
        "texts": {name: (base / name).read_text() for name in ("ctl1/etc/kubernetes/gpufleet/kubeadm.yaml",
                                                                "gpu01/etc/kubernetes/gpufleet/kubeadm-join.yaml")},
    }


def test_every_document_kubeadm_reads_has_a_kind(rendered):
    # kubeadm splits its --config file on `---` lines and refuses a part without kind and apiVersion, so the managed
    # comment may not stand alone before the first `---` (found on the lab's first real kubeadm init).
    for name, text in rendered["texts"].items():
        parts = re.split(r"^---\s*$", text, flags=re.M)
        for part in parts:
            lines = [line for line in part.splitlines() if line.strip() and not line.lstrip().startswith("#")]
            if lines or part is not parts[0]:
                assert yaml.safe_load("\n".join(lines)).get("kind"), f"{name}: a document without kind: {part!r}"
            else:
                assert not part.strip(), f"{name}: comment-only text before the first ---: {part!r}"


def test_control_plane_renders_v1beta4_documents_from_data(rendered):
    init = [d for d in rendered["init"] if d]
    assert [d["kind"] for d in init] == ["InitConfiguration", "ClusterConfiguration", "KubeletConfiguration"]
    for doc in init:
        check_structure(doc)
    cluster, kubelet = init[1], init[2]
    assert cluster["networking"] == {"podSubnet": "10.32.0.0/12", "serviceSubnet": "10.96.0.0/12"}
    assert cluster["clusterName"] == "gpuprod" and cluster["kubernetesVersion"] == "v1.34.2"
    assert kubelet == {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                       "cgroupDriver": "systemd", "maxPods": 200}
    assert init[0]["bootstrapTokens"][0]["token"] == REDACTED, "the render entry point never writes the secret"


def test_worker_joins_held_out_of_service_with_the_k3s_agent_hold_taint(rendered):
    join, patch = rendered["join"], rendered["patch"]
    check_structure(join)
    check_structure(patch)
    k3s = yaml.safe_load((ROLES / "k3s_agent/defaults/main.yml").read_text())
    key_value, effect = k3s["k3s_agent_hold_taint"].rsplit(":", 1)
    key, value = key_value.split("=", 1)
    hold = {"key": key, "value": value, "effect": effect}
    assert hold in patch["registerWithTaints"] and hold in join["nodeRegistration"]["taints"]
    assert patch["cgroupDriver"] == "systemd" and patch["maxPods"] == 110
    assert {"name": "node-labels", "value": "gpufleet.io/pool=kubernetes,gpufleet.io/leaf=ib-leaf1"} in (
        join["nodeRegistration"]["kubeletExtraArgs"])
    assert join["patches"]["directory"] == "/etc/kubernetes/gpufleet/patches"
    assert join["discovery"]["bootstrapToken"]["token"] == REDACTED


@pytest.mark.parametrize(
    ("hostvars", "expected"),
    [
        ({"kubeadm_control_plane_cluster_config": {"networkin": {}}},
         ["ctl1: the ClusterConfiguration document holds unknown field(s) networkin",
          "kubeadm_control_plane_cluster_config"]),
        ({"kubeadm_control_plane_config_extra": {"ClusterConfig": {}}},
         ["ctl1: kubeadm_control_plane_render_dir must be set", "kubeadm_control_plane_config_extra"]),
        ({"kubeadm_worker_config_extra": {"JoinConfiguration": {"controlPlane": {}}}},
         ["gpu01: the JoinConfiguration document holds unknown field(s) controlPlane", "kubeadm_worker_config_extra"]),
        ({"kubeadm_worker_kubelet_config": {"registerWithTaints": []}},
         ["gpu01: kubeadm_worker_join_config / kubeadm_worker_kubelet_config", "drop the hold taint gpufleet.io/hold"]),
    ],
    ids=["unknown-field", "unknown-kind", "worker-as-control-plane", "hold-taint-dropped"],
)
def test_bad_input_fails_naming_host_and_variable(tmp_path, hostvars, expected):
    rc, out = run_play(tmp_path, RENDER, hostvars)
    assert rc != 0, out
    flat = " ".join(out.split())
    for message in expected:
        assert message in flat, out


@pytest.mark.parametrize("role", ["kubeadm_control_plane", "kubeadm_worker"])
def test_token_is_a_required_secret_without_default(role):
    defaults = yaml.safe_load((ROLES / role / "defaults/main.yml").read_text())
    spec = yaml.safe_load((ROLES / role / "meta/argument_specs.yml").read_text())["argument_specs"]
    token = spec["main"]["options"][f"{role}_token"]
    assert f"{role}_token" not in defaults
    assert token["required"] is True and token["no_log"] is True and "default" not in token
    assert f"{role}_token" not in spec["render"]["options"], "render needs no secret"


@pytest.mark.parametrize(("role", "hosts"), [("kubeadm_control_plane", "k8s_server"), ("kubeadm_worker", "k8s_agent")])
def test_missing_token_stops_the_role_before_any_change(tmp_path, role, hosts):
    rc, out = run_play(tmp_path, [play(hosts, role)], check=True)
    assert rc != 0, out
    assert f"missing required arguments: {role}_token" in out, out
    assert "ok=0    changed=0" in out, out


def test_malformed_token_stops_the_role_at_the_token_check(tmp_path):
    rc, out = run_play(tmp_path, [play("k8s_agent", "kubeadm_worker")], {"kubeadm_worker_token": "not-a-token"},
                       check=True)
    assert rc != 0, out
    assert "assert | Check the bootstrap token is set" in out and "fatal: [gpu01]" in out, out
    assert "not-a-token" not in out, "the secret never appears in the output"


def test_gpu_operator_follows_the_kubeadm_distribution(tmp_path):
    operator = play("k8s_server", "gpu_operator")
    operator["tasks"].append({"name": "Write", "ansible.builtin.import_role": {"name": "k8s_release"},
                              "vars": {"k8s_release_releases": ["{{ gpu_operator_rendered }}"]}})
    rc, out = run_play(tmp_path, [operator], {"cluster_k8s_distribution": "kubeadm", "gpu_operator_apply": False,
                                              "gpu_operator_manifest_dir": str(tmp_path / "gpu")})
    assert rc == 0, out
    env = {e["name"]: e["value"] for e in yaml.safe_load((tmp_path / "gpu/values.yaml").read_text())["toolkit"]["env"]}
    assert env == {"CONTAINERD_CONFIG": "/etc/containerd/config.toml",
                   "CONTAINERD_SOCKET": "/run/containerd/containerd.sock",
                   "RUNTIME_DROP_IN_CONFIG": "/etc/containerd/conf.d/99-nvidia.toml"}
