"""Reservation mode on real Slurm 22.05 outputs (captures from maintplan5's gf-resv lab, tests/fixtures)."""

from ansible.module_utils.maint_resv import parse_reservations, parse_squeue_jobs, plan_wave, ready, start_delay

NAME = "gpufleet-maint-20261124T063036-gpu01"


def test_real_squeue_time_left_gives_the_reservation_start(fixture_output):
    jobs = parse_squeue_jobs(fixture_output("slurm_squeue_time_left_22.05_lab.txt"))
    assert [(j["job"], j["state"], j["left"], j["nodes"]) for j in jobs] == [
        ("1", "RUNNING", 174, ["gpu01"]), ("2", "RUNNING", 114, ["gpu02"])]
    # 174 s left on gpu01: the reservation starts in 3 minutes (it started at 06:33:05, created at 06:30:~05).
    assert start_delay(jobs, ["gpu01", "gpu02"])[0] == 3


def test_real_one_line_reservation_before_it_starts(fixture_output):
    got = parse_reservations(fixture_output("slurm_scontrol_show_reservation_oneline_maint_inactive_22.05_lab.txt"))
    assert list(got) == [NAME]
    resv = got[NAME]
    assert resv["state"] == "INACTIVE" and resv["nodes"] == ["gpu01", "gpu02"] and resv["users"] == ["root"]
    assert resv["flags"] == ["MAINT", "IGNORE_JOBS", "SPEC_NODES"]
    assert resv["start"] == "2026-11-24T06:33:05"
    assert not ready(got, NAME, {"gpu01": {"busy": False}, "gpu02": {"busy": False}}, ["gpu01", "gpu02"])


def test_real_multi_line_reservation_once_active(fixture_output):
    got = parse_reservations(fixture_output("slurm_scontrol_show_reservation_multiline_maint_active_22.05_lab.txt"))
    assert got[NAME]["state"] == "ACTIVE" and got[NAME]["nodes"] == ["gpu01", "gpu02"]
    assert ready(got, NAME, {"gpu01": {"busy": False}, "gpu02": {"busy": False}}, ["gpu01", "gpu02"])
    assert not ready(got, NAME, {"gpu01": {"busy": True}, "gpu02": {"busy": False}}, ["gpu01", "gpu02"])


def test_real_killed_runs_reservation_is_taken_over_by_the_next_run(fixture_output):
    got = parse_reservations(fixture_output("slurm_scontrol_show_reservation_oneline_maint_inactive_22.05_lab.txt"))
    plan = plan_wave(["gpu01", "gpu02"], got, [], "20261124T063200", 600, 60, ["root"])
    assert plan["name"] == NAME and not plan["create"] and plan["delete"] == [NAME]


def test_real_no_reservation(fixture_output):
    assert parse_reservations(fixture_output("slurm_scontrol_show_reservation_none_22.05_lab.txt")) == {}
