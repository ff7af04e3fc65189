"""files/crds and scripts/refresh_crds: the stored CRDs match their manifest and every pin; the
script's offline path (a local tarball) writes them, checks them and refuses a pin without CRDs."""

import gzip
import hashlib
import importlib.machinery
import importlib.util
import io
import tarfile

import pytest
import yaml
from ansible.module_utils.k8s_schema import load_crds
from conftest import CRDS, PINS, ROOT

_loader = importlib.machinery.SourceFileLoader("refresh_crds", str(ROOT / "scripts" / "refresh_crds"))
_spec = importlib.util.spec_from_loader("refresh_crds", _loader)
refresh = importlib.util.module_from_spec(_spec)
_loader.exec_module(refresh)

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def crd(group, kind, plural):
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": {"kind": kind, "plural": plural}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]},
    }).encode()


def tarball(path, members, commit=COMMIT):
    """A source tarball shaped like GitHub's: one top directory, the commit in the pax header."""
    headers = {"comment": commit} if commit else {}
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers=headers) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"kuberay-1.7.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def one_pin(tmp_path, monkeypatch):
    """Only kuberay pinned at 1.7.0, its tarball in tmp_path/src."""
    monkeypatch.setattr(refresh, "SOURCES", {"kuberay": refresh.SOURCES["kuberay"]})
    versions = tmp_path / "k8s_versions.yml"
    versions.write_text("cluster_k8s_versions:\n  kuberay: {version: 1.7.0}\n")
    (tmp_path / "src").mkdir()
    return versions


# ------------------------------------------------------------------------------ the stored CRDs


def test_manifest_matches_the_stored_files():
    assert refresh.check(CRDS) == []


def test_manifest_covers_every_pinned_version_and_nothing_else():
    manifest = yaml.safe_load((CRDS / "manifest.yml").read_text())
    listed = {(entry["component"], entry["version"]) for entry in manifest["components"]}
    assert listed == {(name, str(PINS[name]["version"])) for name in refresh.SOURCES}
    stored = {(p.parent.name, p.name) for p in CRDS.glob("*/*") if p.is_dir()}
    assert stored == listed, "a version directory without a pin (or a pin without one)"
    for entry in manifest["components"]:
        assert entry["files"], f"{entry['component']} {entry['version']} has no CRD files"
        assert len(entry["commit"]) == 40 and entry["tag"] == refresh.tag_of(entry["version"])


def test_every_stored_file_loads_as_crds_with_one_definition_per_kind():
    for name in refresh.SOURCES:
        registry = load_crds([str(CRDS / name / str(PINS[name]["version"]))])
        assert registry.served, name


# ------------------------------------------------------------------------- the script, offline


def test_refresh_from_a_local_tarball_writes_the_files_and_the_manifest(tmp_path, one_pin):
    upstream = crd("ray.io", "RayJob", "rayjobs")
    tarball(tmp_path / "src" / "kuberay-v1.7.0.tar.gz", {
        "ray-operator/config/crd/bases/ray.io_rayjobs.yaml": upstream,
        "ray-operator/config/crd/bases/kustomization.yaml": b"resources: [ray.io_rayjobs.yaml]\n",
        "ray-operator/config/crd/bases/nested/ray.io_other.yaml": crd("ray.io", "Other", "others"),
        "helm-chart/crds/ray.io_rayjobs.yaml": upstream,
    })
    dest = tmp_path / "crds"
    (dest / "kuberay" / "1.6.0").mkdir(parents=True)  # the previous pin's directory goes away
    rc = refresh.main(["--from", str(tmp_path / "src"), "--versions", str(one_pin), "--dest", str(dest)])
    assert rc == 0
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "kuberay/1.7.0/ray.io_rayjobs.yaml.gz", "manifest.yml"]
    stored = (dest / "kuberay/1.7.0/ray.io_rayjobs.yaml.gz").read_bytes()
    assert gzip.decompress(stored) == upstream
    (entry,) = yaml.safe_load((dest / "manifest.yml").read_text())["components"]
    assert entry == {
        "component": "kuberay", "version": "1.7.0", "repo": "ray-project/kuberay", "tag": "v1.7.0",
        "commit": COMMIT, "source_url": "https://github.com/ray-project/kuberay/archive/refs/tags/v1.7.0.tar.gz",
        "files": [{"file": "kuberay/1.7.0/ray.io_rayjobs.yaml.gz",
                   "upstream_path": "ray-operator/config/crd/bases/ray.io_rayjobs.yaml",
                   "sha256": hashlib.sha256(upstream).hexdigest(),
                   "stored_sha256": hashlib.sha256(stored).hexdigest()}],
    }
    assert refresh.check(dest) == []
    assert load_crds([str(dest)]).lookup("ray.io/v1", "RayJob") is not None


