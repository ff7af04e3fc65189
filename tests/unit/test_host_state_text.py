"""host_state_info's text checks (contains, lacks) against what blockinfile and lineinfile really do.

The role's probe may skip pam_adopt.yml only where both modules would leave sshd's PAM file as it is;
these tests run the modules themselves (check mode) on real captures of that file and on variants.
"""

import json
import pathlib

import ansible.modules.blockinfile as blockinfile
import ansible.modules.lineinfile as lineinfile
import host_state_info as module
import pytest
from ansible.module_utils.host_state import text_differs
from ansible.module_utils.testing import patch_module_args
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CAPTURES = pathlib.Path(__file__).parent / "captures"
MARKER = "# {mark} gpufleet pam_slurm_adopt"
LINES = ["account sufficient pam_succeed_if.so quiet user in root", "account required pam_slurm_adopt.so"]
BLOCK = "\n".join(["# BEGIN gpufleet pam_slurm_adopt", *LINES, "# END gpufleet pam_slurm_adopt"])
CONTAINS = [BLOCK, "@include common-session-noninteractive"]
LACKS = ["@include common-session"]


def capture(name):
    """A capture's file bytes, without its "#@" provenance lines."""
    lines = (CAPTURES / name).read_bytes().splitlines(True)
    return b"".join(line for line in lines if not line.startswith(b"#@"))


def run_module(mod, args, capsys):
    with patch_module_args({**args, "_ansible_check_mode": True}), pytest.raises(SystemExit):
        mod.main()
    out = json.loads(capsys.readouterr().out)
    assert not out.get("failed"), out
    return out["changed"]


def modules_change(path, capsys):
    """Whether pam_adopt.yml's blockinfile or lineinfile would change the file at path (check mode)."""
    block = run_module(blockinfile, {"path": str(path), "marker": MARKER, "insertafter": "^@include common-account",
                                     "block": "\n".join(LINES)}, capsys)
    line = run_module(lineinfile, {"path": str(path), "regexp": "^@include common-session$",
                                   "line": "@include common-session-noninteractive"}, capsys)
    return block or line


def test_the_converged_capture_is_right_and_the_stock_one_is_not(tmp_path, capsys):
    converged, stock = capture("pam_sshd_gpu01_converged.txt"), capture("pam_sshd_gpu01_stock.txt")
    assert text_differs(converged, CONTAINS, LACKS) is False
    assert text_differs(stock, CONTAINS, LACKS) is True
    for data, changes in ((converged, False), (stock, True)):
        path = tmp_path / "sshd"
        path.write_bytes(data)
        assert modules_change(path, capsys) is changes


def test_absent_or_unreadable_differs():
    assert text_differs(None, CONTAINS, LACKS) is True


def _edits():
    """Edits of the converged file a person or a package upgrade could make."""
    line = st.sampled_from([
        b"@include common-session\n", b"@include common-session-noninteractive\n",
        b"# BEGIN gpufleet pam_slurm_adopt\n", b"# END gpufleet pam_slurm_adopt\n",
        b"account required pam_slurm_adopt.so\n", b"\n", b"session optional pam_motd.so\n",
        b"account sufficient pam_succeed_if.so quiet user in root:admin\n", b"@include common-account\n",
    ])
    return st.lists(st.tuples(st.sampled_from(["insert", "delete", "replace"]), st.integers(0, 60), line), max_size=3)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_edits(), st.booleans())
def test_a_file_called_right_is_one_the_modules_leave_unchanged(tmp_path, capsys, edits, strip_final_newline):
    # The probe must never skip a step that would change the file: right => neither module changes it.
    lines = capture("pam_sshd_gpu01_converged.txt").splitlines(True)
    for op, at, line in edits:
        at = min(at, len(lines))
        if op == "insert":
            lines.insert(at, line)
        elif lines and at < len(lines):
            lines[at:at + 1] = [] if op == "delete" else [line]
    data = b"".join(lines)
    if strip_final_newline:
        data = data.rstrip(b"\n")
    path = tmp_path / "sshd"
    path.write_bytes(data)
    if not text_differs(data, CONTAINS, LACKS):
        assert modules_change(path, capsys) is False


def test_module_puts_a_path_whose_text_differs_in_paths_differ(tmp_path, capsys, monkeypatch):
    right, wrong = tmp_path / "right", tmp_path / "wrong"
    right.write_bytes(capture("pam_sshd_gpu01_converged.txt"))
    wrong.write_bytes(capture("pam_sshd_gpu01_stock.txt"))
    paths = [{"path": str(p), "contains": CONTAINS, "lacks": LACKS} for p in (right, wrong, tmp_path / "gone")]
    with patch_module_args({"paths": paths}), pytest.raises(SystemExit):
        module.main()
    out = json.loads(capsys.readouterr().out)
    assert out["paths_differ"] == [str(wrong), str(tmp_path / "gone")]
    # The file's text is never returned (the arguments echoed under invocation are the caller's own).
    returned = json.dumps({key: value for key, value in out.items() if key != "invocation"})
    assert "account required" not in returned and "pam_env" not in returned


def test_the_role_s_probe_wants_exactly_the_block_pam_adopt_writes():
    # Rendered as Ansible renders the role (YAML first, then Jinja, which leaves "\n" in its own string
    # literals as it is): the probe's block is the task's block between the markers, line for line.
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    role = pathlib.Path(__file__).resolve().parents[2] / "roles" / "slurm_compute"
    loader = DataLoader()
    variables = loader.load_from_file(str(role / "vars" / "main.yml"), trusted_as_template=True)
    variables["slurm_compute_pam_adopt_exempt_users"] = ["root"]
    task = next(t for t in loader.load_from_file(str(role / "tasks" / "pam_adopt.yml"), trusted_as_template=True)
                if "ansible.builtin.blockinfile" in t)["ansible.builtin.blockinfile"]
    templar = Templar(loader=loader, variables=variables)
    block = templar.template(task["block"])
    marker = templar.template(task["marker"])
    contains = templar.template(trust_as_template("{{ __slurm_compute_pam_sshd.contains }}"))
    assert block.splitlines() == LINES and marker == MARKER
    assert contains == CONTAINS
    assert text_differs(capture("pam_sshd_gpu01_converged.txt"), contains,
                        templar.template(trust_as_template("{{ __slurm_compute_pam_sshd.lacks }}"))) is False


def test_a_file_whose_last_line_has_no_newline_differs(tmp_path, capsys):
    # Hypothesis found it (session 15): the converged text with a line replaced and the final newline stripped was
    # called right, and lineinfile changed it. Leaning to "differs" runs the host's roles, which mend it.
    lines = capture("pam_sshd_gpu01_converged.txt").splitlines(True)
    lines[58] = b"@include common-session-noninteractive\n"
    data = b"".join(lines).rstrip(b"\n")
    assert text_differs(data, CONTAINS, LACKS) is True
    assert text_differs(data + b"\n", CONTAINS, LACKS) is text_differs(b"".join(lines), CONTAINS, LACKS)
