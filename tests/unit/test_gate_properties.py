"""Property tests: no input a gate parser does not fully understand yields PASS.

Each property starts from a capture that PASSes as it is (a real one from tests/fixtures where one
passes, else a format sample from tests/fixtures/formats) and mutates only the lines the parser must
read: it drops one, truncates the text inside or before them, replaces a value with one that is not
a passing value, or duplicates a structural line. The verdict must then be FAIL or ERROR, and the
parser must never raise anything but ParseError (a clean ERROR, no traceback).
"""

import re

import pytest
from ansible.module_utils import gate
from ansible.module_utils.dcgm import parse_dcgmi_diag
from ansible.module_utils.gate import ERROR, PASS, ParseError
from ansible.module_utils.nccl import parse_all_reduce_perf
from ansible.module_utils.nvidia_smi import parse_nvlink_status
from ansible.module_utils.rdma import parse_ibstat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PRINTABLE = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20)
WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ /-_", min_size=0, max_size=12)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def verbatim(text):
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#@"))


def judged(parse, judge, text):
    """The verdict of ``text``; a ParseError is an ERROR, any other exception fails the test."""
    try:
        parsed = parse(text)
    except ParseError:
        return ERROR
    return judge(parsed)["verdict"]


class Gate:
    """``drop``: lines whose loss the parser must notice; ``end``: the text up to this pattern's end
    is what the verdict needs (cutting anywhere before it must not pass); ``values``: (regex with
    the passing value as group 2, strategy of replacements); ``dup``: structural lines."""

    def __init__(self, parse, judge, drop, end, values, dup, block_end=None):
        self.parse, self.judge, self.drop, self.end = parse, judge, drop, end
        self.values, self.dup, self.block_end = values, dup, block_end


def dcgm_judge(parsed):
    return gate.dcgm_verdict(parsed, 2)


NOT_A_SPEED = PRINTABLE.filter(lambda v: not re.fullmatch(r"\s*\d+(\.\d+)?\s*GB/s\s*", v))
NOT_A_PASS = PRINTABLE.filter(lambda v: v.partition(" - ")[0].strip() not in ("Pass", "Warn", "Skip"))
NOT_ZERO = PRINTABLE.filter(lambda v: not re.fullmatch(r"\s*0*\s*", v))

GATES = {
    # Real capture: DCGM 3.3.3, level 2, all Pass: the Integration and Hardware rows and bars, the
    # header row and the closing border are what the level-2 verdict needs.
    "dcgm": ("dcgmi_diag_r2_pass_a100x8_p4de_aws.txt",
             Gate(parse_dcgmi_diag, dcgm_judge,
                  drop=r"^\|\s(PCIe|GPU Memory)\s|^\+-----  (Integration|Hardware)|^\| Diagnostic",
                  end=r"\+-----  Stress  -+\+-+\+\n\+-+\+-+\+",
                  values=(r"^(\|\s[^|]*?\S\s*\|\s)(Pass)(.*)$", NOT_A_PASS),
                  dup=r"^\|\s\S")),
    # Real capture: 2x4 GH200, 115 GB/s at large sizes, 0 wrong. Rows may legitimately be fewer (a
    # shorter sweep), so the header and the summary lines are what a drop must break.
    "nccl": ("nccl_all_reduce_perf_multinode_gh200_slingshot_good_cscs.txt",
             Gate(parse_all_reduce_perf, lambda p: gate.nccl_verdict(p, 98.0),
                  drop=r"^#\s+size\s+count|Out of bounds|Avg bus bandwidth",
                  end=r"# Avg bus bandwidth",
                  values=(r"^(\s+\d+\s+\d+\s+float\s+sum\s+-?\d+(?:\s+\S+){3}\s+)(0)(\s.*)$", NOT_ZERO),
                  dup=r"^\s+\d+\s+\d+\s+float")),
    # Real capture: Azure A100 GPU7, 12 links at 25 GB/s.
    "nvlink": ("nvidia_smi_nvlink_status_good_a100_azure.txt",
               Gate(parse_nvlink_status, lambda p: gate.nvlink_verdict(p, 12, expected_gpus=1),
                    drop=r"^GPU \d|Link \d+:", end=r"Link 11: 25 GB/s",
                    values=(r"^(\s*Link \d+: )(25 GB/s)(\s*)$", NOT_A_SPEED),
                    dup=r"^GPU \d|Link \d+:")),
    # Format sample: 8 NDR HCAs at 400 Gb/s, InfiniBand, judged as the h100 profile says (8 ports).
    "ibstat": ("formats/ibstat_ndr_x8_all_active.txt",
               Gate(parse_ibstat, lambda p: gate.rdma_ports_verdict(p, [], 400, "InfiniBand", 8),
                    drop=r"^CA '|Number of ports|Port \d+:|State:|Physical state:|Rate:|Link layer:",
                    end=r"(?s)CA 'mlx5_7'.*Link layer: InfiniBand",
                    values=(r"^(\s*(?:State|Physical state|Link layer|Number of ports): )(\S+)(\s*)$", WORDS),
                    dup=r"^CA '|Port \d+:")),
    # Real capture, one HCA named: mlx5_0 Active/LinkUp at 200 (HDR); only its block matters.
    "ibstat_named": ("ibstat_hdr_cx6_one_active_one_disabled.txt",
                     Gate(parse_ibstat, lambda p: gate.rdma_ports_verdict(p, ["mlx5_0"], 200, "InfiniBand"),
                          drop=r"^CA 'mlx5_0'|Number of ports|Port 1:|State: Active|LinkUp|Rate: 200",
                          end=r"Rate: 200",
                          values=(r"^(\s*(?:State|Physical state|Link layer): )(Active|LinkUp|InfiniBand)(\s*)$",
                                  WORDS),
                          dup=r"^CA '|Port \d+:", block_end="CA 'mlx5_1'")),
}


