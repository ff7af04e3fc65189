"""Filters for k3s: the secure join token of an agent or a further server, built from the server CA and the token's
password, and the add-on images an air-gapped site's registries.yaml mirrors leave uncovered."""

import hashlib
import re

from ansible.errors import AnsibleFilterError

# k3s's secure ("full") token: K10<sha256 of the cluster CA>::<user>:<password> (pkg/clientaccess/token.go).
# k3s keeps two users (pkg/daemons/control/deps/deps.go, genUsers): "node" holds the agent token's password,
# "server" the server token's; a joining server authenticates as "server" (clientaccess.WithUser("server")).
_PREFIX = "K10"
_USERS = ("node", "server")
_CERT_BEGIN = "-----BEGIN CERTIFICATE-----"


def k3s_ca_hash(ca_pem):
    """sha256 (hex) of a self-signed k3s server CA, as k3s hashes a single-certificate bundle: its PEM bytes.

    A bundle of several certificates (a custom CA with intermediates) is hashed by k3s over the root's DER,
    which needs the chain verified; it is refused here rather than hashed wrongly.
    """
    if not isinstance(ca_pem, str) or _CERT_BEGIN not in ca_pem:
        raise AnsibleFilterError("k3s_ca_hash: the server CA file holds no PEM certificate")
    count = ca_pem.count(_CERT_BEGIN)
    if count != 1:
        raise AnsibleFilterError(
            f"k3s_ca_hash: the server CA file holds {count} certificates; only the self-signed single-certificate "
            "CA k3s generates is supported (a custom CA bundle is hashed over its root's DER)"
        )
    return hashlib.sha256(ca_pem.encode("ascii")).hexdigest()


def k3s_join_token(password, ca_hash, user="node"):
    """The secure join token K10<ca_hash>::<user>:<password>: user ``node`` for an agent (the agent token's
    password), ``server`` for a server joining the cluster (the server token's). Never echoes the password."""
    if user not in _USERS:
        raise AnsibleFilterError(f"k3s_join_token: the user must be one of {', '.join(_USERS)}, not {user!r}")
    if not isinstance(ca_hash, str) or not re.fullmatch(r"[0-9a-f]{64}", ca_hash):
        raise AnsibleFilterError("k3s_join_token: the CA hash must be 64 lower-case hex digits")
    if not isinstance(password, str) or len(password) < 16 or ":" in password or any(c.isspace() for c in password):
        raise AnsibleFilterError(
            f"k3s_join_token: the {user} token's password must be at least 16 characters without ':' or spaces"
        )
    return f"{_PREFIX}{ca_hash}::{user}:{password}"


def image_registry(image):
    """Registry host of an image reference, as containerd resolves it (docker.io when the first part is no host)."""
    if not isinstance(image, str) or not image or any(c.isspace() for c in image):
        raise AnsibleFilterError(f"image reference {image!r} is not a string without spaces")
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return "docker.io" if first == "index.docker.io" else first
    return "docker.io"


def _check_registries(registries):
    """Shape of k3s's registries.yaml (mirrors, configs); raise naming the offending key."""
    if not isinstance(registries, dict):
        raise AnsibleFilterError("registries.yaml data must be a mapping with mirrors and/or configs")
    unknown = sorted(set(registries) - {"mirrors", "configs"})
    if unknown:
        raise AnsibleFilterError(f"registries.yaml data has unknown top-level key(s) {', '.join(unknown)}")
    mirrors = registries.get("mirrors") or {}
    if not isinstance(mirrors, dict):
        raise AnsibleFilterError("registries.yaml mirrors must be a mapping of registry -> {endpoint, rewrite}")
    for name, mirror in mirrors.items():
        if not isinstance(mirror, dict) or set(mirror) - {"endpoint", "rewrite"}:
            raise AnsibleFilterError(f"registries.yaml mirrors.{name} may only hold endpoint and rewrite")
        endpoint = mirror.get("endpoint")
        if not isinstance(endpoint, list) or not endpoint or not all(isinstance(e, str) and e for e in endpoint):
            raise AnsibleFilterError(f"registries.yaml mirrors.{name}.endpoint must be a non-empty list of URLs")
        if not isinstance(mirror.get("rewrite", {}), dict):
            raise AnsibleFilterError(f"registries.yaml mirrors.{name}.rewrite must map a regex to its replacement")
    return mirrors


def k3s_unmirrored_images(images, registries):
    """Images (sorted) whose registry no mirror of k3s's registries.yaml data serves ("*" serves every one)."""
    mirrors = _check_registries(registries)
    if "*" in mirrors:
        return []
    return sorted({image for image in images if image_registry(image) not in mirrors})


class FilterModule:
    def filters(self):
        return {"k3s_ca_hash": k3s_ca_hash, "k3s_join_token": k3s_join_token,
                "k3s_unmirrored_images": k3s_unmirrored_images}
