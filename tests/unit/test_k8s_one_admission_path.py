"""One admission path on both schedulers (issue 33, "no path ever admits a Kubernetes node").

Before: site.yml gated only the nodes joining Slurm (slurm_held, pool_joined), so a node that joined Kubernetes held
by its taint was never gated and stayed held; gate.yml with a pool policy saw an empty k8s_agent (only the planner
filled it), so it gated the Kubernetes pool's nodes as Slurm nodes and its quota play stopped on an empty node list.

Now: k8s_pool_labels hands the nodes that wait for their gate (held, no verdict this run, no fail taint) to the
in-memory group k8s_held, which playbooks/k8s.yml gates in the same run, before the admission play; gate.yml reads
which pool holds each node (pool_planner's ``live`` entry point, nothing planned) and gates each pool's nodes in a play
of its own, the Kubernetes pool's with no Slurm controller. The lab proof on a real API server is molecule/k8s_cluster.
"""

import pathlib
import sys

import pytest
import yaml
from conftest import ansible_env, run_plays

from module_utils.k8s_pool import node_admission

ROOT = pathlib.Path(__file__).resolve().parents[2]
ADMITTED = "node-restriction.kubernetes.io/gpufleet-admitted"
HOLD = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}
POOL = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}
FAIL = {"key": "gpufleet.io/gate", "value": "fail", "effect": "NoSchedule"}
KW = {"k8s_pool": "kubernetes", "label_key": "gpufleet.io/pool", "hold_taint": HOLD, "pool_taint": POOL,
      "fail_taint": FAIL, "admitted_label": ADMITTED}


def node(name, *, admitted=False, taints=()):
    labels = {"gpufleet.io/pool": "kubernetes", **({ADMITTED: "true"} if admitted else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": list(taints)}, "status": {"allocatable": {"nvidia.com/gpu": "2"}}}


@pytest.mark.parametrize(("obj", "verdict", "pending"), [
    (node("gpu01", taints=[POOL, HOLD]), None, True),               # joined held, never gated: waits for its gate
    (node("gpu02", taints=[POOL, HOLD, FAIL]), None, False),        # the gate failed it: waits for gate.yml
    (node("gpu03", admitted=True, taints=[POOL]), None, False),     # admitted earlier
    (node("gpu04", taints=[POOL, HOLD]), "FAIL", False),            # gated now
    (node("gpu05", taints=[POOL, HOLD]), "ERROR", False),           # gated now (the next run retries it)
    (node("gpu06", taints=[POOL, HOLD]), "PASS", False),            # gated now (held only for its GPUs)
])
def test_only_a_held_node_without_verdict_or_fail_taint_waits_for_its_gate(obj, verdict, pending):
    assert node_admission(obj, 2, [], verdict, **KW)["pending"] is pending


def run(tmp, plays, inventory):
    result = run_plays(tmp, plays, inventory, env=ansible_env(ANSIBLE_LOCALHOST_WARNING="false"))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return result.stdout


def test_only_live_nodes_waiting_for_their_gate_join_the_group_that_k8s_yml_gates(tmp_path):
    nodes = [node("gpu01", taints=[POOL, HOLD]), node("gpu02", taints=[POOL, HOLD, FAIL]),
             node("gpu03", admitted=True, taints=[POOL])]
    hosts = ["gpu01", "gpu02", "gpu03", "gpu04"]  # gpu04: not registered yet
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": sys.executable}},
                         "children": {"k8s_agent": {"hosts": {h: {"cluster_gpu_count": 2,
                                                                   "ansible_connection": "local"} for h in hosts}}}}}
    plays = [{
        "name": "Hold and label", "hosts": "localhost", "gather_facts": False,
        "vars_files": [str(ROOT / "playbooks/vars/k8s_versions.yml")],
        "tasks": [{"name": "Labels", "ansible.builtin.import_role": {"name": "k8s_pool_labels"}, "vars": {
            "k8s_pool_labels_apply": False, "k8s_pool_labels_manifest_dir": str(tmp_path / "out"),
            "k8s_pool_labels_model": {"nodes": nodes, "validator_pods": []}}}],
    }, {
        "name": "What k8s.yml gates", "hosts": "k8s_held", "gather_facts": False,
        "tasks": [{"name": "Name the gated node", "ansible.builtin.debug": {"msg": "GATED {{ inventory_hostname }}"}}],
    }]
    out = run(tmp_path, plays, inventory)
    # A render from the model (apply false: k8s_preflight.yml, k8s_render.yml) hands no node to a gate: its modelled
    # nodes are no inventory hosts, and add_host would make them up (the preflight's gpufleet-model-held came back
    # UNREACHABLE in k8s.yml's gate play). molecule/k8s_cluster shows the live pass filling the group.
    assert [line for line in out.splitlines() if "GATED " in line] == [], out
    tasks = yaml.safe_load((ROOT / "roles/k8s_pool_labels/tasks/main.yml").read_text())
    hand = next(t for t in tasks if "ansible.builtin.add_host" in t)
    assert hand["ansible.builtin.add_host"]["groups"] == ["{{ k8s_pool_labels_pending_group }}"]
    assert hand["loop"] == "{{ k8s_pool_labels_pending }}"
    assert "k8s_pool_labels_apply | bool" in hand["when"]
    facts = next(t for t in tasks if "k8s_pool_labels_pending" in t.get("ansible.builtin.set_fact", {}))
    assert "selectattr('value.pending')" in facts["ansible.builtin.set_fact"]["k8s_pool_labels_pending"]


