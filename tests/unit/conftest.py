"""Shared test set-up: make the project's module_utils importable the way Ansible does."""
import json
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


class CaseRun:
    """One ansible-playbook run that holds several test cases, each on hosts of its own: the run's exit status and
    output, and each host's task results and recap (tests/callback_plugins/gpufleet_test_results)."""

    def __init__(self, result, hosts):
        self.returncode = result.returncode
        self.out = result.stdout + result.stderr
        self.hosts = hosts

    def _ran(self, hosts):
        missing = [h for h in hosts if "recap" not in self.hosts.get(h, {})]
        assert not missing, f"the run never reached {missing}: the case did not run\n{self.out}"
        return [self.hosts[h] for h in hosts]

    def failed(self, *hosts):
        """Whether a task failed (not ignored) or a host was unreachable on any of hosts; each must have run."""
        return any(r["recap"]["failures"] or r["recap"]["unreachable"] for r in self._ran(hosts))

    def changed(self, *hosts):
        """How many tasks changed something on hosts; each must have run."""
        return sum(r["recap"]["changed"] for r in self._ran(hosts))

    def messages(self, *hosts):
        """The msg and error of every failed result of hosts (the error is shown even for a no_log result), whitespace
        runs made one space (the default callback wraps lines)."""
        msgs = [e[key] for r in self._ran(hosts) for e in r["results"]
                if e["status"] in ("failed", "item failed", "unreachable") for key in ("msg", "error") if key in e]
        return " ".join(" ".join(m if isinstance(m, str) else map(str, m) for m in msgs).split())


def run_cases(tmp, plays, inventory, *args, timeout=300, **env):
    """run_plays with each host's results recorded: a CaseRun. Give each case hosts of its own and put plays that may
    fail on all their hosts last: Ansible ends the playbook after a play whose every host failed."""
    tmp = pathlib.Path(tmp)
    record = tmp / "results.json"
    env = ansible_env(ANSIBLE_CALLBACK_PLUGINS=f"{ROOT / 'callback_plugins'}:{ROOT / 'tests' / 'callback_plugins'}",
                      ANSIBLE_CALLBACKS_ENABLED="gpufleet_test_results", GPUFLEET_TEST_RESULTS=str(record), **env)
    result = run_plays(tmp, plays, inventory, *args, env=env, timeout=timeout)
    hosts = json.loads(record.read_text()) if record.is_file() else {}
    return CaseRun(result, hosts)


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


HEALTHCHECK_TEMPLATE = ROOT / "roles/slurm_compute/templates/usr/local/sbin/gpufleet-healthcheck.j2"
EPILOG_TEMPLATE = ROOT / "roles/slurm_compute/templates/usr/local/sbin/gpufleet-epilog.j2"


# Test double of scontrol for the node programs: `show node` prints the line in $HC_SHOW; `update` is recorded in
# $HC_UPDATES.
SCONTROL_DOUBLE = """#!/bin/sh
# Test double of scontrol: `show node` prints the line in $HC_SHOW; `update` is recorded in $HC_UPDATES.
case "$1" in
  show) cat "$HC_SHOW" ;;
  update) printf '%s\\n' "$*" >> "$HC_UPDATES" ;;
esac
"""


def install_reader(tmp):
    """The node programs' reader as slurm_compute installs it: the modules its vars name
    (__slurm_compute_health_modules), as a package of their own under tmp/lib. Returns tmp/lib."""
    import shutil

    import yaml

    names = yaml.safe_load((ROOT / "roles/slurm_compute/vars/main.yml").read_text())["__slurm_compute_health_modules"]
    lib = tmp / "lib" / "ansible" / "module_utils"
    lib.mkdir(parents=True)
    (lib.parent / "__init__.py").write_text("")
    (lib / "__init__.py").write_text("")
    for name in names:
        shutil.copy(ROOT / "module_utils" / f"{name}.py", lib / f"{name}.py")
    return tmp / "lib"


def healthcheck_under_test(tmp, role_vars, scontrol_double, template=HEALTHCHECK_TEMPLATE):
    """slurm_compute's health check program (or another of its node programs: *template*, such as the epilog)
    rendered by Ansible for gpu01 with role_vars, with a test double of scontrol (scontrol_double, a shell script's
    text) first on the program's PATH: the one line rewritten."""
    import stat

    plays = [{"hosts": "gpu01", "gather_facts": False, "vars": role_vars,
              "tasks": [{"ansible.builtin.template": {"src": str(template),
                                                      "dest": str(tmp / "gpufleet-healthcheck"), "mode": "0755"}}]}]
    inventory = {"all": {"hosts": {"gpu01": {"ansible_connection": "local",
                                             "ansible_python_interpreter": sys.executable}}}}
    result = run_plays(tmp, plays, inventory)
    assert result.returncode == 0, result.stdout[-3000:]
    bindir = tmp / "bin"
    bindir.mkdir()
    double = bindir / "scontrol"
    double.write_text(scontrol_double)
    double.chmod(double.stat().st_mode | stat.S_IXUSR)
    text = (tmp / "gpufleet-healthcheck").read_text()
    assert "\nPATH=/usr/sbin:/usr/bin:/sbin:/bin\n" in text
    program = tmp / "healthcheck-under-test"
    program.write_text(text.replace("\nPATH=/usr/sbin:", f"\nPATH={bindir}:/usr/sbin:", 1))
    program.chmod(0o755)
    return program
