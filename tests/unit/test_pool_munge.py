"""The munge key follows the pool (issue 36, finding 7; docs/pools.md "The munge key follows the pool").

A GPU node outside Slurm holds no munge key: site.yml's munge play leaves it out, the pool executor parks a node
that left Slurm for Kubernetes (munged stopped and disabled, key shredded) only once no job, slurmd or slurmstepd
runs there, and gives a node that joins Slurm the key and munged before its slurmd starts. The decisions are tested
on Slurm's real `scontrol show node -o` capture; the executor's shell steps run here for real under sh, with
stand-in `systemctl`, `pgrep` and `chown` on PATH (test doubles: no systemd, no root, no munge user here).
"""

import base64
import hashlib
import os
import pathlib
import stat
import subprocess

import pytest
import yaml
from ansible.module_utils.pool_live import node_view
from ansible.module_utils.pool_munge import (
    MungePoolError,
    join_decision,
    keyless_nodes,
    park_decision,
    probe_view,
)
from ansible.module_utils.slurm_state import parse_scontrol_nodes
from conftest import ROOT, flat_tasks, run_cases

CAPTURE = pathlib.Path(__file__).parent / "captures" / "scontrol_show_node_lab.txt"
EXECUTOR = ROOT / "roles" / "pool_executor" / "tasks"
GPUS = ["gpu01", "gpu02", "gpu03", "gpu04"]
PARKED_PROBE = {"slurmd": "inactive", "steps": 0, "unit_active": "inactive", "unit_enabled": "disabled",
                "key_files": []}
KEYED_PROBE = {**PARKED_PROBE, "unit_active": "active", "unit_enabled": "enabled",
               "key_files": ["/etc/munge/munge.key"]}


def capture_lines():
    return [line for line in CAPTURE.read_text().splitlines() if not line.startswith("#@")]


def views_of(lines):
    return {name: node_view(name, node) for name, node in parse_scontrol_nodes("\n".join(lines)).items()}


def parked_line(line, name):
    """A capture line turned into the node the executor leaves once it has left Slurm: drained with our
    left_slurm reason, in no partition, slurmd down."""
    fields = [f for f in line.split(" ") if not f.startswith(("Partitions=", "Reason=", "State=", "NodeName="))]
    return " ".join([f"NodeName={name}", *fields, "State=DOWN+DRAIN", "Partitions=",
                     "Reason=gpufleet:move,to=k8s,run=r1,left_slurm [root@2026-11-22T00:03:32]"])


@pytest.fixture
def lab():
    """The real capture (gpu01 idle, gpu02 admin-drained, gpu03 drained by our move but still in the partition,
    gpu04 running a job) plus gpu05, parked for Kubernetes."""
    lines = capture_lines()
    return views_of([*lines, parked_line(lines[2], "gpu05")])


# -- site.yml's munge play: which nodes it leaves out ---------------------------------------------------------


def test_a_fresh_fleet_s_node_placed_straight_into_kubernetes_never_gets_the_key():
    # Policy A on a fresh fleet: Slurm has no view yet.
    targets = {"gpu01": "slurm", "gpu02": "slurm", "gpu03": "slurm", "gpu04": "k8s"}
    assert keyless_nodes(GPUS, {}, targets) == ["gpu04"]


def test_nodes_in_a_partition_keep_the_key_and_parked_or_returning_ones_do_not(lab):
    # gpu03 still in the partition (in flight to k8s) keeps munged for its jobs until the executor parks it;
    # gpu05, parked, stays keyless when the plan brings it back: the executor gives the key at its join.
    hosts = sorted(lab)
    assert keyless_nodes(hosts, lab, {h: "k8s" for h in hosts}) == ["gpu05"]
    assert keyless_nodes(hosts, lab, {h: "slurm" for h in hosts}) == ["gpu05"]
    assert lab["gpu05"]["pool"] == "k8s" and not lab["gpu05"]["in_partition"]


def test_site_yml_s_munge_play_leaves_the_keyless_nodes_out():
    plays = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    (munge,) = [p for p in plays
                if any((r if isinstance(r, str) else r.get("role")) == "munge" for r in p.get("roles", []))]
    assert "!pool_keyless" in munge["hosts"].split(":")
    defaults = yaml.safe_load((ROOT / "roles" / "munge" / "defaults" / "main.yml").read_text())
    assert "reject('in', groups['pool_keyless']" in defaults["munge_hosts"]


def test_the_munge_role_refuses_a_host_outside_munge_hosts(tmp_path):
    # The guard behind the play's pattern: a play that still names a keyless node stops there, naming it.
    plays = [{"hosts": "gpu04", "gather_facts": False, "roles": ["munge"]}]
    inventory = {"all": {"hosts": {"gpu04": {"ansible_connection": "local"}},
                         "children": {"slurm_controller": {"hosts": {"ctl1": {"ansible_connection": "local"}}},
                                      "gpu_nodes": {"hosts": {"gpu04": {}}},
                                      "pool_keyless": {"hosts": {"gpu04": {}}}}}}
    run = run_cases(tmp_path, plays, inventory)
    assert run.failed("gpu04")
    assert "host gpu04: not one of munge_hosts" in run.messages("gpu04")


