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


def test_the_example_fleet_is_gated_in_full_by_its_profile():
    # Issue 37: inventory/example is an 8x H100 InfiniBand fleet; its gate group_vars leave the fabric switches to the
    # profile, which turns the RDMA gate, the NCCL pair gate and GDR on (the file's comment says so), and the pair
    # test has its Slurm controller.
    from ansible.module_utils.gate_fabric import fabric_defaults

    inventory, hostvars = host_vars()
    gpu_nodes = [h.name for h in inventory.get_hosts("gpu_nodes")]
    assert [h.name for h in inventory.get_hosts("slurm_controller")] == ["ctl1"]
    for host in gpu_nodes:
        hv = hostvars[host]
        assert hv["cluster_gpu_count"] == 8 and hv["cluster_gpu_type"] == "h100"
        assert {v: hv[v] for v in ("health_gate_rdma", "health_gate_nccl_pairs", "health_gate_nccl_require_gdr")} == {
            "health_gate_rdma": None, "health_gate_nccl_pairs": None, "health_gate_nccl_require_gdr": None}
        found = [{"minor": i, "name": "NVIDIA H100 80GB HBM3"} for i in range(hv["cluster_gpu_count"])]
        decision = fabric_defaults(host, found, hv["cluster_gpu_count"], hv.get("health_gate_profile"),
                                   hv.get("health_gate_profiles"), rdma=hv["health_gate_rdma"],
                                   nccl_pairs=hv["health_gate_nccl_pairs"],
                                   require_gdr=hv["health_gate_nccl_require_gdr"],
                                   rdma_expected_ports=hv.get("health_gate_rdma_expected_ports"),
                                   rdma_devices=hv.get("health_gate_rdma_devices"))
        assert (decision["profile"], decision["rdma"], decision["nccl_pairs"], decision["require_gdr"]) == (
            "h100_sxm_x8", True, True, True), host
    comment = (ROOT / "inventory/example/group_vars/gpu_nodes/health_gate.yml").read_text()
    assert "h100_sxm_x8" in comment and "rdma_ports 8" in comment and "InfiniBand" in comment

