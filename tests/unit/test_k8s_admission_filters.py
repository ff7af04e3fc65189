"""Filters that feed k8s_pool_labels and health_gate: this run's gate verdicts and the GPU count per inventory host."""

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given, settings
from hypothesis import strategies as st
from k8s import k8s_gate_verdicts, k8s_gpu_admission_errors, k8s_pool_admissions

HOLD = {"key": "gpufleet.io/hold", "value": "gate", "effect": "NoSchedule"}
KW = {"k8s_pool": "kubernetes", "label_key": "gpufleet.io/pool", "hold_taint": HOLD}


def node(name):
    return {"metadata": {"name": name, "labels": {}}, "spec": {"taints": [HOLD], "unschedulable": True},
            "status": {"allocatable": {"nvidia.com/gpu": "2"}}}


def test_gate_verdicts_keep_only_nodes_the_gate_judged():
    hostvars = {"gpu01": {"health_gate_verdict": {"verdict": "PASS", "node": "gpu01"}},
                "gpu02": {"cluster_gpu_count": 2}, "gpu03": {"health_gate_verdict": {"verdict": "FAIL"}}}
    verdicts = k8s_gate_verdicts(["gpu01", "gpu02", "gpu03"], hostvars, "health_gate_verdict")
    assert verdicts == {"gpu01": "PASS", "gpu03": "FAIL"}


def test_pass_without_a_gpu_count_names_the_host_and_the_variable():
    with pytest.raises(AnsibleFilterError, match="gpu01: host variable cluster_gpu_count"):
        k8s_pool_admissions(["gpu01"], [node("gpu01")], {"gpu01": {}}, "cluster_gpu_count", [], {"gpu01": "PASS"},
                            **KW)
    with pytest.raises(AnsibleFilterError, match="gpu01: host variable cluster_gpu_count"):
        k8s_gpu_admission_errors(node("gpu01"), "gpu01", {"gpu01": {}}, "cluster_gpu_count")


def test_modelled_node_outside_the_inventory_needs_no_count_without_a_verdict():
    out = k8s_pool_admissions(["model"], [node("model")], {"gpu01": {}}, "cluster_gpu_count", [], {}, **KW)
    model = out["nodes"]["model"]
    assert HOLD["key"] in [t["key"] for t in model["taints_add"]] and not model["admitted"]


def test_pass_with_the_count_but_no_validator_stays_held():
    errors = k8s_gpu_admission_errors(node("gpu01"), "gpu01", {"gpu01": {"cluster_gpu_count": 2}}, "cluster_gpu_count")
    assert errors == ["gpu01: no GPU Operator validator pod on the node"]


def test_node_names_come_from_the_inventory_the_variable_then_the_inventory_name_never_the_hostname():
    # issue 33: one source of the Node name, the inventory; gpu02's FQDN hostname does not rename its Node
    from k8s import k8s_node_names

    hostvars = {"gpu01": {"cluster_k8s_node_name": "GPU01.lab.example",
                          "ansible_facts": {"nodename": "gpu01", "hostname": "gpu01"}},
                "gpu02": {"ansible_facts": {"nodename": "gpu02", "hostname": "gpu02"},
                          "cluster_k8s_node_name": "gpu02.lab.example"},
                "GPU03": {}}
    assert k8s_node_names(["gpu01", "gpu02", "GPU03", "model"], hostvars) == {
        "gpu01": "gpu01.lab.example", "gpu02": "gpu02.lab.example", "GPU03": "gpu03", "model": "model"}


def test_a_hostname_that_differs_from_the_inventory_name_refuses_that_host_alone_naming_field_and_both_values():
    # issue 36: the host is refused (held), the rest of the map stands
    from k8s import k8s_node_name, k8s_node_name_refusals, k8s_node_names

    hostvars = {"gpu01": {"ansible_facts": {"nodename": "gpu01"}},
                "gpu02": {"ansible_facts": {"nodename": "gpu02.lab.example"}}}
    assert k8s_node_names(["gpu01", "gpu02"], hostvars) == {"gpu01": "gpu01"}
    refused = k8s_node_name_refusals(["gpu01", "gpu02"], hostvars)
    assert list(refused) == ["gpu02"]
    assert refused["gpu02"]["name"] == "gpu02" and refused["gpu02"]["field"] == "ansible_facts.nodename"
    assert ("gpu02: ansible_facts.nodename 'gpu02.lab.example' (the hostname k3s and the kubelet register) "
            "differs from its Node name 'gpu02' (the inventory name; cluster_k8s_node_name is not set)"
            ) in refused["gpu02"]["reason"]
    with pytest.raises(AnsibleFilterError, match=r"gpu02: ansible_facts\.nodename 'gpu02\.lab\.example'"):
        k8s_node_name("gpu02", hostvars)
    assert k8s_node_name("gpu01", hostvars) == "gpu01"


