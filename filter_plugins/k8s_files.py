"""Filters for Kubernetes files the repository keeps gzip-compressed (files/crds/<component>/<version>/*.yaml.gz)."""

import base64
import binascii
import gzip
import zlib

import yaml
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


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def k8s_yaml_docs(text):
    """The non-empty documents of a YAML stream, parsed with libyaml when PyYAML has it.

    ansible.builtin.from_yaml_all parses with Ansible's pure-Python loader: on the KubeRay CRDs (4 MB) that cost
    about 8 s per call, and a role that named the stream three times spent 24 s of controller CPU on it."""
    if text is None:
        return []
    if not isinstance(text, str):
        raise AnsibleFilterError(f"k8s_yaml_docs: expected YAML text, got {type(text).__name__}")
    try:
        # As bytes: libyaml's reader takes only an exact str or bytes, and Ansible hands a filter a str subclass.
        return [doc for doc in yaml.load_all(text.encode("utf-8"), Loader=_LOADER) if doc]
    except yaml.YAMLError as exc:
        raise AnsibleFilterError(f"k8s_yaml_docs: not a YAML document stream: {exc}") from exc


def k8s_yaml_heads(text):
    """kind, apiVersion, metadata.name and (for a CRD) spec.group of each document of a YAML stream: what a check
    of which objects a stream holds reads, without carrying the whole documents through templating."""
    heads = []
    for doc in k8s_yaml_docs(text):
        if not isinstance(doc, dict):
            raise AnsibleFilterError(f"k8s_yaml_heads: a document is a {type(doc).__name__}, not a mapping")
        metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        heads.append({"kind": doc.get("kind"), "apiVersion": doc.get("apiVersion"), "name": metadata.get("name"),
                      "group": spec.get("group")})
    return heads


class FilterModule:
    def filters(self):
        return {"k8s_file_text": k8s_file_text, "k8s_yaml_docs": k8s_yaml_docs, "k8s_yaml_heads": k8s_yaml_heads}
