"""Slurm reservation mode (module_utils/maint_resv.py): start time, commands, parsing, the wave's plan.

The literal outputs here are built from the format strings of Slurm's own printers (reservation_info.c's
slurm_sprint_reservation_info and squeue's _print_job_time_left/_print_secs at slurm-22-05-8-1), not
captures; the captures from a real Slurm are in test_maint_resv_captures.py where one could be run.
"""

import pytest
from ansible.module_utils.maint_resv import (
    create_argv,
    delete_argv,
    parse_reservations,
    parse_squeue_jobs,
    parse_time_left,
    plan_wave,
    ready,
    reservation_name,
    squeue_argv,
    start_delay,
)
from hypothesis import given
from hypothesis import strategies as st

ONE_LINE = (
    "ReservationName=gpufleet-maint-r1-gpu01 StartTime=2026-11-24T06:40:00 EndTime=2026-11-24T07:40:00 "
    "Duration=01:00:00 Nodes=gpu[01-02] NodeCnt=2 CoreCnt=4 Features=(null) PartitionName=(null) "
    "Flags=MAINT,IGNORE_JOBS,SPEC_NODES TRES=cpu=4 Users=root Groups=(null) Accounts=(null) Licenses=(null) "
    "State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n"
)
MULTI = (
    "ReservationName=root_5 StartTime=2026-11-24T06:00:00 EndTime=2026-11-24T08:00:00 Duration=02:00:00\n"
    "   Nodes=gpu03 NodeCnt=1 CoreCnt=2 Features=(null) PartitionName=(null) Flags=MAINT,SPEC_NODES\n"
    "   TRES=cpu=2\n"
    "   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null)\n"
    "   MaxStartDelay=(null)\n\n"
)


def test_time_left_reads_every_form_squeue_prints():
    assert parse_time_left("0:42") == 42
    assert parse_time_left("12:05") == 12 * 60 + 5
    assert parse_time_left("3:00:07") == 3 * 3600 + 7
    assert parse_time_left("2-01:00:00") == 2 * 86400 + 3600
    for no_end in ("UNLIMITED", "NOT_SET", "INVALID"):
        assert parse_time_left(no_end) is None


def test_time_left_not_understood_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="time left"):
        parse_time_left("soon")


def test_squeue_jobs_expand_the_node_list():
    jobs = parse_squeue_jobs("17|RUNNING|9:30|gpu[01-02]\n18|COMPLETING|INVALID|gpu03\n")
    assert jobs == [
        {"job": "17", "state": "RUNNING", "left": 570, "nodes": ["gpu01", "gpu02"]},
        {"job": "18", "state": "COMPLETING", "left": None, "nodes": ["gpu03"]},
    ]


def test_squeue_line_of_another_shape_is_refused():
    with pytest.raises(ValueError, match="squeue line 1"):
        parse_squeue_jobs("17 RUNNING 9:30 gpu01\n")


def test_squeue_call_asks_for_running_jobs_on_the_wave_only():
    argv = squeue_argv(["gpu02", "gpu01"])
    assert argv[0] == "squeue" and "--noheader" in argv
    assert "--nodelist=gpu[01-02]" in argv and "--format=%i|%T|%L|%N" in argv
    assert "--states=RUNNING,COMPLETING,CONFIGURING,SUSPENDED" in argv


def test_reservation_starts_when_the_last_job_on_the_wave_ends():
    jobs = parse_squeue_jobs("17|RUNNING|9:30|gpu01\n18|RUNNING|1:00:01|gpu02\n19|RUNNING|5-00:00:00|gpu09\n")
    minutes, why = start_delay(jobs, ["gpu01", "gpu02"])
    assert minutes == 61  # 3601 s rounded up; gpu09's job is not the wave's
    assert "2 job(s)" in why


