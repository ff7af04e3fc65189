"""Issue 33: with k8s_client_install_method venv, only site.yml's k8s_cluster play switched a server to the client
virtualenv's interpreter (a set_fact for that run). gate.yml, pools.yml, maintain.yml, k8s_quota.yml and status.yml
ran the server's kubernetes.core tasks with the system interpreter, which lacks the client on Ubuntu 24.04 (PEP 668).

playbooks/k8s_client.yml now sets it first in every entry point, from whichever host the run has, so a run limited to
one GPU node (--limit gpu07) still runs the tasks it delegates to the first server with the virtualenv's interpreter.
"""

import json
import pathlib
import sys

import yaml
from conftest import run_plays

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENTRY_POINTS = ["site.yml", "gate.yml", "pools.yml", "maintain.yml", "node_stack.yml", "k8s.yml", "k8s_quota.yml",
                "status.yml"]


def test_a_run_limited_to_a_gpu_node_delegates_to_the_server_with_its_virtualenv(tmp_path):
    """srv4 is unreachable. Before, the interpreter tasks were run_once, which the linear strategy treats as
    any_errors_fatal: the down server failed gpu07 too, and no later play ran (the review reproduced it)."""
    venv = tmp_path / "k8s-client"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {
        "k8s_server": {"hosts": {
            "srv1": dict(local, k8s_client_install_method="venv", k8s_client_venv=str(venv)),
            "srv2": dict(local, k8s_client_install_method="venv", k8s_client_venv=str(tmp_path / "not-made-yet")),
            "srv3": dict(local),
            # down (nothing listens on port 1): the run must go on for every other host
            "srv4": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                     "ansible_ssh_retries": 0, "k8s_client_install_method": "venv"}}},
        "gpu_nodes": {"hosts": {"gpu07": dict(local)}}}}}
    out = tmp_path / "seen.json"
    plays = [
        {"ansible.builtin.import_playbook": str(ROOT / "playbooks" / "k8s_client.yml")},
        {"hosts": "gpu_nodes", "gather_facts": False, "tasks": [
            {"ansible.builtin.setup": {"gather_subset": ["!all", "!min", "python"]}, "delegate_to": "{{ item }}",
             "loop": ["srv1", "srv2", "srv3"], "register": "seen"},
            {"ansible.builtin.copy": {
                "dest": str(out),
                "content": "{{ dict(seen.results | map(attribute='item') | zip(seen.results"
                           " | map(attribute='ansible_facts.ansible_python.executable'))) | to_json }}"},
             "delegate_to": "localhost"}]},
    ]
    result = run_plays(tmp_path, plays, inventory, "--limit", "gpu07")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    seen = json.loads(out.read_text())
    assert seen == {
        "srv1": str(venv / "bin" / "python"),  # venv method, virtualenv made: its interpreter
        "srv2": sys.executable,  # venv method, no virtualenv yet (before the first site.yml): the inventory's
        "srv3": sys.executable,  # apt method: the inventory's
    }


def _flat(playbook):
    """The plays of a playbook in run order, imports expanded; an import of k8s_client.yml stays as a marker."""
    for play in yaml.safe_load((ROOT / "playbooks" / playbook).read_text()):
        imported = play.get("ansible.builtin.import_playbook")
        if imported == "k8s_client.yml":
            yield "k8s_client"
        elif imported == "k8s_preflight.yml":
            continue  # renders and checks offline (k8s_render.yml, apply false): no Kubernetes API is asked
        elif imported:
            yield from _flat(imported)
        else:
            yield play


def test_every_entry_point_sets_the_interpreter_before_its_first_play_on_a_node():
    """Plays on localhost only (the inventory's preflight, offline renders) may come first: they contact no node."""
    missing = []
    for playbook in ENTRY_POINTS:
        for play in _flat(playbook):
            if play == "k8s_client":
                break
            if play.get("hosts") not in ("localhost", "127.0.0.1"):
                missing.append(f"{playbook}: {play.get('name')} (hosts {play.get('hosts')})")
                break
        else:
            missing.append(f"{playbook}: never imports k8s_client.yml")
    assert not missing, "k8s_client.yml must come before these plays:\n" + "\n".join(missing)
