"""inventory/example gives every host that may run a k3s role the join token it asserts (issue 20, item 5)."""

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


def test_every_k3s_server_and_possible_agent_has_its_token_variable():
    inventory, hostvars = host_vars()
    servers = [h.name for h in inventory.get_hosts("k8s_server")]
    gpu_nodes = [h.name for h in inventory.get_hosts("gpu_nodes")]
    assert servers and gpu_nodes
    missing = [f"{h}: k3s_server_token" for h in servers if "k3s_server_token" not in hostvars[h]]
    missing += [f"{h}: k3s_agent_token" for h in gpu_nodes if "k3s_agent_token" not in hostvars[h]]
    assert missing == []
    # Both come from the vault entry the comments document, never from a literal.
    assert {hostvars[h]["k3s_agent_token"] for h in gpu_nodes} == {"{{ vault_k3s_token }}"}
