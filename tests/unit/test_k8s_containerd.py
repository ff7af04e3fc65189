"""containerd role: the main file only imports the drop-in directory; our drop-in is valid TOML from data."""

import hashlib
import os
import pathlib
import tomllib

import pytest
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


def test_the_containerd_unit_lifts_the_locked_memory_limit_pods_inherit(tmp_path):
    """Pods inherit containerd's rlimits; systemd's default 8 MiB of locked memory breaks ibv_reg_mr (NCCL over RDMA)
    in every pod of a kubeadm node (issue 33; the k3s units already carried LimitMEMLOCK=infinity)."""
    rc, out = render(tmp_path, containerd_service_limits={"LimitMEMLOCK": "infinity", "LimitNOFILE": 1048576})
    assert rc == 0, out
    unit = (tmp_path / "out/gpu01/etc/systemd/system/containerd.service.d/10-gpufleet.conf").read_text()
    lines = [line for line in unit.splitlines() if line and not line.startswith("#")]
    assert lines == ["[Service]", "LimitMEMLOCK=infinity", "LimitNOFILE=1048576"], unit
    defaults = yaml.safe_load((pathlib.Path(__file__).resolve().parents[2] / "roles/containerd/defaults/main.yml")
                              .read_text())
    assert defaults["containerd_service_limits"] == {"LimitMEMLOCK": "infinity"}


def test_a_limit_that_is_no_systemd_limit_setting_is_refused_naming_host_and_variable(tmp_path):
    rc, out = render(tmp_path, containerd_service_limits={"MemoryMax": "1G"})
    assert rc != 0, out
    assert "gpu01: containerd_service_limits must map systemd Limit* settings" in " ".join(out.split()), out


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
    names = [next(k for k in t if k.startswith("ansible.builtin.") or k == "repo_key") for t in tasks]
    # The repository's key is checked against its pinned fingerprints and installed before the source names it.
    assert names[:4] == ["ansible.builtin.file", "repo_key", "ansible.builtin.deb822_repository", "ansible.builtin.apt"]
    assert tasks[1]["repo_key"]["src"] == "{{ __containerd_apt_repo_url }}/gpg"
    assert tasks[2]["ansible.builtin.deb822_repository"]["signed_by"] == "{{ __containerd_apt_repo_key }}"
    assert tasks[1]["repo_key"]["dest"] == "{{ __containerd_apt_repo_key }}"
    debian = yaml.safe_load((root / "roles" / "containerd" / "vars" / "Debian.yml").read_text())
    assert defaults["containerd_apt_repo_url"] == ""  # empty: this OS's, vars/Debian.yml
    assert debian["__containerd_os_apt_repo_url"].startswith("https://download.docker.com/linux/")


# Config version 2: the distribution's containerd 1.6/1.7 (Debian 12 and 13), one main file and no imports.
V2 = {"containerd_config_version": 2, "containerd_gpu_operator_toolkit": False,
      "containerd_config_extra": {"plugins": {"io.containerd.grpc.v1.cri": {"max_concurrent_downloads": 8}}}}
CRI_V2 = "io.containerd.grpc.v1.cri"


def test_config_version_2_renders_everything_in_one_main_file_without_imports(tmp_path):
    rc, out = render(tmp_path, **V2)
    assert rc == 0, out
    etc = tmp_path / "out/gpu01/etc/containerd"
    main = tomllib.loads((etc / "config.toml").read_text())
    assert main["version"] == 2 and "imports" not in main, "containerd 1.x replaces whole plugin tables on import"
    assert (main["root"], main["state"]) == ("/var/lib/containerd", "/run/containerd")
    cri = main["plugins"][CRI_V2]
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10.1"
    runc = cri["containerd"]["runtimes"]["runc"]
    assert runc == {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}}
    assert cri["registry"] == {"config_path": "/etc/containerd/certs.d"}
    assert cri["max_concurrent_downloads"] == 8, "containerd_config_extra is merged into the version 2 tree"
    assert set(main["plugins"]) == {CRI_V2}, "no version 3 plugin names in a version 2 file"
    assert not (etc / "conf.d").exists(), "no drop-in with config version 2"
    assert tomllib.loads((etc / "certs.d/nvcr.io/hosts.toml").read_text())["host"]["https://m3"]


