"""Gate verdicts, threshold profiles and pairwise blame."""

import pytest
from ansible.module_utils import gate
from ansible.module_utils.dcgm import parse_dcgmi_diag
from ansible.module_utils.gate import ERROR, FAIL, PASS, ProfileError
from ansible.module_utils.gate_profiles import DEFAULT_PROFILES
from ansible.module_utils.nccl import parse_all_reduce_perf, parse_transports
from ansible.module_utils.nvidia_smi import parse_nvlink_status
from ansible.module_utils.rdma import parse_ib_write_bw, parse_ibstat, parse_ibv_devinfo
from hypothesis import given
from hypothesis import strategies as st


@pytest.fixture
def perf(fixture_output):
    return lambda name: parse_all_reduce_perf(fixture_output(f"nccl_all_reduce_perf_{name}.txt"))


# ------------------------------------------------------------------------------------ verdicts


def test_combine_fail_wins_over_error_and_joins_reasons():
    result = gate.combine([gate.verdict(PASS), gate.verdict(ERROR, "x: broke"),
                           gate.verdict(FAIL, "a: bad"), gate.verdict(FAIL, "b: bad")])
    assert result["verdict"] == FAIL and result["reason"] == "a: bad; b: bad"


def test_combine_states_a_shared_reason_once():
    same = gate.verdict(FAIL, "gpu: NVIDIA driver not loaded")
    assert gate.combine([same, same])["reason"] == "gpu: NVIDIA driver not loaded"


def test_combine_error_wins_over_pass():
    assert gate.combine([gate.verdict(PASS), gate.verdict(ERROR, "x: broke")])["verdict"] == ERROR


def test_fail_or_error_without_reason_is_refused():
    with pytest.raises(ValueError):
        gate.verdict(FAIL)


# ---------------------------------------------------------------------------------------- NCCL


def test_gh200_bad_run_fails_on_large_message_busbw(perf):
    _, profile = gate.select_profile(DEFAULT_PROFILES, "NVIDIA GH200 120GB", 4)
    result = gate.nccl_verdict(perf("multinode_gh200_bad_cxi_hook_disabled_cscs"),
                               profile["nccl_pair_min_busbw_gbps"])
    assert result["verdict"] == FAIL
    assert result["reason"] == "nccl: busbw 5.48 GB/s < 98.00 GB/s"
    # The sweep stopped at 128 MiB (< 1 GiB): the two largest sizes were used.
    assert result["figures"]["sizes_used"] == [64 << 20, 128 << 20]


def test_gh200_good_run_passes_with_the_same_profile(perf):
    result = gate.nccl_verdict(perf("multinode_gh200_slingshot_good_cscs"), 98.0)
    assert result["verdict"] == PASS and result["reason"] == ""
    assert result["figures"]["busbw_large_gbps"] == pytest.approx((107.69 + 122.57) / 2, abs=0.01)
    assert result["figures"]["busbw_peak_gbps"] == 122.57


def test_verdict_ignores_the_small_message_dominated_avg_line(perf):
    run = perf("multinode_dgxa100x4_legacy_format_deepops")
    assert run["avg_busbw"] < 150  # 113.3: would fail a 150 GB/s threshold
    result = gate.nccl_verdict(run, 150.0)
    assert result["verdict"] == PASS
    assert result["figures"]["sizes_used"] == [1 << 30, 1 << 31, 1 << 32]
    assert result["figures"]["busbw_large_gbps"] == pytest.approx((178.69 + 190.22 + 191.05) / 3, abs=0.01)


def test_min_size_is_configurable(perf):
    run = perf("multinode_dgxa100x4_legacy_format_deepops")
    result = gate.nccl_verdict(run, 150.0, min_size=4 << 30)
    assert result["figures"]["sizes_used"] == [4 << 30]
    assert result["figures"]["busbw_large_gbps"] == 191.05


def test_wrong_results_fail_even_with_enough_bandwidth(perf):
    run = perf("single_node_a100x8_oci")
    run["wrong"] = 2
    result = gate.nccl_verdict(run, 185.0)
    assert result["verdict"] == FAIL and result["reason"] == "nccl: 2 wrong results"


