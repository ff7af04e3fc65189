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


@pytest.mark.parametrize("path", LABS, ids=[str(p.relative_to(ROOT)) for p in LABS])
def test_every_lab_names_its_debian_release(path):
    # The role's default release moves with the project; each lab pins the one its checks were proven on.
    assert _vars(path).get("lab_image_suite") in ("trixie", "bookworm"), path


def test_the_default_lab_and_the_second_slurm_lane_run_debian_13():
    assert _vars(ROOT / "inventory" / "lab" / "group_vars" / "all" / "lab.yml")["lab_image_suite"] == "trixie"
    lane = ROOT / "molecule" / "slurm_cluster_trixie"
    assert _vars(lane / "inventory" / "group_vars" / "all" / "lab.yml")["lab_image_suite"] == "trixie"
    assert _vars(ROOT / "molecule" / "slurm_cluster" / "inventory" / "group_vars" / "all" / "lab.yml")[
        "lab_image_suite"] == "bookworm"
    # Both lanes run the same cluster, converge and verify: only lab.yml differs.
    assert (lane / "inventory" / "hosts.yml").resolve() == (ROOT / "molecule/slurm_cluster/inventory/hosts.yml")
    molecule = yaml.safe_load((lane / "molecule.yml").read_text())
    assert molecule["ansible"]["playbooks"]["converge"] == "../slurm_cluster/converge.yml"
    assert molecule["ansible"]["playbooks"]["verify"] == "../slurm_cluster/verify.yml"
