"""dcgmi diag parser, on the real capture."""

import pathlib

import pytest
from ansible.module_utils.dcgm import parse_dcgmi_diag
from ansible.module_utils.gate import ParseError

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
DIAG = "dcgmi_diag_r2_pass_a100x8_p4de_aws.txt"


def test_level_two_pass_lists_every_test_by_section(fixture_output):
    diag = parse_dcgmi_diag(fixture_output(DIAG))
    assert diag["metadata"]["DCGM Version"] == "3.3.3"
    assert diag["metadata"]["Driver Version Detected"] == "535.104.12"
    assert len(diag["tests"]) == 11
    assert {t["section"] for t in diag["tests"]} == {"Deployment", "Integration", "Hardware"}
    pcie = next(t for t in diag["tests"] if t["name"] == "PCIe")
    assert (pcie["result"], pcie["detail"]) == ("Pass", "All")
    assert diag["failed"] == [] and diag["warned"] == [] and diag["skipped"] == []


def test_failed_test_and_its_note_rows_are_reported(fixture_output):
    text = fixture_output(DIAG).replace(
        "| GPU Memory                | Pass - All                                     |",
        "| GPU Memory                | Fail - GPU: 3                                  |\n"
        "|                           | Warning: GPU 3 DBE detected                    |",
    )
    diag = parse_dcgmi_diag(text)
    assert diag["failed"] == ["GPU Memory"]
    mem = next(t for t in diag["tests"] if t["name"] == "GPU Memory")
    assert mem["detail"] == "GPU: 3" and mem["notes"] == ["Warning: GPU 3 DBE detected"]


def test_capture_cut_before_the_bottom_border_is_truncated(fixture_output):
    text = fixture_output(DIAG).rstrip("\n")
    with pytest.raises(ParseError, match="truncated"):
        parse_dcgmi_diag(text[: text.rindex("\n")])


def test_capture_cut_mid_table_is_truncated(fixture_output):
    text = fixture_output(DIAG)
    with pytest.raises(ParseError, match="truncated"):
        parse_dcgmi_diag(text[: text.index("+-----  Hardware")])


def test_host_engine_error_is_named_in_the_parse_error():
    with pytest.raises(ParseError, match="Error: unable to establish a connection"):
        parse_dcgmi_diag("Error: unable to establish a connection to the specified host: localhost\n")


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt") if p.name != DIAG))
def test_dcgmi_parser_rejects_other_captures(fixture_output, name):
    with pytest.raises(ParseError):
        parse_dcgmi_diag(fixture_output(name))


def test_empty_output_is_an_error():
    with pytest.raises(ParseError, match="empty"):
        parse_dcgmi_diag("")
