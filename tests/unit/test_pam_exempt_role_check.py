"""slurm_compute checks pam_slurm_adopt's exemptions itself, not only in preflight (issue 36, PAM exemptions).

Preflight refuses exemptions that are not user names or leave out Ansible's login (inventory_check
pam_exempt_errors). The role is also applied without preflight (its own playbook, a site's wrapper), and its own
assert let through an ansible_user outside the exemptions whenever they held root (a non-root login with
become is then shut out of every node without a job of its own) and never looked at the names (a line break
writes its own line into sshd's PAM stack). The assert is evaluated here as Ansible evaluates it.
"""

import pathlib

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROLE = pathlib.Path(__file__).resolve().parents[2] / "roles" / "slurm_compute"


def holds(**overrides):
    loader = DataLoader()
    variables = loader.load_from_file(str(ROLE / "defaults" / "main.yml"), trusted_as_template=True)
    variables.update(loader.load_from_file(str(ROLE / "vars" / "main.yml"), trusted_as_template=True))
    variables.update(overrides)
    task = next(t for t in loader.load_from_file(str(ROLE / "tasks" / "main.yml"), trusted_as_template=True)
                if t.get("name") == "Assert the compute inputs")
    templar = Templar(loader=loader, variables=variables)
    that = task["ansible.builtin.assert"]["that"]
    return all(templar.evaluate_conditional(trust_as_template(str(one))) for one in that)


@pytest.mark.parametrize("overrides", [
    {"slurm_compute_pam_adopt": True, "ansible_user": "admin", "slurm_compute_pam_adopt_exempt_users": ["root"]},
    {"slurm_compute_pam_adopt": True,
     "slurm_compute_pam_adopt_exempt_users": ["root", "ops\naccount sufficient pam_permit.so"]},
    {"slurm_compute_pam_adopt": True, "slurm_compute_pam_adopt_exempt_users": ["root", "Ops User"]},
], ids=["login-left-out-beside-root", "line-break", "space-and-capitals"])
def test_exemptions_that_lock_ansible_out_or_add_a_pam_line_are_refused(overrides):
    assert not holds(**overrides)


@pytest.mark.parametrize("overrides", [
    {"slurm_compute_pam_adopt": True},
    {"slurm_compute_pam_adopt": True, "ansible_user": "admin",
     "slurm_compute_pam_adopt_exempt_users": ["root", "admin"]},
    {"slurm_compute_pam_adopt": False, "ansible_user": "admin", "slurm_compute_pam_adopt_exempt_users": ["root"]},
], ids=["root-login", "admin-exempt", "pam-adopt-off"])
def test_exemptions_that_keep_ansible_in_pass(overrides):
    assert holds(**overrides)
