"""Fact gathering (CI's CPU, session 13): every play of playbooks/ that gathers facts gathers only the min and
hardware subsets, and nothing in the toolkit reads a fact outside them.

The network subset alone cost about 1.5 s per host per gathering in the lab (`ansible -m setup` on a lab node:
4.0 s with every subset, 2.5 s with min and hardware), and no role reads it. The second test takes the fact
names a real `setup` run on this machine returns for those subsets and checks every fact the code names
against them, so a role that starts reading, say, default_ipv4 fails here instead of reading an undefined
fact on a real fleet."""

import json
import os
import pathlib
import re
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUBSET = ["min", "hardware"]
ANSIBLE = str(pathlib.Path(sys.executable).with_name("ansible"))
# ansible_facts['x'], ansible_facts["x"], ansible_facts.x, and the injected ansible_x of gpu_discovery's filter
FACT_RE = re.compile(r"ansible_facts(?:\[['\"](\w+)['\"]\]|\.(\w+))")
INJECTED_RE = re.compile(r"'ansible_(\w+)'")


def plays():
    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()) or []:
            if "hosts" in play:
                yield path.name, play


def test_every_play_that_gathers_facts_gathers_min_and_hardware_only():
    gathering = [(name, play) for name, play in plays() if play.get("gather_facts", True) not in (False, "false", "no")]
    assert gathering, "no play gathers facts: the test reads the wrong files"
    wrong = [f"{name}: {play.get('name')}: {play.get('gather_subset')}" for name, play in gathering
             if play.get("gather_subset") != SUBSET]
    assert not wrong, f"plays gathering other than {SUBSET}: {wrong}"


def test_the_code_reads_no_fact_outside_the_gathered_subsets():
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    result = subprocess.run(
        [ANSIBLE, "localhost", "-c", "local", "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}",
         "-m", "ansible.builtin.setup", "-a", f"gather_subset={','.join(SUBSET)}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
    facts = json.loads(result.stdout.split("=>", 1)[1])["ansible_facts"]
    gathered = {key.removeprefix("ansible_") for key in facts}
    assert {"memtotal_mb", "processor_cores", "os_family", "distribution", "nodename"} <= gathered
    # packages and services are their own modules' facts (package_facts, service_facts), not setup's.
    own_module = {"packages", "services"}
    read = {}
    for base in ("roles", "playbooks", "filter_plugins", "library", "module_utils"):
        for path in (ROOT / base).rglob("*"):
            if path.suffix not in {".yml", ".j2", ".py"} or not path.is_file():
                continue
            text = path.read_text(errors="replace")
            for match in FACT_RE.finditer(text):
                read.setdefault(match.group(1) or match.group(2), set()).add(str(path.relative_to(ROOT)))
            if "gpu_discovery" in str(path):
                for match in INJECTED_RE.finditer(text):
                    read.setdefault(match.group(1), set()).add(str(path.relative_to(ROOT)))
    assert "memtotal_mb" in read, "no fact read found: the pattern is wrong"
    outside = {fact: sorted(paths) for fact, paths in read.items() if fact not in gathered | own_module}
    assert not outside, f"facts read that gather_subset {SUBSET} does not gather: {outside}"