def test_config_version_2_is_refused_while_the_gpu_operator_toolkit_may_write_its_drop_in(tmp_path):
    rc, out = render(tmp_path, **dict(V2, containerd_gpu_operator_toolkit=True))
    assert rc != 0, out
    flat = " ".join(out.split())
    assert "gpu01: containerd_config_version 2 cannot keep our CRI settings" in flat, out
    assert "containerd_gpu_operator_toolkit" in flat, out
    assert not (tmp_path / "out/gpu01/etc/containerd/config.toml").exists()


def test_config_version_2_extra_settings_may_not_set_imports(tmp_path):
    rc, out = render(tmp_path, **dict(V2, containerd_config_extra={"imports": ["/etc/containerd/conf.d/*.toml"]}))
    assert rc != 0, out
    assert "gpu01: containerd_config_extra may not change version (2) or set imports" in " ".join(out.split()), out


def check_version(tmp_path, probe, **hostvars):
    """Run the role's version check on a recorded `containerd --version` line."""
    checker = play("k8s_agent", "containerd", "version")
    checker["tasks"].insert(0, {"name": "Probe", "ansible.builtin.set_fact": {
        "__containerd_version_probe": {"rc": 0, "stdout": probe}}})
    return run_play(tmp_path, [checker], hostvars)


DEBIAN_13 = "containerd github.com/containerd/containerd 1.7.24~ds1 1.7.24~ds1-6+b2"
DOCKER_2_2 = "containerd containerd.io v2.2.0 1c4457e00facac03ce1d75f7b6777a7a851e5c41"


def test_distribution_containerd_1_7_with_config_version_3_is_refused_naming_host_and_variable(tmp_path):
    rc, out = check_version(tmp_path, DEBIAN_13)
    assert rc != 0, out
    flat = " ".join(out.split())
    assert "gpu01: containerd 1.7.24 is installed; containerd_config_version 3 needs containerd 2.0.0" in flat, out


def test_containerd_2_with_config_version_2_is_refused(tmp_path):
    rc, out = check_version(tmp_path, DOCKER_2_2, containerd_config_version=2)
    assert rc != 0, out
    flat = " ".join(out.split())
    assert "gpu01: containerd 2.2.0 is installed; containerd_config_version 2 needs containerd 1.6.0" in flat, out


def test_distribution_containerd_1_7_with_config_version_2_passes_the_version_check(tmp_path):
    rc, out = check_version(tmp_path, DEBIAN_13, containerd_config_version=2)
    assert rc == 0, out
    assert "Check the installed containerd reads containerd_config_version" in out, out


PAUSE_ARCHIVE = b"an OCI archive of registry.k8s.io/pause:3.10.1"
PAUSE_SUMS = hashlib.sha256(PAUSE_ARCHIVE).hexdigest() + "  pause.tar\n"


def _images(tmp_path, sums=PAUSE_SUMS):
    """An air-gap directory holding pause.tar and, unless sums is None, a sha256sum.txt with that text."""
    images = tmp_path / "images"
    images.mkdir()
    (images / "pause.tar").write_bytes(PAUSE_ARCHIVE)
    if sums is not None:
        (images / "sha256sum.txt").write_text(sums)
    return images


def airgap(tmp_path, sums, check=False):
    """Run the air-gap images step against a controller directory holding pause.tar and sha256sum.txt."""
    images = _images(tmp_path, sums)
    hostvars = {"containerd_airgap_images_dir": str(images), "containerd_airgap_node_dir": str(tmp_path / "node")}
    return run_play(tmp_path, [play("k8s_agent", "containerd", "airgap")], hostvars, check=check)