def test_reservation_starts_now_without_jobs_or_with_a_job_that_has_no_end():
    assert start_delay([], ["gpu01"])[0] == 0
    jobs = parse_squeue_jobs("17|RUNNING|UNLIMITED|gpu01\n18|RUNNING|30:00|gpu02\n")
    minutes, why = start_delay(jobs, ["gpu01", "gpu02"])
    assert minutes == 0 and "17" in why


def test_create_command_has_maint_and_ignore_jobs_users_and_a_finite_duration():
    argv = create_argv("gpufleet-maint-r1-gpu01", ["gpu02", "gpu01"], 61, 60, ["root"])
    assert argv == ["scontrol", "create", "reservation", "ReservationName=gpufleet-maint-r1-gpu01",
                    "Nodes=gpu[01-02]", "StartTime=now+61minutes", "Duration=60", "Users=root",
                    "Flags=MAINT,IGNORE_JOBS"]
    assert create_argv("x", ["gpu01"], 0, 5, ["root"])[5] == "StartTime=now"
    assert delete_argv("x") == ["scontrol", "delete", "ReservationName=x"]


@pytest.mark.parametrize("minutes,duration,users", [(-1, 60, ["root"]), (0, 0, ["root"]), (0, 60, []),
                                                    (0, 60, ["ro ot"]), (True, 60, ["root"])])
def test_create_command_refuses_bad_values(minutes, duration, users):
    with pytest.raises(ValueError):
        create_argv("x", ["gpu01"], minutes, duration, users)


def test_name_carries_the_run_and_the_wave_first_node():
    assert reservation_name("20261124T0600", ["gpu07", "gpu03"]) == "gpufleet-maint-20261124T0600-gpu03"
    with pytest.raises(ValueError):
        reservation_name("a b", ["gpu01"])
    with pytest.raises(ValueError):
        reservation_name("r1", [])


def test_show_reservation_one_line_and_multi_line_forms():
    got = parse_reservations(ONE_LINE + MULTI)
    assert sorted(got) == ["gpufleet-maint-r1-gpu01", "root_5"]
    ours = got["gpufleet-maint-r1-gpu01"]
    assert ours["state"] == "INACTIVE" and ours["nodes"] == ["gpu01", "gpu02"]
    assert ours["flags"] == ["MAINT", "IGNORE_JOBS", "SPEC_NODES"] and ours["users"] == ["root"]
    assert ours["start"] == "2026-11-24T06:40:00"
    assert got["root_5"]["state"] == "ACTIVE" and got["root_5"]["nodes"] == ["gpu03"]


def test_no_reservations_is_empty():
    assert parse_reservations("No reservations in the system\n") == {}
    assert parse_reservations("") == {}


def test_reservation_without_state_is_refused_not_read_as_inactive():
    with pytest.raises(ValueError, match="State"):
        parse_reservations("ReservationName=x StartTime=now Nodes=gpu01\n")


def _resv(name, nodes, state="INACTIVE"):
    return {name: {"name": name, "state": state, "start": None, "end": None, "nodes": nodes,
                   "flags": ["MAINT"], "users": ["root"]}}


def test_wave_plan_creates_its_reservation_and_waits_within_the_timeout():
    jobs = parse_squeue_jobs("17|RUNNING|9:30|gpu01\n")
    plan = plan_wave(["gpu01", "gpu02"], {}, jobs, "r2", 3600, 60, ["root"])
    assert plan["create"] and plan["name"] == "gpufleet-maint-r2-gpu01" and plan["minutes"] == 10
    assert plan["wait"] and plan["delete"] == ["gpufleet-maint-r2-gpu01"]
    assert "StartTime=now+10minutes" in plan["argv"]


def test_wave_plan_does_not_wait_past_the_timeout():
    jobs = parse_squeue_jobs("17|RUNNING|3:00:00|gpu01\n")
    plan = plan_wave(["gpu01"], {}, jobs, "r2", 3600, 60, ["root"])
    assert plan["create"] and not plan["wait"]


