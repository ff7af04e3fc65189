"""inventory/example gives every host that may run a k3s role the tokens it asserts (issue 20, item 5), and
agents the separate agent token, never the server token."""

import pathlib

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.manager import VariableManager

ROOT = pathlib.Path(__file__).resolve().parents[2]


def host_vars():
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(ROOT / "inventory/example/hosts.yml")])
    manager = VariableManager(loader=loader, inventory=inventory)
    return inventory, {h.name: manager.get_vars(host=h) for h in inventory.get_hosts()}


def test_every_k3s_server_and_possible_agent_has_its_token_variables():
    inventory, hostvars = host_vars()
    servers = [h.name for h in inventory.get_hosts("k8s_server")]
    gpu_nodes = [h.name for h in inventory.get_hosts("gpu_nodes")]
    assert servers and gpu_nodes
    missing = [f"{h}: {v}" for h in servers for v in ("k3s_server_token", "k3s_server_agent_token")
               if v not in hostvars[h]]
    missing += [f"{h}: k3s_agent_token" for h in gpu_nodes if "k3s_agent_token" not in hostvars[h]]
    assert missing == []


def test_agents_get_the_agent_token_not_the_server_token():
    inventory, hostvars = host_vars()
    servers = [h.name for h in inventory.get_hosts("k8s_server")]
    gpu_nodes = [h.name for h in inventory.get_hosts("gpu_nodes")]
    # All from vault entries the comments document, never from a literal.
    assert {hostvars[h]["k3s_server_token"] for h in servers} == {"{{ vault_k3s_token }}"}
    assert {hostvars[h]["k3s_server_agent_token"] for h in servers} == {"{{ vault_k3s_agent_token }}"}
    assert {hostvars[h]["k3s_agent_token"] for h in gpu_nodes} == {"{{ vault_k3s_agent_token }}"}
