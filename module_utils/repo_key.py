"""Repository signing keys: the fingerprints of the primary keys an OpenPGP key file holds, and the pin check.

A package source's key decides what apt or dnf trusts, so a key file is read here before it is installed:
every primary key it holds must be one of the expected fingerprints, and at least one must be there. The
reader is fail-closed: a file it does not fully understand (not OpenPGP, a secret key, a packet that has no
place in a public key file, armor that is not a public key block, a bad armor checksum, text outside the
armor, a key version other than 4) gives an error, never a fingerprint list.

Fingerprints are those of RFC 4880 section 12.2 (version 4: SHA-1 over 0x99, the two-octet length and the
public-key packet body), the ones ``gpg --show-keys --with-colons`` prints in its ``fpr`` lines.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

# Packets a transferable public key holds (RFC 4880 11.1, 5.x): signature, marker, trust, user id, public
# subkey, user attribute; the public key (6) starts each key. Anything else (secret keys 5 and 7, compressed or
# literal data, encrypted packets) has no place in a repository's key file.
_PUBLIC_KEY = 6
_ALLOWED_TAGS = {2, 6, 10, 12, 13, 14, 17}
_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
_END = "-----END PGP PUBLIC KEY BLOCK-----"
_FINGERPRINT_RE = re.compile(r"^[0-9A-F]{40}$")
# A key file larger than this is no repository key.
MAX_KEY_BYTES = 1 << 20


class KeyFileError(ValueError):
    """The bytes are not a public key file this reader fully understands."""


def _crc24(data):
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def _dearmor_block(lines):
    """The binary packets of one armored block's lines (between BEGIN and END)."""
    i = 0
    # Armor headers (Version:, Comment:, ...) end at the first empty line.
    while i < len(lines) and lines[i].strip():
        if ":" not in lines[i]:
            break
        i += 1
    if i < len(lines) and not lines[i].strip():
        i += 1
    body, checksum = [], None
    for line in lines[i:]:
        line = line.strip()
        if not line:
            continue
        if line.startswith("="):
            if checksum is not None:
                raise KeyFileError("armor has two checksum lines")
            checksum = line[1:]
            continue
        if checksum is not None:
            raise KeyFileError("armor has data after its checksum line")
        body.append(line)
    try:
        data = base64.b64decode("".join(body), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise KeyFileError(f"armor is not base64: {exc}") from None
    if checksum is not None:
        try:
            want = base64.b64decode(checksum, validate=True)
        except (binascii.Error, ValueError):
            raise KeyFileError("armor checksum is not base64") from None
        if len(want) != 3 or int.from_bytes(want, "big") != _crc24(data):
            raise KeyFileError("armor checksum does not match its data")
    return data


def dearmor(data):
    """The binary OpenPGP packets of a key file: its bytes when binary, else the packets of every public key
    block, concatenated. Raises KeyFileError for anything else."""
    if not data:
        raise KeyFileError("the file is empty")
    if data[0] & 0x80:
        return bytes(data)
    try:
        text = bytes(data).decode("ascii")
    except UnicodeDecodeError:
        raise KeyFileError("the file is neither binary OpenPGP nor ASCII armor") from None
    packets, block, outside = [], None, []
    for line in text.splitlines():
        stripped = line.strip()
        if block is None:
            if stripped == _BEGIN:
                block = []
            elif stripped.startswith("-----BEGIN PGP"):
                raise KeyFileError(f"armor {stripped!r} is not a public key block")
            elif stripped:
                outside.append(stripped)
        elif stripped == _END:
            packets.append(_dearmor_block(block))
            block = None
        else:
            block.append(line)
    if block is not None:
        raise KeyFileError("armor has no END line")
    if not packets:
        raise KeyFileError("the file is neither binary OpenPGP nor ASCII armor")
    if outside:
        raise KeyFileError(f"text outside the armor: {outside[0][:40]!r}")
    return b"".join(packets)


def _packets(data):
    """(tag, body) of each packet; raises KeyFileError on a header or length it does not understand."""
    pos, size = 0, len(data)
    while pos < size:
        head = data[pos]
        if not head & 0x80:
            raise KeyFileError(f"byte {pos} is no packet header")
        if head & 0x40:  # new format
            tag = head & 0x3F
            if pos + 1 >= size:
                raise KeyFileError("truncated packet header")
            first = data[pos + 1]
            if first < 192:
                length, pos = first, pos + 2
            elif first < 224:
                if pos + 2 >= size:
                    raise KeyFileError("truncated packet header")
                length, pos = ((first - 192) << 8) + data[pos + 2] + 192, pos + 3
            elif first == 255:
                if pos + 5 >= size:
                    raise KeyFileError("truncated packet header")
                length, pos = int.from_bytes(data[pos + 2:pos + 6], "big"), pos + 6
            else:
                raise KeyFileError("partial body length in a key file")
        else:  # old format
            tag, kind = (head >> 2) & 0x0F, head & 0x03
            if kind == 3:
                raise KeyFileError("indeterminate packet length in a key file")
            width = 1 << kind
            if pos + width >= size:
                raise KeyFileError("truncated packet header")
            length, pos = int.from_bytes(data[pos + 1:pos + 1 + width], "big"), pos + 1 + width
        if pos + length > size:
            raise KeyFileError("truncated packet")
        yield tag, data[pos:pos + length]
        pos += length


def primary_fingerprints(data):
    """The fingerprints (40 upper-case hex digits) of the primary keys of a key file, in file order, each once.

    Raises KeyFileError for a file that is not a public key file this reader fully understands; an empty list
    is never returned (a file without a primary key is an error too)."""
    if len(data) > MAX_KEY_BYTES:
        raise KeyFileError(f"the file has {len(data)} bytes, more than a key file ({MAX_KEY_BYTES})")
    found, seen_primary = [], False
    for tag, body in _packets(dearmor(data)):
        if tag not in _ALLOWED_TAGS:
            raise KeyFileError(f"packet tag {tag} has no place in a public key file")
        if tag != _PUBLIC_KEY:
            if not seen_primary and tag != 10:
                raise KeyFileError(f"packet tag {tag} before any primary key")
            continue
        if not body or body[0] != 4:
            raise KeyFileError(f"primary key version {body[0] if body else 'missing'} (only version 4 is read)")
        if len(body) > 0xFFFF:
            raise KeyFileError("primary key packet too long")
        fingerprint = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
        seen_primary = True
        if fingerprint not in found:
            found.append(fingerprint)
    if not found:
        raise KeyFileError("no primary key")
    return found


def normalize_fingerprint(value):
    """A fingerprint as written by people (spaces, lower case, 0x) in the form primary_fingerprints returns."""
    text = re.sub(r"\s+", "", str(value)).upper()
    return text[2:] if text.startswith("0X") else text


def _kind(value):
    """A value's kind in words, for messages (Ansible hands tagged subclasses of str, list and dict)."""
    for kind, name in ((str, "a string"), (dict, "a mapping"), (list, "a list"), (bool, "a boolean"),
                       (int, "a number"), (float, "a number")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def fingerprint_errors(expected, variable):
    """Why ``expected`` (the pinned fingerprints of ``variable``) cannot pin a key: not a list, empty, or an item
    that is not a version 4 fingerprint (40 hex digits). Empty when it can."""
    if not isinstance(expected, (list, tuple)) or isinstance(expected, str):
        return [f"{variable} must be a list of key fingerprints, got {_kind(expected)}"]
    if not expected:
        return [f"{variable} is required: list the key's fingerprint (40 hex digits)"]
    return [f"{variable}: {item!r} is not a key fingerprint (40 hex digits)"
            for item in expected if not _FINGERPRINT_RE.match(normalize_fingerprint(item))]


def pin_errors(found, expected, variable):
    """Why keys ``found`` in a file (primary_fingerprints) may not be installed under the pins ``expected`` of
    ``variable``: each found key must be pinned, and at least one must be found. Empty when they may."""
    pins = [normalize_fingerprint(item) for item in expected]
    stray = [fpr for fpr in found if fpr not in pins]
    if not found:
        return [f"no key found, expected one of {variable} {pins}"]
    if stray:
        return [f"key {', '.join(stray)} is not in {variable} (expected one of {pins}; the file holds {found})"]
    return []


def armor(data):
    """ASCII armor of binary public key packets (for apt's .asc keyrings), with its CRC-24 checksum."""
    text = base64.b64encode(data).decode("ascii")
    lines = [text[i:i + 64] for i in range(0, len(text), 64)]
    crc = base64.b64encode(_crc24(data).to_bytes(3, "big")).decode("ascii")
    return "\n".join([_BEGIN, "", *lines, "=" + crc, _END, ""]).encode("ascii")


# Sources whose key has no fingerprint default verified from two stored sources, on any OS (gpu_repos vars/*.yml:
# fingerprints: []), and the distribution's own keyring, which has none because gpufleet never installs it; a key
# gpu_repos_keys gives for one of these needs its pins. (cuda on RHEL is such a source too; the preflight cannot tell
# a host's OS before it is contacted, so gpu_repos' own first assert refuses that one.)
_NO_DEFAULT_PIN = ("doca", "debian", "debian_security")
_PIN_VARIABLES = ("containerd_apt_repo_key_fingerprints", "kubeadm_node_apt_repo_key_fingerprints")


def inventory_pin_errors(hostvars, hosts):
    """Errors, each naming the host and the variable, of the repository key pins the inventory gives or lacks:
    gpu_repos_key_fingerprints (a mapping of fingerprint lists), the pins of a source enabled by gpu_repos_sources
    or keyed by gpu_repos_keys that has no default, and the containerd and kubeadm_node pin lists where given."""
    errors = []
    for host in sorted(hosts):
        hv = hostvars.get(host, {})
        pins = hv.get("gpu_repos_key_fingerprints")
        if pins is None:
            pins = {}
        if not isinstance(pins, dict):
            errors.append(f"host {host}: variable gpu_repos_key_fingerprints must be a mapping of source to a list of "
                          f"fingerprints, got {_kind(pins)}")
            pins = {}
        for source, expected in sorted(pins.items()):
            variable = f"gpu_repos_key_fingerprints.{source}"
            errors += [f"host {host}: {e}" for e in fingerprint_errors(expected, variable)]
        sources = hv.get("gpu_repos_sources") or []
        keys = hv.get("gpu_repos_keys") or {}
        wanted = [s for s in _NO_DEFAULT_PIN if (s == "doca" and s in sources) or s in keys]
        for source in wanted:
            if source not in pins:
                why = "gpu_repos_sources enables it" if source in sources else "gpu_repos_keys gives its key"
                errors.append(f"host {host}: variable gpu_repos_key_fingerprints.{source} is required: {why} and its "
                              "signing key has no verified default fingerprint")
        for variable in _PIN_VARIABLES:
            if hv.get(variable) is not None:
                errors += [f"host {host}: {e}" for e in fingerprint_errors(hv[variable], variable)]
    return errors
