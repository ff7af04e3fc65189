"""Repository signing keys are checked against pinned fingerprints before apt or dnf may trust them (issue 36).

Real key material: Debian's own keyrings on this machine (/usr/share/keyrings), exported as ASCII armor with gpg
into a temporary home, and gpg itself as the reference for their fingerprints. The role's key task
(roles/gpu_repos tasks/keys.yml, module repo_key) runs in a local playbook against a temporary keyring
directory, reading keys through file:// URLs and from a loopback http server the test starts and stops.
"""

import functools
import http.server
import pathlib
import shutil
import subprocess
import sys
import threading

import pytest
import yaml
from ansible.module_utils.repo_key import (
    KeyFileError,
    armor,
    dearmor,
    fingerprint_errors,
    pin_errors,
    primary_fingerprints,
)
from conftest import ROOT, run_cases

KEYRINGS = pathlib.Path("/usr/share/keyrings")
BOOKWORM = KEYRINGS / "debian-archive-bookworm-stable.gpg"
TRIXIE = KEYRINGS / "debian-archive-trixie-stable.gpg"
GPG = shutil.which("gpg")
pytestmark = pytest.mark.skipif(not (GPG and BOOKWORM.is_file() and TRIXIE.is_file()),
                                reason="needs gpg and Debian's archive keyrings (/usr/share/keyrings)")


@functools.cache
def gpg_primary_fingerprints(path):
    """The primary keys' fingerprints as gpg prints them (the reference the module must agree with)."""
    out = subprocess.run([GPG, "--show-keys", "--with-colons", "--with-fingerprint", str(path)],
                         capture_output=True, text=True, check=True).stdout
    found, last = [], None
    for line in out.splitlines():
        fields = line.split(":")
        if fields[0] in ("pub", "sub"):
            last = fields[0]
        elif fields[0] == "fpr" and last == "pub":
            found.append(fields[9])
            last = None
    return found


def export_armored(tmp, *keyrings):
    """gpg --export --armor of the keys of keyrings, through a private gpg home under tmp."""
    home = tmp / f"gnupg-{len(list(tmp.glob('gnupg-*')))}"
    home.mkdir(mode=0o700)
    try:
        for keyring in keyrings:
            subprocess.run([GPG, "--homedir", str(home), "--batch", "--quiet", "--import", str(keyring)],
                           capture_output=True, check=True)
        return subprocess.run([GPG, "--homedir", str(home), "--batch", "--export", "--armor"],
                              capture_output=True, check=True).stdout
    finally:
        # The import starts a gpg-agent for this home; the test stops what it started.
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True, check=False)


@pytest.mark.parametrize("keyring", sorted(KEYRINGS.glob("*.gpg")), ids=lambda p: p.name)
def test_primary_fingerprints_agree_with_gpg_on_every_keyring_here(keyring):
    assert primary_fingerprints(keyring.read_bytes()) == gpg_primary_fingerprints(keyring)


def test_armored_and_binary_keys_give_the_same_fingerprints(tmp_path):
    both = export_armored(tmp_path, BOOKWORM, TRIXIE)
    assert both.startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    expected = gpg_primary_fingerprints(BOOKWORM) + gpg_primary_fingerprints(TRIXIE)
    assert sorted(primary_fingerprints(both)) == sorted(expected)
    assert primary_fingerprints(armor(BOOKWORM.read_bytes())) == gpg_primary_fingerprints(BOOKWORM)