def test_a100_single_node_passes_its_profile(perf):
    run = perf("single_node_a100x8_oci")
    name, profile = gate.select_profile(DEFAULT_PROFILES, run["devices"][0]["name"], len(run["devices"]))
    assert name == "a100_sxm_x8"
    assert gate.nccl_verdict(run, profile["nccl_single_min_busbw_gbps"])["verdict"] == PASS


def test_h100_pair_passes_its_profile(perf):
    run = perf("multinode_h100x16_roce_oci")
    name, profile = gate.select_profile(DEFAULT_PROFILES, run["devices"][0]["name"], 8)
    assert name == "h100_sxm_x8"
    assert gate.nccl_verdict(run, profile["nccl_pair_min_busbw_gbps"])["verdict"] == PASS


# ---------------------------------------------------------------------------------- transports


def test_socket_fallback_fails_where_ib_is_expected(fixture_output):
    t = parse_transports(fixture_output("nccl_debug_info_net_socket_fallback_bad.txt"))
    result = gate.transport_check(t, "ib", "pair")
    assert result["verdict"] == FAIL
    assert result["reason"] == "nccl: transport socket (13 channels), expected IB"


def test_socket_fallback_passes_where_socket_is_expected(fixture_output):
    t = parse_transports(fixture_output("nccl_debug_info_net_socket_fallback_bad.txt"))
    assert gate.transport_check(t, "socket", "pair")["verdict"] == PASS


@pytest.mark.parametrize("name", ["nccl_debug_info_transport_ib_gdrdma_good.txt",
                                  "nccl_debug_info_ib_without_gdr.txt",
                                  "nccl_debug_info_net_socket_and_ib_using_mixed.txt"])
def test_ib_transport_passes_where_ib_is_expected(fixture_output, name):
    assert gate.transport_check(parse_transports(fixture_output(name)), "ib", "pair")["verdict"] == PASS


def test_ib_without_gdr_fails_when_gdr_is_required(fixture_output):
    t = parse_transports(fixture_output("nccl_debug_info_ib_without_gdr.txt"))
    result = gate.transport_check(t, "ib", "pair", require_gdr=True)
    assert result["verdict"] == FAIL and "GPUDirect" in result["reason"]
    t = parse_transports(fixture_output("nccl_debug_info_transport_ib_gdrdma_good.txt"))
    assert gate.transport_check(t, "ib", "pair", require_gdr=True)["verdict"] == PASS


def test_pair_run_without_transport_lines_is_an_error_not_a_pass():
    result = gate.transport_check({"net": None, "gdr": None, "channels": {}}, "ib", "pair")
    assert result["verdict"] == ERROR and "NCCL_DEBUG=INFO" in result["reason"]


def test_single_node_run_needs_no_network_transport():
    assert gate.transport_check({"net": None, "gdr": None, "channels": {}}, "ib", "single")["verdict"] == PASS


def test_single_node_run_over_socket_still_fails_when_ib_is_expected(fixture_output):
    t = parse_transports(fixture_output("nccl_debug_info_net_socket_fallback_bad.txt"))
    assert gate.transport_check(t, "ib", "single")["verdict"] == FAIL


# ------------------------------------------------------------------------------------ profiles


def test_profile_lookup_by_gpu_model_and_count():
    assert gate.select_profile(DEFAULT_PROFILES, "NVIDIA A100-SXM4-80GB", 8)[0] == "a100_sxm_x8"
    assert gate.select_profile(DEFAULT_PROFILES, "NVIDIA GH200 120GB", 4)[0] == "gh200_x4"


def test_profile_lookup_refuses_wrong_count():
    with pytest.raises(ProfileError, match=r"no threshold profile matches 4x NVIDIA A100-SXM4-80GB"):
        gate.select_profile(DEFAULT_PROFILES, "NVIDIA A100-SXM4-80GB", 4)


def test_profile_lookup_refuses_unknown_model():
    with pytest.raises(ProfileError, match="NVIDIA L40S"):
        gate.select_profile(DEFAULT_PROFILES, "NVIDIA L40S", 8)