# -- the executor's park decision -------------------------------------------------------------------------------


def test_a_parked_node_with_no_slurm_work_loses_the_key(lab):
    got = park_decision({"gpu05": "k8s"}, lab, {"gpu05": KEYED_PROBE})
    assert got == {"park": ["gpu05"], "parked": [], "keep": {}}
    # Already without key and munged: nothing to do (an idempotent run changes nothing).
    assert park_decision({"gpu05": "k8s"}, lab, {"gpu05": PARKED_PROBE}) == {
        "park": [], "parked": ["gpu05"], "keep": {}}


def test_a_node_still_in_slurm_keeps_munged_whatever_the_plan_says(lab):
    # The real capture: gpu03 draining with our move reason but still in the partition; gpu04 runs a job;
    # gpu02 is an admin's drain; gpu01 is idle in service. None loses munged.
    probes = dict.fromkeys(lab, KEYED_PROBE)
    got = park_decision({h: "k8s" for h in ("gpu01", "gpu02", "gpu03", "gpu04")}, lab, probes)
    assert got["park"] == [] and sorted(got["keep"]) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert "its move is not done" in got["keep"]["gpu03"]


@pytest.mark.parametrize(("probe", "why"), [
    ({**KEYED_PROBE, "slurmd": "active"}, "slurmd is active"),
    ({**KEYED_PROBE, "slurmd": "deactivating"}, "slurmd is deactivating"),
    ({**KEYED_PROBE, "steps": 2}, "2 slurmstepd"),
    (None, "did not answer"),
])
def test_the_node_s_own_probe_must_show_no_slurmd_and_no_job_step(lab, probe, why):
    got = park_decision({"gpu05": "k8s"}, lab, {"gpu05": probe} if probe else {})
    assert got["park"] == [] and why in got["keep"]["gpu05"]


def test_a_node_slurm_does_not_answer_for_or_without_our_reason_keeps_the_key(lab):
    assert "Slurm did not answer" in park_decision({"gpu09": "k8s"}, lab, {"gpu09": KEYED_PROBE})["keep"]["gpu09"]
    lines = capture_lines()
    admin = views_of([parked_line(lines[2], "gpu05").replace("Reason=gpufleet:move,to=k8s,run=r1,left_slurm",
                                                             "Reason=admin:_disk")])
    got = park_decision({"gpu05": "k8s"}, admin, {"gpu05": KEYED_PROBE})
    assert got["park"] == [] and "not drained with the toolkit's move" in got["keep"]["gpu05"]


def test_a_probe_that_cannot_be_read_is_refused():
    with pytest.raises(MungePoolError):
        probe_view("slurmd=inactive\nsteps=many\n")
    assert probe_view("slurmd=inactive\nsteps=0\nunit_active=inactive\nunit_enabled=disabled\n") == PARKED_PROBE


# -- the executor's join decision ------------------------------------------------------------------------------


def state(exists=True, checksum="a" * 40, active=True, enabled=True, differ=()):
    path = "/etc/munge/munge.key"
    return {"paths": {path: {"exists": exists, "checksum": checksum if exists else None}},
            "paths_differ": [path] if differ else [], "units": {"munge": {"active": active, "enabled": enabled}}}


def test_a_joining_node_gets_the_key_and_munged_where_it_lacks_them():
    probes = {"gpu01": state(exists=False, active=False, enabled=False), "gpu02": state(),
              "gpu03": state(checksum="b" * 40), "gpu04": state(differ=True), "gpu05": state(active=False)}
    assert join_decision(sorted(probes), probes, "a" * 40) == {
        "gpu01": {"write": True, "start": True}, "gpu02": {"write": False, "start": False},
        "gpu03": {"write": True, "start": True}, "gpu04": {"write": True, "start": True},
        "gpu05": {"write": False, "start": True}}


def test_a_join_without_a_known_key_is_refused():
    with pytest.raises(MungePoolError, match="unknown"):
        join_decision(["gpu01"], {"gpu01": state()}, None)
    with pytest.raises(MungePoolError, match="gpu01"):
        join_decision(["gpu01"], {}, "a" * 40)


# -- the executor's order of steps -----------------------------------------------------------------------------


def names(path):
    return [t["name"] for t in flat_tasks(yaml.safe_load(path.read_text()))]


def test_the_key_and_munged_come_before_slurmd_on_a_joining_node():
    batch = names(EXECUTOR / "batch.yml")
    give = batch.index("batch | Give the joining nodes the munge key and start munged")
    assert give < batch.index("batch | Start slurmd on the joining nodes")
    assert give > batch.index("batch | Stop the Kubernetes agent on the nodes that left")
    join = names(EXECUTOR / "key_join.yml")
    assert join.index("key_join | Write the cluster's munge key on the joining nodes that lack it") < join.index(
        "key_join | Start munged on the joining nodes with the cluster's key")


