"""Filters for k3s: the secure agent join token built from the server CA and the agent token's password."""

import hashlib
import re

from ansible.errors import AnsibleFilterError

# k3s's secure ("full") token: K10<sha256 of the cluster CA>::<user>:<password> (pkg/clientaccess/token.go).
# The agent token's user is always "node" (pkg/daemons/control/deps/deps.go, genUsers).
_PREFIX = "K10"
_AGENT_USER = "node"
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


def k3s_agent_token(password, ca_hash):
    """The secure agent token K10<ca_hash>::node:<password>; never echoes the password in an error."""
    if not isinstance(ca_hash, str) or not re.fullmatch(r"[0-9a-f]{64}", ca_hash):
        raise AnsibleFilterError("k3s_agent_token: the CA hash must be 64 lower-case hex digits")
    if not isinstance(password, str) or len(password) < 16 or ":" in password or any(c.isspace() for c in password):
        raise AnsibleFilterError(
            "k3s_agent_token: the agent token's password must be at least 16 characters without ':' or spaces"
        )
    return f"{_PREFIX}{ca_hash}::{_AGENT_USER}:{password}"


class FilterModule:
    def filters(self):
        return {"k3s_ca_hash": k3s_ca_hash, "k3s_agent_token": k3s_agent_token}
