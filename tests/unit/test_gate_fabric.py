"""Issue 37, fabric gates on by profile (module_utils/gate_fabric.py, filter gate_fabric, roles/health_gate): the RDMA
gate, the NCCL pair gate and GPUDirect RDMA on the pairs are on where the node's threshold profile has HCAs, off where
it has none, on (the RDMA row an ERROR) where no profile can tell; an explicit true or false always wins."""

import pytest
from ansible.module_utils.gate_fabric import fabric_defaults, fabric_nodes, fabric_pair_gdr, fabric_switch
from gate_rows import FilterModule as RowFilters

H100 = "NVIDIA H100 80GB HBM3"
GH200 = "NVIDIA GH200 480GB"
L40S = "NVIDIA L40S"
SWITCH_VARS = {"rdma": "health_gate_rdma", "nccl_pairs": "health_gate_nccl_pairs",
               "require_gdr": "health_gate_nccl_require_gdr"}


def gpus(model, count):
    return [{"minor": i, "name": model} for i in range(count)]


def decide(model, count, **kwargs):
    return fabric_defaults("gpu01", gpus(model, count), count, **kwargs)


def switches(decision):
    return {key: decision[key] for key in SWITCH_VARS}


ALL_ON = {"rdma": True, "nccl_pairs": True, "require_gdr": True}
ALL_OFF = {"rdma": False, "nccl_pairs": False, "require_gdr": False}


# ------------------------------------------------------------------------------------------- by profile


def test_an_h100_node_gets_the_rdma_and_nccl_pair_gates_and_gdr_required():
    decision = decide(H100, 8)
    assert (decision["profile"], decision["hcas"], decision["error"]) == ("h100_sxm_x8", True, None)
    assert switches(decision) == ALL_ON
    assert decision["why"] == "profile h100_sxm_x8 rdma_ports 8: HCAs, so the fabric gates are on"


def test_an_h100_node_short_of_gpus_keeps_its_profile_and_its_fabric_gates():
    # profile_for's model-only fallback (7 of 8 GPUs is judged as a FAIL against h100_sxm_x8, not let off).
    assert (decide(H100, 7)["profile"], switches(decide(H100, 7))) == ("h100_sxm_x8", ALL_ON)


def test_a_gh200_node_whose_profile_has_no_ports_gets_no_fabric_gate():
    decision = decide(GH200, 4)
    assert (decision["profile"], decision["hcas"], decision["error"]) == ("gh200_x4", False, None)
    assert switches(decision) == ALL_OFF
    assert "no HCAs, so the fabric gates are off" in decision["why"]


def test_the_profile_named_by_the_inventory_decides_over_the_gpu_model():
    # The lab's nodes declare H100s and name gh200_x4 (molecule/health_gate): off, as before issue 37.
    assert decide(H100, 2, profile="gh200_x4")["profile"] == "gh200_x4"
    assert switches(decide(H100, 2, profile="gh200_x4")) == ALL_OFF
    assert switches(decide(GH200, 4, profile="h100_sxm_x8")) == ALL_ON


# ------------------------------------------------------------------------------------------- explicit wins


@pytest.mark.parametrize("key", sorted(SWITCH_VARS))
def test_an_explicit_false_turns_one_gate_off_on_an_hca_node(key):
    decision = decide(H100, 8, **{key: False})
    assert switches(decision) == dict(ALL_ON, **{key: False})
    assert f"set in the inventory: {SWITCH_VARS[key]}: false" in decision["why"]


@pytest.mark.parametrize("key", sorted(SWITCH_VARS))
def test_an_explicit_true_turns_one_gate_on_on_a_node_without_hcas(key):
    assert switches(decide(GH200, 4, **{key: True})) == dict(ALL_OFF, **{key: True})


def test_the_lab_s_explicit_nccl_pairs_on_a_gh200_profile_stays_on():
    decision = decide(H100, 2, profile="gh200_x4", nccl_pairs=True)
    assert switches(decision) == {"rdma": False, "nccl_pairs": True, "require_gdr": False}


@pytest.mark.parametrize("text,value", [("false", False), ("False", False), ("TRUE", True), (" true ", True)])
def test_the_text_true_or_false_from_the_command_line_reads_as_that(text, value):
    # -e health_gate_rdma=false arrives as text.
    assert fabric_switch(text, "health_gate_rdma", "gpu01") is value
    assert decide(H100, 8, rdma=text)["rdma"] is value


# ------------------------------------------------------------------------------------------- site profiles


def test_a_site_profile_that_adds_ports_to_a_shipped_one_turns_its_gates_on():
    profiles = {"gh200_x4": {"rdma_ports": 4, "link_layer": "InfiniBand"}}
    decision = decide(GH200, 4, profiles=profiles)
    assert (decision["profile"], decision["hcas"], switches(decision)) == ("gh200_x4", True, ALL_ON)
    assert "profile gh200_x4 rdma_ports 4" in decision["why"]


def test_a_new_site_profile_with_ports_turns_the_gates_on_and_one_with_none_leaves_them_off():
    l40s = {"match": {"gpu_model": "L40S", "gpu_count": 4}, "gpu_count": 4, "rdma_ports": 2, "nic_rate_gbps": 200}
    assert switches(decide(L40S, 4, profiles={"l40s_x4": l40s})) == ALL_ON
    assert switches(decide(L40S, 4, profiles={"l40s_x4": dict(l40s, rdma_ports=0)})) == ALL_OFF
    assert switches(decide(L40S, 4, profiles={"l40s_x4": dict(l40s, rdma_ports=None)})) == ALL_OFF


