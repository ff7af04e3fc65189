"""Job priority as data: module_utils/slurm_priority.py checks it and renders the slurm.conf keys."""

import pytest
from ansible.module_utils.slurm_conf import config_lines
from ansible.module_utils.slurm_priority import (
    MAX_PRIORITY,
    SlurmPriorityError,
    priority_config,
    priority_conflicts,
    priority_errors,
)
from hypothesis import given
from hypothesis import strategies as st

SITE = {
    "type": "multifactor",
    "weights": {
        "age": 1000,
        "fairshare": 10000,
        "job_size": 0,
        "partition": 1000,
        "qos": 5000,
        "tres": {"gres/gpu": 2000, "CPU": 0.5},
    },
    "decay_half_life": "7-0",
    "max_age": "14-0",
    "calc_period": 5,
    "usage_reset_period": "none",
    "favor_small": False,
    "flags": ["SMALL_RELATIVE_TO_TIME", "MAX_TRES"],
}


def test_a_site_policy_renders_the_slurm_conf_lines():
    lines = config_lines(priority_config(SITE))
    assert lines == [
        "PriorityCalcPeriod=5",
        "PriorityDecayHalfLife=7-0",
        "PriorityFavorSmall=NO",
        "PriorityFlags=SMALL_RELATIVE_TO_TIME,MAX_TRES",
        "PriorityMaxAge=14-0",
        "PriorityType=priority/multifactor",
        "PriorityUsageResetPeriod=NONE",
        "PriorityWeightAge=1000",
        "PriorityWeightFairshare=10000",
        "PriorityWeightJobSize=0",
        "PriorityWeightPartition=1000",
        "PriorityWeightQOS=5000",
        "PriorityWeightTRES=CPU=0.5,gres/gpu=2000",
    ]


def test_no_data_renders_no_priority_key():
    assert priority_config({}) == {}
    assert priority_config(None) == {}
    assert priority_errors({}) == []


def test_multifactor_is_the_type_when_only_weights_are_given():
    assert priority_config({"weights": {"qos": 10}}) == {
        "PriorityType": "priority/multifactor",
        "PriorityWeightQOS": 10,
    }


def test_basic_renders_only_the_type_and_refuses_multifactor_keys():
    assert priority_config({"type": "basic"}) == {"PriorityType": "priority/basic"}
    assert priority_errors({"type": "basic", "weights": {"qos": 1}}) == [
        "variable cluster_slurm_priority: type basic (FIFO) ignores weights: use type multifactor or drop them"
    ]


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"kind": "multifactor"}, "unknown key 'kind'"),
        ({"type": "fifo"}, "type must be basic or multifactor, got 'fifo'"),
        ({"weights": {"waiting": 1}}, "weights.waiting is not a priority weight"),
        ({"weights": {"qos": -1}}, "weights.qos must be an integer from 0 to 4294967295, got -1"),
        ({"weights": {"qos": "high"}}, "weights.qos must be an integer"),
        ({"weights": {"qos": True}}, "weights.qos must be an integer"),
        ({"weights": {"qos": 1.5}}, "weights.qos must be an integer"),
        ({"weights": [1000]}, "weights must be a mapping"),
        ({"weights": {"tres": {}}}, "weights.tres must be a non-empty mapping"),
        ({"weights": {"tres": {"gres gpu": 1}}}, "weights.tres names 'gres gpu', not a TRES"),
        ({"weights": {"tres": {"gres/gpu": "lots"}}}, "weights.tres.gres/gpu must be a number"),
        ({"weights": {"age": MAX_PRIORITY, "qos": 1}}, "the weights sum to 4294967296, above 4294967295"),
        ({"decay_half_life": "7 days"}, "decay_half_life must be a Slurm time"),
        ({"max_age": "1-2-3"}, "max_age must be a Slurm time"),
        ({"calc_period": 0}, "calc_period must be a whole number of minutes, 1 or more"),
        ({"usage_reset_period": "HOURLY"}, "usage_reset_period must be one of NONE, NOW, DAILY"),
        ({"decay_half_life": 0}, "decay_half_life 0 (no decay) needs a usage_reset_period other than NONE"),
        ({"favor_small": "yes"}, "favor_small must be true or false, got 'yes'"),
        ({"flags": ["FAIR_TREE"]}, "flags: unknown flag 'FAIR_TREE'"),
        ({"flags": "MAX_TRES"}, "flags must be a list"),
        (["multifactor"], "variable cluster_slurm_priority must be a mapping, got list"),
    ],
)
def test_bad_data_is_named_by_variable_and_key(policy, message):
    errors = priority_errors(policy)
    assert any(message in e for e in errors), errors
    assert all(e.startswith("variable cluster_slurm_priority") for e in errors), errors
    with pytest.raises(SlurmPriorityError, match="cluster_slurm_priority"):
        priority_config(policy)


def test_the_role_s_own_variable_is_named_in_its_errors():
    assert priority_errors({"weights": {"waiting": 1}}, "slurm_common_priority") == [
        "variable slurm_common_priority: weights.waiting is not a priority weight "
        "(one of age, assoc, fairshare, job_size, partition, qos, tres)"
    ]


def test_age_and_fairshare_weights_need_slurmdbd():
    policy = {"weights": {"age": 10, "fairshare": 10, "qos": 10}}
    errors = priority_errors(policy, has_dbd=False)
    assert [e.split(": ", 1)[1].split(" ")[0] for e in errors] == ["weights.age", "weights.fairshare"]
    assert "needs slurmdbd (AccountingStorageType=accounting_storage/slurmdbd)" in errors[0]
    assert priority_errors(policy, has_dbd=True) == []
    assert priority_errors({"weights": {"age": 0, "qos": 10}}, has_dbd=False) == []


def test_decay_zero_with_a_reset_period_is_accepted():
    assert priority_errors({"decay_half_life": 0, "usage_reset_period": "MONTHLY"}) == []
    assert (
        priority_config({"decay_half_life": 0, "usage_reset_period": "monthly"})["PriorityUsageResetPeriod"]
        == "MONTHLY"
    )


@pytest.mark.parametrize("value", ["30", "2:00:00", "7-0", "1-12", "1-12:30:00", 45])
def test_slurm_time_strings_are_accepted(value):
    assert priority_errors({"max_age": value}) == []


def test_large_tres_weights_render_without_an_exponent():
    assert priority_config({"weights": {"tres": {"gres/gpu": 1000000.0}}})["PriorityWeightTRES"] == "gres/gpu=1000000"


def test_priority_keys_also_set_in_config_extra_are_a_conflict():
    extra = {"PriorityWeightAge": 5, "DefMemPerCPU": 512, "PriorityType": "priority/multifactor"}
    assert priority_conflicts(SITE, extra) == [
        "variable slurm_common_config_extra sets PriorityType, PriorityWeightAge, "
        "which cluster_slurm_priority renders: keep one of them"
    ]
    assert priority_conflicts(SITE, {"DefMemPerCPU": 512}) == []
    assert priority_conflicts({}, extra) == []


@given(
    st.dictionaries(
        st.sampled_from(["age", "assoc", "fairshare", "job_size", "partition", "qos"]),
        st.integers(min_value=0, max_value=MAX_PRIORITY // 8),
    )
)
def test_valid_weights_render_one_key_each(weights):
    config = priority_config({"weights": weights})
    assert config["PriorityType"] == "priority/multifactor"
    assert len(config) == 1 + len(weights)
    assert all(isinstance(config[key], int) for key in config if key.startswith("PriorityWeight"))
