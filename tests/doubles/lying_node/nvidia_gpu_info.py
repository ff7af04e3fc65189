#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test double of library/nvidia_gpu_info.py: a node that reports whatever GPU records it likes.

The real module builds each record itself from NVML (or the lab's override) and so never reports a device file
with a line break in it; root on a node can make its report say anything. This double returns ``override`` as
the node's report, unchecked, so a test can play the lying node (tests/unit/test_gpu_report_hold.py puts it first
on ANSIBLE_LIBRARY). Never on a product path.
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={"override": {"type": "raw"}, "override_count": {"type": "int"},
                                          "override_name": {"type": "str"}, "sysfs_cpu_path": {"type": "str"}},
                           supports_check_mode=True)
    gpus = module.params["override"] or []
    module.exit_json(changed=False, gpus=gpus, count=len(gpus), driver_version=None, source="test-double", reason="")


if __name__ == "__main__":
    main()
