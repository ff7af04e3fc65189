#!/usr/bin/python
"""Check or write a host's receipt: the inputs it was converged from and what its roles manage, as observed."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: settle_receipt
short_description: Check or record that a host is converged, so a run may skip its roles
description:
  - With O(state=check) (read-only), reads the receipt, observes again what it records (packages' versions,
    units' active and unit file states, paths' type, owner, group, mode and content digest, local accounts)
    and says whether the host is settled. Settled means the receipt holds O(digest), is at most O(max_age) seconds
    old, and nothing observed differs. Any doubt (no receipt, another shape, an unreadable path) is not
    settled; RV(reasons) says why.
  - A path's content digest is HMAC-SHA256 of its SHA-1 under a random key of the host's own, C(settle.key)
    beside the receipt (32 bytes, mode 0600, made on the first record), so the receipt holds no plain hash of
    a file, so it gives no way to test guesses of a password in a file it observes (slurmdbd.conf). A
    receipt without its key is not settled.
  - With O(state=recorded), observes O(spec) now and writes the receipt (mode 0600 in a 0700 directory)
    where its digest, spec or observation differ, or where it is older than half of O(max_age). The receipt
    is the toolkit's bookkeeping, like a fact cache, so the write is not reported as a change; RV(written)
    says whether it happened. Nothing is written in check mode.
options:
  state:
    description: Check the receipt, or record it.
    type: str
    choices: [check, recorded]
    default: check
  digest:
    description: The run's inputs digest (filter settle_digest).
    type: str
    required: true
  spec:
    description: What to observe, with O(state=recorded) (filter settle_spec)
    type: dict
    default: {}
  max_age:
    description: Seconds after which a receipt no longer settles the host (a full run then renews it).
    type: int
    default: 86400
  path:
    description: The receipt file.
    type: path
    default: /var/lib/gpufleet/settle.json
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Check the receipt
  settle_receipt:
    digest: "{{ __settle_digest }}"
  register: __settle_check
"""

RETURN = r"""
settled:
  description: Whether the receipt holds (state=check).
  type: bool
  returned: always
reasons:
  description: Why the host is not settled (at most five differences, then a count).
  type: list
  elements: str
  returned: always
written:
  description: Whether the receipt was written (state=recorded).
  type: bool
  returned: always
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.file_io import write_atomically
from ansible.module_utils.host_state import installed_packages, path_state, unit_states, user_state
from ansible.module_utils.settle import KEY_BYTES, RECEIPT_VERSION, keyed_paths, spec_shape_errors, unit_view, verdict


def observe(module, spec, key):
    """``{packages, units, paths, users}`` of what ``spec`` names, as they are now (content digests keyed)."""
    names = spec.get("packages") or []
    installed = installed_packages(module, names) if names else {}
    units = unit_states(module, spec.get("units")) if spec.get("units") else {}
    paths = {}
    for path in spec.get("paths") or []:
        try:
            paths[path] = path_state(path, want_checksum=True)
        except OSError as exc:
            paths[path] = {"error": str(exc)}
    return keyed_paths({
        "packages": {name: installed.get(name) for name in names},
        "units": {name: unit_view(state) for name, state in units.items()},
        "paths": paths,
        "users": {name: user_state(name) for name in spec.get("users") or []},
    }, key)


def key_path(receipt_path):
    """The host's receipt key, beside the receipt."""
    return os.path.join(os.path.dirname(receipt_path), "settle.key")


def read_key(path):
    """The key's bytes, or ``None`` where it is absent, unreadable or not ``KEY_BYTES`` long."""
    try:
        with open(path, "rb") as handle:
            key = handle.read(KEY_BYTES + 1)
    except OSError:
        return None
    return key if len(key) == KEY_BYTES else None


def make_key(path):
    """A new random key written 0600 (created exclusively: a planted file or link is refused)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(path), 0o700)
    if os.path.lexists(path):
        os.unlink(path)
    key = os.urandom(KEY_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def read_receipt(path):
    """The parsed receipt, or ``None`` where it is absent, unreadable or not JSON."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_receipt(module, path, receipt):
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
    write_atomically(module, path, json.dumps(receipt, sort_keys=True, indent=1).encode(), 0o600)


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["check", "recorded"], "default": "check"},
            "digest": {"type": "str", "required": True},
            "spec": {"type": "dict", "default": {}},
            "max_age": {"type": "int", "default": 86400},
            "path": {"type": "path", "default": "/var/lib/gpufleet/settle.json"},
        },
        supports_check_mode=True,
    )
    params = module.params
    now = time.time()
    receipt = read_receipt(params["path"])
    if params["state"] == "check":
        spec = receipt.get("spec") if isinstance(receipt, dict) else None
        if isinstance(receipt, dict) and spec_shape_errors(spec):
            module.exit_json(changed=False, settled=False, written=False,
                             reasons=[f"receipt spec: {error}" for error in spec_shape_errors(spec)])
        key = read_key(key_path(params["path"]))
        if isinstance(receipt, dict) and key is None:
            module.exit_json(changed=False, settled=False, written=False, reasons=["no receipt key"])
        observed = observe(module, spec, key) if isinstance(spec, dict) else None
        settled, reasons = verdict(receipt, params["digest"], observed, now, params["max_age"])
        module.exit_json(changed=False, settled=settled, reasons=reasons, written=False)

    errors = spec_shape_errors(params["spec"])
    if errors:
        module.fail_json(msg=f"spec: {'; '.join(errors)}")
    spec = {key: sorted(set(params["spec"].get(key) or [])) for key in ("packages", "units", "paths", "users")}
    key = read_key(key_path(params["path"]))
    if key is None and not module.check_mode:
        try:
            key = make_key(key_path(params["path"]))
        except OSError as exc:
            module.fail_json(msg=f"cannot write the receipt key {key_path(params['path'])}: {exc}")
    observed = observe(module, spec, key or os.urandom(KEY_BYTES))
    fresh = (isinstance(receipt, dict) and receipt.get("version") == RECEIPT_VERSION
             and receipt.get("digest") == params["digest"] and receipt.get("spec") == spec
             and receipt.get("observed") == observed
             and isinstance(receipt.get("written"), (int, float))
             and 0 <= now - receipt["written"] <= params["max_age"] / 2)
    write = not fresh and not module.check_mode
    if write:
        try:
            write_receipt(module, params["path"], {"version": RECEIPT_VERSION, "digest": params["digest"], "spec": spec,
                                           "observed": observed, "written": now})
        except OSError as exc:
            module.fail_json(msg=f"cannot write the receipt {params['path']}: {exc}")
    module.exit_json(changed=False, settled=False, reasons=[], written=write)


if __name__ == "__main__":
    main()
