"""Issue 37, fabric gates on by profile (module_utils/gate_fabric.py, filter gate_fabric, roles/health_gate): the RDMA
gate, the NCCL pair gate and GPUDirect RDMA on the pairs are on where the node's threshold profile has HCAs, off where
it has none, on (the RDMA row an ERROR) where no profile can tell; an explicit true or false always wins."""

import json
import sys

import pytest
import yaml
from ansible.module_utils.gate_fabric import fabric_defaults, fabric_nodes, fabric_pair_gdr, fabric_switch
from conftest import ROOT, flat_tasks, run_cases, without_provenance
from gate_rows import FilterModule as RowFilters

H100 = "NVIDIA H100 80GB HBM3"
GH200 = "NVIDIA GH200 480GB"
L40S = "NVIDIA L40S"
ROLE = ROOT / "roles" / "health_gate"
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


# ------------------------------------------------------------------------------------------- the role's wiring


def _tasks(name):
    return list(flat_tasks(yaml.safe_load((ROLE / "tasks" / name).read_text())))


def test_the_switches_default_to_null_and_their_specs_take_any_value_the_filter_then_judges():
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    for var in SWITCH_VARS.values():
        assert defaults[var] is None, var
        assert (spec[var]["type"], spec[var]["default"]) == ("raw", None), var


def test_main_decides_once_before_the_check_mode_summary_and_before_anything_changes():
    tasks = _tasks("main.yml")
    names = [t["name"] for t in tasks]
    decide_at = names.index("Decide the fabric gates from the node's profile")
    assert names.index("Assert the gate inputs") < decide_at < names.index("Show what the gate would run")
    assert decide_at < names.index("Start the run")  # start.yml cleans up a killed run's reservations
    fact = tasks[decide_at]["ansible.builtin.set_fact"]["__health_gate_fabric"]
    for var in [*SWITCH_VARS.values(), "health_gate_profile", "health_gate_profiles", "health_gate_gpus",
                "health_gate_gpu_count", "health_gate_rdma_expected_ports", "health_gate_rdma_devices"]:
        assert var in fact, var
    assert "gate_fabric(" in fact
    shown = " ".join(tasks[names.index("Show what the gate would run")]["ansible.builtin.debug"]["msg"])
    assert "__health_gate_fabric.rdma" in shown and "__health_gate_fabric.why" in shown
    assert "health_gate_rdma |" not in shown and "health_gate_nccl_pairs |" not in shown


def test_the_rdma_gate_runs_on_the_node_s_decision_and_the_pair_test_on_the_run_s():
    tasks = {t["name"]: t for t in _tasks("main.yml")}
    assert tasks["Gate the RDMA ports"]["when"] == "__health_gate_fabric.rdma"
    assert tasks["Gate NCCL between node pairs through Slurm"]["when"] == "__health_gate_np_on"
    start = {t["name"]: t for t in _tasks("start.yml")}["start | Decide the NCCL pair test for the run"]
    assert start["run_once"] is True
    decided = start["ansible.builtin.set_fact"]
    assert "health_gate_controller is not none" in decided["__health_gate_np_on"]
    assert "gate_fabric_nodes(hostvars, '__health_gate_fabric', 'nccl_pairs')" in decided["__health_gate_np_nodes"]
    pairs = _tasks("nccl_pairs.yml")
    paired = pairs[0]["ansible.builtin.set_fact"]["__health_gate_np_pairs"]
    assert paired.lstrip().startswith("{{ __health_gate_np_nodes |")
    assert pairs[-1]["when"] == "inventory_hostname in __health_gate_np_nodes"


def test_an_explicit_pair_test_without_a_controller_still_fails_the_assert():
    assert_task = _tasks("main.yml")[0]["ansible.builtin.assert"]
    condition = next(c for c in assert_task["that"] if "health_gate_controller" in c)
    assert "gate_fabric_switch('health_gate_nccl_pairs', inventory_hostname) is not true" in condition


def test_the_pair_run_requires_gdr_by_the_pair_s_decision_and_the_single_run_does_not():
    pair_run = next(t for t in _tasks("nccl_pair.yml") if "nccl_gate" in t)["nccl_gate"]
    assert pair_run["mode"] == "pair"
    assert pair_run["require_gdr"] == (
        "{{ __health_gate_pair | gate_fabric_pair_gdr(hostvars, '__health_gate_fabric') }}")
    single = next(t for t in _tasks("nccl.yml") if "nccl_gate" in t)["nccl_gate"]
    assert single["mode"] == "single" and "require_gdr" not in single


