"""Kubernetes-pool maintenance (module_utils/maint_k8s.py) and control-plane upgrades (maint_upgrade.py),
with the wiring in maintain.yml, maintain_k8s.yml and maintain_control_plane.yml."""

import pathlib

import pytest
import yaml
from ansible.module_utils.maint_k8s import drain_options, node_ready, node_step, outcome, schedule, step_annotation
from ansible.module_utils.maint_plan import normalize_policy
from ansible.module_utils.maint_upgrade import debian_upstream, installed_from_packages, plan, skip_errors, validate

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHA = "a" * 64


def load(rel):
    return yaml.safe_load((ROOT / rel).read_text())


# --- policy -----------------------------------------------------------------------------------------------


def test_mode_defaults_to_drain_and_takes_reservation():
    assert normalize_policy(None)[0]["mode"] == "drain"
    assert normalize_policy({"mode": "reservation"})[0]["mode"] == "reservation"


def test_unknown_mode_is_refused_naming_the_variable():
    _norm, errors = normalize_policy({"mode": "maint"})
    assert errors == ["cluster_maintenance.mode: must be one of drain, reservation, got 'maint'"]


# --- Kubernetes-pool nodes ----------------------------------------------------------------------------------


def test_drain_options_are_kubectl_drain_without_force_by_default():
    assert drain_options(600) == {"ignore_daemonsets": True, "delete_emptydir_data": True, "wait_timeout": 600,
                                  "force": False, "disable_eviction": False}
    assert drain_options(600, force=True)["force"] is True
    # Forced or not, pods are evicted (PodDisruptionBudgets hold), never deleted.
    assert drain_options(600, force=True)["disable_eviction"] is False


@pytest.mark.parametrize("bad", [-1, "600", True, None])
def test_drain_options_refuse_a_bad_timeout(bad):
    with pytest.raises(ValueError):
        drain_options(bad)


def test_pool_moves_and_maintenance_drain_kubernetes_nodes_the_same_way():
    batch = (ROOT / "roles/pool_executor/tasks/batch.yml").read_text()
    drain = (ROOT / "roles/maint_k8s/tasks/drain.yml").read_text()
    assert "k8s_drain_options(false)" in batch
    assert "k8s_drain_options(maint_k8s_force)" in drain
    assert "disable_eviction: true" not in batch + drain and "force: true" not in batch + drain


def test_schedule_takes_only_kubernetes_pool_nodes_in_wave_order():
    nodes = [{"name": "gpu01", "pool": "k8s"}, {"name": "gpu02", "pool": "slurm"}, {"name": "gpu03", "pool": "k8s"}]
    got = schedule({"waves": [["gpu01", "gpu02"], ["gpu02"], ["gpu03"]]}, nodes)
    assert got == {"order": ["gpu01", "gpu03"], "serial": [1, 1]}
    assert schedule({"waves": [["gpu02"]]}, nodes) == {"order": [], "serial": [1]}


def test_the_slurm_schedule_hands_kubernetes_nodes_over_only_where_kubernetes_runs():
    from maint import maint_schedule

    nodes = [{"name": "gpu01", "pool": "k8s"}, {"name": "gpu02", "pool": "slurm"}]
    plan = {"waves": [["gpu01", "gpu02"]], "left_out": []}
    without = maint_schedule(plan, nodes)
    assert without["order"] == ["gpu02"] and [x["node"] for x in without["left_out"]] == ["gpu01"]
    with_k8s = maint_schedule(plan, nodes, True)
    assert with_k8s["order"] == ["gpu02"] and with_k8s["left_out"] == []


