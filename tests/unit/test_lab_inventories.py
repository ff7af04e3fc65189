"""Lab inventories must not reach each other's containers: unique lab names, one SSH socket dir each."""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
LABS = sorted(
    p for p in [ROOT / "inventory" / "lab" / "group_vars" / "all" / "lab.yml",
                *ROOT.glob("molecule/*/inventory/group_vars/all/lab.yml")]
    if p.is_file()
)


def _vars(path):
    return yaml.safe_load(path.read_text())


def test_every_lab_has_its_own_name():
    names = [_vars(p)["lab_name"] for p in LABS]
    assert len(names) == len(set(names)), dict(zip([str(p.relative_to(ROOT)) for p in LABS], names, strict=True))


@pytest.mark.parametrize("path", LABS, ids=[str(p.relative_to(ROOT)) for p in LABS])
def test_ssh_sockets_are_per_lab_and_proxy_targets_this_lab(path):
    lab = _vars(path)
    if lab.get("ansible_connection") != "ssh":
        pytest.skip("not reached over SSH")
    # Every lab has a ctl1: a shared ControlPersist directory would reuse another lab's connection.
    assert "{{ lab_name }}" in lab["ansible_control_path_dir"]
    assert 'podman exec -i {{ lab_name }}-%h' in lab["ansible_ssh_common_args"]
    # ansible_host templated from inventory_hostname breaks under delegate_to.
    assert "ansible_host" not in lab
