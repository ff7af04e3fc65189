"""Air-gap (issue 20): the pinned add-ons' images are data, k3s's registries.yaml mirrors must serve every one
of them when the install method is airgap, and the KubeRay CRDs (the chart's crds/, skipped by helm upgrade) are
applied from files/crds before the chart."""

import base64
import gzip
import pathlib
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from conftest import run_cases
from k3s import image_registry, k3s_unmirrored_images  # filter_plugins/k3s.py
from k8s_files import k8s_file_text  # filter_plugins/k8s_files.py

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERSIONS = yaml.safe_load((ROOT / "playbooks/vars/k8s_versions.yml").read_text())["cluster_k8s_versions"]
ADDONS = ["gpu_operator", "volcano", "kueue", "kuberay"]
IMAGES = [image for addon in ADDONS for image in VERSIONS[addon]["images"]]
MIRROR = ["https://mirror.site:5000"]
ALL_MIRRORS = {"mirrors": {r: {"endpoint": MIRROR} for r in ("docker.io", "nvcr.io", "registry.k8s.io", "quay.io")}}


@pytest.mark.parametrize(("image", "registry"), [
    ("nvcr.io/nvidia/gpu-operator:v26.7.0", "nvcr.io"), ("volcanosh/vc-scheduler:v1.15.1", "docker.io"),
    ("busybox", "docker.io"), ("localhost/x:1", "localhost"), ("mirror.site:5000/a/b:1", "mirror.site:5000"),
    ("index.docker.io/library/busybox", "docker.io"),
])
def test_image_registry_follows_the_reference_rules(image, registry):
    assert image_registry(image) == registry


@pytest.mark.parametrize("addon", ADDONS)
def test_every_pinned_addon_lists_its_images_and_its_own_image_carries_the_pinned_version(addon):
    entry = VERSIONS[addon]
    assert entry["images"], f"{addon}: no images listed"
    version = str(entry["version"]).lstrip("v")
    assert any(image.rsplit(":", 1)[1].lstrip("v") == version for image in entry["images"]), (
        f"{addon} {entry['version']}: no image tagged with the pinned version; refresh the images with the pin")
    assert all(":" in image.rsplit("/", 1)[1] and "latest" not in image for image in entry["images"])


def test_mirrors_for_every_registry_leave_no_pinned_image_uncovered():
    assert k3s_unmirrored_images(IMAGES, ALL_MIRRORS) == []
    assert k3s_unmirrored_images(IMAGES, {"mirrors": {"*": {"endpoint": MIRROR}}}) == []


def test_a_missing_mirror_names_every_image_of_that_registry():
    mirrors = {"mirrors": {r: {"endpoint": MIRROR} for r in ("docker.io", "registry.k8s.io", "quay.io")}}
    assert k3s_unmirrored_images(IMAGES, mirrors) == sorted(i for i in IMAGES if i.startswith("nvcr.io/"))
    assert len(k3s_unmirrored_images(IMAGES, {})) == len(set(IMAGES))


