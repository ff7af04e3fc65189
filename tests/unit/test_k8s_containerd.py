"""containerd role: the main file only imports the drop-in directory; our drop-in is valid TOML from data."""

import pathlib
import tomllib

import yaml
from test_k8s_kubeadm import play, run_play

DATA = {
    "containerd_render_dir": None,  # set per test
    "containerd_registry_mirrors": [
        {"registry": "docker.io", "server": "https://registry-1.docker.io", "mirrors": ["https://m1:5000", "https://m2"]},
        {"registry": "nvcr.io", "mirrors": ["https://m3"], "capabilities": ["pull"]},
    ],
    "containerd_config_extra": {"plugins": {"io.containerd.cri.v1.images": {"max_concurrent_downloads": 8}}},
}


def render(tmp_path, **overrides):
    data = dict(DATA, containerd_render_dir=str(tmp_path / "out"), **overrides)
    return run_play(tmp_path, [play("k8s_agent", "containerd", "render")], data)


def test_drop_in_and_main_file_render_as_containerd_v3_toml(tmp_path):
    rc, out = render(tmp_path)
    assert rc == 0, out
    etc = tmp_path / "out/gpu01/etc/containerd"
    main = tomllib.loads((etc / "config.toml").read_text())
    assert main == {"version": 3, "root": "/var/lib/containerd", "state": "/run/containerd",
                    "imports": ["/etc/containerd/conf.d/*.toml"]}
    drop_in = tomllib.loads((etc / "conf.d/10-gpufleet.toml").read_text())
    plugins = drop_in["plugins"]
    assert drop_in["version"] == 3
    runc = plugins["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]["runc"]
    assert runc["options"] == {"SystemdCgroup": True}
    images = plugins["io.containerd.cri.v1.images"]
    assert images["pinned_images"] == {"sandbox": "registry.k8s.io/pause:3.10.1"}
    assert images["registry"] == {"config_path": "/etc/containerd/certs.d"}
    assert images["max_concurrent_downloads"] == 8, "containerd_config_extra is merged in"
    docker = tomllib.loads((etc / "certs.d/docker.io/hosts.toml").read_text())
    assert docker["server"] == "https://registry-1.docker.io"
    assert list(docker["host"]) == ["https://m1:5000", "https://m2"], "mirrors keep their order"
    assert docker["host"]["https://m2"]["capabilities"] == ["pull", "resolve"]
    nvcr = tomllib.loads((etc / "certs.d/nvcr.io/hosts.toml").read_text())
    assert "server" not in nvcr and nvcr["host"]["https://m3"]["capabilities"] == ["pull"]
    assert not (etc / "conf.d/99-nvidia.toml").exists(), "the GPU Operator's drop-in is never ours"


def test_taking_the_gpu_operator_drop_in_name_fails_naming_host_and_variable(tmp_path):
    rc, out = render(tmp_path, containerd_drop_in_name="99-nvidia.toml")
    assert rc != 0, out
    flat = " ".join(out.split())
    assert "gpu01: invalid containerd input" in flat and "containerd_drop_in_name" in flat, out


def test_extra_settings_may_not_change_the_version_or_the_imports(tmp_path):
    rc, out = render(tmp_path, containerd_config_extra={"imports": ["/etc/other/*.toml"]})
    assert rc != 0, out
    assert "gpu01: containerd_config_extra may not change version (3) or set imports" in " ".join(out.split()), out


def test_default_source_is_docker_containerd_io_2x_because_debian_ships_1x():
    """Debian 12 ships containerd 1.6.20 (no config version 3): the default is containerd.io 2.x from Docker's repo."""
    root = pathlib.Path(__file__).resolve().parents[2]
    versions = yaml.safe_load((root / "playbooks" / "vars" / "k8s_versions.yml").read_text())["cluster_k8s_versions"]
    defaults = yaml.safe_load((root / "roles" / "containerd" / "defaults" / "main.yml").read_text())
    tasks = yaml.safe_load((root / "roles" / "containerd" / "tasks" / "install.yml").read_text())
    assert versions["containerd"] == {"package": "containerd.io", "version": "2.2"}
    assert int(versions["containerd"]["version"].split(".")[0]) >= 2
    assert defaults["containerd_packages"] == [
        "{{ cluster_k8s_versions.containerd.package }}={{ cluster_k8s_versions.containerd.version }}*"]
    assert defaults["containerd_apt_repo_enabled"] is True
    names = [next(k for k in t if k.startswith("ansible.builtin.")) for t in tasks]
    assert names[:2] == ["ansible.builtin.deb822_repository", "ansible.builtin.apt"]
    assert tasks[0]["ansible.builtin.deb822_repository"]["signed_by"] == "{{ __containerd_apt_repo_url }}/gpg"
    debian = yaml.safe_load((root / "roles" / "containerd" / "vars" / "Debian.yml").read_text())
    assert defaults["containerd_apt_repo_url"] == ""  # empty: this OS's, vars/Debian.yml
    assert debian["__containerd_os_apt_repo_url"].startswith("https://download.docker.com/linux/")