def test_airgap_archive_not_matching_sha256sum_stops_before_anything_is_copied(tmp_path):
    rc, out = airgap(tmp_path, "0" * 64 + "  pause.tar\n")
    assert rc != 0, out
    flat = " ".join(out.split())
    assert f"gpu01: {tmp_path}/images/pause.tar is missing from or does not match" in flat, out
    assert "sha256sum.txt (containerd_airgap_images_dir)" in flat, out
    assert not (tmp_path / "node").exists(), "nothing reaches the node before every archive is verified"


def test_airgap_archive_without_a_sha256sum_line_is_refused(tmp_path):
    rc, out = airgap(tmp_path, "")
    assert rc != 0, out
    assert f"gpu01: {tmp_path}/images/pause.tar is missing from or does not match" in " ".join(out.split()), out
    assert not (tmp_path / "node").exists()


def test_airgap_archives_are_imported_once_and_a_second_run_changes_nothing(tmp_path):
    """A fake ctr records its calls: the first run imports pause.tar into k8s.io, the second imports nothing."""
    images = _images(tmp_path)
    importer = _fake_ctr(tmp_path)
    hostvars = {"containerd_airgap_images_dir": str(images), "containerd_airgap_node_dir": str(tmp_path / "node")}
    rc, out = run_play(tmp_path, [importer], hostvars, check=True)
    assert rc == 0 and not (tmp_path / "node").exists() and not (tmp_path / "ctr.log").exists(), out
    rc, out = run_play(tmp_path, [importer], hostvars)
    assert rc == 0, out
    assert (tmp_path / "ctr.log").read_text() == f"-n k8s.io images import {tmp_path}/node/pause.tar\n"
    rc, out = run_play(tmp_path, [importer], hostvars)
    assert rc == 0 and "changed=0" in out, out
    assert len((tmp_path / "ctr.log").read_text().splitlines()) == 1, "already imported: not imported again"


def _fake_ctr(tmp_path):
    """The air-gap play with a fake ctr first on PATH (a test double): it records its arguments in ctr.log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ctr").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {tmp_path}/ctr.log\n')
    (bin_dir / "ctr").chmod(0o755)
    importer = play("k8s_agent", "containerd", "airgap")
    importer["environment"] = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return importer


def test_airgap_on_node_imports_from_the_nodes_directory_and_copies_nothing(tmp_path):
    """containerd_airgap_images_on_node (a share or staged media): checked and imported where it is, once."""
    images = _images(tmp_path)
    importer = _fake_ctr(tmp_path)
    hostvars = {"containerd_airgap_images_dir": str(images), "containerd_airgap_images_on_node": True,
                "containerd_airgap_node_dir": str(tmp_path / "node")}
    rc, out = run_play(tmp_path, [importer], hostvars)
    assert rc == 0, out
    assert (tmp_path / "ctr.log").read_text() == f"-n k8s.io images import {images}/pause.tar\n"
    assert sorted(p.name for p in (tmp_path / "node").iterdir()) == ["imported.json"]
    rc, out = run_play(tmp_path, [importer], hostvars)
    assert rc == 0 and "changed=0" in out, out
    assert len((tmp_path / "ctr.log").read_text().splitlines()) == 1


@pytest.mark.parametrize("sums", ["0" * 64 + "  pause.tar\n", None])
def test_airgap_on_node_archive_not_matching_or_without_sums_is_refused_before_any_import(tmp_path, sums):
    images = _images(tmp_path, sums)
    importer = _fake_ctr(tmp_path)
    hostvars = {"containerd_airgap_images_dir": str(images), "containerd_airgap_images_on_node": True,
                "containerd_airgap_node_dir": str(tmp_path / "node")}
    rc, out = run_play(tmp_path, [importer], hostvars)
    assert rc != 0, out
    flat = " ".join(out.split())
    if sums is None:
        assert f"gpu01: {images} needs a sha256sum.txt and at least one *.tar image archive" in flat, out
        assert "(containerd_airgap_images_dir, on the node)" in flat, out
    else:
        assert f"gpu01: {images}/pause.tar is missing from or does not match" in flat, out
    assert not (tmp_path / "ctr.log").exists() and not (tmp_path / "node").exists()
