"""Filters for Kubernetes files the repository keeps gzip-compressed (files/crds/<component>/<version>/*.yaml.gz)."""

import base64
import binascii
import gzip
import zlib

from ansible.errors import AnsibleFilterError

_GZIP_MAGIC = b"\x1f\x8b"


def k8s_file_text(content):
    """Text of a file read with slurp (base64), gunzipped when it is gzip: the in-repository CRDs, to apply them."""
    try:
        data = base64.b64decode(content, validate=True)
        if data.startswith(_GZIP_MAGIC):
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (binascii.Error, OSError, EOFError, zlib.error, UnicodeDecodeError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"k8s_file_text: not base64 of UTF-8 text or of a gzip file of it: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"k8s_file_text": k8s_file_text}
