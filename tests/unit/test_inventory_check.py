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


def test_a_secret_is_named_but_never_echoed_in_type_or_pattern_errors():
    secret = "s3cr3t-Value"
    types = inventory_errors(
        hostvars(ctl1={"slurm_dbd_storage_password": ["s3cr3t-Value"]}),
        GROUPS,
        {"var_types": {"slurm_dbd_storage_password": "str"}},
    )
    patterns = inventory_errors(
        hostvars(ctl1={"k3s_server_agent_token": secret}),
        GROUPS,
        {"var_patterns": {"k3s_server_agent_token": "[a-f0-9]+"}},
    )
    assert types == [
        "host ctl1: variable slurm_dbd_storage_password must be of type str, got a list "
        "(value hidden: slurm_dbd_storage_password looks like a secret)"
    ]
    assert len(patterns) == 1 and "k3s_server_agent_token" in patterns[0]
    assert all(secret not in error for error in types + patterns)


def test_duplicate_short_hostnames_and_addresses_are_errors():
    groups = {"all": ["gpu01.a.example", "gpu01.b.example"]}
    hv = {"gpu01.a.example": {"ansible_host": "10.0.0.1"}, "gpu01.b.example": {"ansible_host": "10.0.0.1"}}
    errors = inventory_errors(hv, groups, {})
    assert any("short hostname gpu01 duplicates host gpu01.a.example" in e for e in errors)
    assert any("host gpu01.b.example: variable ansible_host 10.0.0.1" in e for e in errors)


POLICY = {"pools": {"slurm": {"min": 1, "target": 1}, "k8s": {"min": 1, "target": 1}}, "max_unavailable": 1}
POOL = {"hosts": ["gpu01", "gpu02"], "static_group": "slurm_compute", "controller_group": "slurm_controller"}


def test_no_policy_checks_no_pool_rules():
    groups = dict(GROUPS, slurm_compute=["gpu01"], slurm_controller=[])
    assert inventory_errors(hostvars(), groups, dict(RULES, pool=dict(POOL, policy=None))) == []


def test_sound_policy_has_no_errors():
    assert inventory_errors(hostvars(), GROUPS, dict(RULES, pool=dict(POOL, policy=POLICY))) == []


def test_impossible_policy_names_the_variable():
    policy = {"pools": {"slurm": {"min": 2, "target": 3}}, "max_unavailable": 1}
    errors = inventory_errors(hostvars(), GROUPS, dict(RULES, pool=dict(POOL, policy=policy)))
    assert errors == [
        "variable cluster_pools.pools.slurm.target: 3 means 3 nodes, but only 2 are eligible (2 hosts, 0 excluded)"
    ]


def test_pin_to_an_undefined_pool_names_the_host():
    policy = {"pools": {"slurm": {"min": 1, "target": 1}}, "max_unavailable": 1}
    errors = inventory_errors(
        hostvars(gpu02={"cluster_pool_pin": "k8s"}), GROUPS, dict(RULES, pool=dict(POOL, policy=policy))
    )
    assert errors == ["host gpu02: cluster_pool_pin='k8s' names a pool that cluster_pools.pools does not define"]


def test_policy_with_a_static_slurm_group_or_no_controller_is_an_error():
    groups = dict(GROUPS, slurm_compute=["gpu01", "gpu02"], slurm_controller=[])
    errors = inventory_errors(hostvars(), groups, dict(RULES, pool=dict(POOL, policy=POLICY)))
    assert errors == [
        "variable cluster_pools: the pool plan decides the Slurm pool, so the inventory must not define group "
        "slurm_compute (it has gpu01, gpu02; variable preflight_pool_static_group)",
        "variable cluster_pools: the pool plan reads Slurm on the first host of group slurm_controller, "
        "which is empty (variable preflight_pool_controller_group)",
    ]


def test_cluster_name_that_slurm_would_change_is_named():
    rules = dict(RULES, var_patterns={"cluster_name": "^[a-z][a-z0-9_]{0,39}$"})
    assert inventory_errors(hostvars(), GROUPS, rules) == []
    errors = inventory_errors(hostvars(ctl1={"cluster_name": "GPU-Prod"}), GROUPS, rules)
    assert errors == ["host ctl1: variable cluster_name must match ^[a-z][a-z0-9_]{0,39}$, got 'GPU-Prod'"]


def test_static_slurm_node_outside_gpu_nodes_is_named():
    rules = dict(RULES, subset_groups=[["slurm_compute", "gpu_nodes"]])
    assert inventory_errors(hostvars(), dict(GROUPS, slurm_compute=["gpu01"]), rules) == []
    errors = inventory_errors(hostvars(), dict(GROUPS, slurm_compute=["gpu01", "ctl1"]), rules)
    assert errors == ["host ctl1: is in group slurm_compute but not in group gpu_nodes, which must hold every "
                      "member of slurm_compute (variable preflight_subset_groups)"]


def test_leaf_switch_on_some_gpu_nodes_only_names_the_others():
    rules = dict(RULES, all_or_none={"gpu_nodes": ["cluster_leaf_switch"]})
    assert inventory_errors(hostvars(), GROUPS, rules) == []
    both = {"gpu01": {"cluster_leaf_switch": "leaf1"}, "gpu02": {"cluster_leaf_switch": "leaf2"}}
    assert inventory_errors(hostvars(**both), GROUPS, rules) == []
    errors = inventory_errors(hostvars(gpu01={"cluster_leaf_switch": "leaf1"}, gpu02={"cluster_leaf_switch": " "}),
                              GROUPS, rules)
    assert errors == ["host gpu02: variable cluster_leaf_switch is missing, but gpu01 of group gpu_nodes set it "
                      "(set it on every member or on none; variable preflight_all_or_none)"]
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


def test_a_slice_of_the_declared_fleet_is_refused_naming_the_group_and_both_counts():
    # An AWX job slice (or a partial inventory) holds some of the GPU nodes: a run over it cannot tell
    # itself from a smaller fleet unless the fleet's size is declared.
    rules = dict(RULES, expected_hosts={"gpu_nodes": 4, "slurm_controller": 1})
    (error,) = inventory_errors(hostvars(), GROUPS, rules)
    assert error.startswith("variable cluster_expected_hosts: group gpu_nodes holds 2 host(s) in this inventory, "
                            "the fleet has 4")
    whole = dict(RULES, expected_hosts={"gpu_nodes": 2, "slurm_controller": 1})
    assert inventory_errors(hostvars(), GROUPS, whole) == []
    assert inventory_errors(hostvars(), GROUPS, dict(RULES, expected_hosts={})) == []
    # A group the inventory lacks holds 0 hosts.
    (missing,) = inventory_errors(hostvars(), GROUPS, dict(RULES, expected_hosts={"k8s_agent": 3}))
    assert "group k8s_agent holds 0 host(s)" in missing


@pytest.mark.parametrize("expected", [{"gpu_nodes": "2"}, {"gpu_nodes": -1}, {"gpu_nodes": True}, ["gpu_nodes"]])
def test_a_declared_size_that_is_not_a_count_is_refused(expected):
    (error,) = inventory_errors(hostvars(), GROUPS, dict(RULES, expected_hosts=expected))
    assert error.startswith("variable cluster_expected_hosts")
