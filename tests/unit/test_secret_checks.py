"""b64_sha1: the checksum host_state_info reports for a file holding the decoded bytes."""

import base64
import hashlib

import pytest
from ansible.errors import AnsibleFilterError
from secret_checks import b64_sha1  # filter_plugins/secret_checks.py (tests put filter_plugins first on sys.path)


def test_matches_the_sha1_of_the_decoded_bytes_whatever_the_line_breaks():
    key = bytes(range(256)) * 4
    text = base64.encodebytes(key).decode()  # wrapped at 76 columns, like `base64` without -w0
    assert "\n" in text
    assert b64_sha1(text) == hashlib.sha1(key).hexdigest()


def test_bad_base64_fails_without_echoing_the_value():
    with pytest.raises(AnsibleFilterError) as err:
        b64_sha1("not base64 at all!")
    assert "not base64" not in str(err.value).replace("not valid base64", "")