def test_the_hostname_cross_check_applies_only_where_the_fact_is_known():
    # a fresh host (no facts gathered yet) is named by the inventory alone
    from k8s import k8s_node_names

    assert k8s_node_names(["gpu01", "gpu02"], {"gpu01": {}, "gpu02": {"ansible_facts": {}}}) == {
        "gpu01": "gpu01", "gpu02": "gpu02"}


def test_two_hosts_whose_variable_names_one_node_are_refused_naming_both_hosts():
    from k8s import k8s_node_names

    hostvars = {"gpu01": {"cluster_k8s_node_name": "node-a"}, "gpu02": {"cluster_k8s_node_name": "node-a.lab"}}
    with pytest.raises(AnsibleFilterError, match=r"gpu01 and gpu02 both map to Kubernetes Node name 'node-a' "
                                                 r"\(gpu01: cluster_k8s_node_name 'node-a'; "
                                                 r"gpu02: cluster_k8s_node_name 'node-a.lab'\)"):
        k8s_node_names(["gpu01", "gpu02"], hostvars)


def test_a_node_registered_under_its_fqdn_is_found_from_the_short_inventory_name_unless_ambiguous():
    live = [node("gpu01.lab.example"), node("gpu02.a.example"), node("gpu02.b.example")]
    out = k8s_pool_admissions(["gpu01", "gpu02"], live, {}, "cluster_gpu_count", [], {}, None, **KW)
    assert out["nodes"]["gpu01"]["name"] == "gpu01.lab.example"
    assert out["unregistered"] == ["gpu02"]


def test_two_hosts_reporting_one_hostname_are_refused_naming_both_hosts():
    # cloned images: both kernels still say the image's hostname
    from k8s import k8s_node_name_refusals, k8s_node_names

    hostvars = {"gpu01": {"ansible_facts": {"nodename": "ubuntu-2204"}},
                "gpu02": {"ansible_facts": {"nodename": "ubuntu-2204"}}}
    assert k8s_node_names(["gpu01", "gpu02"], hostvars) == {}
    refused = k8s_node_name_refusals(["gpu01", "gpu02"], hostvars)
    assert {h: r["name"] for h, r in refused.items()} == {"gpu01": "gpu01", "gpu02": "gpu02"}
    assert refused["gpu01"]["reason"].startswith("gpu01: ansible_facts.nodename 'ubuntu-2204'")
    assert refused["gpu02"]["reason"].startswith("gpu02: ansible_facts.nodename 'ubuntu-2204'")


def test_a_host_reporting_another_inventory_hosts_name_is_refused_even_alone():
    # gpu02 claims gpu01's hostname: its drain/uncordon would land on gpu01's Node
    from k8s import k8s_node_name_refusals, k8s_node_names

    hostvars = {"gpu01": {"ansible_facts": {"nodename": "gpu01.lab.example"}},
                "gpu02": {"ansible_facts": {"nodename": "gpu01.lab.example"}}}
    assert k8s_node_names(["gpu02"], hostvars) == {}
    assert k8s_node_names(["gpu01", "gpu02"], hostvars) == {}  # gpu01's FQDN differs from its inventory name too
    refusal = k8s_node_name_refusals(["gpu02"], hostvars)["gpu02"]
    assert refusal["name"] == "gpu02" and refusal["value"] == "gpu01.lab.example"
    assert refusal["reason"].startswith("gpu02: ansible_facts.nodename 'gpu01.lab.example' is the name of "
                                        "inventory host gpu01, not of gpu02")


@pytest.mark.parametrize("reported", ["gpu01\nNodeName=ALL", "gpu01 #", 'gpu01"', "gpu_01", "-gpu01", "a" * 254])
def test_a_reported_hostname_that_is_no_dns_subdomain_is_refused_naming_the_field(reported):
    from k8s import k8s_node_name_refusals, k8s_node_names

    hostvars = {"gpu01": {"ansible_facts": {"nodename": reported}}}
    assert k8s_node_names(["gpu01"], hostvars) == {}
    assert k8s_node_name_refusals(["gpu01"], hostvars)["gpu01"]["reason"].startswith("gpu01: ansible_facts.nodename")


