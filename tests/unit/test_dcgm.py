"""dcgmi diag parser, on the real capture; the verdict needs a GPU test that ran."""

import json
import pathlib
import re

import pytest
from ansible.module_utils import gate
from ansible.module_utils.dcgm import parse_dcgmi_diag
from ansible.module_utils.gate import ERROR, PASS, ParseError

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
DIAG = "dcgmi_diag_r2_pass_a100x8_p4de_aws.txt"
DCGM_4X = "formats/dcgmi_diag_4x_r2_gpu3_memory_fail.txt"
DCGM_JSON = "formats/dcgmi_diag_4x_r2_json_gpu5_memory_fail.json.txt"


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


# JSON documents of other tools whose only content is a top-level "error": the dcgmi -j reader takes that key
# as DCGM's own error (dcgmi prints {"error": ...} when the host engine is not reachable), so they read as an
# error and judge ERROR, never PASS (next test).
OTHER_JSON_ERRORS = ("iperf3_client_json_connection_refused_debian12_lab.txt",
                     "iperf3_server_json_timeout_no_client_debian12_lab.txt")


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")
                                        if p.name != DIAG and p.name not in OTHER_JSON_ERRORS))
def test_dcgmi_parser_rejects_other_captures(fixture_output, name):
    with pytest.raises(ParseError):
        parse_dcgmi_diag(fixture_output(name))


@pytest.mark.parametrize("name", OTHER_JSON_ERRORS)
def test_another_tool_s_json_error_is_a_dcgm_error_never_a_pass(fixture_output, name):
    parsed = parse_dcgmi_diag(fixture_output(name))
    assert parsed["tests"] == [] and parsed["errors"]
    assert gate.dcgm_verdict(parsed)["verdict"] == ERROR


def test_empty_output_is_an_error():
    with pytest.raises(ParseError, match="empty"):
        parse_dcgmi_diag("")


# --- a PASS needs a GPU test that ran ------------------------------------------------------------

def metadata_and_deployment_only(text):
    """The real level-2 capture cut after its Deployment section and closed: what dcgmi diag -r 1 prints."""
    return text[:text.index("+-----  Integration")] + "+" + "-" * 27 + "+" + "-" * 48 + "+\n"


def test_dcgm_level_1_with_only_the_metadata_and_deployment_checks_is_an_error(fixture_output):
    # dcgmi diag -r 1 runs the software deployment checks only: no GPU was exercised, so it vouches for none.
    result = gate.dcgm_verdict(parse_dcgmi_diag(metadata_and_deployment_only(fixture_output(DIAG))), 1)
    assert result["verdict"] == ERROR, result
    assert result["reason"] == "dcgm: no GPU test ran (the output holds only the metadata and the Deployment checks)"


def all_pass_4x(text):
    """The 4.x format sample with its one failure (GPU3 memory) and its warning row turned into passes."""
    return re.sub(r"(?m)^\| Warning: GPU3 .*\n", "", text.replace("Fail", "Pass"))


def gpu_results_skipped(text):
    """Every per-GPU result after the Deployment section reads Skip; the test rows keep their word."""
    cut = text.index("+-----  Integration")
    return text[:cut] + re.sub(r"(GPU\d): Pass", r"\1: Skip", text[cut:])


def test_dcgm_4x_every_gpu_skipped_under_a_pass_test_row_is_an_error(fixture_output):
    text = all_pass_4x(fixture_output(DCGM_4X))
    assert gate.dcgm_verdict(parse_dcgmi_diag(text), 2)["verdict"] == PASS
    result = gate.dcgm_verdict(parse_dcgmi_diag(gpu_results_skipped(text)), 2)
    assert result["verdict"] == ERROR, result
    assert result["reason"] == "dcgm: every Integration, Hardware test skipped"


def test_dcgm_json_every_gpu_skipped_under_a_pass_summary_is_an_error(fixture_output):
    doc = json.loads(fixture_output(DCGM_JSON))
    for category in doc["DCGM Diagnostic"]["test_categories"]:
        for test in category["tests"]:
            test["test_summary"] = {"status": "Pass"}
            for res in test["results"]:
                res.pop("warnings", None)
                res["status"] = "Skip" if category["category"] != "Deployment" else "Pass"
    result = gate.dcgm_verdict(parse_dcgmi_diag(json.dumps(doc)), 2)
    assert result["verdict"] == ERROR, result
    memory = next(t for t in parse_dcgmi_diag(json.dumps(doc))["tests"] if t["name"] == "memory")
    assert memory["result"] == "Skip"


def test_dcgm_level_1_with_every_gpu_test_skipped_is_an_error(fixture_output):
    # Judged at level 1 (the Deployment section is all that level asks for), a run whose every GPU test
    # skipped still vouches for no GPU.
    text = all_pass_4x(fixture_output(DCGM_4X))
    cut = text.index("+-----  Integration")
    text = text[:cut] + text[cut:].replace("Pass", "Skip")
    result = gate.dcgm_verdict(parse_dcgmi_diag(text), 1)
    assert result["verdict"] == ERROR, result
    assert result["reason"] == "dcgm: every GPU test skipped (Integration, Hardware)"