def test_more_specific_profile_wins_and_equal_ones_are_refused():
    site = gate.merge_profiles(DEFAULT_PROFILES, {
        "a100_ndr": {"match": {"gpu_model": "A100-SXM", "gpu_count": 8, "nic_rate_gbps": 400},
                     "nccl_pair_min_busbw_gbps": 300},
    })
    assert gate.select_profile(site, "NVIDIA A100-SXM4-80GB", 8, 400)[0] == "a100_ndr"
    assert gate.select_profile(site, "NVIDIA A100-SXM4-80GB", 8, 200)[0] == "a100_sxm_x8"
    twin = gate.merge_profiles(site, {"a100_twin": {"match": {"gpu_model": "A100", "gpu_count": 8}}})
    with pytest.raises(ProfileError, match="match equally"):
        gate.select_profile(twin, "NVIDIA A100-SXM4-80GB", 8)


def test_site_override_merges_one_key_and_keeps_the_rest():
    site = gate.merge_profiles(DEFAULT_PROFILES, {"a100_sxm_x8": {"nccl_pair_min_busbw_gbps": 170}})
    assert site["a100_sxm_x8"]["nccl_pair_min_busbw_gbps"] == 170
    assert site["a100_sxm_x8"]["nvlinks_per_gpu"] == 12
    assert DEFAULT_PROFILES["a100_sxm_x8"]["nccl_pair_min_busbw_gbps"] == 150.0  # defaults untouched


def test_named_profile_must_exist():
    with pytest.raises(ProfileError, match="'nope' is not defined"):
        gate.select_profile(DEFAULT_PROFILES, name="nope")


def test_every_shipped_profile_has_the_threshold_keys():
    keys = {"match", "gpu_count", "nvlinks_per_gpu", "nic_rate_gbps", "rdma_ports", "link_layer",
            "ib_write_bw_min_gbps",
            "nccl_single_min_busbw_gbps", "nccl_pair_min_busbw_gbps", "nccl_min_size", "source"}
    for name, profile in DEFAULT_PROFILES.items():
        assert set(profile) == keys, name
        assert gate.select_profile(DEFAULT_PROFILES, name=name)[0] == name


# ---------------------------------------------------------------------------------------- RDMA


def test_ibstat_disabled_port_fails_when_every_port_is_expected(fixture_output):
    result = gate.rdma_ports_verdict(parse_ibstat(fixture_output("ibstat_hdr_cx6_one_active_one_disabled.txt")))
    assert result["verdict"] == FAIL and result["reason"] == "rdma: mlx5_1/1 Down/Disabled"


def test_ibstat_named_active_port_at_rate_passes(fixture_output):
    ports = parse_ibstat(fixture_output("ibstat_hdr_cx6_one_active_one_disabled.txt"))
    result = gate.rdma_ports_verdict(ports, ["mlx5_0"], 200)
    assert result["verdict"] == PASS and result["figures"]["active"] == 1


def test_ibstat_port_below_expected_rate_fails(fixture_output):
    ports = parse_ibstat(fixture_output("ibstat_hdr_cx6_one_active_one_disabled.txt"))
    result = gate.rdma_ports_verdict(ports, ["mlx5_0:1"], 400)
    assert result["reason"] == "rdma: mlx5_0/1 rate 200.00 Gb/s < 400.00 Gb/s"


def test_missing_expected_hca_fails(fixture_output):
    ports = parse_ibstat(fixture_output("ibstat_hdr_cx6_one_active_one_disabled.txt"))
    assert gate.rdma_ports_verdict(ports, ["mlx5_0", "mlx5_2"])["reason"] == "rdma: mlx5_2 missing"


def test_rate_unknown_to_ibv_devinfo_is_an_error_not_a_pass(fixture_output):
    ports = parse_ibv_devinfo(fixture_output("ibv_devinfo_two_connectx3_hcas_port2_down.txt"))
    result = gate.rdma_ports_verdict(ports, ["mlx4_0:1", "mlx4_1:1"], 40)
    assert result["verdict"] == ERROR and "needs -v" in result["reason"]
    no_rate = gate.rdma_ports_verdict(ports, ["mlx4_0:1", "mlx4_1:1"])
    assert no_rate["verdict"] == ERROR and "no expected port rate" in no_rate["reason"]