def test_step_lives_in_the_label_a_kubelet_cannot_write_and_the_run_in_the_annotation():
    from ansible.module_utils.maint_k8s import may_uncordon, step_labels

    value = step_annotation("drain", "r1")
    assert value == "gpufleet:maint,to=k8s,run=r1,drain"
    node = {"metadata": {"annotations": {"gpufleet.io/maint": step_annotation("applied", "r1")},
                         "labels": step_labels("applied")},
            "spec": {"unschedulable": True}}
    assert step_labels("applied") == {"node-restriction.kubernetes.io/gpufleet-maint": "applied"}
    assert node_step(node) == {"step": "applied", "run_id": "r1", "cordoned": True}
    assert may_uncordon(node)
    # a run killed after the label and before the annotation still finds its step (the run is then unknown)
    assert node_step({"metadata": {"labels": step_labels("drain")}, "spec": {"unschedulable": True}}) == {
        "step": "drain", "run_id": None, "cordoned": True}
    assert step_labels(None) == {"node-restriction.kubernetes.io/gpufleet-maint": None}
    with pytest.raises(ValueError):
        step_annotation("gated", "r1")
    with pytest.raises(ValueError):
        step_labels("gated")


@pytest.mark.parametrize("step", ["drain", "applied"])
def test_a_maintenance_annotation_the_nodes_kubelet_forged_lifts_no_admins_cordon(step):
    # issue 36: an admin cordoned the node; its kubelet (which may write any annotation on its own Node) wrote
    # maintenance's annotation, so that its next PASS would uncordon it
    node = {"metadata": {"annotations": {"gpufleet.io/maint": step_annotation(step, "r1")}, "labels": {}},
            "spec": {"unschedulable": True}}
    assert node_step(node) == {"step": None, "run_id": None, "cordoned": True}
    from ansible.module_utils.maint_k8s import may_uncordon

    assert not may_uncordon(node)
    # a label value maintenance never writes is no step either
    node["metadata"]["labels"] = {"node-restriction.kubernetes.io/gpufleet-maint": "done"}
    assert node_step(node)["step"] is None and not may_uncordon(node)


def test_an_admins_cordon_or_annotation_is_not_a_maintenance_step():
    node = {"metadata": {"annotations": {"gpufleet.io/maint": "admin: fan"}}, "spec": {"unschedulable": True}}
    assert node_step(node) == {"step": None, "run_id": None, "cordoned": True}
    assert node_step(None) == {"step": None, "run_id": None, "cordoned": False}


