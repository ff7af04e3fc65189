#!/usr/bin/python
"""Read-only: which of a role's packages, units and paths are not as it wants them, in one remote call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_state_info
short_description: Probe packages, systemd units, paths and users in one call
description:
  - Reports which packages are installed, the state of systemd units, the type, owner, group, mode and
    optionally checksum of paths, and local accounts, so a role can skip install, service and file tasks
    that have nothing to do (each skipped task saves a remote round trip).
  - Leans to "not right" in every doubt. A package counts as installed only when the package manager says
    so; a unit that cannot be read is reported absent, stopped and not enabled (with a warning); a path is
    only reported as matching when it is exactly what was asked for. The role's own task then runs.
  - Packages are read with C(dpkg-query) where it exists, else with C(rpm); with neither, every package is
    missing. Units are read with one C(systemctl show); without systemd running, every unit is absent.
  - Read-only; supports check mode; never reports a change.
options:
  packages:
    description: Package names, as the package manager knows them (no version, architecture or glob).
    type: list
    elements: str
    default: []
  units:
    description:
      - systemd unit names; a name without a dot is queried as C(<name>.service). Results are keyed by the
        name as given.
    type: list
    elements: str
    default: []
  paths:
    description: Paths to inspect (a final symlink is not followed) and, optionally, what the role wants.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path, used as given as the key of the results.
        type: str
        required: true
      state:
        description:
          - What the path should be. Unset means report only; the path is then never in RV(paths_differ).
          - C(link) wants a symlink whose text is exactly O(paths[].src) (not resolved, as
            M(ansible.builtin.file) with O(ansible.builtin.file#module:state=link) writes it); its mode is not compared.
        type: str
        choices: [file, directory, absent, link]
      src:
        description:
          - The wanted text of a symlink, for O(paths[].state=link); required there, since without it the link differs.
        type: str
      resolve:
        description:
          - For O(paths[].state=link), compare where the link leads, not its text. The link differs unless it
            resolves to an existing file, the same one O(paths[].src) resolves to from the link's directory (so a
            package's own link to the same library, by another name, is right, and a dangling one is not).
        type: bool
        default: false
      owner:
        description: Wanted owner name (compared by name), for O(paths[].state=file), C(directory) or C(link).
        type: str
      group:
        description: Wanted group name (compared by name), for O(paths[].state=file), C(directory) or C(link).
        type: str
      mode:
        description:
          - Wanted permissions as an octal string such as C('0644') or C('644'). An integer is taken as the
            number it is, as M(ansible.builtin.file) does, so quote it. A symbolic mode always differs.
        type: raw
      checksum:
        description: Return the SHA-1 of a regular file's bytes (the algorithm of M(ansible.builtin.stat)).
        type: bool
        default: false
      contains:
        description:
          - Blocks of whole lines (a final newline optional) the file must hold, each once, as consecutive
            lines, with its first and its last line nowhere else in the file. A file that holds each is left
            as it is by M(ansible.builtin.blockinfile) (a block with its marker lines) and by
            M(ansible.builtin.lineinfile) (a line). Otherwise, or where the file is absent or unreadable, the
            path is in RV(paths_differ). The file's text is never returned.
        type: list
        elements: str
        default: []
      lacks:
        description:
          - Whole lines the file must not hold (compared without their line ending), such as a line
            M(ansible.builtin.lineinfile) would replace by its O(ansible.builtin.lineinfile#module:regexp).
            A file that holds one, or is absent or unreadable, is in RV(paths_differ).
        type: list
        elements: str
        default: []
  users:
    description: Local account names to look up.
    type: list
    elements: str
    default: []
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Probe what the munge role manages
  host_state_info:
    packages: [munge]
    units: [munge]
    paths:
      - {path: /etc/munge, state: directory, owner: munge, group: munge, mode: "0700"}
      - {path: /etc/munge/munge.key, state: file, owner: munge, group: munge, mode: "0400", checksum: true}
    users: [munge]
  register: __munge_probe

- name: Install munge
  ansible.builtin.apt:
    name: munge
  when: __munge_probe.missing_packages | length > 0

- name: Start and enable munge
  ansible.builtin.systemd_service:
    name: munge
    state: started
    enabled: true
  when: not (__munge_probe.units.munge.active and __munge_probe.units.munge.enabled)
"""

