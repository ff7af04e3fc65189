#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read-only GPU discovery through NVML, with a declared override for the container lab."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_gpu_info
short_description: Discover NVIDIA GPUs through NVML (model, minor, UUID, memory, CPU cores, NVLink)
description:
  - Read-only. Lists the NVIDIA GPUs of a node through NVML (the C(pynvml) binding from
    C(nvidia-ml-py)) in the shape the Slurm and health-gate roles consume.
  - For each GPU it returns the index, minor number, product name, a Slurm GRES type derived
    from the name (C(NVIDIA H100 80GB HBM3) gives C(h100)), UUID, memory, the CPU affinity
    as Slurm core ids (the C(Cores=) of gres.conf), NVLink peers, MIG mode and the device file.
  - "CPU affinity comes from C(nvmlDeviceGetCpuAffinity) (a bitmask of logical CPUs) and is
    mapped to Slurm's logical core indices through C(physical_package_id) and C(core_id) under
    C(/sys/devices/system/cpu/cpu*/topology/); distinct (package, core_id) pairs are sorted and
    numbered from 0, which is the order Slurm and C(lstopo -l) use (core 0 is the first core of
    the first socket). Hyper-threads of one core map to the same id. See docs/gpu-discovery.md."
  - Without a GPU, an NVIDIA driver, C(libnvidia-ml) or the C(pynvml) binding the module does
    not fail; it returns an empty RV(gpus) and says why in RV(reason).
  - Containers with fake device nodes (the lab, C(mknod /dev/nvidiaN c 195 N)) declare their
    GPUs with O(override) or O(override_count) + O(override_name). Each declared GPU must have
    a character device C(/dev/nvidia<minor>) with major 195, or the module fails; UUIDs are
    synthesised deterministically and marked with C(synthetic=true).
author: gpufleet
version_added: "0.1.0"
requirements:
  - nvidia-ml-py (pynvml) on the node for real discovery
options:
  override:
    description:
      - Declared GPUs, used instead of NVML. Each item needs C(minor) and C(name); C(index)
        (default the position in the list), C(cores) (Slurm core ids, C("0-15") or a list),
        C(memory_mib), C(uuid), C(pci_bus_id) and C(mig_mode) are optional.
      - C(/dev/nvidia<minor>) must exist as a character device with major 195.
    type: list
    elements: dict
    suboptions:
      minor:
        description: Minor number of C(/dev/nvidia<minor>).
        type: int
        required: true
      name:
        description: Product name as NVML reports it, for example C(NVIDIA H100 80GB HBM3).
        type: str
        required: true
      index:
        description: NVML index; defaults to the position in the list.
        type: int
      cores:
        description: Slurm core ids close to this GPU (C("0-15,32-47") or a list of ints).
        type: raw
      memory_mib:
        description: Memory in MiB.
        type: int
      uuid:
        description: UUID to report instead of a synthetic one.
        type: str
      pci_bus_id:
        description: PCI bus id (C(0000:18:00.0)).
        type: str
      mig_mode:
        description: MIG mode to report.
        type: str
        choices: [enabled, disabled]
  override_count:
    description:
      - Shorthand for O(override) - declare GPUs with minors C(0) .. C(override_count - 1),
        all named O(override_name).
    type: int
  override_name:
    description: Product name for O(override_count).
    type: str
  sysfs_cpu_path:
    description: Where to read the CPU topology from (for tests and unusual layouts).
    type: path
    default: /sys/devices/system/cpu
notes:
  - Supports check mode; the module never changes anything.
  - Synthetic UUIDs derive from the short host name and the minor number, so they are stable per node.
seealso:
  - name: gres.conf(5)
    description: Cores= and Links= semantics.
    link: https://slurm.schedmd.com/gres.conf.html
"""

EXAMPLES = r"""
- name: Discover GPUs
  nvidia_gpu_info:
  register: slurm_compute_gpus

- name: Declare two fake H100s in a lab container (device nodes made with mknod c 195 N)
  nvidia_gpu_info:
    override:
      - {minor: 0, name: "NVIDIA H100 80GB HBM3", cores: "0-1"}
      - {minor: 1, name: "NVIDIA H100 80GB HBM3", cores: "2-3"}

- name: The same, shorter
  nvidia_gpu_info:
    override_count: 2
    override_name: NVIDIA H100 80GB HBM3

