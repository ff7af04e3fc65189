"""Every role's meta/argument_specs.yml documents exactly its defaults, with equal values."""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p.parent.parent for p in (ROOT / "roles").glob("*/defaults/main.yml"))


def _load(path):
    return yaml.safe_load(path.read_text()) or {}


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