def test_ib_write_bw_against_threshold(fixture_output):
    parsed = parse_ib_write_bw(fixture_output("ib_write_bw_client_roce_100g_cx5_deepops.txt"))
    assert gate.ib_write_bw_verdict(parsed, 90)["verdict"] == PASS
    result = gate.ib_write_bw_verdict(parsed, 95)
    assert result["reason"] == "rdma: ib_write_bw 92.40 Gb/s < 95.00 Gb/s"


# ----------------------------------------------------------------------------------------- GPU


def test_inventory_from_the_ranks_of_a_real_run(perf):
    gpus = [{"index": d["device"], "name": d["name"]} for d in perf("single_node_a100x8_oci")["devices"]]
    assert gate.gpu_inventory_verdict(gpus, 8, "A100-SXM")["verdict"] == PASS
    assert gate.gpu_inventory_verdict(gpus, 4)["reason"] == "gpu: 8 GPUs, expected 4"
    assert gate.gpu_inventory_verdict(gpus, 8, "H100")["reason"] == (
        "gpu: GPU0 is 'NVIDIA A100-SXM4-40GB', expected 'H100' (+7 more)")


def test_memory_errors_fail_and_unsupported_figures_are_listed():
    gpus = [
        {"index": 0, "ecc_uncorrected_volatile": 0, "retired_pages_pending": False, "retired_pages_dbe": 0,
         "remap_pending": False, "remap_failure": False},
        {"index": 1, "ecc_uncorrected_volatile": 2, "retired_pages_pending": None, "retired_pages_dbe": None,
         "remap_pending": True, "remap_failure": False},
    ]
    result = gate.gpu_health_verdict(gpus)
    assert result["reason"] == ("gpu: GPU1 2 uncorrectable ECC errors (volatile), "
                                "GPU1 row remap pending (reset needed)")
    assert result["figures"]["not_supported"] == ["retired_pages_dbe", "retired_pages_pending"]
    assert gate.gpu_health_verdict(gpus[:1])["verdict"] == PASS


def test_nvlink_from_nvidia_smi_against_expected_count(fixture_output):
    gpus = parse_nvlink_status(fixture_output("nvidia_smi_nvlink_status_good_a100_azure.txt"))
    assert gate.nvlink_verdict(gpus, 12)["verdict"] == PASS
    assert gate.nvlink_verdict(gpus, 18)["reason"] == "nvlink: GPU7 12/18 links active"


def test_inactive_nvlink_fails(fixture_output):
    text = fixture_output("nvidia_smi_nvlink_status_good_a100_azure.txt")
    text = text.replace("Link 5: 25 GB/s", "Link 5: <inactive>")
    assert gate.nvlink_verdict(parse_nvlink_status(text), 12)["reason"] == "nvlink: GPU7 link 5 inactive"


def test_dcgm_pass_and_fail(fixture_output):
    text = fixture_output("dcgmi_diag_r2_pass_a100x8_p4de_aws.txt")
    assert gate.dcgm_verdict(parse_dcgmi_diag(text))["verdict"] == PASS
    bad = text.replace("| Pass - All                                     |\n+-----  Hardware",
                       "| Fail - GPU: 2                                  |\n+-----  Hardware")
    assert gate.dcgm_verdict(parse_dcgmi_diag(bad))["reason"] == "dcgm: failed PCIe (GPU2)"


# ---------------------------------------------------------------------------------- pair blame


def test_failed_pair_suspects_are_retested_with_known_good_partners():
    plan = gate.propose_retests({"a,b": PASS, "c,d": FAIL, "e,f": ERROR}, known_good=["g"])
    assert plan["retests"] == [
        {"nodes": ["c", "a"], "suspect": "c", "partner": "a", "round": 0},
        {"nodes": ["d", "b"], "suspect": "d", "partner": "b", "round": 0},
    ]
    assert plan["rerun"] == [["e", "f"]] and plan["blamed"] == {} and plan["unresolved"] == []


def test_failing_with_a_known_good_partner_blames_at_once():
    plan = gate.propose_retests([{"nodes": ["g", "x"], "verdict": "FAIL"}], known_good=["g"])
    assert plan["blamed"] == {"x": "pair: failed with known-good g"} and plan["retests"] == []


def test_without_known_good_nodes_nothing_is_blamed():
    result = gate.blame({("a", "b"): FAIL}, {})
    assert {n: r["verdict"] for n, r in result.items()} == {"a": ERROR, "b": ERROR}