def plays(name):
    return yaml.safe_load((ROOT / "playbooks" / name).read_text())


def test_k8s_yml_gates_the_held_nodes_after_the_hold_and_before_the_add_ons_and_the_admission():
    names = [p.get("name") for p in plays("k8s.yml")]
    gate = next(p for p in plays("k8s.yml") if p.get("hosts") == "health_gate_k8s_idle")
    at = names.index(gate["name"])
    hold = "Label, taint and hold the pool's nodes (admission read live, with this run's gate verdicts)"
    assert names.index(hold) < at
    assert at < names.index("Install the cluster add-ons")
    assert at < names.index("Admit the nodes the gate passed once their GPUs are validated and allocatable")
    role = gate["roles"][0]
    assert role["role"] == "health_gate"
    # A Kubernetes node is admitted or tainted on its Node; no Slurm controller drains or resumes it.
    assert role["health_gate_controller"] is None


def test_gate_yml_reads_the_live_pools_and_gates_each_pool_with_its_own_scheduler():
    book = plays("gate.yml")
    # the live read runs from the GPU nodes of the run (once), so a --limit without localhost still reads the pools
    read = next(p for p in book if p.get("tasks") and p["tasks"][0].get("ansible.builtin.import_role", {}).get(
        "tasks_from") == "live")
    assert read["hosts"] == "gpu_nodes" and read["tasks"][0]["run_once"] is True
    assert read["tasks"][0]["ansible.builtin.import_role"] == {"name": "pool_planner", "tasks_from": "live"}
    slurm = next(p for p in book if p.get("hosts") == "gpu_nodes:!k8s_agent" and p.get("roles"))
    k8s = next(p for p in book if p.get("hosts") == "health_gate_k8s_idle")
    assert book.index(read) < book.index(slurm) < book.index(k8s)
    # The admin drains the operator names are handed over on the Slurm pool's nodes, after the live read, before
    # the Slurm pool's gate (issue 37).
    adopt = next(p for p in book if p.get("tasks") and p["tasks"][0].get("ansible.builtin.import_role", {}).get(
        "tasks_from") == "adopt")
    assert adopt["hosts"] == "gpu_nodes:!k8s_agent" and book.index(read) < book.index(adopt) < book.index(slurm)
    assert [r["role"] for r in slurm["roles"]] == ["health_gate"]
    assert k8s["roles"][0]["role"] == "health_gate" and k8s["roles"][0]["health_gate_controller"] is None


def test_the_live_read_plans_nothing():
    live = yaml.safe_load((ROOT / "roles/pool_planner/tasks/live.yml").read_text())
    text = (ROOT / "roles/pool_planner/tasks/live.yml").read_text()
    assert "pool_plan(" not in text and "pool_planner_nodes" not in text
    tasks = live[0]["block"]
    assert tasks[0]["ansible.builtin.import_tasks"] == "read.yml"
    assert tasks[1]["ansible.builtin.add_host"]["groups"] == ["k8s_agent"]


def _busy_then_gate(book, source):
    """The play that runs health_gate's k8s_busy on ``source`` and the gate play after it."""
    step = {"name": "health_gate", "tasks_from": "k8s_busy"}
    busy = next(p for p in book if p.get("hosts") == source and p.get("tasks")
                and p["tasks"][0].get("ansible.builtin.import_role") == step)
    gate = next(p for p in book if p.get("hosts") == "health_gate_k8s_idle")
    return book.index(busy), book.index(gate)


def test_a_kubernetes_node_with_gpu_work_is_left_out_before_each_kubernetes_gate_play():
    # issue 33: "gate.yml stress-tests admitted Kubernetes nodes while their pods run"
    defaults = yaml.safe_load((ROOT / "roles/health_gate/defaults/main.yml").read_text())
    assert defaults["health_gate_k8s_idle_group"] == "health_gate_k8s_idle"
    for name, source in (("gate.yml", "k8s_agent"), ("k8s.yml", "k8s_held")):
        busy, gate = _busy_then_gate(plays(name), source)
        assert busy + 1 == gate, name
    tasks = yaml.safe_load((ROOT / "roles/health_gate/tasks/k8s_busy.yml").read_text())
    decide = next(t for t in tasks if "ansible.builtin.set_fact" in t)["ansible.builtin.set_fact"]
    assert "node_stack_k8s_gpu_use" in decide["health_gate_k8s_use"]
    group = next(t for t in tasks if "ansible.builtin.group_by" in t)
    assert group["ansible.builtin.group_by"]["key"] == "{{ health_gate_k8s_idle_group }}"
    # only a node whose state was read and that runs no GPU pod is gated; an unreadable one counts as busy
    assert group["when"] == ("health_gate_k8s_use.read and health_gate_k8s_use.known and "
                             "health_gate_k8s_use.gpu_pods | length == 0")