def test_the_rdma_row_is_the_decision_s_error_where_no_profile_could_tell():
    tasks = _tasks("rdma.yml")
    assert "rdma_gate" in tasks[0] and tasks[0]["when"] == "not __health_gate_fabric.error"
    assert "__health_gate_fabric.error" in tasks[1]["ansible.builtin.set_fact"]["__health_gate_rows"]


def test_the_container_labs_without_hcas_keep_their_fabric_gates_off():
    # Their declared H100s select h100_sxm_x8 (2 of 8 GPUs, by model): without the explicit false the RDMA gate and,
    # where Slurm runs, the NCCL pair test would run on containers with neither HCA nor nccl-tests.
    labs = {"inventory/lab/group_vars/gpu_nodes/lab.yml": True,
            "molecule/slurm_cluster/inventory/group_vars/gpu_nodes/lab.yml": True,
            "molecule/slurm_policy/inventory/group_vars/gpu_nodes/lab.yml": True,
            "molecule/pool_rebalance/inventory/group_vars/gpu_nodes/lab.yml": True,
            "molecule/k8s_cluster/inventory/group_vars/gpu_nodes.yml": False}
    for path, slurm in labs.items():
        lab = yaml.safe_load((ROOT / path).read_text())
        decision = fabric_defaults("lab", lab["gpu_discovery_override"], len(lab["gpu_discovery_override"]),
                                   lab.get("health_gate_profile"), lab.get("health_gate_profiles"),
                                   rdma=lab.get("health_gate_rdma"), nccl_pairs=lab.get("health_gate_nccl_pairs"))
        assert decision["profile"] == "h100_sxm_x8" and decision["rdma"] is False, path
        # k8s_cluster has no Slurm controller, so the pair test is off for the run whatever the profile says.
        assert decision["nccl_pairs"] is (not slurm), path
    # The health_gate lab names gh200_x4 (no ports) and asks for the pair test: as before issue 37.
    lab = yaml.safe_load((ROOT / "molecule/health_gate/inventory/group_vars/gpu_nodes/health_gate.yml").read_text())
    decision = fabric_defaults("lab", [{"name": "NVIDIA H100 80GB HBM3"}] * 2, 2, lab["health_gate_profile"],
                               lab["health_gate_profiles"], nccl_pairs=lab["health_gate_nccl_pairs"])
    assert (decision["rdma"], decision["nccl_pairs"], decision["require_gdr"]) == (False, True, False)


# ------------------------------------------------------------------------------------------- the role, run


NODES = {
    "fab-h100": {"gpu_discovery_gpus": gpus(H100, 8), "gpu_discovery_count": 8},
    "fab-gh200": {"gpu_discovery_gpus": gpus(GH200, 4), "gpu_discovery_count": 4},
    "fab-l40s": {"gpu_discovery_gpus": gpus(L40S, 4), "gpu_discovery_count": 4},
    "fab-h100-off": {"gpu_discovery_gpus": gpus(H100, 8), "gpu_discovery_count": 8,
                     "health_gate_nccl_pairs": "false", "health_gate_nccl_require_gdr": False},
}


def _inventory(nodes):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    return {"all": {"children": {"gpu_nodes": {"hosts": {n: dict(local, **v) for n, v in nodes.items()}}}}}


