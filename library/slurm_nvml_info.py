#!/usr/bin/python
"""Read-only: can Slurm's gpu/nvml plugin work on this node (AutoDetect=nvml in gres.conf)?"""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_nvml_info
short_description: Check that Slurm's NVML GPU plugin can load and NVML initialises
description:
  - Looks for C(gpu_nvml.so) in Slurm's plugin directories, then opens NVML by the names the given Slurm
    version dlopen()s (up to 24.05.4 only C(libnvidia-ml.so); from 24.05.5 also C(libnvidia-ml.so.1)),
    calls C(nvmlInit_v2) and C(nvmlDeviceGetCount_v2), and shuts NVML down again.
  - RV(autodetect) is true only when the plugin file exists, a library opened, NVML initialised and counted
    at least one GPU. Every other outcome, and a version it cannot read, is false with a reason, so gres.conf
    keeps its explicit lines (fail safe).
  - Read-only; supports check mode; never reports a change.
options:
  slurm_version:
    description: Version of the installed Slurm (of its NVML plugin package), such as C(24.11.5-2).
    type: str
    required: true
  plugin_dirs:
    description: Directories where Slurm looks for its plugins (C(PluginDir)).
    type: list
    elements: path
    required: true
author:
  - gpufleet
"""

EXAMPLES = r"""
- name: Check that Slurm's NVML plugin loads
  slurm_nvml_info:
    slurm_version: 24.11.5-2
    plugin_dirs: [/usr/lib/x86_64-linux-gnu/slurm-wlm]
  register: __slurm_nvml_load
"""

RETURN = r"""
autodetect:
  description: Whether gres.conf may say AutoDetect=nvml for this node.
  type: bool
  returned: always
  sample: false
reason:
  description: Why (the plugin's path and GPU count, or what failed).
  type: str
  returned: always
  sample: >-
    NVML through libnvidia-ml.so.1 does not initialise: nvmlInit: NVML_ERROR_DRIVER_NOT_LOADED (driver not loaded)
plugin:
  description: Path of gpu_nvml.so, or an empty string.
  type: str
  returned: always
  sample: /usr/lib/x86_64-linux-gnu/slurm-wlm/gpu_nvml.so
libraries:
  description: The NVML library names this Slurm version tries, in its order.
  type: list
  elements: str
  returned: always
  sample: [libnvidia-ml.so, libnvidia-ml.so.1]
nvml:
  description: What NVML answered (C(library) that opened, C(error), C(init_rc), C(count)); empty without the plugin.
  type: dict
  returned: always
  sample:
    library: libnvidia-ml.so.1
    error: "nvmlInit: NVML_ERROR_DRIVER_NOT_LOADED (driver not loaded)"
    init_rc: 9
    count: null
"""

import ctypes

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.slurm_nvml import autodetect_verdict, find_plugin, nvml_library_names, probe_nvml


def main():
    module = AnsibleModule(
        argument_spec={
            "slurm_version": {"type": "str", "required": True},
            "plugin_dirs": {"type": "list", "elements": "path", "required": True},
        },
        supports_check_mode=True,
    )
    version = module.params["slurm_version"]
    names = nvml_library_names(version)
    plugin = find_plugin(module.params["plugin_dirs"])
    # NVML is asked only where the plugin is installed (without it AutoDetect cannot work anyway).
    probe = probe_nvml(names, ctypes.CDLL) if plugin else {}
    autodetect, reason = autodetect_verdict(plugin, probe, version)
    module.exit_json(changed=False, autodetect=autodetect, reason=reason, plugin=plugin, libraries=names, nvml=probe)


if __name__ == "__main__":
    main()