def test_same_input_gives_byte_identical_files(tmp_path, one_pin):
    tarball(tmp_path / "src" / "kuberay-v1.7.0.tar.gz",
            {"ray-operator/config/crd/bases/ray.io_rayjobs.yaml": crd("ray.io", "RayJob", "rayjobs")})
    outputs = []
    for run in ("a", "b"):
        refresh.main(["--from", str(tmp_path / "src"), "--versions", str(one_pin), "--dest", str(tmp_path / run)])
        outputs.append((tmp_path / run / "kuberay/1.7.0/ray.io_rayjobs.yaml.gz").read_bytes())
    assert outputs[0] == outputs[1], "gzip output carries no timestamp, so a refresh without change is no diff"


def test_pinned_version_without_crds_fails_and_changes_nothing(tmp_path, one_pin, capsys):
    tarball(tmp_path / "src" / "kuberay-v1.7.0.tar.gz", {"README.md": b"no CRDs here\n"})
    dest = tmp_path / "crds"
    (dest / "kuberay" / "1.6.0").mkdir(parents=True)
    rc = refresh.main(["--from", str(tmp_path / "src"), "--versions", str(one_pin), "--dest", str(dest)])
    assert rc == 1
    assert "kuberay 1.7.0: no CRDs under ray-operator/config/crd/bases/*.yaml" in capsys.readouterr().err
    assert (dest / "kuberay" / "1.6.0").is_dir() and not (dest / "manifest.yml").exists()


def test_missing_tarball_of_the_pinned_tag_fails(tmp_path, one_pin, capsys):
    rc = refresh.main(["--from", str(tmp_path / "src"), "--versions", str(one_pin), "--dest", str(tmp_path / "d")])
    assert rc == 1
    assert "kuberay v1.7.0:" in capsys.readouterr().err and not (tmp_path / "d").exists()


def test_tarball_without_a_commit_fails(tmp_path, one_pin, capsys):
    tarball(tmp_path / "src" / "kuberay-v1.7.0.tar.gz",
            {"ray-operator/config/crd/bases/ray.io_rayjobs.yaml": crd("ray.io", "RayJob", "rayjobs")}, commit=None)
    rc = refresh.main(["--from", str(tmp_path / "src"), "--versions", str(one_pin), "--dest", str(tmp_path / "d")])
    assert rc == 1 and "carries no commit" in capsys.readouterr().err


def test_component_without_a_pin_fails(tmp_path):
    versions = tmp_path / "k8s_versions.yml"
    versions.write_text("cluster_k8s_versions:\n  kueue: {version: 0.19.2}\n")
    with pytest.raises(refresh.RefreshError, match="no version pinned for gpu_operator, volcano, kuberay"):
        refresh.pinned_versions(versions)


def test_check_reports_a_changed_a_missing_and_an_unlisted_file(tmp_path, one_pin):
    tarball(tmp_path / "src" / "kuberay-v1.7.0.tar.gz", {
        "ray-operator/config/crd/bases/ray.io_rayjobs.yaml": crd("ray.io", "RayJob", "rayjobs"),
        "ray-operator/config/crd/bases/ray.io_rayclusters.yaml": crd("ray.io", "RayCluster", "rayclusters"),
    })
    dest = tmp_path / "crds"
    refresh.main(["--from", str(tmp_path / "src"), "--versions", str(one_pin), "--dest", str(dest)])
    jobs = dest / "kuberay/1.7.0/ray.io_rayjobs.yaml.gz"
    jobs.write_bytes(gzip.compress(crd("ray.io", "RayJob", "rayjobz"), mtime=0))
    (dest / "kuberay/1.7.0/ray.io_rayclusters.yaml.gz").unlink()
    (dest / "kuberay/1.7.0/extra.yaml.gz").write_bytes(b"")
    assert refresh.check(dest) == [
        "kuberay/1.7.0/ray.io_rayclusters.yaml.gz: listed in manifest.yml but missing",
        "kuberay/1.7.0/ray.io_rayjobs.yaml.gz: stored_sha256 does not match",
        "kuberay/1.7.0/extra.yaml.gz: not listed in manifest.yml",
    ]


def test_two_files_defining_one_kind_are_refused(tmp_path):
    for version in ("1.6.0", "1.7.0"):
        (tmp_path / version).mkdir()
        (tmp_path / version / "ray.io_rayjobs.yaml.gz").write_bytes(gzip.compress(crd("ray.io", "RayJob", "rayjobs")))
    with pytest.raises(ValueError, match=r"RayJob\.ray\.io is already defined by .*1\.6\.0"):
        load_crds([str(tmp_path)])