def test_killed_runs_reservation_over_the_whole_wave_is_taken_over():
    resv = _resv("gpufleet-maint-r1-gpu01", ["gpu01", "gpu02"], "ACTIVE")
    plan = plan_wave(["gpu01", "gpu02"], resv, [], "r2", 3600, 60, ["root"])
    assert not plan["create"] and plan["name"] == "gpufleet-maint-r1-gpu01" and plan["wait"]
    assert plan["delete"] == ["gpufleet-maint-r1-gpu01"]


def test_killed_runs_reservation_over_part_of_the_wave_is_deleted_after_the_new_one():
    resv = {**_resv("gpufleet-maint-r1-gpu02", ["gpu02", "gpu05"]), **_resv("root_7", ["gpu01"])}
    plan = plan_wave(["gpu01", "gpu02"], resv, [], "r2", 3600, 60, ["root"])
    assert plan["create"] and plan["stale"] == ["gpufleet-maint-r1-gpu02"]
    assert "root_7" not in plan["delete"]  # an admin's reservation is never ours to delete


def test_rerun_of_the_same_run_does_not_create_its_reservation_twice():
    resv = _resv("gpufleet-maint-r2-gpu01", ["gpu01"], "ACTIVE")
    plan = plan_wave(["gpu01", "gpu03"], resv, [], "r2", 3600, 60, ["root"])
    assert not plan["create"] and plan["argv"] == []


def test_ready_needs_an_active_reservation_and_idle_nodes():
    views = {"gpu01": {"busy": False}, "gpu02": {"busy": True}}
    active = _resv("n", ["gpu01", "gpu02"], "ACTIVE")
    assert not ready(active, "n", views, ["gpu01", "gpu02"])
    assert ready(active, "n", views, ["gpu01"])
    assert not ready(_resv("n", ["gpu01"]), "n", views, ["gpu01"])
    assert not ready(active, "gone", views, ["gpu01"])
    assert not ready(active, "n", views, ["gpu07"])  # a node Slurm does not report is not ready


@given(st.lists(st.tuples(st.sampled_from(["gpu01", "gpu02", "gpu03"]),
                          st.one_of(st.none(), st.integers(min_value=0, max_value=10 ** 6))), max_size=8))
def test_property_reservation_never_starts_before_a_wave_job_with_a_limit_ends(entries):
    jobs = [{"job": str(i), "state": "RUNNING", "left": left, "nodes": [node]}
            for i, (node, left) in enumerate(entries)]
    minutes, _why = start_delay(jobs, ["gpu01", "gpu02"])
    wave_jobs = [j for j in jobs if j["nodes"][0] in ("gpu01", "gpu02")]
    if any(j["left"] is None for j in wave_jobs):
        assert minutes == 0
    else:
        assert all(minutes * 60 >= j["left"] for j in wave_jobs)


def test_role_reserves_waits_holds_then_deletes_and_tolerates_only_an_already_gone_reservation():
    import pathlib

    import yaml

    root = pathlib.Path(__file__).resolve().parents[2]
    tasks = yaml.safe_load((root / "roles/maint_reservation/tasks/reserve.yml").read_text())
    block = next(t for t in tasks if t["name"] == "reserve | Reserve, wait and hold")
    assert block["run_once"] is True
    names = [t["name"] for t in block["block"]]
    order = ["reserve | Read the reservations", "reserve | Read the jobs on the wave's nodes",
             "reserve | Create the reservation", "reserve | Wait for the reservation to start and the nodes to idle",
             "reserve | Hold the nodes with the maintenance drain",
             "reserve | Delete the wave's reservation and those a killed run left over its nodes"]
    assert [names.index(n) for n in order] == sorted(names.index(n) for n in order)
    delete = block["block"][names.index(order[-1])]
    assert "Requested reservation is invalid" in delete["failed_when"]
    hold = block["block"][names.index(order[-2])]
    assert "pool_reason('drain'" in hold["ansible.builtin.command"]["argv"][4]
