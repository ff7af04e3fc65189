"""maint_reboot asks the reboot command again only when it did not reboot the node."""

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from conftest import ROOT

TASKS = ROOT / "roles" / "maint_reboot" / "tasks" / "reboot.yml"
# What ansible.builtin.reboot returns (its action plugin's result shapes).
REFUSED_BUS = {"failed": True, "changed": False, "rebooted": False, "elapsed": 0,
               "msg": "Reboot command failed. Error was: 'Failed to connect to bus: Connection refused, '"}
TIMED_OUT = {"failed": True, "changed": True, "rebooted": True, "elapsed": 900,
             "msg": "Timed out waiting for last boot time check (timeout=900)"}
BACK = {"changed": True, "rebooted": True, "elapsed": 31}


def _reboot_task():
    return next(t for t in yaml.safe_load(TASKS.read_text()) if "ansible.builtin.reboot" in t)


def _stops_retrying(result):
    until = _reboot_task()["until"]
    templar = Templar(loader=DataLoader(), variables={"__maint_reboot_done": result})
    return templar.template(trust_as_template("{{ " + until + " }}"))


def test_the_reboot_is_asked_again_while_the_command_did_not_reboot_the_node():
    task = _reboot_task()
    assert task["register"] == "__maint_reboot_done" and task["retries"] == "{{ maint_reboot_command_retries }}"
    assert _stops_retrying(REFUSED_BUS) is False


def test_a_reboot_that_happened_is_never_repeated():
    assert _stops_retrying(BACK) is True
    assert _stops_retrying(TIMED_OUT) is True
