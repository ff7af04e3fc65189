"""Hostlist folding and expansion (module_utils/hostlist.py, filter_plugins/hostlist.py)."""


import pytest
from ansible.errors import AnsibleFilterError
from ansible.module_utils.hostlist import (
    HostlistError,
    _fast_fold,
    _nodeset_fold,
    hostlist_count,
    hostlist_expand,
    hostlist_fold,
)
from hostlist import FilterModule
from hypothesis import given, settings
from hypothesis import strategies as st

NAMES = st.builds(
    lambda prefix, digits: prefix + digits,
    st.sampled_from(["a", "b", "gpu", "n-", "x_", "ab", ""]),
    st.sampled_from(["", "0", "1", "01", "9", "10", "001", "0010", "100", "007", "99", "12345"]),
).filter(bool)


def test_fold_consecutive_padded_names_into_one_range():
    assert hostlist_fold(["gpu01", "gpu02", "gpu03", "gpu04"]) == "gpu[01-04]"


def test_fold_keeps_gaps_and_sorts_and_deduplicates():
    assert hostlist_fold(["gpu04", "gpu01", "gpu02", "gpu02", "gpu07"]) == "gpu[01-02,04,07]"


def test_fold_groups_by_prefix():
    assert hostlist_fold(["b1", "a2", "a1", "login"]) == "a[1-2],b1,login"


def test_fold_single_name_has_no_brackets():
    assert hostlist_fold(["gpu01"]) == "gpu01"


def test_fold_empty_input_gives_empty_string():
    assert hostlist_fold([]) == ""


def test_fold_only_last_numeric_axis_for_slurm():
    assert hostlist_fold(["rack1-n01", "rack2-n01"]) == "rack1-n01,rack2-n01"
    assert hostlist_fold(["rack1-n01", "rack1-n02"]) == "rack1-n[01-02]"


def test_fold_mixed_padding_of_same_value_keeps_both_names():
    assert sorted(hostlist_expand(hostlist_fold(["n1", "n01"]))) == ["n01", "n1"]


def test_fold_rejects_names_with_hostlist_syntax():
    with pytest.raises(HostlistError, match="gpu 1"):
        hostlist_fold(["gpu 1", "gpu2"])


def test_expand_range():
    assert hostlist_expand("gpu[01-04]") == ["gpu01", "gpu02", "gpu03", "gpu04"]


def test_expand_empty_and_none():
    assert hostlist_expand("") == []
    assert hostlist_expand(None) == []


def test_expand_invalid_expression_raises_hostlist_error():
    with pytest.raises(HostlistError, match="gpu\\[01-"):
        hostlist_expand("gpu[01-")


def test_count_counts_distinct_hosts():
    assert hostlist_count("gpu[01-04],gpu02,login1") == 5


@settings(max_examples=500)
@given(st.lists(NAMES, min_size=1, max_size=12))
def test_expand_of_fold_returns_the_same_set(names):
    assert set(hostlist_expand(hostlist_fold(names))) == set(names)


@settings(max_examples=1500)
@given(st.lists(NAMES, min_size=1, max_size=12))
def test_fast_path_text_equals_clustershell_text(names):
    fast = _fast_fold(set(names))
    if fast is not None:
        assert fast == _nodeset_fold(names)


def test_fast_path_applies_to_uniform_names():
    assert _fast_fold({"gpu0001", "gpu0002"}) == "gpu[0001-0002]"


def test_fold_10000_names_gives_one_range_of_every_other_number():
    # Its speed is bench/scale_logic's figure (beside ClusterShell's), not an assertion: it moves with load.
    names = [f"gpu{i:05d}" for i in range(0, 20000, 2)]
    folded = hostlist_fold(names)
    assert hostlist_count(folded) == 10000
    assert sorted(hostlist_expand(folded)) == names


def test_filter_map_exposes_the_three_filters():
    filters = FilterModule().filters()
    assert filters["hostlist_fold"](["n1", "n2"]) == "n[1-2]"
    assert filters["hostlist_expand"]("n[1-2]") == ["n1", "n2"]
    assert filters["hostlist_count"]("n[1-2]") == 2


def test_filter_turns_errors_into_ansible_filter_errors():
    with pytest.raises(AnsibleFilterError, match="hostlist_expand"):
        FilterModule().filters()["hostlist_expand"]("n[1-")