def test_node_names_are_unchanged_for_a_fleet_whose_hosts_report_their_own_names():
    from k8s import k8s_node_names

    hostvars = {f"gpu0{i}": {"ansible_facts": {"nodename": f"gpu0{i}"}} for i in range(1, 5)}
    assert k8s_node_names(list(hostvars), hostvars) == {h: h for h in hostvars}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["gpu01", "gpu02", "gpu03", "gpu01.lab.example", "ubuntu-2204", None]),
                min_size=3, max_size=3))
def test_any_mix_of_reported_hostnames_never_maps_a_host_to_another_hosts_node(reported):
    from k8s import k8s_node_names

    hosts = ["gpu01", "gpu02", "gpu03"]
    hostvars = {h: {"ansible_facts": {"nodename": r}} if r else {} for h, r in zip(hosts, reported, strict=True)}
    from k8s import k8s_node_name_refusals

    names = k8s_node_names(hosts, hostvars)  # a report never fails the run (issue 36): it refuses its host alone
    refused = k8s_node_name_refusals(hosts, hostvars)
    assert sorted([*names, *refused]) == hosts and not set(names) & set(refused), (names, refused)
    assert all(names[h] == h for h in names), names  # never a name from the report, never another host's
    assert all(refused[h]["name"] == h for h in refused), refused


def test_a_host_whose_variable_is_set_but_whose_hostname_is_another_hosts_is_refused():
    from k8s import k8s_node_name_refusals, k8s_node_names

    hostvars = {"gpu01": {}, "gpu02": {"cluster_k8s_node_name": "gpu02", "ansible_facts": {"nodename": "gpu01"}}}
    assert k8s_node_names(["gpu02"], hostvars) == {}
    assert k8s_node_name_refusals(["gpu02"], hostvars)["gpu02"]["reason"].startswith(
        "gpu02: ansible_facts.nodename 'gpu01' is the name of inventory host gpu01")


def _node_tasks(path):
    """Every kubernetes.core task (and k8s_node_patch) of a role file, blocks walked, with the Node names it passes."""
    import yaml

    def walk(items):
        for task in items or []:
            yield from walk(task.get("block"))
            yield from walk(task.get("rescue"))
            yield from walk(task.get("always"))
            for key, args in task.items():
                if not (key.startswith("kubernetes.core.") or key == "k8s_node_patch") or not isinstance(args, dict):
                    continue
                names = []
                if key.endswith(("k8s_drain", "k8s_taint", "k8s_node_patch")) or args.get("kind") == "Node":
                    names.append(args.get("name"))
                names += [s for s in args.get("field_selectors") or [] if "spec.nodeName" in s]
                definition = args.get("definition") or {}
                if isinstance(definition, dict) and definition.get("kind") == "Node":
                    names.append((definition.get("metadata") or {}).get("name"))
                yield task.get("name"), [str(n) for n in names if n is not None]

    return list(walk(yaml.safe_load(path.read_text())))


HOSTNAME_WORDS = ("ansible_facts", "ansible_hostname", "ansible_nodename")


def test_every_role_names_a_node_through_the_inventory_mapping_never_the_bare_host_or_its_hostname():
    # issue 33: one source of the Node name; health_gate used inventory_hostname, the k3s agent upgrade the hostname
    import pathlib

    import yaml

    root = pathlib.Path(__file__).resolve().parents[2]
    files = sorted(root.glob("roles/*/tasks/*.yml")) + sorted(root.glob("roles/*/handlers/*.yml"))
    wrong = []
    for path in files:
        for task, names in _node_tasks(path):
            wrong += [f"{path.relative_to(root)}: {task}: {name}" for name in names
                      if any(word in name for word in HOSTNAME_WORDS)
                      or ("inventory_hostname" in name and "node_name" not in name)]
        text = path.read_text()
        for line in text.splitlines():
            key = line.strip().split(":", 1)[0]
            if key.endswith("node_name") and any(word in line for word in HOSTNAME_WORDS):
                wrong.append(f"{path.relative_to(root)}: {line.strip()}")
    for path in sorted(root.glob("roles/*/defaults/main.yml")):
        for key, value in (yaml.safe_load(path.read_text()) or {}).items():
            named = key.endswith(("k8s_node_name", "k8s_node_names", "agent_node_name"))
            if named and "k8s_node_names(" not in str(value) and "k8s_node_name(" not in str(value):
                wrong.append(f"{path.relative_to(root)}: {key}: {value}")
    assert not wrong, "\n".join(wrong)


