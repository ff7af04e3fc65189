#!/usr/bin/python
"""Write a run's report files (JSON, HTML) into one directory in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: report_files
short_description: Write a run's report files into one directory in one call
description:
  - Creates O(dir) (mode 0755) where it is missing and writes each file whose content differs, through a
    temporary file in the same directory, so a reader never sees half a report.
  - Reports are a run's output on the machine running Ansible, not managed state, so writing them is not
    reported as a change; RV(written) lists what was written. Nothing is written in check mode.
  - One call instead of one M(ansible.builtin.copy) per file, each a round trip with its own temporary
    upload; written that way, the fleet summary's four files cost a no-op site.yml run about 1.4 s.
options:
  dir:
    description: Directory of the files.
    type: path
    required: true
  files:
    description: The files, by name within O(dir) (no path separator).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: File name.
        type: str
        required: true
      content:
        description: The whole text.
        type: str
        required: true
  mode:
    description: Mode of every file written.
    type: str
    default: "0644"
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Write the fleet summary
  report_files:
    dir: "{{ playbook_dir }}/../reports"
    files:
      - {name: fleet-latest.json, content: "{{ summary | to_nice_json }}"}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
written:
  description: Absolute paths of the files written (their content differed or they were missing).
  type: list
  elements: str
  returned: always
paths:
  description: Absolute paths of every file given.
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
            }},
            "mode": {"type": "str", "default": "0644"},
        },
        supports_check_mode=True,
    )
    directory = os.path.abspath(module.params["dir"])
    try:
        mode = int(module.params["mode"], 8)
    except ValueError:
        module.fail_json(msg=f"mode: {module.params['mode']!r} is not an octal mode")
    names = [entry["name"] for entry in module.params["files"]]
    bad = [name for name in names if not name or os.sep in name or name in (".", "..")]
    if bad:
        module.fail_json(msg=f"files: names must be plain file names, not {bad}")
    paths = [os.path.join(directory, name) for name in names]
    written = []
    try:
        for path, entry in zip(paths, module.params["files"], strict=True):
            if read_or_none(path) != entry["content"].encode():
                written.append(path)
        if written and not module.check_mode:
            os.makedirs(directory, mode=0o755, exist_ok=True)
            for path, entry in zip(paths, module.params["files"], strict=True):
                if path in written:
                    write_atomically(module, path, entry["content"].encode(), mode)
    except OSError as exc:
        module.fail_json(msg=f"cannot write the reports in {directory}: {exc}")
    module.exit_json(changed=False, written=written, paths=paths)


if __name__ == "__main__":
    main()
