"""Preflight inventory checks: each error names the host and the variable."""

import pytest
from ansible.module_utils.inventory_check import inventory_errors

GROUPS = {
    "all": ["ctl1", "gpu01", "gpu02"],
    "slurm_controller": ["ctl1"],
    "gpu_nodes": ["gpu01", "gpu02"],
}
RULES = {
    "exclusive_groups": [["gpu_nodes", "slurm_controller"]],
    "required_vars": {"gpu_nodes": ["cluster_gpu_count"], "all": ["cluster_name"]},
    "var_types": {"cluster_gpu_count": "int", "cluster_leaf_switch": "str"},
}


def hostvars(**over):
    hv = {h: {"cluster_name": "c", "ansible_host": f"10.0.0.{i}"} for i, h in enumerate(GROUPS["all"])}
    for h in GROUPS["gpu_nodes"]:
        hv[h]["cluster_gpu_count"] = 2
    for host, values in over.items():
        hv[host].update(values)
    return hv


def test_sound_inventory_has_no_errors():
    assert inventory_errors(hostvars(), GROUPS, RULES) == []


def test_host_in_two_exclusive_groups_is_named_with_both_groups():
    groups = dict(GROUPS, slurm_controller=["ctl1", "gpu02"])
    errors = inventory_errors(hostvars(), groups, RULES)
    assert len(errors) == 1
    assert "host gpu02" in errors[0]
    assert "gpu_nodes" in errors[0] and "slurm_controller" in errors[0]


def test_missing_required_var_names_host_variable_and_group():
    hv = hostvars()
    del hv["gpu02"]["cluster_gpu_count"]
    assert inventory_errors(hv, GROUPS, RULES) == [
        "host gpu02: variable cluster_gpu_count is required for members of group gpu_nodes"
    ]


def test_blank_string_counts_as_missing():
    errors = inventory_errors(hostvars(ctl1={"cluster_name": "  "}), GROUPS, RULES)
    assert errors == ["host ctl1: variable cluster_name is required for members of group all"]


def test_wrong_type_is_reported_but_digit_strings_pass_as_int():
    assert inventory_errors(hostvars(gpu01={"cluster_gpu_count": "8"}), GROUPS, RULES) == []
    errors = inventory_errors(hostvars(gpu01={"cluster_gpu_count": "eight"}), GROUPS, RULES)
    assert errors == ["host gpu01: variable cluster_gpu_count must be of type int, got 'eight'"]
    errors = inventory_errors(hostvars(gpu01={"cluster_gpu_count": True}), GROUPS, RULES)
    assert len(errors) == 1 and "cluster_gpu_count" in errors[0]


def test_duplicate_short_hostnames_and_addresses_are_errors():
    groups = {"all": ["gpu01.a.example", "gpu01.b.example"]}
    hv = {"gpu01.a.example": {"ansible_host": "10.0.0.1"}, "gpu01.b.example": {"ansible_host": "10.0.0.1"}}
    errors = inventory_errors(hv, groups, {})
    assert any("short hostname gpu01 duplicates host gpu01.a.example" in e for e in errors)
    assert any("host gpu01.b.example: variable ansible_host 10.0.0.1" in e for e in errors)


FORBIDDEN = {"slurm_dbd_storage_password": {"chars": '#\\"', "whitespace": True, "groups": ["slurm_controller"]}}


@pytest.mark.parametrize(
    "password", ["abcdefgh#ijklmn", "abcdefgh\\ijklmn", 'abcdefgh"ijklmn', "abcdefgh ijklmn", "abc\tdefghijklm"]
)
def test_a_password_slurmdbd_conf_cannot_hold_is_refused_without_printing_it(password):
    errors = inventory_errors(hostvars(ctl1={"slurm_dbd_storage_password": password}), GROUPS,
                              dict(RULES, forbidden_chars=FORBIDDEN))
    assert errors == [
        "host ctl1: variable slurm_dbd_storage_password contains a character it must not hold (# \\ \" or whitespace)"
    ]
    assert password not in errors[0]


def test_a_clean_password_and_hosts_outside_the_groups_pass():
    hv = hostvars(ctl1={"slurm_dbd_storage_password": "Abcdefgh-1234_xyz"}, gpu01={"slurm_dbd_storage_password": "a#b"})
    assert inventory_errors(hv, GROUPS, dict(RULES, forbidden_chars=FORBIDDEN)) == []


def test_several_controllers_without_shared_state_are_each_named():
    hv = hostvars()
    hv["ctl2"] = {"cluster_name": "c", "slurm_common_state_save_shared": True}
    rules = dict(RULES, controllers=["ctl1", "ctl2"], controllers_shared_var="slurm_common_state_save_shared")
    errors = inventory_errors(hv, dict(GROUPS, all=[*GROUPS["all"], "ctl2"]), rules)
    assert errors == [
        "host ctl1: variable slurm_common_state_save_shared must be true: 2 controllers (ctl1, ctl2) need "
        "StateSaveLocation on storage they all mount, else a failover loses every job"
    ]


def test_one_controller_or_shared_state_passes():
    hv = hostvars(ctl1={"slurm_common_state_save_shared": True})
    hv["ctl2"] = {"cluster_name": "c", "ansible_host": "10.0.0.9", "slurm_common_state_save_shared": True}
    rules = dict(RULES, controllers=["ctl1", "ctl2"], controllers_shared_var="slurm_common_state_save_shared")
    assert inventory_errors(hv, dict(GROUPS, all=[*GROUPS["all"], "ctl2"]), rules) == []
    assert inventory_errors(hostvars(), GROUPS, dict(RULES, controllers=["ctl1"],
                                                     controllers_shared_var="slurm_common_state_save_shared")) == []