def test_check_mode_shows_each_node_s_fabric_gates_and_a_bad_switch_fails_naming_host_and_variable(tmp_path):
    nodes = dict(NODES, **{"fab-bad": {"gpu_discovery_gpus": gpus(H100, 8), "gpu_discovery_count": 8,
                                       "health_gate_rdma": "yes"}})
    play = [{"hosts": "gpu_nodes", "gather_facts": False,
             "roles": [{"role": "health_gate", "health_gate_controller": "ctl1"}]}]
    run = run_cases(tmp_path, play, _inventory(nodes), "--check", timeout=120)

    def shown(host):
        msg = next(r["msg"] for r in run.hosts[host]["results"] if r["task"].endswith("Show what the gate would run"))
        return dict(line.split(": ", 1) for line in msg[1:-1])

    h100 = shown("fab-h100")
    assert h100["rdma"] == "True, tcp pairs (iperf3): True"
    assert h100["nccl pairs through Slurm"].endswith("all_reduce_perf -b 8 -e 8G -f 2 -g 1, GPUDirect RDMA required")
    assert h100["fabric gates"] == "profile h100_sxm_x8 rdma_ports 8: HCAs, so the fabric gates are on"
    gh200 = shown("fab-gh200")
    assert gh200["rdma"].startswith("False,") and gh200["nccl pairs through Slurm"] == "False"
    l40s = shown("fab-l40s")
    assert l40s["rdma"].startswith("True (an ERROR row, not run: rdma: cannot tell whether fab-l40s has HCAs")
    assert "fails closed" in l40s["fabric gates"]
    off = shown("fab-h100-off")
    assert off["rdma"].startswith("True,") and off["nccl pairs through Slurm"] == "False"
    assert off["fabric gates"].endswith(
        "set in the inventory: health_gate_nccl_pairs: false, health_gate_nccl_require_gdr: false")
    # The bad value stops that node at the decision, before the summary and before anything could change.
    assert run.failed("fab-bad") and not run.failed("fab-h100", "fab-gh200", "fab-l40s", "fab-h100-off")
    assert "host fab-bad: health_gate_rdma must be true, false or null" in run.messages("fab-bad")
    assert [r["task"] for r in run.hosts["fab-bad"]["results"]][-1].endswith(
        "Decide the fabric gates from the node's profile")


def test_an_explicit_pair_test_without_a_controller_fails_and_a_profile_s_is_off(tmp_path):
    nodes = {"fab-h100": NODES["fab-h100"],
             "fab-asked": dict(NODES["fab-gh200"], health_gate_nccl_pairs="true")}
    play = [{"hosts": "gpu_nodes", "gather_facts": False,
             "roles": [{"role": "health_gate", "health_gate_controller": None}]}]
    run = run_cases(tmp_path, play, _inventory(nodes), "--check", timeout=120)
    assert run.failed("fab-asked") and "health_gate_nccl_pairs: true needs a Slurm controller" in run.messages(
        "fab-asked")
    assert not run.failed("fab-h100")
    msg = next(r["msg"] for r in run.hosts["fab-h100"]["results"] if r["task"].endswith("Show what the gate would run"))
    assert "nccl pairs through Slurm: False" in msg


def test_the_gate_runs_the_rdma_gate_on_an_hca_node_and_holds_a_node_with_no_profile(tmp_path):
    # A real run without Slurm: the H100 node's RDMA gate reads a real ibstat capture of an 8x NDR400 H100 node and
    # passes; the GH200 node gets no RDMA row; the L40S node, with no profile, is an ERROR on the RDMA row.
    ibstat = tmp_path / "ibstat.txt"
    capture = ROOT / "tests" / "fixtures" / "ibstat_h100_8x_ndr400_all_active_gpud.txt"
    ibstat.write_text(without_provenance(capture.read_text()))
    nodes = {n: dict(NODES[n], cluster_gpu_count=NODES[n]["gpu_discovery_count"])
             for n in ("fab-h100", "fab-gh200", "fab-l40s")}
    play = [{"hosts": "gpu_nodes", "gather_facts": False, "roles": [{
        "role": "health_gate", "health_gate_controller": None, "health_gate_gpu_checks": ["inventory"],
        "health_gate_tcp": False, "health_gate_nccl": False, "health_gate_retries": 0,
        "health_gate_rdma_status_command": ["cat", str(ibstat)],
        "health_gate_report_dir": str(tmp_path / "reports")}]}]
    run = run_cases(tmp_path, play, _inventory(nodes), "-e", "health_gate_run_id=fabric", timeout=300)
    assert not run.failed(*nodes), run.out[-4000:]
    report = json.loads((tmp_path / "reports" / "gate-fabric.json").read_text())
    rdma = {row["node"]: row for row in report["rows"] if row["gate"] == "rdma"}
    assert sorted(rdma) == ["fab-h100", "fab-l40s"]
    assert rdma["fab-h100"]["verdict"] == "PASS"
    assert rdma["fab-l40s"]["verdict"] == "ERROR"
    assert rdma["fab-l40s"]["reason"].startswith("rdma: cannot tell whether fab-l40s has HCAs: no threshold profile")
    verdicts = {name: row["verdict"] for name, row in report["nodes"].items()}
    assert verdicts == {"fab-h100": "PASS", "fab-gh200": "PASS", "fab-l40s": "ERROR"}
