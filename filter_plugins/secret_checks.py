"""Filters for secrets that must be compared without being printed or fetched.

{{ munge_key | b64_sha1 }}   sha1 hex of the bytes a base64 string holds (host_state_info's file checksum)
"""

import base64
import binascii
import hashlib

from ansible.errors import AnsibleFilterError


def b64_sha1(text):
    """sha1 hex digest of the bytes behind a base64 string (whitespace ignored)."""
    try:
        data = base64.b64decode("".join(str(text).split()), validate=True)
    except (binascii.Error, ValueError) as err:
        # The message must not carry the secret itself.
        raise AnsibleFilterError(f"b64_sha1: the value is not valid base64 ({type(err).__name__})") from None
    return hashlib.sha1(data).hexdigest()


class FilterModule:
    def filters(self):
        return {"b64_sha1": b64_sha1}
