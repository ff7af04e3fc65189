"""Record each host's task results of a test run in one JSON file, so that a run holding several test cases (one
set of hosts each) can be judged host by host. Tests only (tests/unit/conftest.py enables it)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpufleet_test_results
type: aggregate
short_description: Write each host's task results and recap to a JSON file (tests only)
description:
  - Appends, per host, one entry per task result (task name, status, msg, error) and writes them with the host's recap
    counts to the file named by the GPUFLEET_TEST_RESULTS environment variable when the run ends.
  - Results are the ones every callback gets, so no_log results are already censored.
"""

import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufleet_test_results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display=display)
        self._hosts = {}

    def _record(self, result, status):
        entry = {"task": result.task_name, "status": status}
        for key in ("msg", "skipped_reason"):
            if key in result._result:
                entry[key] = result._result[key]
        # The error the default callback prints as "[ERROR]: Task failed: ...", shown even for a no_log result.
        event = getattr(getattr(result, "exception", None), "event", None)
        errors = []
        while event is not None:
            errors.append(event.msg)
            event = event.chain.event if event.chain else None
        if errors:
            entry["error"] = ": ".join(errors)
        self._hosts.setdefault(result._host.get_name(), {"results": []})["results"].append(entry)

    def v2_runner_on_ok(self, result):
        self._record(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "ignored" if ignore_errors else "failed")

    def v2_runner_item_on_failed(self, result):
        self._record(result, "item failed")

    def v2_runner_on_unreachable(self, result):
        self._record(result, "unreachable")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_playbook_on_stats(self, stats):
        for host in stats.processed:
            self._hosts.setdefault(host, {"results": []})["recap"] = stats.summarize(host)
        with open(os.environ["GPUFLEET_TEST_RESULTS"], "w", encoding="utf-8") as out:
            json.dump(self._hosts, out, indent=1, sort_keys=True, default=str)