RETURN = r"""
packages:
  description: Every requested package with its installed version, or null when it is not installed.
  type: dict
  returned: always
  sample: {munge: 0.5.15-2+deb12u1, nosuch: null}
missing_packages:
  description: Requested packages that are not installed, in the requested order.
  type: list
  elements: str
  returned: always
  sample: [nosuch]
units:
  description:
    - Per unit as given, C(exists) (LoadState loaded), C(active) (ActiveState active), C(enabled) and the raw
      C(active_state) and C(unit_file_state) (C(unknown) where they could not be read).
    - C(enabled) is true only for the unit file states enabled and static, where C(systemctl enable) has
      nothing to do; enabled-runtime, alias, indirect, generated, transient, linked and masked are false.
      False does not mean disabled; to skip a disable or stop task, test C(unit_file_state) or C(active_state).
  type: dict
  returned: always
  sample: {munge: {exists: true, active: true, enabled: true, active_state: active, unit_file_state: enabled}}
paths:
  description:
    - Per path, C(exists), C(type) (file, directory, link, other or absent), C(owner), C(group) (the number
      where the id has no name), C(mode) (four octal digits), C(checksum) (SHA-1 when asked for a file) and
      C(target) (a symlink's text); null where they do not apply. Where O(paths[].resolve) asked, also
      C(resolved), the existing file a link leads to, or null.
  type: dict
  returned: always
  sample: {/etc/munge/munge.key: {exists: true, type: file, owner: munge, group: munge, mode: "0400",
                                  checksum: 3b7e0f0a8d9c1e4f5a6b7c8d9e0f1a2b3c4d5e6f, target: null}}
paths_differ:
  description: >-
    Paths, in the given order, whose wanted state, link, owner, group, mode or text (contains, lacks) does not
    match.
  type: list
  elements: str
  returned: always
  sample: [/etc/munge/munge.key]
users:
  description: Per account, C(uid), C(gid), C(home) and C(shell), or null when there is no such account.
  type: dict
  returned: always
  sample: {munge: {uid: 102, gid: 103, home: /nonexistent, shell: /usr/sbin/nologin}, nosuch: null}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.host_state import (
    file_bytes,
    installed_packages,
    path_differs,
    path_state,
    resolved,
    text_differs,
    unit_states,
    user_state,
)


def main():
    path_options = {
        "path": {"type": "str", "required": True},
        "state": {"type": "str", "choices": ["file", "directory", "absent", "link"]},
        "src": {"type": "str"},
        "resolve": {"type": "bool", "default": False},
        "owner": {"type": "str"},
        "group": {"type": "str"},
        "mode": {"type": "raw"},
        "checksum": {"type": "bool", "default": False},
        "contains": {"type": "list", "elements": "str", "default": []},
        "lacks": {"type": "list", "elements": "str", "default": []},
    }
    module = AnsibleModule(
        argument_spec={
            "packages": {"type": "list", "elements": "str", "default": []},
            "units": {"type": "list", "elements": "str", "default": []},
            "paths": {"type": "list", "elements": "dict", "default": [], "options": path_options},
            "users": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    names = module.params["packages"]
    installed = installed_packages(module, names) if names else {}
    packages = {name: installed.get(name) for name in names}

    units = unit_states(module, module.params["units"]) if module.params["units"] else {}

    wanted = module.params["paths"]
    paths, differ = {}, []
    for want in wanted:
        path = want["path"]
        if not os.path.isabs(path):
            module.fail_json(msg=f"paths: {path!r} is not an absolute path")
        if path not in paths:
            checksum = any(other["checksum"] for other in wanted if other["path"] == path)
            try:
                paths[path] = path_state(path, checksum)
            except OSError as exc:
                module.fail_json(msg=f"cannot inspect {path}: {exc}")
        text = want["contains"] or want["lacks"]
        if want["resolve"] and want["state"] == "link" and want["src"]:
            want = dict(want, src_resolved=resolved(os.path.join(os.path.dirname(path), want["src"])))
            paths[path] = dict(paths[path], resolved=resolved(path) if paths[path]["type"] == "link" else None)
        if path not in differ and (
            path_differs(paths[path], want)
            or (text and text_differs(file_bytes(path), want["contains"], want["lacks"]))
        ):
            differ.append(path)

    module.exit_json(
        changed=False,
        packages=packages,
        missing_packages=[name for name in names if packages[name] is None],
        units=units,
        paths=paths,
        paths_differ=differ,
        users={name: user_state(name) for name in module.params["users"]},
    )


if __name__ == "__main__":
    main()
