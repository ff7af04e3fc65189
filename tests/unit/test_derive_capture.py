"""The lab's derive_capture double changes exactly one value of a real capture and says so."""
import importlib.machinery
import importlib.util

import pytest
from ansible.module_utils.node_health import parse_gpu_query
from conftest import ROOT, without_provenance

H100 = ROOT / "tests/fixtures/nvidia_smi_query_gpu_h100_80gb_590.48.01_healthy_exporter.txt"


def load():
    loader = importlib.machinery.SourceFileLoader("derive_capture", str(ROOT / "tests/doubles/derive_capture"))
    spec = importlib.util.spec_from_loader("derive_capture", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("field,value,key,expect", [
    ("ecc.errors.uncorrected.volatile.total", "2", "ecc_uncorrected_volatile", 2),
    ("remapped_rows.pending", "Yes", "remap_pending", True),
])
def test_one_value_changes_and_the_derivation_is_recorded(field, value, key, expect):
    text = H100.read_text()
    derived = load().derive(text, field, value)
    assert "#@ derived: " + field in derived
    before, after = parse_gpu_query(without_provenance(text))[0], parse_gpu_query(without_provenance(derived))[0]
    assert after[key] == expect
    assert {k: v for k, v in after.items() if k != key} == {k: v for k, v in before.items() if k != key}


def test_an_unknown_field_is_refused():
    with pytest.raises(ValueError, match="0 columns"):
        load().derive(H100.read_text(), "no.such.field", "1")