@pytest.mark.parametrize(("registries", "message"), [
    ({"mirror": {}}, "unknown top-level key(s) mirror"),
    ({"mirrors": {"nvcr.io": {"endpoint": []}}}, "mirrors.nvcr.io.endpoint must be a non-empty list"),
    ({"mirrors": {"nvcr.io": {"endpoint": MIRROR, "rewrites": {}}}},
     "mirrors.nvcr.io may only hold endpoint and rewrite"),
    ({"mirrors": {"nvcr.io": {"endpoint": MIRROR, "rewrite": ["x"]}}}, "mirrors.nvcr.io.rewrite must map"),
])
def test_malformed_registries_data_is_refused_naming_the_key(registries, message):
    with pytest.raises(AnsibleFilterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        k3s_unmirrored_images(IMAGES, registries)


def test_file_text_gunzips_the_stored_crds_and_passes_plain_text_through():
    stored = ROOT / "files/crds/kuberay/1.7.0/ray.io_rayjobs.yaml.gz"
    text = k8s_file_text(base64.b64encode(stored.read_bytes()).decode())
    assert text == gzip.decompress(stored.read_bytes()).decode()
    assert yaml.safe_load(text)["metadata"]["name"] == "rayjobs.ray.io"
    assert k8s_file_text(base64.b64encode(b"kind: X\n").decode()) == "kind: X\n"
    with pytest.raises(AnsibleFilterError):
        k8s_file_text("%%% not base64 %%%")
    with pytest.raises(AnsibleFilterError):
        k8s_file_text(base64.b64encode(b"\x1f\x8b broken gzip").decode())


# Every ansible-playbook case is a host of its own with the case's settings as host variables, in one inventory
# played by one run (a module fixture); each test judges its own host. k8s_server holds only the server case, so
# the agents' servers (the group, by default) are one server as before.
MIRRORS_BUT_DOCKER = {"mirrors": {r: {"endpoint": MIRROR} for r in ("nvcr.io", "registry.k8s.io", "quay.io")}}
CASES = {  # case: (role, host, group, settings without the render directory)
    "airgapped": ("k3s_agent", "gpu02", "k8s_agent", {
        "k3s_agent_install_method": "airgap", "k3s_agent_registries": {
            **ALL_MIRRORS, "configs": {"mirror.site:5000": {"auth": {"username": "u", "password": "p4ss"}}}}}),
    "no-mirror-k3s_server": ("k3s_server", "ctl2", "k8s_server", {
        "k3s_server_install_method": "airgap", "k3s_server_registries": MIRRORS_BUT_DOCKER}),
    "no-mirror-k3s_agent": ("k3s_agent", "gpu01", "k8s_agent", {
        "k3s_agent_install_method": "airgap", "k3s_agent_registries": MIRRORS_BUT_DOCKER}),
    "downloading": ("k3s_agent", "gpu03", "k8s_agent", {}),
    "kuberay": ("kuberay", "ctl3", "kuberay_cases", {}),
    "kuberay-without-crds": ("kuberay", "ctl1", "kuberay_cases", {
        "kuberay_crd_paths": [str(ROOT / "files/crds/volcano" / VERSIONS["volcano"]["version"])]}),
}


def k3s_render_play(hosts, role):
    return {"name": role, "hosts": hosts, "gather_facts": False,
            "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
            "tasks": [{"name": "Run", "ansible.builtin.import_role": {"name": role, "tasks_from": "render"}}]}


def kuberay_play():
    return {"name": "kuberay", "hosts": "kuberay_cases", "gather_facts": False,
            "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")], "roles": [{"role": "kuberay"},
                      {"role": "k8s_release", "k8s_release_releases": ["{{ kuberay_rendered }}"]}]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run of every case: a CaseRun, with each case's directory as .dirs."""
    tmp = tmp_path_factory.mktemp("k8s_airgap")
    groups = {}
    for case, (role, host, group, settings) in CASES.items():
        out = {"kuberay_apply": False, "kuberay_manifest_dir": str(tmp / case / "ray")} if role == "kuberay" else {
            f"{role}_render_dir": str(tmp / case / "out")}
        groups.setdefault(group, {"hosts": {}})["hosts"][host] = {
            "ansible_host": {"ctl2": "10.0.0.1"}.get(host, "10.0.1.1"), **out, **settings}
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                         "children": groups}}
    # A play whose every host fails ends the playbook: the server's (its one case fails) comes last.
    plays = [kuberay_play(), k3s_render_play("k8s_agent", "k3s_agent"), k3s_render_play("k8s_server", "k3s_server")]
    (tmp / "run").mkdir()
    result = run_cases(tmp / "run", plays, inventory)
    result.dirs = {case: tmp / case for case in CASES}
    return result


def test_airgapped_render_writes_the_mirrors_without_credentials(run):
    assert not run.failed("gpu02"), run.out
    text = (run.dirs["airgapped"] / "out/gpu02/etc/rancher/k3s/registries.yaml").read_text()
    assert yaml.safe_load(text) == ALL_MIRRORS and "p4ss" not in text


@pytest.mark.parametrize("role", ["k3s_server", "k3s_agent"])
def test_airgapped_render_without_a_mirror_fails_naming_host_variable_and_images(run, role):
    host = CASES[f"no-mirror-{role}"][1]
    assert run.failed(host), run.out
    flat = run.messages(host)
    assert f"{host}: with {role}_install_method airgap, {role}_registries has no mirror for the registry of" in flat
    assert "docker.io/volcanosh/vc-scheduler:v1.15.1" in flat, run.out


