"""Preflight inventory checks: each error names the host and the variable."""

import pathlib

import pytest
import yaml
from ansible.module_utils.inventory_check import inventory_errors
from hypothesis import given, settings
from hypothesis import strategies as st

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


# Trust boundaries: values a hostile or mistyped inventory holds, refused before any host is contacted.
ROLE = pathlib.Path(__file__).resolve().parents[2] / "roles" / "preflight"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def role_rules(**over):
    """The role's own rules (its defaults) for the checks whose values are data, not templates."""
    rules = dict(RULES, var_patterns=DEFAULTS["preflight_var_patterns"],
                 count_ranges=DEFAULTS.get("preflight_count_ranges"),
                 pam_exempt=dict(DEFAULTS.get("preflight_pam_exempt") or {}, hosts=GROUPS["gpu_nodes"]))
    return dict(rules, **over)


def test_the_role_defaults_pass_a_sound_inventory():
    assert inventory_errors(hostvars(), GROUPS, role_rules()) == []


@pytest.mark.parametrize("name", [
    "gpu[01-04]",  # a Slurm hostlist: scontrol would act on four nodes
    "ALL", "all", "Default", "asap",  # Slurm's reserved NodeName words (case-insensitive) and scontrol reboot's ASAP
    "gpu 01", "gpu01;reboot", "GPU01", "-gpu01", "gpu_01", "gpu01.", "a" * 64,
])
def test_a_host_name_slurm_or_kubernetes_would_read_otherwise_is_refused(name):
    groups = dict(GROUPS, all=[*GROUPS["all"], name], gpu_nodes=[*GROUPS["gpu_nodes"], name])
    hv = hostvars()
    hv[name] = {"cluster_name": "c", "cluster_gpu_count": 2}
    errors = inventory_errors(hv, groups, RULES)
    assert any(e.startswith(f"host {name}: variable inventory_hostname") for e in errors), errors


def test_two_hosts_that_case_folding_makes_one_are_refused():
    groups = dict(GROUPS, all=["ctl1", "gpu01", "GPU01"], gpu_nodes=["gpu01", "GPU01"])
    hv = hostvars()
    hv["GPU01"] = {"cluster_name": "c", "cluster_gpu_count": 2}
    errors = inventory_errors(hv, groups, RULES)
    assert "host GPU01: variable inventory_hostname: GPU01 and gpu01 are one node to Kubernetes (names are " \
           "lowercased)" in " ".join(errors), errors


@pytest.mark.parametrize("count", [0, 17, 80, "80", -8])
def test_a_gpu_count_no_real_node_has_is_refused(count):
    errors = inventory_errors(hostvars(gpu02={"cluster_gpu_count": count}), GROUPS, role_rules())
    assert errors == [f"host gpu02: variable cluster_gpu_count is {count}, outside 1..16 "
                      "(preflight_count_ranges: a GPU node has 1 to 16 GPUs)"]


@pytest.mark.parametrize("count", [1, 8, "8", 16])
def test_a_gpu_count_a_real_node_has_passes(count):
    assert inventory_errors(hostvars(gpu02={"cluster_gpu_count": count}), GROUPS, role_rules()) == []


@pytest.mark.parametrize("var", ["cluster_leaf_switch", "cluster_pool_pin"])
@pytest.mark.parametrize("value", ["leaf 1", "leaf[1-2]", "leaf1;x", "leaf1\n", "ib.leaf1", "-leaf1", "l" * 49])
def test_a_leaf_or_pin_that_is_no_switch_name_and_label_value_is_refused(var, value):
    errors = inventory_errors(hostvars(gpu01={var: value}), GROUPS, role_rules())
    assert len(errors) == 1 and errors[0].startswith(f"host gpu01: variable {var} must match"), errors


@pytest.mark.parametrize("value", ["leaf1", "ib-leaf1", "IB_Leaf_07", "slurm", "k8s"])
def test_a_leaf_or_pin_of_letters_digits_dash_underscore_passes(value):
    hv = hostvars(gpu01={"cluster_leaf_switch": value, "cluster_pool_pin": value})
    assert inventory_errors(hv, GROUPS, role_rules()) == []


def test_an_ansible_login_pam_slurm_adopt_would_shut_out_is_refused():
    hv = hostvars(gpu01={"ansible_user": "deploy", "slurm_compute_pam_adopt_exempt_users": ["root"]},
                  gpu02={"ansible_user": "deploy"})
    errors = inventory_errors(hv, GROUPS, role_rules())
    assert errors == [
        f"host {h}: variable ansible_user deploy is not in slurm_compute_pam_adopt_exempt_users ['root']: "
        "pam_slurm_adopt would refuse Ansible's own login on a node without a job of deploy"
        for h in ("gpu01", "gpu02")
    ]
    hv = hostvars(gpu01={"ansible_user": "deploy", "slurm_compute_pam_adopt_exempt_users": ["root", "deploy"]},
                  gpu02={"ansible_user": "deploy", "slurm_compute_pam_adopt": False})
    assert inventory_errors(hv, GROUPS, role_rules()) == []


@pytest.mark.parametrize("user", ["root\naccount sufficient pam_permit.so", "ro ot", "root:alice", "", "Root", 0])
def test_an_exempt_user_that_is_no_user_name_is_refused(user):
    hv = hostvars(gpu01={"ansible_user": "root", "slurm_compute_pam_adopt_exempt_users": ["root", user]})
    errors = inventory_errors(hv, GROUPS, role_rules())
    assert errors == [f"host gpu01: variable slurm_compute_pam_adopt_exempt_users holds {user!r}, which is not a user "
                      "name (^[a-z_][a-z0-9_-]{0,31}$); it is written into sshd's PAM stack"]


def found(pairs):
    """hostvars of a discovery play: gpu<i> found pairs[i][0] GPUs, the inventory expects pairs[i][1]."""
    return {f"gpu{i:02d}": {"gpu_discovery_count": f, "gpu_discovery_expected": e} for i, (f, e) in enumerate(pairs)}


def majority(hv):
    from ansible.module_utils.inventory_check import gpu_count_majority_error

    return gpu_count_majority_error(sorted(hv), hv, "gpu_discovery_count", "gpu_discovery_expected")


def test_most_nodes_disagreeing_with_cluster_gpu_count_stop_the_run_naming_it_and_the_counts():
    error = majority(found([(8, 80), (8, 80), (8, 80), (7, 80)]))
    assert error.startswith("variable cluster_gpu_count: 4 of 4 GPU nodes in this play disagree with the inventory "
                            "(gpu00 found 8, expected 80; gpu01 found 8, expected 80; gpu02 found 8, expected 80; "
                            "gpu03 found 7, expected 80)"), error
    assert "draining no node" in error


def test_one_node_of_four_short_of_gpus_is_the_node_not_the_inventory():
    assert majority(found([(8, 8), (8, 8), (8, 8), (7, 8)])) == ""
    assert majority(found([(8, 8), (7, 8)])) == ""  # half is not most
    assert majority(found([(8, None), (7, None)])) == ""  # status.yml: nothing expected
    assert majority(found([(7, 8)])) == ""  # one node alone proves nothing about the inventory: it drains


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 16), st.one_of(st.none(), st.integers(1, 16))), min_size=1, max_size=12))
def test_the_run_stops_exactly_when_most_checked_nodes_disagree(pairs):
    checked = [(f, e) for f, e in pairs if e is not None]
    disagree = sum(1 for f, e in checked if f != e)
    assert (majority(found(pairs)) != "") is (disagree >= 2 and 2 * disagree > len(checked))