def test_second_pass_blames_the_node_that_fails_again():
    first = {"a,b": FAIL, "c,d": PASS}
    plan = gate.propose_retests(first)
    second = {tuple(t["nodes"]): (FAIL if t["suspect"] == "b" else PASS) for t in plan["retests"]}
    result = gate.blame(first, second)
    assert plan["retests"][1] == {"nodes": ["b", "d"], "suspect": "b", "partner": "d", "round": 0}
    assert result["b"] == {"verdict": FAIL, "reason": "pair: failed with known-good d"}
    assert result["a"]["verdict"] == PASS and result["c"]["verdict"] == PASS


def test_both_suspects_passing_their_retests_is_inconclusive():
    result = gate.blame({"a,b": FAIL}, {"a,g": PASS, "b,g": PASS}, known_good=["g"])
    assert result["a"]["verdict"] == ERROR and result["b"]["verdict"] == ERROR
    assert "both passed" in result["a"]["reason"]


def test_missing_second_pass_result_is_an_error():
    result = gate.blame({"a,b": FAIL}, {"a,g": FAIL}, known_good=["g"])
    assert result["a"]["verdict"] == FAIL
    assert result["b"] == {"verdict": ERROR, "reason": "pair: re-test with g did not complete"}


def test_a_broken_pair_is_judged_by_its_re_run():
    first = {"a,b": ERROR}
    assert gate.propose_retests(first)["rerun"] == [["a", "b"]]
    passed = gate.blame(first, {"a,b": PASS})
    assert {n: r["verdict"] for n, r in passed.items()} == {"a": PASS, "b": PASS}


def test_a_broken_pair_that_fails_on_re_run_blames_only_beside_a_known_good_partner():
    blamed = gate.blame({"a,g": ERROR}, {"a,g": FAIL}, known_good=["g"])
    assert blamed["a"] == {"verdict": FAIL, "reason": "pair: re-run failed with known-good g"}
    assert blamed["g"]["verdict"] == PASS
    unknown = gate.blame({"a,b": ERROR}, {"a,b": FAIL})
    assert {n: r["verdict"] for n, r in unknown.items()} == {"a": ERROR, "b": ERROR}


@pytest.mark.parametrize("second", [{}, {"a,b": ERROR}])
def test_a_pair_that_breaks_twice_stays_an_error(second):
    result = gate.blame({"a,b": ERROR}, second)
    assert {n: r["verdict"] for n, r in result.items()} == {"a": ERROR, "b": ERROR}


def test_retest_rounds_never_use_a_node_twice():
    first = {f"s{i},t{i}": FAIL for i in range(5)}
    plan = gate.propose_retests(first, known_good=["g1", "g2"])
    rounds = {}
    for t in plan["retests"]:
        rounds.setdefault(t["round"], []).extend(t["nodes"])
    assert all(len(nodes) == len(set(nodes)) for nodes in rounds.values())
    assert len(plan["retests"]) == 10


@st.composite
def fleets(draw):
    names = [f"n{i:02d}" for i in range(draw(st.integers(2, 24)))]
    bad = draw(st.sets(st.sampled_from(names)))
    good = [n for n in names if n not in bad]
    known = draw(st.sets(st.sampled_from(good), min_size=1)) if good else set()
    order = draw(st.permutations(names))
    pairs = [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]
    return pairs, bad, known


@given(fleets())
def test_blame_finds_exactly_the_bad_nodes_when_a_known_good_node_exists(fleet):
    pairs, bad, known = fleet

    def run(a, b):  # the fabric model: a pair fails when either node is bad
        return FAIL if a in bad or b in bad else PASS

    first = {(a, b): run(a, b) for a, b in pairs}
    plan = gate.propose_retests(first, known)
    second = {(t["suspect"], t["partner"]): run(t["suspect"], t["partner"]) for t in plan["retests"]}
    result = gate.blame(first, second, known)
    tested = {n for pair in pairs for n in pair}
    if known:
        assert {n for n, r in result.items() if r["verdict"] == FAIL} == bad & tested
        assert {n for n, r in result.items() if r["verdict"] == PASS} == tested - bad
    assert set(result) == tested
    assert all(t["partner"] not in bad for t in plan["retests"])