def in_block(g, lines, indexes):
    if not g.block_end:
        return indexes
    stop = next(i for i, line in enumerate(lines) if line.startswith(g.block_end))
    return [i for i in indexes if i < stop]


@pytest.fixture(params=sorted(GATES))
def case(request, fixture_text):
    name, g = GATES[request.param]
    text = verbatim(fixture_text(name))
    assert judged(g.parse, g.judge, text) == PASS, f"{name} must PASS as it is for the property to mean anything"
    return request.param, text, g


@PROPERTY
@given(data=st.data())
def test_dropping_a_line_the_parser_must_read_never_passes(case, data):
    _name, text, g = case
    lines = text.splitlines(keepends=True)
    must = in_block(g, lines, [i for i, line in enumerate(lines) if re.search(g.drop, line)])
    i = data.draw(st.sampled_from(must), label="dropped line")
    assert judged(g.parse, g.judge, "".join(lines[:i] + lines[i + 1:])) != PASS, lines[i]


@PROPERTY
@given(data=st.data())
def test_truncating_before_the_last_line_the_parser_reads_never_passes(case, data):
    _name, text, g = case
    end = re.search(g.end, text).end()
    cut = data.draw(st.integers(min_value=0, max_value=end - 1), label="cut at")
    assert judged(g.parse, g.judge, text[:cut]) != PASS, repr(text[max(0, cut - 40):cut])


@PROPERTY
@given(data=st.data())
def test_replacing_a_passing_value_never_passes(case, data):
    _name, text, g = case
    value_re, replacements = g.values
    lines = text.splitlines(keepends=True)
    targets = in_block(g, lines, [i for i, line in enumerate(lines) if re.match(value_re, line.rstrip("\n"))])
    i = data.draw(st.sampled_from(targets), label="line")
    m = re.match(value_re, lines[i].rstrip("\n"))
    old = m.group(2)
    new = data.draw(replacements.filter(lambda v: v.strip().lower() != old.lower()), label="new value")
    lines[i] = m.group(1) + new + m.group(3) + "\n"
    assert judged(g.parse, g.judge, "".join(lines)) != PASS, lines[i]


@PROPERTY
@given(data=st.data())
def test_duplicating_a_structural_line_never_passes(case, data):
    _name, text, g = case
    lines = text.splitlines(keepends=True)
    targets = [i for i, line in enumerate(lines) if re.search(g.dup, line)]
    i = data.draw(st.sampled_from(targets), label="duplicated line")
    assert judged(g.parse, g.judge, "".join(lines[:i + 1] + lines[i:])) != PASS, lines[i]


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400))
def test_random_text_never_passes_and_never_raises_anything_but_parse_error(text):
    for _name, g in GATES.values():
        assert judged(g.parse, g.judge, text) != PASS
