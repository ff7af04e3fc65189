#!/usr/bin/python
"""Install a package repository's signing key only after its fingerprints match the pinned ones."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: repo_key
short_description: Fetch a repository signing key, check it against pinned fingerprints, then install it
description:
  - Reads the key from O(src) (an http(s) or file URL, or a path on the host) into memory and reads the
    fingerprints of the primary keys it holds (module_utils/repo_key.py, RFC 4880 version 4 fingerprints, as
    C(gpg --show-keys --with-colons) prints them). Every primary key must be one of O(fingerprints) and at least
    one must be there; otherwise the module fails naming O(host), O(variable), the expected and the found
    fingerprints, and writes nothing.
  - A file that is not a public key file the reader fully understands (empty, not OpenPGP, a secret key, armor
    that is not a public key block, a bad armor checksum, text outside the armor, a key version other than 4)
    fails the same way.
  - Only then is the key written to O(dest), as one ASCII armor block made from the packets that were checked
    (LF line ends, a blank line after the header, and its CRC, the form apt's own dearmoring reads, whatever
    line ends, headers or blocks the source had; a binary key is armored), through a temporary file in its directory
    renamed over it, owned by root with O(mode). Unchanged content is not rewritten. In check mode the key is
    fetched and checked, nothing is written, and RV(changed) says whether it would be.
  - A key already at O(dest) whose every primary key is pinned, written the way this module writes it, is kept
    and O(src) is not read (a converged host does not depend on the vendor's site), unless O(refresh).
options:
  src:
    description: Where the key is, an http(s):// or file:// URL, or an absolute path on the host.
    type: str
    required: true
  dest:
    description: Where apt or dnf reads the key (its directory must exist).
    type: path
    required: true
  fingerprints:
    description: The pinned fingerprints (40 hex digits each; spaces and case do not matter). A list, so a key
      rotation can carry the old and the new key.
    type: list
    elements: str
    required: true
  variable:
    description: The name of the variable that holds O(fingerprints), for the messages.
    type: str
    default: fingerprints
  host:
    description: The inventory host name, for the messages.
    type: str
    default: ''
  mode:
    description: Mode of O(dest).
    type: str
    default: '0644'
  timeout:
    description: Seconds to wait for an http(s) download.
    type: int
    default: 30
  refresh:
    description: Read O(src) even where O(dest) already holds a pinned key.
    type: bool
    default: false
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Install Docker's signing key, pinned
  repo_key:
    src: https://download.docker.com/linux/debian/gpg
    dest: /etc/apt/keyrings/gpufleet-docker.asc
    fingerprints: "{{ containerd_apt_repo_key_fingerprints }}"
    variable: containerd_apt_repo_key_fingerprints
    host: "{{ inventory_hostname }}"
"""

RETURN = r"""
fingerprints:
  description: The fingerprints of the primary keys the file holds (also on a mismatch).
  type: list
  elements: str
dest:
  description: The key file written (or that would be, in check mode).
  type: str
kept:
  description: True when O(dest) already held a pinned key and O(src) was not read.
  type: bool
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.file_io import read_or_none, write_atomically
from ansible.module_utils.repo_key import (
    MAX_KEY_BYTES,
    KeyFileError,
    armor,
    dearmor,
    fingerprint_errors,
    pin_errors,
    primary_fingerprints,
)
from ansible.module_utils.urls import fetch_url


def _fetch(module, src):
    """The key file's bytes from a URL or a path on the host; fails the module when it cannot be read."""
    if re.match(r"^https?://", src):
        response, info = fetch_url(module, src, timeout=module.params["timeout"])
        if response is None or info.get("status") != 200:
            return None, f"download failed: {info.get('status')} {info.get('msg', '')}".strip()
        return response.read(MAX_KEY_BYTES + 1), None
    path = src[len("file://"):] if src.startswith("file://") else src
    if not os.path.isabs(path):
        return None, "is neither an http(s) or file URL nor an absolute path"
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_KEY_BYTES + 1), None
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror}"


def _pinned_in_place(dest, fingerprints, variable):
    """The fingerprints of the key at dest when every one is pinned and the file is as this module writes it, else
    None (no file, a file that does not parse, a key no longer pinned: the key is fetched and checked again)."""
    before = read_or_none(dest)
    if not before:
        return None
    try:
        found = primary_fingerprints(before)
        if pin_errors(found, fingerprints, variable) or before != armor(dearmor(before)):
            return None
    except KeyFileError:
        return None
    return found


def main():
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "fingerprints": {"type": "list", "elements": "str", "required": True},
            "variable": {"type": "str", "default": "fingerprints"},
            "host": {"type": "str", "default": ""},
            "mode": {"type": "str", "default": "0644"},
            "timeout": {"type": "int", "default": 30},
            "refresh": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    who = f"host {p['host']}: " if p["host"] else ""
    errors = fingerprint_errors(p["fingerprints"], p["variable"])
    if errors:
        module.fail_json(msg=who + "; ".join(errors), fingerprints=[])
    held = None if p["refresh"] else _pinned_in_place(p["dest"], p["fingerprints"], p["variable"])
    if held is not None:
        result = {"changed": False, "fingerprints": held, "dest": p["dest"], "kept": True}
        changed = module.set_owner_if_different(p["dest"], "root", False)
        changed = module.set_group_if_different(p["dest"], "root", changed)
        result["changed"] = module.set_mode_if_different(p["dest"], p["mode"], changed)
        module.exit_json(**result)
    data, problem = _fetch(module, p["src"])
    if problem:
        module.fail_json(msg=f"{who}the signing key {p['src']} for {p['variable']} {problem}; nothing written",
                         fingerprints=[])
    try:
        found = primary_fingerprints(data)
    except KeyFileError as exc:
        module.fail_json(msg=f"{who}the signing key {p['src']} for {p['variable']} is refused: {exc}; expected one "
                             f"of {p['variable']} {p['fingerprints']}; nothing written", fingerprints=[])
    errors = pin_errors(found, p["fingerprints"], p["variable"])
    if errors:
        module.fail_json(msg=f"{who}the signing key {p['src']} is refused: {'; '.join(errors)}; nothing written",
                         fingerprints=found)
    content = armor(dearmor(bytes(data)))
    before = read_or_none(p["dest"])
    changed = before != content
    result = {"changed": changed, "fingerprints": found, "dest": p["dest"]}
    if module._diff and changed:
        result["diff"] = {"before_header": p["dest"], "after_header": p["src"],
                          "before": (before or b"").decode("ascii", "replace"),
                          "after": content.decode("ascii", "replace")}
    if changed and not module.check_mode:
        write_atomically(module, p["dest"], content, mode=int(p["mode"], 8))
    # Owner and mode of the key as apt and dnf expect it (in check mode only reported, where the file exists).
    if os.path.exists(p["dest"]):
        changed = module.set_owner_if_different(p["dest"], "root", result["changed"])
        changed = module.set_group_if_different(p["dest"], "root", changed)
        result["changed"] = module.set_mode_if_different(p["dest"], p["mode"], changed)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
