"""cluster_pools validation: every error at once, each naming the variable and the host."""
import pytest
from ansible.module_utils.pool_policy import normalize, parse_target, resolve_target, validate

HOSTS = {f"gpu{i:02d}": {} for i in range(1, 9)}


def policy(**over):
    base = {"pools": {"slurm": {"min": 2, "target": 6}, "k8s": {"min": 1, "target": "25%"}},
            "max_unavailable": 1, "drain_timeout": 3600, "excluded": []}
    base.update(over)
    return base


def test_good_policy_has_no_errors():
    assert validate(policy(), HOSTS) == []


def test_defaults_fill_in():
    norm, errors = normalize({"pools": {"slurm": {"target": 3}}})
    assert errors == []
    assert norm == {"pools": {"slurm": {"min": 0, "target": 3}}, "max_unavailable": 1, "drain_timeout": 3600,
                    "excluded": []}


@pytest.mark.parametrize(("value", "parsed"), [
    (3, ("count", 3)), ("3", ("count", 3)), ("75%", ("fraction", 0.75)), (0.75, ("fraction", 0.75)),
    ("12.5 %", ("fraction", 0.125)), (1.0, ("fraction", 1.0)),
])
def test_parse_target(value, parsed):
    assert parse_target(value) == parsed


@pytest.mark.parametrize("value", [-1, 1.5, "lots", "150%", True, None, [3]])
def test_parse_target_rejects(value):
    with pytest.raises(ValueError):
        parse_target(value)


@pytest.mark.parametrize(("value", "eligible", "count"), [
    ("75%", 8, 6), ("25%", 7, 1), (0.5, 5, 2), (3, 100, 3), ("100%", 9, 9), ("33%", 100, 33)])
def test_fraction_targets_round_down_so_they_never_add_up_past_the_nodes(value, eligible, count):
    assert resolve_target(value, eligible) == count


@pytest.mark.parametrize(("pol", "needle"), [
    (policy(pools={"gpu": {"target": 1}}), "cluster_pools.pools.gpu: unknown pool 'gpu'"),
    (policy(pools={}), "cluster_pools.pools: must be a non-empty mapping"),
    (policy(pools={"slurm": {"min": 1}}), "cluster_pools.pools.slurm.target: is required"),
    (policy(pools={"slurm": {"min": -1, "target": 1}}), "slurm.min: must be a non-negative"),
    (policy(pools={"slurm": {"min": "2", "target": 3}}), "slurm.min: must be a non-negative"),
    (policy(pools={"slurm": {"min": 4, "target": 3}}), "cluster_pools.pools.slurm.target: 3 is below"),
    (policy(pools={"slurm": {"target": "lots"}}), "cluster_pools.pools.slurm.target: 'lots' is neither"),
    (policy(pools={"slurm": {"target": 3, "max": 4}}), "cluster_pools.pools.slurm.max: unknown key"),
    (policy(max_unavailable=0), "cluster_pools.max_unavailable: must be an integer of at least 1"),
    (policy(max_unavailable="1"), "cluster_pools.max_unavailable"),
    (policy(drain_timeout=-5), "cluster_pools.drain_timeout"),
    (policy(excluded="gpu01"), "cluster_pools.excluded: must be a list"),
    (policy(excluded=["gpu99"]), "cluster_pools.excluded: gpu99 is not a host of the inventory"),
    (policy(batch=2), "cluster_pools.batch: unknown key"),
    (policy(pools={"slurm": {"target": "80%"}, "k8s": {"target": "30%"}}),
     "fractional targets add up to 110%"),
    (policy(pools={"slurm": {"target": 9}}), "cluster_pools.pools.slurm.target: 9 means 9 nodes, but only 8"),
    (policy(pools={"slurm": {"min": 5, "target": 5}, "k8s": {"min": 4, "target": 4}}),
     "the minimums add up to 9 nodes, but only 8 are eligible"),
    (policy(pools={"slurm": {"target": 5}, "k8s": {"target": 4}}), "the targets add up to 9 nodes"),
    (policy(pools={"slurm": {"min": 3, "target": "25%"}}), "'25%' means 2 of 8 eligible nodes, below"),
    ("slurm", "cluster_pools: must be a mapping"),
])
def test_each_error_names_the_variable(pol, needle):
    errors = validate(pol, HOSTS)
    assert any(needle in e for e in errors), errors


def test_excluded_hosts_are_not_eligible():
    errors = validate(policy(pools={"slurm": {"target": 7}}, excluded=["gpu01", "gpu02"]), HOSTS)
    assert errors == ["cluster_pools.pools.slurm.target: 7 means 7 nodes, but only 6 are eligible "
                      "(8 hosts, 2 excluded)"]


@pytest.mark.parametrize(("hostvars", "needle"), [
    ({"cluster_pool_pin": "gpu"}, "gpu03: cluster_pool_pin='gpu' is not a pool"),
    ({"cluster_pool_pin": 3}, "gpu03: cluster_pool_pin must be a pool name"),
])
def test_pin_errors_name_the_host_and_variable(hostvars, needle):
    errors = validate(policy(), {**HOSTS, "gpu03": hostvars})
    assert any(needle in e for e in errors), errors


def test_pin_to_a_pool_the_policy_does_not_define():
    errors = validate(policy(pools={"slurm": {"target": 3}}), {**HOSTS, "gpu03": {"cluster_pool_pin": "k8s"}})
    assert errors == ["gpu03: cluster_pool_pin='k8s' names a pool that cluster_pools.pools does not define"]


def test_pinned_node_in_the_excluded_set_is_an_error():
    errors = validate(policy(excluded=["gpu07"]), {**HOSTS, "gpu07": {"cluster_pool_pin": "slurm"}})
    assert errors == ["gpu07: cluster_pool_pin='slurm' conflicts with cluster_pools.excluded "
                      "(an excluded node is never moved); drop one of them"]


def test_pins_to_other_pools_that_leave_too_few_nodes_are_an_error():
    hosts = {**HOSTS, **{h: {"cluster_pool_pin": "k8s"} for h in ("gpu01", "gpu02", "gpu03")}}
    errors = validate(policy(), hosts)
    assert errors == ["cluster_pools.pools.slurm: needs 6 nodes but only 5 eligible nodes are not pinned "
                      "elsewhere (cluster_pool_pin on gpu01, gpu02, gpu03)"]


def test_all_errors_come_back_at_once():
    pol = policy(pools={"gpu": {"target": 1}, "slurm": {"min": -1, "target": 1}}, max_unavailable=0,
                 excluded=["gpu99"])
    errors = validate(pol, {**HOSTS, "gpu01": {"cluster_pool_pin": "nope"}})
    assert len(errors) == 5, errors
