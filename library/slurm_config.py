#!/usr/bin/python
"""Write Slurm's configuration files in one call and return what changed, for the classification."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_config
short_description: Write Slurm configuration files and return their changes
description:
  - Writes each given file into O(dir) where its content, owner, group or mode differ, atomically,
    and returns the old and new text of every file whose content changed, so that the controller can
    classify the change in one place (filter C(slurm_apply_plan), module_utils/slurm_change.py, by Slurm
    version) into nothing, C(scontrol reconfigure), or a restart of the daemons that need it.
    The classification stays on the controller because it expands hostlists with ClusterShell, which
    a Slurm node does not need.
  - A file that did not exist before is a first install, not a change to apply; it is listed in
    RV(created), not in RV(changes). An owner or mode fix alone is in neither.
  - One remote call for all the files, where a template loop costs a stat, a copy and a read per file.
    The content is rendered on the controller (C(lookup('ansible.builtin.template', ...))).
  - Supports check mode and diff mode.
options:
  dir:
    description: Directory the files live in (it must exist, except in check mode).
    type: path
    required: true
  files:
    description: The files to write.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: File name inside O(dir) (slurm.conf, cgroup.conf, topology.conf, gres.conf, ...).
        type: str
        required: true
      content:
        description: Wanted content.
        type: str
        required: true
      owner:
        description: Owner.
        type: str
        default: root
      group:
        description: Group.
        type: str
        default: root
      mode:
        description: Mode, octal.
        type: str
        default: "0644"
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Write slurm.conf and cgroup.conf
  slurm_config:
    dir: /etc/slurm
    files:
      - name: slurm.conf
        content: "{{ lookup('ansible.builtin.template', 'etc/slurm/slurm.conf.j2') }}"
      - name: cgroup.conf
        content: "{{ lookup('ansible.builtin.template', 'etc/slurm/cgroup.conf.j2') }}"
  register: written

- name: Decide how to apply the change on this host
  ansible.builtin.set_fact:
    apply: "{{ written.changes | slurm_apply_plan('22.05.8', ['slurmd']) }}"
"""

RETURN = r"""
written:
  description: Files whose content was (or, in check mode, would be) written.
  type: list
  elements: str
  returned: always
created:
  description: Files of RV(written) that did not exist before.
  type: list
  elements: str
  returned: always
changes:
  description: Files of RV(written) that existed before, with their old and new text.
  type: list
  elements: dict
  returned: always
  contains:
    name:
      description: File name.
      type: str
    before:
      description: Old text.
      type: str
    after:
      description: New text.
      type: str
managed:
  description: Absolute path of every file given, written or not (what a settle receipt records).
  type: list
  elements: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.file_io import read_or_none, write_atomically


def main():
    module = AnsibleModule(
        argument_spec={
            "dir": {"type": "path", "required": True},
            "files": {"type": "list", "elements": "dict", "required": True, "options": {
                "name": {"type": "str", "required": True},
                "content": {"type": "str", "required": True},
                "owner": {"type": "str", "default": "root"},
                "group": {"type": "str", "default": "root"},
                "mode": {"type": "str", "default": "0644"},
            }},
        },
        supports_check_mode=True,
    )
    params = module.params
    written, created, changes, diffs = [], [], [], []
    changed = False
    for spec in params["files"]:
        path = os.path.join(params["dir"], spec["name"])
        old = read_or_none(path)
        new = spec["content"].encode()
        if old != new:
            written.append(spec["name"])
            changed = True
            if module._diff:
                diffs.append({"before_header": path, "after_header": path,
                              "before": (old or b"").decode(errors="replace"), "after": spec["content"]})
            if old is None:
                created.append(spec["name"])
            else:
                changes.append({"name": spec["name"], "before": old.decode(errors="replace"),
                                "after": spec["content"]})
            if not module.check_mode:
                write_atomically(module, path, new)
        if old is not None or not module.check_mode:
            file_args = module.load_file_common_arguments(
                {"path": path, "owner": spec["owner"], "group": spec["group"], "mode": spec["mode"]})
            changed = module.set_fs_attributes_if_different(file_args, changed)
    result = {"changed": changed, "written": written, "created": created, "changes": changes,
              "managed": [os.path.join(params["dir"], spec["name"]) for spec in params["files"]]}
    if diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
