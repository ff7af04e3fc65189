"""Every role's meta/argument_specs.yml documents exactly its defaults, with equal values."""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p.parent.parent for p in (ROOT / "roles").glob("*/defaults/main.yml"))


class Unsafe(str):
    """A string the spec marks !unsafe: Ansible does not template it (equal to the plain string)."""


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!unsafe", lambda loader, node: Unsafe(loader.construct_scalar(node)))


def _load(path):
    return yaml.load(path.read_text(), Loader=_Loader) or {}  # a SafeLoader with one more tag


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_argument_spec_defaults_equal_role_defaults(role):
    spec_path = role / "meta" / "argument_specs.yml"
    assert spec_path.is_file(), f"{role.name}: meta/argument_specs.yml is missing"
    defaults = _load(role / "defaults" / "main.yml")
    options = {}
    for entry in _load(spec_path)["argument_specs"].values():
        options.update(entry.get("options") or {})
    undocumented = sorted(set(defaults) - set(options))
    assert not undocumented, f"{role.name}: defaults without an argument spec: {undocumented}"
    for name, value in defaults.items():
        assert options[name].get("default") == value, (
            f"{role.name}: {name} defaults to {value!r} but the spec says {options[name].get('default')!r}"
        )
    stale = sorted(n for n, o in options.items() if "default" in o and n not in defaults)
    assert not stale, f"{role.name}: spec defaults for variables not in defaults/main.yml: {stale}"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_role_variables_carry_the_role_prefix(role):
    defaults = _load(role / "defaults" / "main.yml")
    wrong = sorted(n for n in defaults if not n.startswith(role.name + "_"))
    assert not wrong, f"{role.name}: variables without the {role.name}_ prefix: {wrong}"


# Roles applied to every Slurm host at once. Ansible templates the role's whole argument spec (the defaults
# included) as the arguments of the validation task on every host: a default that reads every node's hostvars
# then costs hosts squared (docs/performance.md, session 7). Such defaults are documentation, marked !unsafe.
EVERY_HOST_ROLES = ["slurm_common"]


@pytest.mark.parametrize("role", EVERY_HOST_ROLES)
def test_every_host_roles_do_not_template_hostvars_reads_in_their_spec(role):
    spec = _load(ROOT / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]
    reads = {name: option["default"] for entry in spec.values() for name, option in (entry.get("options") or {}).items()
             if isinstance(option.get("default"), str) and "hostvars" in option["default"]}
    assert reads, f"{role}: no default reads hostvars; drop it from EVERY_HOST_ROLES"
    templated = sorted(name for name, default in reads.items() if not isinstance(default, Unsafe))
    assert not templated, f"{role}: mark these spec defaults !unsafe (they read hostvars): {templated}"
