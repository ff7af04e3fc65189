"""The k3s agent upgrade drains and uncordons through the server's kubeconfig and waits for Ready (issue 20, item 6)."""

import pathlib

import yaml

ROLE = pathlib.Path(__file__).resolve().parents[2] / "roles" / "k3s_agent"


def tasks(path):
    found = []
    for task in yaml.safe_load(path.read_text()):
        found.extend(task.get("block", [task]))
    return found


def test_every_api_call_of_the_upgrade_runs_on_the_first_server_with_its_kubeconfig():
    api = [t for t in tasks(ROLE / "tasks" / "upgrade.yml") + tasks(ROLE / "handlers" / "main.yml")
           if any(k.startswith("kubernetes.core.") for k in t)]
    assert len(api) == 4, [t["name"] for t in api]
    for task in api:
        assert task["delegate_to"] == "{{ k3s_agent_server_hosts[0] }}", task["name"]
        assert task["become"] is True, task["name"]
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults["k3s_agent_kubeconfig"] == "/etc/rancher/k3s/k3s.yaml"


def test_uncordon_waits_for_the_restarted_node_to_be_ready():
    handlers = [h["name"] for h in yaml.safe_load((ROLE / "handlers" / "main.yml").read_text())]
    assert handlers == ["Restart k3s agent", "Wait for the upgraded k3s agent to be Ready",
                        "Uncordon the upgraded k3s agent"]
    wait = yaml.safe_load((ROLE / "handlers" / "main.yml").read_text())[1]["kubernetes.core.k8s_info"]
    assert wait["wait"] is True and wait["wait_condition"] == {"type": "Ready", "status": "True"}
    drain = next(t for t in tasks(ROLE / "tasks" / "upgrade.yml") if "kubernetes.core.k8s_drain" in t)
    assert drain["notify"] == handlers[1:]
