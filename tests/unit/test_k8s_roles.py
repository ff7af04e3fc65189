"""The Kubernetes roles keep meta/argument_specs.yml defaults equal to defaults/main.yml."""

import pathlib

import pytest
import yaml

ROLES = pathlib.Path(__file__).resolve().parents[2] / "roles"
K8S_ROLES = ["k3s_server", "k3s_agent", "gpu_operator", "volcano", "kueue", "kuberay", "k8s_release", "k8s_pool_labels",
             "cni"]


@pytest.mark.parametrize("role", K8S_ROLES)
def test_argument_spec_defaults_equal_role_defaults(role):
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    main = specs["main"]["options"]
    assert set(defaults) <= set(main), f"{role}: defaults without a spec: {set(defaults) - set(main)}"
    for name, value in defaults.items():
        assert main[name].get("default") == value, f"{role}: {name} default differs from defaults/main.yml"
        assert name.startswith(f"{role}_"), f"{role}: {name} lacks the role prefix"


@pytest.mark.parametrize("role", ["k3s_server", "k3s_agent"])
def test_join_token_is_required_secret_without_default(role):
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
    spec = specs["argument_specs"]["main"]
    token = spec["options"][f"{role}_token"]
    assert f"{role}_token" not in defaults
    assert token["required"] is True and token["no_log"] is True and "default" not in token
