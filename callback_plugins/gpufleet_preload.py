"""Load the Jinja filter and test plugins once, in the controller, before any worker forks.

Ansible forks a worker per host per task, and a worker that templates its first filter loads every
filter plugin file on the filter path (this project's filter_plugins/ and the module_utils they
import) unless the controller already has. The controller never templates a filter itself, so every
worker paid for it again: about a quarter of the controller's CPU on a no-op site.yml run. Loaded
here, the workers inherit the loaded plugins through fork. Measured with bench/slurm_bringup.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpufleet_preload
type: aggregate
short_description: Load Jinja filter and test plugins in the controller before workers fork
description:
  - Calls the filter and test plugin loaders once at start-up so that forked workers inherit the
    loaded plugins instead of each loading them again. Prints nothing and changes no result.
"""

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, test_loader


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufleet_preload"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self, display=None):
        super().__init__(display=display)
        for loader in (filter_loader, test_loader):
            for _plugin in loader.all():
                pass