def test_a_node_reporting_another_nodes_hostname_is_held_alone_and_the_claimed_node_is_untouched():
    # issue 36: kgpu2 reports kgpu1's hostname. The run goes on: kgpu2's own Node (its inventory name, never the
    # reported one) gets the hold taint, loses its admission record and carries the reason naming the field and the
    # values; kgpu1 (admitted, cordoned by an admin) and kgpu3 get no change at all.
    from ansible.module_utils.k8s_node_patch import node_change
    from k8s import k8s_node_names

    admitted = {"node-restriction.kubernetes.io/gpufleet-admitted": "true", "gpufleet.io/pool": "kubernetes"}
    pool_taint = {"key": "gpufleet.io/pool", "value": "kubernetes", "effect": "NoSchedule"}

    def live(name, unschedulable=False):
        return {"metadata": {"name": name, "labels": dict(admitted), "annotations": {"keep": "1"},
                             "resourceVersion": "7"},
                "spec": {"taints": [pool_taint], "unschedulable": unschedulable},
                "status": {"allocatable": {"nvidia.com/gpu": "2"}}}

    nodes = [live("kgpu1", unschedulable=True), live("kgpu2"), live("kgpu3")]
    hostvars = {h: {"cluster_gpu_count": 2, "ansible_facts": {"nodename": h}} for h in ("kgpu1", "kgpu2", "kgpu3")}
    hostvars["kgpu2"]["ansible_facts"] = {"nodename": "kgpu1"}
    hosts = ["kgpu1", "kgpu2", "kgpu3"]
    names = k8s_node_names(hosts, hostvars)  # what k8s_pool_labels_node_names is; the old code failed the run here
    assert names == {"kgpu1": "kgpu1", "kgpu3": "kgpu3"}
    out = k8s_pool_admissions(hosts, nodes, hostvars, "cluster_gpu_count", [], {"kgpu2": "PASS"}, names,
                              pool_taint=pool_taint, **KW)
    by_name = {n["metadata"]["name"]: n for n in nodes}
    bodies = {host: node_change(by_name[state["name"]], state["labels"], state["taints_add"], state["taints_remove"],
                                state["annotations"]) for host, state in out["nodes"].items()}
    assert bodies["kgpu1"] is None and bodies["kgpu3"] is None, bodies
    held = out["nodes"]["kgpu2"]
    assert held["name"] == "kgpu2" and not held["admitted"] and not held["pending"] and held["refused"]
    assert bodies["kgpu2"]["spec"]["taints"] == [pool_taint, HOLD]
    assert bodies["kgpu2"]["metadata"]["labels"] == {"node-restriction.kubernetes.io/gpufleet-admitted": None}
    reason = bodies["kgpu2"]["metadata"]["annotations"]["gpufleet.io/hold-reason"]
    assert reason.startswith("kgpu2: ansible_facts.nodename 'kgpu1' is the name of inventory host kgpu1"), reason
    assert "unschedulable" not in bodies["kgpu2"]["spec"]
    assert sorted(out["allocatable"]) == ["kgpu1", "kgpu3"]  # never capacity
    assert out["refused"] == {"kgpu2": reason}


def test_a_refused_host_is_held_even_where_the_caller_gives_it_a_name():
    # the admission filter reads the refusal from the facts itself: a map a caller built otherwise cannot admit it
    hostvars = {"kgpu1": {"cluster_gpu_count": 2}, "kgpu2": {"cluster_gpu_count": 2,
                                                              "ansible_facts": {"nodename": "kgpu1"}}}
    nodes = [node("kgpu1"), node("kgpu2")]
    out = k8s_pool_admissions(["kgpu1", "kgpu2"], nodes, hostvars, "cluster_gpu_count", [], {"kgpu2": "PASS"},
                              {"kgpu1": "kgpu1", "kgpu2": "kgpu2"}, **KW)
    assert out["nodes"]["kgpu2"]["refused"] and not out["nodes"]["kgpu2"]["admitted"]
    assert "kgpu2" not in out["allocatable"]
