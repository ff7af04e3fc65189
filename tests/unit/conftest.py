"""Shared test set-up: make the project's module_utils importable the way Ansible does."""
import os
import pathlib
import subprocess
import sys

import ansible.module_utils
import pytest
import yaml
from hypothesis import settings

# CI runs the same examples every time (a property failure there is reproducible); locally
# hypothesis keeps exploring new ones. Neither has a per-example deadline: hypothesis' default (200 ms)
# is a speed assertion, and under the molecule lanes' load a correct example can take longer (speed is
# measured in bench/, not asserted in tests).
settings.register_profile("local", deadline=None)
settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Real captures (each with its "#@" provenance header), kept in the repository.
FIXTURES = ROOT / "tests" / "fixtures"
# CRDs of the pinned add-on versions (gzip-compressed upstream files), refreshed by scripts/refresh_crds.
CRDS = ROOT / "files" / "crds"
PINS = yaml.safe_load((ROOT / "playbooks" / "vars" / "k8s_versions.yml").read_text())["cluster_k8s_versions"]


# The ansible-playbook of the interpreter that runs the tests (the virtual environment's).
ANSIBLE_PLAYBOOK = str(pathlib.Path(sys.executable).with_name("ansible-playbook"))


def ansible_env(**overrides):
    """The environment of a test's ansible-playbook run: the project's ansible.cfg, no colour, then overrides."""
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", **overrides)


def run_playbook(*args, env=None, timeout=300):
    """Run ansible-playbook with args from the repository root (env: ansible_env()); return the CompletedProcess,
    whatever its exit status."""
    return subprocess.run([ANSIBLE_PLAYBOOK, *map(str, args)], cwd=ROOT, env=env or ansible_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)


def run_plays(tmp, plays, inventory, *args, env=None, timeout=300, sort_keys=False):
    """Write inventory (a dict) to tmp/hosts.yml and plays to tmp/play.yml as YAML and run them with run_playbook;
    args go after the playbook (--check, -e ...)."""
    tmp = pathlib.Path(tmp)
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=sort_keys))
    return run_playbook("-i", tmp / "hosts.yml", tmp / "play.yml", *args, env=env, timeout=timeout)


def crd_dir(component):
    """The CRD directory of a component's pinned version (files/crds/<component>/<version>)."""
    return CRDS / component / str(PINS[component]["version"])

# Modules import `ansible.module_utils.<topic>`; extend the package path like ansible.cfg does.
if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(ROOT / "module_utils"))
for sub in ("library", "filter_plugins"):
    if str(ROOT / sub) not in sys.path:
        sys.path.insert(0, str(ROOT / sub))


@pytest.fixture
def fixture_text():
    """Return the text of a real capture in tests/fixtures; a missing capture fails the test."""

    def _read(name):
        path = FIXTURES / name
        if not path.is_file():
            pytest.fail(f"tests/fixtures/{name} is missing: every capture a test reads lives in the repository")
        return path.read_text()

    return _read


def without_provenance(text):
    """A capture's tool output alone: its text without the "#@" provenance lines."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#@"))


@pytest.fixture
def fixture_output(fixture_text):
    """Return a capture's tool output alone: its text without the "#@" provenance lines."""

    def _read(name):
        return without_provenance(fixture_text(name))

    return _read


def flat_tasks(items):
    """Every task of a task list, blocks' block, rescue and always parts walked in order."""
    for task in items or []:
        if "block" in task:
            yield from flat_tasks(task["block"])
            yield from flat_tasks(task.get("rescue"))
            yield from flat_tasks(task.get("always"))
        else:
            yield task