def test_the_park_comes_after_every_batch_and_reads_slurm_and_the_node_first():
    main = names(EXECUTOR / "main.yml")
    assert main.index("Move the nodes, batch by batch") < main.index("Take the munge key from the nodes outside Slurm")
    park = names(EXECUTOR / "key_park.yml")
    act = park.index("key_park | Stop and disable munged and remove the munge key on the parked nodes")
    assert park.index("key_park | Read Slurm's live state of those nodes") < act
    assert park.index("key_park | Read slurmd, job steps, munged and the key files on those nodes") < act


# -- the executor's shell steps, for real under sh --------------------------------------------------------------


@pytest.fixture
def node(tmp_path):
    """A stand-in node: systemctl and pgrep doubles reading unit states and a job-step count from files, a
    chown that does nothing, and a key directory holding a key and a temporary left beside it."""
    bindir, units, keydir = tmp_path / "bin", tmp_path / "units", tmp_path / "munge"
    for d in (bindir, units, keydir):
        d.mkdir()
    (bindir / "systemctl").write_text("""#!/bin/sh
cmd=$1; shift
[ "$1" = --quiet ] && { q=1; shift; }
[ "$1" = --now ] && shift
case "$cmd" in
is-active) s=$(cat "$U/$1.active" 2>/dev/null || echo inactive); [ -n "$q" ] || echo $s; [ $s = active ];;
is-enabled) s=$(cat "$U/$1.enabled" 2>/dev/null || echo disabled); [ -n "$q" ] || echo $s; [ $s = enabled ];;
disable) echo inactive > "$U/$1.active"; echo disabled > "$U/$1.enabled";;
esac
""")
    (bindir / "pgrep").write_text("#!/bin/sh\nn=$(cat \"$U/steps\" 2>/dev/null || echo 0)\n"
                                  "[ \"$1\" = -c ] && echo $n\n[ $n -gt 0 ]\n")
    (bindir / "chown").write_text("#!/bin/sh\nexit 0\n")
    for tool in bindir.iterdir():
        tool.chmod(0o755)
    (units / "munge.active").write_text("active")
    (units / "munge.enabled").write_text("enabled")
    (keydir / "munge.key").write_bytes(os.urandom(1024))
    (keydir / "munge.key.Xy12Ab34").write_bytes(b"half-written key")
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "U": str(units)}
    return {"env": env, "units": units, "key": keydir / "munge.key", "dir": keydir}


def task_argv(path, name):
    (task,) = [t for t in flat_tasks(yaml.safe_load(path.read_text())) if t["name"] == name]
    return task["ansible.builtin.command"]["argv"]


def run_step(argv, node, stdin=None):
    sh, flag, script, name = argv[:4]
    return subprocess.run([sh, flag, script, name, str(node["key"])], input=stdin, env=node["env"],
                          capture_output=True, text=True, check=False)


PARK = "key_park | Stop and disable munged and remove the munge key on the parked nodes"
PROBE = "key_park | Read slurmd, job steps, munged and the key files on those nodes"
WRITE = "key_join | Write the cluster's munge key on the joining nodes that lack it"


@pytest.mark.parametrize("busy", ["slurmd", "step"])
def test_the_park_step_refuses_on_the_node_while_slurm_work_runs_there(node, busy):
    if busy == "slurmd":
        (node["units"] / "slurmd.active").write_text("active")
    else:
        (node["units"] / "steps").write_text("1")
    out = run_step(task_argv(EXECUTOR / "key_park.yml", PARK), node)
    assert out.returncode == 3 and "the munge key stays" in out.stderr
    assert sorted(p.name for p in node["dir"].iterdir()) == ["munge.key", "munge.key.Xy12Ab34"]
    assert (node["units"] / "munge.active").read_text() == "active"


def test_the_park_step_stops_munged_and_leaves_no_key_behind_then_changes_nothing(node):
    argv = task_argv(EXECUTOR / "key_park.yml", PARK)
    out = run_step(argv, node)
    assert (out.returncode, out.stdout.strip()) == (0, "parked"), out.stderr
    assert list(node["dir"].iterdir()) == []
    assert (node["units"] / "munge.active").read_text().strip() == "inactive"
    assert (node["units"] / "munge.enabled").read_text().strip() == "disabled"
    again = run_step(argv, node)
    assert (again.returncode, again.stdout) == (0, "")
    probe = run_step(task_argv(EXECUTOR / "key_park.yml", PROBE), node)
    assert probe_view(probe.stdout) == PARKED_PROBE


def test_the_join_step_writes_the_cluster_s_key_munge_s_and_0400_once(node):
    node["key"].unlink()
    key = os.urandom(1024)
    argv = task_argv(EXECUTOR / "key_join.yml", WRITE)
    out = run_step(argv, node, base64.b64encode(key).decode())
    assert (out.returncode, out.stdout.strip()) == (0, "written"), out.stderr
    assert node["key"].read_bytes() == key and stat.S_IMODE(node["key"].stat().st_mode) == 0o400
    assert hashlib.sha1(node["key"].read_bytes()).hexdigest() == hashlib.sha1(key).hexdigest()
