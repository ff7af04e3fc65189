"""k8s_client: the first server's Python kubernetes client, from apt when new enough, else a pinned virtualenv."""

import pathlib

import ansible_collections.kubernetes.core as kubernetes_core
import pytest
import yaml
from ansible.module_utils.k8s_client import apt_candidate, client_plan, upstream_version
from conftest import PINS, run_playbook
from hypothesis import given
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = "/opt/gpufleet/k8s-client"
# `apt-cache policy python3-kubernetes` as Debian 13 and Debian 12 print it, and on a host that has no such package.
TRIXIE = """python3-kubernetes:
  Installed: (none)
  Candidate: 30.1.0-2
  Version table:
     30.1.0-2 500
        500 http://deb.debian.org/debian trixie/main amd64 Packages
"""
BOOKWORM = """python3-kubernetes:
  Installed: (none)
  Candidate: 22.6.0-2
  Version table:
     22.6.0-2 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
"""
NO_PACKAGE = "N: Unable to locate package python3-kubernetes\n"


def test_apt_candidate_reads_the_policy_of_each_release():
    assert apt_candidate(TRIXIE) == "30.1.0-2"
    assert apt_candidate(BOOKWORM) == "22.6.0-2"
    assert apt_candidate(NO_PACKAGE) is None
    assert apt_candidate("python3-kubernetes:\n  Installed: (none)\n  Candidate: (none)\n") is None


@pytest.mark.parametrize(("version", "expected"), [
    ("30.1.0-2", (30, 1, 0)), ("1:24.2.0-1ubuntu1", (24, 2, 0)), ("22.6.0", (22, 6, 0)),
    ("24.2.0~rc1-1", None), ("", None), (None, None), ("abc", None),
])
def test_upstream_version_strips_epoch_and_revision_and_refuses_what_it_cannot_order(version, expected):
    assert upstream_version(version) == expected


def test_trixie_installs_the_distribution_package():
    assert client_plan("apt", "30.1.0-2", "24.2.0", "ctl1", VENV) == {
        "method": "apt", "candidate": "30.1.0-2", "python": None}


def test_bookworm_with_apt_is_refused_naming_host_version_minimum_and_variable():
    with pytest.raises(ValueError) as err:
        client_plan("apt", "22.6.0-2", "24.2.0", "ctl1", VENV)
    message = str(err.value)
    for part in ("ctl1", "22.6.0-2", "24.2.0", "k8s_client_install_method: venv"):
        assert part in message


def test_a_host_without_the_package_is_refused_with_apt():
    with pytest.raises(ValueError, match=r"ctl1: python3-kubernetes \(no apt candidate\)"):
        client_plan("apt", None, "24.2.0", "ctl1", VENV)


def test_venv_uses_the_virtualenv_interpreter_whatever_apt_offers():
    for candidate in ("22.6.0-2", "30.1.0-2", None):
        assert client_plan("venv", candidate, "24.2.0", "ctl1", VENV) == {
            "method": "venv", "candidate": candidate, "python": VENV + "/bin/python"}


def test_unknown_method_is_refused_naming_the_variable():
    with pytest.raises(ValueError, match="ctl1: k8s_client_install_method must be apt or venv, not 'pip'"):
        client_plan("pip", "30.1.0-2", "24.2.0", "ctl1", VENV)


@given(st.tuples(*[st.integers(0, 60)] * 3), st.tuples(*[st.integers(0, 60)] * 3))
def test_apt_is_chosen_exactly_when_the_candidate_is_at_least_the_minimum(candidate, minimum):
    version, floor = ".".join(map(str, candidate)) + "-1", ".".join(map(str, minimum))
    if candidate >= minimum:
        assert client_plan("apt", version, floor, "ctl1", VENV)["method"] == "apt"
    else:
        with pytest.raises(ValueError):
            client_plan("apt", version, floor, "ctl1", VENV)


def test_the_pinned_client_meets_the_collection_minimum():
    pins = PINS["python_client"]
    requirements = pathlib.Path(next(iter(kubernetes_core.__path__))) / "requirements.txt"
    minimum = [line.split(">=")[1].strip() for line in requirements.read_text().splitlines()
               if line.startswith("kubernetes>=")]
    assert minimum == [pins["minimum"]]
    assert upstream_version(pins["version"]) >= upstream_version(pins["minimum"])


def test_argument_spec_defaults_equal_role_defaults():
    defaults = yaml.safe_load((ROOT / "roles/k8s_client/defaults/main.yml").read_text())
    specs = yaml.safe_load((ROOT / "roles/k8s_client/meta/argument_specs.yml").read_text())["argument_specs"]
    # every default is an option of an entry point, and every entry point's option has the role's default
    assert set(defaults) == {name for spec in specs.values() for name in spec["options"]}
    for entry, spec in specs.items():
        for name, option in spec["options"].items():
            assert option["default"] == defaults[name], (entry, name)


def test_k8s_yml_readies_the_client_before_the_first_kubernetes_core_play():
    def expand(path):
        for play in yaml.safe_load(path.read_text()):
            target = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
            if target:
                yield from expand(path.parent / target)
            else:
                yield play

    plays = list(expand(ROOT / "playbooks/k8s.yml"))
    roles = [[r["role"] if isinstance(r, dict) else r for r in p.get("roles", [])] for p in plays]
    client = next(i for i, r in enumerate(roles) if "k8s_client" in r)
    assert plays[client]["hosts"] == "k8s_server[0]"
    assert client < next(i for i, r in enumerate(roles) if "cni" in r)
    assert client > next(i for i, r in enumerate(roles) if "kubeadm_control_plane" in r)


@pytest.mark.parametrize("inventory", ["inventory/lab", "inventory/example"])
def test_k8s_and_site_playbooks_pass_syntax_check(inventory):
    for playbook in ("playbooks/k8s.yml", "playbooks/site.yml"):
        result = run_playbook("-i", inventory, "--syntax-check", playbook)
        assert result.returncode == 0, result.stdout + result.stderr
