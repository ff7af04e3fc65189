"""nvidia-smi nvlink -s and nvidia-smi topo -m parsers, on the real captures."""


import pytest
from ansible.module_utils.gate import ParseError
from ansible.module_utils.nvidia_smi import parse_nvlink_status, parse_topo_matrix
from conftest import FIXTURES

NVLINK = "nvidia_smi_nvlink_status_good_a100_azure.txt"
TOPO = "nvidia_smi_topo_m_h100x8_8nic_pix.txt"


def verbatim(text):
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#@"))


@pytest.fixture
def capture(fixture_text):
    return lambda name: verbatim(fixture_text(name))


def others(*own):
    return sorted(p.name for p in FIXTURES.glob("*.txt") if p.name not in own)


def test_nvlink_status_lists_twelve_active_links_of_the_a100(capture):
    (gpu,) = parse_nvlink_status(capture(NVLINK))
    assert (gpu["index"], gpu["name"]) == (7, "NVIDIA A100-SXM4-80GB")
    assert gpu["uuid"] == "GPU-c7e253b0-c227-6f10-e860-7482c85e7ce8"
    assert gpu["links"] == {n: 25.0 for n in range(12)}
    assert gpu["active"] == 12 and gpu["inactive"] == []


def test_nvlink_inactive_link_is_reported(capture):
    text = capture(NVLINK).replace("Link 3: 25 GB/s", "Link 3: <inactive>")
    (gpu,) = parse_nvlink_status(text)
    assert gpu["active"] == 11 and gpu["inactive"] == [3]


@pytest.mark.parametrize("name", others(NVLINK))
def test_nvlink_parser_rejects_other_captures(capture, name):
    with pytest.raises(ParseError):
        parse_nvlink_status(capture(name))


def test_topo_matrix_reads_nvlink_bonds_and_nic_affinity(capture):
    topo = parse_topo_matrix(capture(TOPO))
    assert topo["gpus"] == [f"GPU{i}" for i in range(8)]
    assert topo["nics"] == [f"NIC{i}" for i in range(8)]
    assert all(n == 18 for peers in topo["nvlink_counts"].values() for n in peers.values())
    assert all(len(peers) == 7 for peers in topo["nvlink_counts"].values())
    # 1:1 GPU<->NIC PIX affinity
    pix = [nic for gpu in topo["gpus"] for nic in topo["nics"] if topo["links"][gpu][nic] == "PIX"]
    assert pix == topo["nics"]
    assert topo["cpu_affinity"]["GPU4"] == "48-95,144-191"
    assert topo["numa_affinity"]["GPU0"] == "0" and topo["numa_affinity"]["GPU7"] == "1"
    assert topo["nic_names"]["NIC7"] == "mlx5_7"


def test_topo_matrix_with_ansi_underline_header_parses(capture):
    text = capture(TOPO)
    header, rest = text.split("\n", 1)
    assert parse_topo_matrix(f"\x1b[4m{header}\x1b[0m\n{rest}")["gpus"] == parse_topo_matrix(text)["gpus"]


def test_topo_matrix_cut_mid_matrix_is_truncated(capture):
    text = capture(TOPO)
    with pytest.raises(ParseError, match="no row for NIC4, NIC5, NIC6, NIC7"):
        parse_topo_matrix(text[: text.index("NIC4    SYS")])


def test_topo_matrix_row_cut_short_is_truncated(capture):
    text = capture(TOPO)
    cut = text[: text.index("NIC7    SYS") + 30]
    with pytest.raises(ParseError, match="row NIC7 has"):
        parse_topo_matrix(cut)


@pytest.mark.parametrize("name", others(TOPO))
def test_topo_parser_rejects_other_captures(capture, name):
    with pytest.raises(ParseError):
        parse_topo_matrix(capture(name))


@pytest.mark.parametrize("parser", [parse_nvlink_status, parse_topo_matrix])
def test_empty_output_is_an_error(parser):
    with pytest.raises(ParseError, match="empty"):
        parser("\n")