def test_a_site_profile_that_removes_the_ports_of_a_shipped_one_turns_its_gates_off():
    assert switches(decide(H100, 8, profiles={"h100_sxm_x8": {"rdma_ports": 0}})) == ALL_OFF


def test_a_link_layer_alone_is_no_hca():
    # It names the layer, not a port: the RDMA gate cannot judge without a count or named ports.
    assert switches(decide(GH200, 4, profiles={"gh200_x4": {"link_layer": "Ethernet"}})) == ALL_OFF


def test_the_inventory_s_port_count_or_named_ports_say_the_node_has_hcas():
    # The expectations the RDMA gate itself takes over the profile's (the health check's rule, node_health).
    assert switches(decide(GH200, 4, rdma_expected_ports=4)) == ALL_ON
    assert switches(decide(GH200, 4, rdma_expected_ports="4")) == ALL_ON
    assert switches(decide(GH200, 4, rdma_devices=["mlx5_0", "mlx5_1"])) == ALL_ON
    assert switches(decide(H100, 8, rdma_expected_ports=0)) == ALL_OFF
    assert switches(decide(L40S, 4, rdma_devices=["mlx5_0"])) == ALL_ON
    assert decide(L40S, 4, rdma_devices=["mlx5_0"])["error"] is None


# ------------------------------------------------------------------------------------------- no profile: fails closed


@pytest.mark.parametrize("case", [
    {"model": L40S, "count": 4, "why": "no threshold profile matches 4x NVIDIA L40S"},
    {"model": H100, "count": 8, "profile": "h100_pcie_x8", "why": "profile 'h100_pcie_x8' is not defined"},
    {"model": None, "count": 0, "why": "no threshold profile matches 0x unknown GPU"},
], ids=["unmatched", "named-missing", "no-gpu"])
def test_a_node_with_no_profile_is_not_let_off_its_fabric_gates(case):
    found = gpus(case["model"], case["count"]) if case["model"] else []
    decision = fabric_defaults("gpu07", found, case["count"], profile=case.get("profile"))
    assert (decision["profile"], decision["hcas"]) == (None, None)
    assert switches(decision) == ALL_ON
    # The RDMA row is this ERROR (the gate is not run): held, blaming nobody, naming the missing profile.
    assert decision["error"].startswith("rdma: cannot tell whether gpu07 has HCAs: ")
    assert case["why"] in decision["error"] and "health_gate_rdma" in decision["error"]
    assert "fails closed" in decision["why"]


def test_an_explicit_rdma_switch_decides_for_a_node_with_no_profile():
    on = decide(L40S, 4, rdma=True)
    assert (on["rdma"], on["error"]) == (True, None)  # the gate runs, judging what the inventory gives it
    off = decide(L40S, 4, rdma=False, nccl_pairs=False, require_gdr=False)
    assert (switches(off), off["error"]) == (ALL_OFF, None)


def test_a_broken_site_profile_is_no_profile():
    # merge_profiles refuses a profile that is not a mapping (the GPU gate reports the same as an ERROR).
    decision = decide(H100, 8, profiles={"h100_sxm_x8": "fast"})
    assert (switches(decision), decision["hcas"]) == (ALL_ON, None) and "must be a mapping" in decision["error"]


# ------------------------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("value", ["yes", "on", "1", 1, 0, "", [], {"a": 1}, 2.0])
@pytest.mark.parametrize("key", sorted(SWITCH_VARS))
def test_a_switch_that_is_not_true_false_or_null_fails_naming_the_host_and_the_variable(key, value):
    with pytest.raises(ValueError, match=rf"^host gpu01: {SWITCH_VARS[key]} must be true, false or null"):
        decide(H100, 8, **{key: value})


@pytest.mark.parametrize("ports", ["eight", -1, 2.5, True])
def test_a_port_count_that_is_not_a_whole_number_fails_naming_where_it_came_from(ports):
    with pytest.raises(ValueError, match=r"^host gpu01: profile 'gh200_x4' rdma_ports must be a whole number"):
        decide(GH200, 4, profiles={"gh200_x4": {"rdma_ports": ports}})
    with pytest.raises(ValueError, match=r"^host gpu01: health_gate_rdma_expected_ports must be a whole number"):
        decide(GH200, 4, rdma_expected_ports=ports)


# ------------------------------------------------------------------------------------------- run level


def test_the_pair_test_takes_the_nodes_whose_decision_is_on():
    hostvars = {"a": {"fab": {"nccl_pairs": True}}, "b": {"fab": {"nccl_pairs": False}}, "c": {}}
    # c has no decision (never happens to a gated node): kept, so it is gated rather than let off.
    assert fabric_nodes(["a", "b", "c"], hostvars, "fab", "nccl_pairs") == ["a", "c"]


def test_a_pair_requires_gdr_when_either_gated_node_does():
    hostvars = {"a": {"fab": {"require_gdr": True}}, "b": {"fab": {"require_gdr": False}},
                "c": {"fab": {"require_gdr": False}}, "partner": {}}
    assert fabric_pair_gdr(["a", "b"], hostvars, "fab") is True
    assert fabric_pair_gdr(["b", "c"], hostvars, "fab") is False
    # A known-good partner from outside the run has no decision: the gated node's decides.
    assert fabric_pair_gdr(["b", "partner"], hostvars, "fab") is False
    assert fabric_pair_gdr(["a", "partner"], hostvars, "fab") is True
    assert fabric_pair_gdr(["partner", "unknown"], hostvars, "fab") is True  # nobody decided: required


def test_the_filters_are_exposed():
    assert RowFilters().filters()["gate_fabric"] is fabric_defaults
    assert {"gate_fabric_nodes", "gate_fabric_pair_gdr", "gate_fabric_switch"} <= set(RowFilters().filters())
