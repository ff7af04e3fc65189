"""NodeName entries from gathered facts: the caller names the variable that carries Gres=."""

import pytest
from ansible.module_utils.slurm_conf import SlurmConfDataError, config_lines, nodes_from_facts

FACTS = {
    "ansible_processor_count": 2,
    "ansible_processor_cores": 16,
    "ansible_processor_threads_per_core": 2,
    "ansible_memtotal_mb": 257000,
}


def test_node_line_from_facts_and_the_named_gres_variable():
    hostvars = {"gpu01.lab": dict(FACTS, discovered_gres="gpu:h100:8", gpu_discovery_gres="gpu:a100:4")}
    (node,) = nodes_from_facts(["gpu01.lab"], hostvars, {}, "discovered_gres")
    assert (node["NodeName"], node["CPUs"], node["Gres"]) == ("gpu01", 64, "gpu:h100:8")


def test_a_host_without_the_named_gres_variable_gets_no_gres():
    (node,) = nodes_from_facts(["gpu01"], {"gpu01": dict(FACTS, gpu_discovery_gres="gpu:a100:4")}, {}, "other")
    assert "Gres" not in node


def test_missing_facts_name_the_host():
    with pytest.raises(SlurmConfDataError, match="host gpu02: facts ansible_memtotal_mb are missing"):
        nodes_from_facts(["gpu02"], {"gpu02": {k: v for k, v in FACTS.items() if k != "ansible_memtotal_mb"}},
                         {}, "gpu_discovery_gres")


@pytest.mark.parametrize("value", ['enable_configless,"x"', "/var/spool/slurmctld # moved", "a\rb",
                                   '"cloud "fast" nodes"'])
def test_a_value_slurm_conf_cannot_hold_is_refused_naming_the_variable_and_key(value):
    # parse_config.c: a quoted value is "([^"]*)" (no escape for "), an unescaped # starts a comment
    with pytest.raises(SlurmConfDataError, match="variable slurm_common_config_extra: key SlurmctldParameters"):
        config_lines({"SlurmctldParameters": value}, "slurm_common_config_extra")


def test_values_with_spaces_are_still_quoted_and_prequoted_values_kept():
    assert config_lines({"A": "two words", "B": '"kept as is"', "C": "plain"}) == [
        'A="two words"', 'B="kept as is"', "C=plain"]


def test_a_node_reported_gres_that_slurm_conf_cannot_hold_is_refused_naming_the_host():
    hostvars = {"gpu01": dict(FACTS, gpu_discovery_gres="gpu:h100:8"),
                "gpu02": dict(FACTS, gpu_discovery_gres='gpu:h100:8 Features="x"')}
    with pytest.raises(SlurmConfDataError, match="host gpu02: gpu_discovery_gres"):
        nodes_from_facts(["gpu01", "gpu02"], hostvars, {}, "gpu_discovery_gres")