def test_ready_needs_condition_ready_true():
    assert node_ready({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert not node_ready({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})
    assert not node_ready({"status": {}})


def test_outcome_resumed_only_when_the_gate_passed_and_uncordoned():
    open_node = {"spec": {}}
    cordoned = {"spec": {"unschedulable": True}}
    assert outcome({"verdict": "PASS"}, open_node) == "resumed"
    assert outcome({"verdict": "PASS"}, cordoned) == "error"  # GPUs not allocatable yet: held
    assert outcome({"verdict": "FAIL"}, cordoned) == "failed"
    assert outcome(None, open_node) == "error"
    assert outcome("PASS", None) == "error"


# --- control-plane upgrades ---------------------------------------------------------------------------------


def slurm_change(version, **extra):
    return {"kind": "packages", "packages": {"slurmd": version, **extra}}


def test_debian_versions_give_the_upstream_release():
    assert debian_upstream("24.11.5-1") == "24.11.5"
    assert debian_upstream("22.05.8-4+deb12u3") == "22.05.8"
    assert debian_upstream("1:23.02.7-1") == "23.02.7"
    assert debian_upstream("latest") is None
    assert installed_from_packages({"slurmctld": [{"version": "22.05.8-4+deb12u3"}]}, "slurmctld") == "22.05.8"
    assert installed_from_packages({}, "slurmctld") is None


def test_no_upgrade_is_no_error_and_no_phase():
    assert validate(None, None) == [] and validate({}, None) == []
    assert plan(None, None, ["db1"], ["ctl1"], [])["phases"] == []


def test_slurm_skip_past_the_window_is_refused_naming_the_variable():
    upgrade = {"slurm": {"version": "24.11.5-1"}}
    assert validate(upgrade, slurm_change("24.11.5-1")) == []
    errors = skip_errors(upgrade, "22.05.8")
    assert len(errors) == 1 and errors[0].startswith("maint_upgrade.slurm.version: Slurm 24.11 upgrades in place "
                                                     "only from 23.02, 23.11, 24.05")
    assert skip_errors(upgrade, "23.02.7") == []
    assert "downgrades" in skip_errors({"slurm": {"version": "22.05.8-4"}}, "23.02.7")[0]


def test_slurm_upgrade_waves_must_install_slurmd_at_the_same_version():
    upgrade = {"slurm": {"version": "24.11.5-1"}}
    assert validate(upgrade, slurm_change("24.11.4-1")) == [
        "maint_change.packages.slurmd: must be '24.11.5-1' (maint_upgrade.slurm.version), got '24.11.4-1'"]
    assert validate(upgrade, {"kind": "reboot"})[0].startswith("maint_change: a Slurm upgrade's waves upgrade slurmd")


@pytest.mark.parametrize("upgrade,needle", [
    ({"slurm": {"version": 24.11}}, "maint_upgrade.slurm.version: must be the Slurm packages' version"),
    ({"slurm": {"version": "24.11.5-1", "target": "x"}}, "maint_upgrade.slurm.target: unknown key"),
    ({"slurm": {"version": "24.11.5-1"}, "k8s": {"version": "v1.35.0+k3s1", "sha256": SHA}}, "exactly one of"),
    ({"k8s": {"version": "v1.35.0+k3s1"}}, "maint_upgrade.k8s.sha256: the sha256"),
    ({"k8s": {"version": "1.35", "sha256": SHA}}, "maint_upgrade.k8s.version: must be a k3s release tag"),
    ({"kube": {}}, "maint_upgrade.kube: unknown key"),
    ("24.11", "maint_upgrade: must be a mapping"),
])
def test_malformed_upgrade_is_refused_naming_the_variable(upgrade, needle):
    errors = validate(upgrade, slurm_change("24.11.5-1"))
    assert any(needle in e for e in errors), errors


def test_kubeadm_control_plane_upgrade_is_refused_not_half_run():
    errors = validate({"k8s": {"version": "v1.35.0+k3s1", "sha256": SHA}}, None, distribution="kubeadm")
    assert errors and errors[0].startswith("cluster_k8s_distribution: 'kubeadm'")


def test_kubernetes_minor_skip_is_refused_and_one_minor_is_planned_server_by_server():
    upgrade = {"k8s": {"version": "v1.35.0+k3s1", "sha256": SHA}}
    assert validate(upgrade, None) == []
    assert "skips a minor version" in skip_errors(upgrade, "v1.33.4+k3s1")[0]
    assert skip_errors(upgrade, "v1.34.1+k3s1") == []
    got = plan(upgrade, "v1.34.1+k3s1", [], [], ["k8s2", "k8s1"])
    assert [p["phase"] for p in got["phases"]] == ["control_plane", "control_plane"]
    assert [p["nodes"] for p in got["phases"]] == [["k8s2"], ["k8s1"]]  # inventory order, one at a time
    assert got["sha256"] == SHA and got["target"] == "v1.35.0+k3s1"


def test_slurm_plan_is_slurmdbd_with_its_backup_then_every_controller_together():
    got = plan({"slurm": {"version": "24.11.5-1"}}, "24.05.8", ["db1"], ["ctl1", "ctl2"], [])
    assert got["phases"] == [{"phase": "slurmdbd", "nodes": ["db1"], "backup_database": True},
                             {"phase": "slurmctld", "nodes": ["ctl1", "ctl2"], "backup_state": True}]
    assert got["target"] == "24.11.5" and got["package_version"] == "24.11.5-1"


# --- the playbooks --------------------------------------------------------------------------------------------


def test_maintain_imports_the_control_plane_before_the_waves_and_kubernetes_after():
    plays = load("playbooks/maintain.yml")
    names = [p.get("ansible.builtin.import_playbook") or p.get("hosts") for p in plays]
    assert names.index("maintain_control_plane.yml") < names.index("maint_wave_nodes")
    assert names.index("maint_wave_nodes") < names.index("maintain_k8s.yml") < len(names) - 1
    wave = next(p for p in plays if p.get("hosts") == "maint_wave_nodes")
    roles = [r["role"] for r in wave["roles"]]
    assert roles.index("maint_reservation") < roles.index("maint_executor")
    assert "reservation" in wave["roles"][roles.index("maint_reservation")]["when"]


def test_control_plane_plays_run_in_slurms_order_and_k3s_servers_one_at_a_time():
    plays = load("playbooks/maintain_control_plane.yml")
    assert [p["hosts"] for p in plays] == ["localhost", "slurm_dbd", "slurm_controller", "k8s_server"]
    assert plays[0]["roles"][0]["role"] == "maint_upgrade"
    assert plays[3]["serial"] == 1 and plays[3]["roles"][0]["role"] == "k3s_server"
    for play in plays[1:]:
        assert "maint_upgrade_plan.component" in play["roles"][0]["when"]


def test_kubernetes_wave_gates_before_the_gate_uncordons_and_records_after():
    play = load("playbooks/maintain_k8s.yml")[0]
    roles = [r["role"] for r in play["roles"]]
    assert roles == ["maint_k8s", "gpu_discovery", "health_gate", "maint_k8s_result"]
    gate = play["roles"][2]
    assert gate["health_gate_controller"] is None and gate["health_gate_nccl_pairs"] is False


def test_dump_file_is_root_only_before_mysqldump_writes_it():
    tasks = load("roles/maint_slurmdbd_upgrade/tasks/main.yml")
    block = next(t for t in tasks if t["name"] == "Upgrade slurmdbd")["block"]
    names = [t["name"] for t in block]
    assert names.index("Stop slurmdbd") < names.index("Dump the accounting database on the primary") \
        < names.index("Install slurmdbd at the new version") < names.index("Start the primary slurmdbd")
    dump = next(t for t in block if t["name"] == "Dump the accounting database on the primary")["block"]
    touch = next(t for t in dump if t["name"] == "Create the dump file, readable by root only")
    assert touch["ansible.builtin.file"]["mode"] == "0600"
    mkdir = next(t for t in dump if t["name"] == "Create the backup directory")
    assert mkdir["ansible.builtin.file"]["mode"] == "0700"
    names = [t["name"] for t in dump]
    assert names.index("Create the dump file, readable by root only") \
        < names.index("Dump the accounting database while slurmdbd is stopped")


def test_filter_checks_the_shape_first_and_the_skip_once_the_version_running_now_is_known():
    from maint_ops import maint_ctlplane_errors

    upgrade = {"slurm": {"version": "24.11.5-1"}}
    assert maint_ctlplane_errors(upgrade, slurm_change("24.11.5-1"), "k3s", ["slurmd"], None) == []
    assert "skips" in maint_ctlplane_errors(upgrade, slurm_change("24.11.5-1"), "k3s", ["slurmd"], "22.05.8")[0]
    errors = maint_ctlplane_errors(upgrade, {"kind": "reboot"}, "k3s", ["slurmd"], "22.05.8")
    assert errors[0].startswith("maint_change:")


def test_refusal_names_a_release_the_installed_one_can_reach_in_one_step():
    from ansible.module_utils.maint_plan import slurm_upgrade_errors

    # 24.05 takes only 23.11 and 23.02, so from 22.05 the next step is 23.11, not 24.05.
    assert slurm_upgrade_errors("22.05.8", "24.11.5")[0].endswith("upgrade through 23.11 first")
    assert slurm_upgrade_errors("23.02.7", "25.05.1")[0].endswith("upgrade through 24.11 first")
    assert slurm_upgrade_errors("23.11.1", "24.11.5") == []