def test_downloading_sites_need_no_mirror(run):
    assert not run.failed("gpu03"), run.out
    assert not (run.dirs["downloading"] / "out/gpu03/etc/rancher/k3s/registries.yaml").exists()


@pytest.mark.parametrize("role", ["k3s_server", "k3s_agent"])
def test_registries_file_on_the_node_is_0600_and_its_task_hides_the_content(role):
    tasks = yaml.safe_load((ROOT / "roles" / role / "tasks/config.yml").read_text())
    templates = [t for t in tasks if "ansible.builtin.template" in t]
    write = next(t for t in templates if t["ansible.builtin.template"]["dest"].endswith("/registries.yaml"))
    assert write["ansible.builtin.template"]["mode"] == "0600" and write["no_log"] is True


def test_kuberay_writes_the_pinned_crds_and_applies_them_before_a_chart_installed_without_crds(run):
    assert not run.failed("ctl3"), run.out
    crds = [d for d in yaml.safe_load_all((run.dirs["kuberay"] / "ray/crds.yaml").read_text()) if d]
    assert sorted(d["metadata"]["name"] for d in crds) == [
        "rayclusters.ray.io", "raycronjobs.ray.io", "rayjobs.ray.io", "rayservices.ray.io"]
    stored = sorted((ROOT / "files/crds/kuberay" / VERSIONS["kuberay"]["version"]).glob("*.yaml.gz"))
    assert crds == [yaml.safe_load(gzip.decompress(p.read_bytes())) for p in stored], "byte-for-byte the stored CRDs"
    tasks = yaml.safe_load((ROOT / "roles/k8s_release/tasks/apply.yml").read_text())
    modules = [next(k for k in t if k.startswith("kubernetes.core.")) for t in tasks]
    helm = modules.index("kubernetes.core.helm")
    assert modules[0] == "kubernetes.core.k8s"
    assert tasks[0]["kubernetes.core.k8s"]["definition"].startswith("{{ __k8s_release.first ")
    assert modules.index("kubernetes.core.k8s_info") < helm, "CRDs Established before the chart"
    assert "CustomResourceDefinition" in tasks[modules.index("kubernetes.core.k8s_info")]["loop"]
    render = yaml.safe_load((ROOT / "roles/kuberay/tasks/render.yml").read_text())
    release = next(t for t in render if "kuberay_rendered" in t.get("ansible.builtin.set_fact", {}))
    release = release["ansible.builtin.set_fact"]["kuberay_rendered"]
    assert release["first"] == "{{ __kuberay_crds }}" and release["first_force_conflicts"] is True
    assert release["chart"]["skip_crds"] is True


def test_kuberay_without_its_crds_fails_naming_host_and_variable(run):
    assert run.failed("ctl1"), run.out
    assert "ctl1: kuberay_crd_paths" in run.messages("ctl1"), run.out


def test_yaml_docs_parses_a_stream_like_from_yaml_all_and_refuses_what_is_not_yaml():
    from k8s_files import k8s_yaml_docs, k8s_yaml_heads
    stored = ROOT / "files/crds/kuberay/1.7.0/ray.io_rayjobs.yaml.gz"
    crd = gzip.decompress(stored.read_bytes()).decode()
    text = "---\n" + crd + "\n---\n\n---\nkind: Namespace\nmetadata: {name: x}\n"
    assert k8s_yaml_docs(text) == [d for d in yaml.safe_load_all(text) if d]
    assert k8s_yaml_heads(text) == [
        {"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1", "name": "rayjobs.ray.io",
         "group": "ray.io"},
        {"kind": "Namespace", "apiVersion": None, "name": "x", "group": None}]
    assert k8s_yaml_docs("") == [] and k8s_yaml_docs(None) == []
    with pytest.raises(AnsibleFilterError, match="not a YAML document stream"):
        k8s_yaml_docs("a: [unclosed")
    with pytest.raises(AnsibleFilterError, match="not a mapping"):
        k8s_yaml_heads("- a list\n")