@pytest.mark.parametrize("data, reason", [
    (b"", "empty"),
    (b"this is no key\n", "neither binary OpenPGP nor"),
    (b"\x00\x01\x02garbage", "neither binary OpenPGP nor"),
    (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnot base64 !!\n-----END PGP PUBLIC KEY BLOCK-----\n", "not base64"),
    (b"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n-----END PGP PRIVATE KEY BLOCK-----\n", "not a public key block"),
    (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQ==\n", "no END line"),
])
def test_a_file_the_reader_does_not_understand_is_refused(data, reason):
    with pytest.raises(KeyFileError, match=reason):
        primary_fingerprints(data)


def test_a_corrupted_armor_checksum_text_outside_and_a_secret_key_packet_are_refused(tmp_path):
    armored = export_armored(tmp_path, BOOKWORM).decode()
    lines = armored.splitlines()
    crc = next(i for i, line in enumerate(lines) if line.startswith("="))
    bad_crc = [*lines[:crc], "=AAAA", *lines[crc + 1:]]
    with pytest.raises(KeyFileError, match="checksum"):
        primary_fingerprints("\n".join(bad_crc).encode())
    with pytest.raises(KeyFileError, match="outside the armor"):
        primary_fingerprints(("apt-key add this:\n" + armored).encode())
    binary = bytearray(BOOKWORM.read_bytes())
    binary[0] = 0xC0 | 5  # the primary key packet retagged as a secret key (new format, tag 5)
    with pytest.raises(KeyFileError, match="tag 5"):
        primary_fingerprints(bytes(binary))
    with pytest.raises(KeyFileError, match="truncated"):
        primary_fingerprints(BOOKWORM.read_bytes()[:200])


def test_pins_must_name_every_key_found_and_be_fingerprints():
    bookworm, = gpg_primary_fingerprints(BOOKWORM)
    trixie, = gpg_primary_fingerprints(TRIXIE)
    assert pin_errors([bookworm], [bookworm.lower()], "v") == []
    assert pin_errors([bookworm], [" ".join(bookworm[i:i + 4] for i in range(0, 40, 4))], "v") == []
    assert pin_errors([bookworm, trixie], [bookworm], "v") == [
        f"key {trixie} is not in v (expected one of {[bookworm]}; the file holds {[bookworm, trixie]})"]
    assert pin_errors([], [bookworm], "v")
    assert fingerprint_errors([], "v") == ["v is required: list the key's fingerprint (40 hex digits)"]
    assert fingerprint_errors("ABCD", "v")
    assert fingerprint_errors(["3BF863CC"], "v") == ["v: '3BF863CC' is not a key fingerprint (40 hex digits)"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def loopback_http(tmp_path):
    """A loopback http server for tmp_path/www, stopped after the test."""
    www = tmp_path / "www"
    www.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


# Each case: a host of its own with its keyring directory; the key it is given; the fingerprints pinned
# (None: the role's default of the OS file, NVIDIA's CUDA key).
def _cases(tmp, www, base):
    bookworm, = gpg_primary_fingerprints(BOOKWORM)
    trixie, = gpg_primary_fingerprints(TRIXIE)
    keys = tmp / "keys"
    keys.mkdir()
    (keys / "bookworm.asc").write_bytes(export_armored(tmp, BOOKWORM))
    (keys / "both.asc").write_bytes(export_armored(tmp, BOOKWORM, TRIXIE))
    (keys / "empty.asc").write_bytes(b"")
    (keys / "garbage.asc").write_bytes(b"<html>mirror error page</html>\n")
    (www / "bookworm.asc").write_bytes((keys / "bookworm.asc").read_bytes())
    return {
        "match": (f"file://{keys}/bookworm.asc", [bookworm]),
        "match_binary": (str(BOOKWORM), [bookworm]),
        "match_http": (f"{base}/bookworm.asc", [bookworm]),
        "rotation": (f"file://{keys}/bookworm.asc", [trixie, bookworm]),
        "mismatch": (f"file://{keys}/bookworm.asc", [trixie]),
        "two_keys_one_pinned": (f"file://{keys}/both.asc", [bookworm]),
        "two_keys_both_pinned": (f"file://{keys}/both.asc", [bookworm, trixie]),
        "empty": (f"file://{keys}/empty.asc", [bookworm]),
        "garbage": (f"file://{keys}/garbage.asc", [bookworm]),
        "default_pin": (f"file://{keys}/bookworm.asc", None),
        "http_missing": (f"{base}/absent.asc", [bookworm]),
    }


def run_key_task(tmp, cases, *args):
    """The role's key task (gpu_repos tasks/keys.yml) on one local host per case, cuda on Debian 12."""
    catalog = yaml.safe_load((ROOT / "roles/gpu_repos/vars/Debian_12.yml").read_text())
    hosts = {}
    for name, (src, pins) in cases.items():
        keyring = tmp / "keyrings" / name
        keyring.mkdir(parents=True, exist_ok=True)
        hostvars = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "__keyring": str(keyring), "gpu_repos_keys": {"cuda": src}, "gpu_repos_sources": ["cuda"]}
        if pins is not None:
            hostvars["gpu_repos_key_fingerprints"] = {"cuda": pins}
        hosts[name] = hostvars
    play = {"name": "gpu_repos keys", "hosts": "all", "gather_facts": False, "vars": catalog,
            "tasks": [{"name": "Run the role's key task", "ansible.builtin.include_role": {
                "name": "gpu_repos", "tasks_from": "keys"}, "vars": {"__gpu_repos_keyring_dir": "{{ __keyring }}"}}]}
    return run_cases(tmp, [play], {"all": {"hosts": hosts}}, *args)


def test_the_role_installs_only_a_key_whose_every_primary_key_is_pinned(tmp_path, loopback_http):
    www, base = loopback_http
    cases = _cases(tmp_path, www, base)
    bookworm, = gpg_primary_fingerprints(BOOKWORM)
    trixie, = gpg_primary_fingerprints(TRIXIE)
    dest = {name: tmp_path / "keyrings" / name / "gpufleet-cuda.asc" for name in cases}

    # --check first: the keys are fetched and checked, nothing is written, and a mismatch fails already.
    check = run_key_task(tmp_path, cases, "--check", "--diff")
    assert not check.failed("match", "match_http", "rotation", "two_keys_both_pinned"), check.out
    assert check.changed("match") == 1, check.out
    assert not any(path.exists() for path in dest.values()), check.out
    assert check.failed("mismatch") and check.failed("empty") and check.failed("default_pin"), check.out

    run = run_key_task(tmp_path, cases)
    for name in ("match", "match_binary", "match_http", "rotation", "two_keys_both_pinned"):
        assert not run.failed(name) and run.changed(name) == 1, (name, run.out)
        assert dest[name].stat().st_mode & 0o777 == 0o644, name
        assert dest[name].read_bytes().startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----"), name
        assert bookworm in primary_fingerprints(dest[name].read_bytes())
    assert primary_fingerprints(dest["match_binary"].read_bytes()) == [bookworm]

    refused = ("mismatch", "two_keys_one_pinned", "empty", "garbage", "default_pin", "http_missing")
    for name in refused:
        assert run.failed(name), (name, run.out)
        assert not dest[name].exists(), name  # nothing written
    var = "gpu_repos_key_fingerprints.cuda"
    assert (f"host mismatch: the signing key file://{tmp_path}/keys/bookworm.asc is refused: key {bookworm} is not "
            f"in {var} (expected one of ['{trixie}']; the file holds ['{bookworm}'])") in run.messages("mismatch")
    assert f"key {trixie} is not in {var}" in run.messages("two_keys_one_pinned"), run.out
    assert f"host empty: the signing key file://{tmp_path}/keys/empty.asc for {var} is refused: the file is empty" \
        in run.messages("empty"), run.out
    assert "is refused: the file is neither binary OpenPGP nor ASCII armor" in run.messages("garbage"), run.out
    # The default pins the real vendor key: Debian's key offered for NVIDIA's CUDA repository is refused.
    assert "expected one of ['EB693B3035CD5710E231E123A4B469963BF863CC']" in run.messages("default_pin"), run.out
    assert f"host http_missing: the signing key {base}/absent.asc for {var} download failed: 404" \
        in run.messages("http_missing"), run.out

    # Idempotent: the second run changes nothing.
    again = run_key_task(tmp_path, {name: cases[name] for name in ("match", "match_binary", "match_http")})
    assert not again.failed("match", "match_binary", "match_http") and again.changed("match", "match_binary",
                                                                                       "match_http") == 0, again.out


def test_a_required_fingerprint_missing_is_refused_by_the_role_before_anything_changes(tmp_path):
    """doca has no verified default: the role's assert names the host and the variable before any task changes."""
    # This machine is Debian 12 (the brief's), so the role loads vars/Debian_12.yml as on a node.
    play = {"name": "gpu_repos", "hosts": "all", "gather_facts": True,
            "tasks": [{"name": "Run", "ansible.builtin.include_role": {"name": "gpu_repos"}}]}
    hostvars = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                "gpu_repos_sources": ["doca"], "gpu_repos_doca_version": "3.1.0",
                # a local key, so that even a role that skipped the check would send no traffic off this machine
                "gpu_repos_keys": {"doca": f"file://{BOOKWORM}"}}
    run = run_cases(tmp_path, [play], {"all": {"hosts": {"gpu01": hostvars}}}, "--check")
    assert run.failed("gpu01"), run.out
    assert "host gpu01: variable gpu_repos_key_fingerprints.doca is required for the doca signing key" \
        in run.messages("gpu01"), run.out
    assert run.changed("gpu01") == 0, run.out


@pytest.mark.parametrize("role, tasks, key_src, fingerprints_var", [
    ("containerd", "roles/containerd/tasks/install.yml", "{{ __containerd_apt_repo_url }}/gpg",
     "containerd_apt_repo_key_fingerprints"),
    ("kubeadm_node", "roles/kubeadm_node/tasks/install.yml", "{{ __kubeadm_node_apt_repo_url }}Release.key",
     "kubeadm_node_apt_repo_key_fingerprints"),
])
def test_docker_and_pkgs_k8s_io_keys_are_checked_before_their_source_names_them(role, tasks, key_src,
                                                                                 fingerprints_var):
    """The key the deb822 source is signed by is the file repo_key checked, never a URL apt or Ansible fetches."""
    from conftest import flat_tasks
    flat = list(flat_tasks(yaml.safe_load((ROOT / tasks).read_text())))
    keys = [i for i, t in enumerate(flat) if "repo_key" in t]
    repos = [i for i, t in enumerate(flat) if "ansible.builtin.deb822_repository" in t]
    assert len(keys) == 1 and len(repos) == 1 and keys[0] < repos[0]
    key, repo = flat[keys[0]]["repo_key"], flat[repos[0]]["ansible.builtin.deb822_repository"]
    assert key["src"] == key_src and key["fingerprints"] == f"{{{{ {fingerprints_var} }}}}"
    assert repo["signed_by"] == key["dest"]
    assert not repo["signed_by"].startswith(("http", f"{{{{ __{role}_apt_repo_url"))
    defaults = yaml.safe_load((ROOT / f"roles/{role}/defaults/main.yml").read_text())
    assert defaults[fingerprints_var] == [{"containerd": "9DC858229FC7DD38854AE2D88D81803C0EBFCD88",
                                           "kubeadm_node": "DE15B14486CD377B9E876E1A234654DA9A296436"}[role]]


def test_inventory_pins_are_checked_naming_host_and_variable():
    """The preflight's check (filter repo_key_pin_errors): sources without a verified default need their pins."""
    from ansible.module_utils.repo_key import inventory_pin_errors
    good = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"
    hostvars = {
        "ok": {"gpu_repos_sources": ["cuda", "doca"], "gpu_repos_key_fingerprints": {"doca": [good]}},
        "plain": {},
        "doca": {"gpu_repos_sources": ["doca"]},
        "mirror_key": {"gpu_repos_keys": {"debian": "file:///srv/debian.gpg"}},
        "short": {"gpu_repos_key_fingerprints": {"cuda": ["3BF863CC"]}},
        "notmap": {"gpu_repos_key_fingerprints": [good]},
        "k8s": {"kubeadm_node_apt_repo_key_fingerprints": []},
    }
    errors = inventory_pin_errors(hostvars, list(hostvars))
    assert errors == [
        "host doca: variable gpu_repos_key_fingerprints.doca is required: gpu_repos_sources enables it and its "
        "signing key has no verified default fingerprint",
        "host k8s: kubeadm_node_apt_repo_key_fingerprints is required: list the key's fingerprint (40 hex digits)",
        "host mirror_key: variable gpu_repos_key_fingerprints.debian is required: gpu_repos_keys gives its key and "
        "its signing key has no verified default fingerprint",
        "host notmap: variable gpu_repos_key_fingerprints must be a mapping of source to a list of fingerprints, "
        "got a list",
        "host short: gpu_repos_key_fingerprints.cuda: '3BF863CC' is not a key fingerprint (40 hex digits)",
    ]


def test_the_key_is_written_as_apt_reads_it_and_a_pinned_key_in_place_is_kept(tmp_path):
    """apt up to 2.7 dearmors .asc keyrings with a line-based reader: CRLF line ends or a missing blank line leave
    it an empty keyring (NO_PUBKEY at `apt update`), so the module writes one LF armor block of the packets it
    checked. And a converged host keeps a key in place that is pinned and written so, without reading the
    vendor's URL (here a closed loopback port): main's get_url did not fetch again either."""
    bookworm, = gpg_primary_fingerprints(BOOKWORM)
    keys = tmp_path / "keys"
    keys.mkdir()
    lf = export_armored(tmp_path, BOOKWORM)
    (keys / "crlf.asc").write_bytes(lf.replace(b"\n", b"\r\n"))
    kept_dir = tmp_path / "keyrings" / "kept"
    kept_dir.mkdir(parents=True)
    (kept_dir / "gpufleet-cuda.asc").write_bytes(armor(dearmor(lf)))
    (kept_dir / "gpufleet-cuda.asc").chmod(0o644)
    cases = {"crlf": (f"file://{keys}/crlf.asc", [bookworm]), "kept": ("http://127.0.0.1:9/absent.asc", [bookworm]),
             "stale": ("http://127.0.0.1:9/absent.asc", ["0" * 40])}
    stale_dir = tmp_path / "keyrings" / "stale"
    stale_dir.mkdir(parents=True)
    (stale_dir / "gpufleet-cuda.asc").write_bytes(armor(dearmor(lf)))
    run = run_key_task(tmp_path, cases)
    written = (tmp_path / "keyrings" / "crlf" / "gpufleet-cuda.asc").read_bytes()
    assert not run.failed("crlf") and b"\r" not in written and written == armor(dearmor(lf)), run.out
    assert written.split(b"\n")[1] == b"", written[:80]
    assert not run.failed("kept") and run.changed("kept") == 0, run.out
    # a key in place that the pins no longer name is read again from its source (which fails here)
    assert run.failed("stale") and "download failed" in run.messages("stale"), run.out