- name: Render gres.conf lines from the facts
  ansible.builtin.copy:
    content: "{{ slurm_compute_gpus.gpus | slurm_gres_conf }}"
    dest: /etc/slurm/gres.conf
    mode: "0644"
"""

RETURN = r"""
gpus:
  description: One entry per GPU, sorted by index.
  returned: always
  type: list
  elements: dict
  contains:
    index: {description: NVML index., type: int, sample: 0}
    minor: {description: Minor number of the device file., type: int, sample: 0}
    name: {description: Product name., type: str, sample: NVIDIA H100 80GB HBM3}
    type: {description: Slurm GRES type derived from the name, or null., type: str, sample: h100}
    uuid: {description: GPU UUID (synthetic for overrides without one)., type: str,
           sample: GPU-5b7c3f7e-2a4d-5a8e-9a53-0c7c6d9e3b11}
    memory_mib: {description: Total memory in MiB (null when unknown)., type: int, sample: 81559}
    cpu_affinity: {description: Slurm core ids close to the GPU., type: list, elements: int, sample: [0, 1]}
    cores: {description: The same as a range string for gres.conf Cores=., type: str, sample: "0-47"}
    pci_bus_id: {description: PCI bus id., type: str, sample: "0000:18:00.0"}
    nvlinks:
      description: Active NVLinks - link number, remote PCI bus id and the peer GPU index where the
        remote end is a GPU of this node (null for NVSwitch or unknown).
      type: list
      elements: dict
      sample: [{link: 0, remote_pci_bus_id: "0000:2a:00.0", peer_index: 1}]
    mig_mode: {description: C(enabled), C(disabled) or null when unsupported., type: str, sample: disabled}
    file: {description: Device file., type: str, sample: /dev/nvidia0}
    synthetic: {description: True when the UUID was synthesised for an override., type: bool, sample: false}
count:
  description: Number of GPUs.
  returned: always
  type: int
  sample: 8
driver_version:
  description: NVIDIA driver version (null with an override or without a driver).
  returned: always
  type: str
  sample: 550.54.15
source:
  description: Where the list came from, C(nvml) or C(override).
  returned: always
  type: str
  sample: nvml
reason:
  description: Why RV(gpus) is empty (empty string otherwise).
  returned: always
  type: str
  sample: "NVML could not initialise: Driver Not Loaded"
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.nvml import collect_nvml, collect_override, read_cpu_topology

try:
    import pynvml
except ImportError:  # reported through `reason`, never a crash
    pynvml = None


def main():
    module = AnsibleModule(
        argument_spec={
            "override": {
                "type": "list",
                "elements": "dict",
                "options": {
                    "minor": {"type": "int", "required": True},
                    "name": {"type": "str", "required": True},
                    "index": {"type": "int"},
                    "cores": {"type": "raw"},
                    "memory_mib": {"type": "int"},
                    "uuid": {"type": "str"},
                    "pci_bus_id": {"type": "str"},
                    "mig_mode": {"type": "str", "choices": ["enabled", "disabled"]},
                },
            },
            "override_count": {"type": "int"},
            "override_name": {"type": "str"},
            "sysfs_cpu_path": {"type": "path", "default": "/sys/devices/system/cpu"},
        },
        mutually_exclusive=[("override", "override_count")],
        required_together=[("override_count", "override_name")],
        supports_check_mode=True,
    )
    params = module.params
    host = socket.gethostname().split(".", 1)[0]

    override = params["override"]
    if params["override_count"] is not None:
        if params["override_count"] < 0:
            module.fail_json(msg=f"host {host}: override_count must be >= 0, got {params['override_count']}")
        override = [{"minor": m, "name": params["override_name"]} for m in range(params["override_count"])]

    if override is not None:
        items = [{k: v for k, v in item.items() if v is not None} for item in override]
        gpus, errors = collect_override(host, items)
        if errors:
            module.fail_json(
                msg=f"host {host}: override does not match the device nodes: " + "; ".join(errors),
                errors=errors,
            )
        reason = "" if gpus else "override declares no GPU"
        module.exit_json(
            changed=False, gpus=gpus, count=len(gpus), driver_version=None, source="override", reason=reason
        )

    result = collect_nvml(pynvml, topology=read_cpu_topology(params["sysfs_cpu_path"]))
    module.exit_json(
        changed=False,
        gpus=result["gpus"],
        count=len(result["gpus"]),
        driver_version=result["driver_version"],
        source="nvml",
        reason=result["reason"],
    )


if __name__ == "__main__":
    main()
