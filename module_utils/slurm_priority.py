"""Job priority (fair-share's slurm.conf half) as validated data.

The site writes one mapping (cluster_slurm_priority); this module checks it and renders the
slurm.conf keys (PriorityType, PriorityWeight*, PriorityDecayHalfLife, ...) as slurm.conf(5) of
Slurm 22.05 and later documents them. The shares themselves are accounting data
(module_utils/slurm_accounting.py).

    type: multifactor            # or basic (FIFO: no other key applies)
    weights: {age: 1000, assoc: 0, fairshare: 10000, job_size: 0, partition: 1000, qos: 5000,
              tres: {gres/gpu: 2000}}
    decay_half_life: 7-0         # PriorityDecayHalfLife (a Slurm time string; 0: no decay)
    max_age: 7-0                 # PriorityMaxAge
    calc_period: 5               # PriorityCalcPeriod, minutes
    usage_reset_period: NONE     # PriorityUsageResetPeriod
    favor_small: false           # PriorityFavorSmall
    flags: [SMALL_RELATIVE_TO_TIME]
"""

from __future__ import annotations

import re

VARIABLE = "cluster_slurm_priority"

TYPES = {"basic": "priority/basic", "multifactor": "priority/multifactor"}

WEIGHTS = {
    "age": "PriorityWeightAge",
    "assoc": "PriorityWeightAssoc",
    "fairshare": "PriorityWeightFairshare",
    "job_size": "PriorityWeightJobSize",
    "partition": "PriorityWeightPartition",
    "qos": "PriorityWeightQOS",
}

# Weights slurm.conf(5) says need accounting_storage/slurmdbd.
NEEDS_DBD = ("age", "fairshare")

TIMES = {"decay_half_life": "PriorityDecayHalfLife", "max_age": "PriorityMaxAge"}

RESET_PERIODS = ("NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY")

FLAGS = (
    "ACCRUE_ALWAYS",
    "CALCULATE_RUNNING",
    "DEPTH_OBLIVIOUS",
    "NO_FAIR_TREE",
    "INCR_ONLY",
    "MAX_TRES",
    "NO_NORMAL_ALL",
    "NO_NORMAL_ASSOC",
    "NO_NORMAL_PART",
    "NO_NORMAL_QOS",
    "NO_NORMAL_TRES",
    "SMALL_RELATIVE_TO_TIME",
)

KEYS = ("type", "weights", "decay_half_life", "max_age", "calc_period", "usage_reset_period", "favor_small", "flags")

# A job's priority is a 32-bit unsigned number: the weights together must fit in it.
MAX_PRIORITY = 4294967295

# min, hr:min:00, days-hr:min:00 or days-hr (slurm.conf(5), PriorityDecayHalfLife).
_TIME = re.compile(r"^(\d+|\d+:\d{1,2}(:\d{1,2})?|\d+-\d+(:\d{1,2}(:\d{1,2})?)?)$")
_TRES = re.compile(r"^[A-Za-z]+(/[A-Za-z0-9_:.-]+)?$")


class SlurmPriorityError(ValueError):
    """Priority data that cannot be rendered; the message names the variable."""


def _number(value):
    """A weight as slurm.conf takes it: 2000, 0.5 (never 1e+06)."""
    if _is_int(value):
        return str(value)
    return format(value, "f").rstrip("0").rstrip(".")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _weight_errors(weights, variable):
    if not isinstance(weights, dict):
        return [f"variable {variable}: weights must be a mapping, got {weights!r}"]
    errors = []
    total = 0
    for name in sorted(weights, key=str):
        value = weights[name]
        if name == "tres":
            if not isinstance(value, dict) or not value:
                errors.append(
                    f"variable {variable}: weights.tres must be a non-empty mapping of TRES to weight, got {value!r}"
                )
                continue
            for tres, weight in value.items():
                if not isinstance(tres, str) or not _TRES.match(tres):
                    errors.append(
                        f"variable {variable}: weights.tres names {tres!r}, not a TRES (cpu, mem, gres/gpu, ...)"
                    )
                elif not _is_number(weight):
                    errors.append(f"variable {variable}: weights.tres.{tres} must be a number, got {weight!r}")
                else:
                    total += max(weight, 0)
            continue
        if name not in WEIGHTS:
            errors.append(
                f"variable {variable}: weights.{name} is not a priority weight "
                f"(one of {', '.join(sorted(WEIGHTS))}, tres)"
            )
        elif not _is_int(value) or not 0 <= value <= MAX_PRIORITY:
            errors.append(
                f"variable {variable}: weights.{name} must be an integer from 0 to {MAX_PRIORITY}, got {value!r}"
            )
        else:
            total += value
    if not errors and total > MAX_PRIORITY:
        errors.append(
            f"variable {variable}: the weights sum to {_number(total)}, above {MAX_PRIORITY}: "
            "a job's priority is a 32-bit number"
        )
    return errors


def priority_errors(policy, variable=VARIABLE, has_dbd=None):
    """Every problem in the priority data, one message each naming the variable and the key.

    has_dbd: whether the cluster has slurmdbd (None: not checked); the age and fair-share weights need it.
    """
    if policy in (None, {}):
        return []
    if not isinstance(policy, dict):
        return [f"variable {variable} must be a mapping, got {type(policy).__name__}"]
    errors = [
        f"variable {variable}: unknown key {key!r} (known: {', '.join(KEYS)})"
        for key in sorted(policy, key=str)
        if key not in KEYS
    ]
    kind = policy.get("type", "multifactor")
    if kind not in TYPES:
        errors.append(f"variable {variable}: type must be basic or multifactor, got {kind!r}")
        return errors
    if kind == "basic":
        others = sorted(key for key in policy if key in KEYS and key != "type")
        if others:
            errors.append(
                f"variable {variable}: type basic (FIFO) ignores {', '.join(others)}: use type multifactor or drop them"
            )
        return errors
    weights = policy.get("weights", {})
    errors += _weight_errors(weights, variable)
    if has_dbd is False and isinstance(weights, dict):
        for name in NEEDS_DBD:
            if _is_int(weights.get(name)) and weights[name] > 0:
                errors.append(
                    f"variable {variable}: weights.{name} needs slurmdbd "
                    "(AccountingStorageType=accounting_storage/slurmdbd), "
                    f"and the inventory has no slurm_dbd host"
                )
    for key in TIMES:
        if key in policy:
            value = policy[key]
            if isinstance(value, bool) or not _TIME.match(str(value)):
                errors.append(
                    f"variable {variable}: {key} must be a Slurm time "
                    f"(min, hr:min:sec, days-hr or days-hr:min:sec), got {value!r}"
                )
    if "calc_period" in policy and (not _is_int(policy["calc_period"]) or policy["calc_period"] < 1):
        errors.append(
            f"variable {variable}: calc_period must be a whole number of minutes, 1 or more, "
            f"got {policy['calc_period']!r}"
        )
    if "usage_reset_period" in policy and str(policy["usage_reset_period"]).upper() not in RESET_PERIODS:
        errors.append(
            f"variable {variable}: usage_reset_period must be one of {', '.join(RESET_PERIODS)}, "
            f"got {policy['usage_reset_period']!r}"
        )
    if (
        str(policy.get("decay_half_life", "7-0")) in ("0", "0-0")
        and str(policy.get("usage_reset_period", "NONE")).upper() == "NONE"
    ):
        errors.append(
            f"variable {variable}: decay_half_life 0 (no decay) needs a usage_reset_period "
            "other than NONE (slurm.conf(5))"
        )
    if "favor_small" in policy and not isinstance(policy["favor_small"], bool):
        errors.append(f"variable {variable}: favor_small must be true or false, got {policy['favor_small']!r}")
    flags = policy.get("flags", [])
    if not isinstance(flags, list):
        errors.append(f"variable {variable}: flags must be a list, got {flags!r}")
    else:
        errors += [
            f"variable {variable}: flags: unknown flag {flag!r} (known: {', '.join(FLAGS)})"
            for flag in flags
            if flag not in FLAGS
        ]
    return errors


def priority_config(policy, variable=VARIABLE):
    """The slurm.conf keys for the priority data ({} for none); invalid data raises SlurmPriorityError."""
    errors = priority_errors(policy, variable)
    if errors:
        raise SlurmPriorityError("; ".join(errors))
    if not policy:
        return {}
    kind = policy.get("type", "multifactor")
    config = {"PriorityType": TYPES[kind]}
    if kind == "basic":
        return config
    weights = policy.get("weights", {})
    for name, key in WEIGHTS.items():
        if name in weights:
            config[key] = weights[name]
    if "tres" in weights:
        config["PriorityWeightTRES"] = ",".join(
            f"{tres}={_number(weight)}" for tres, weight in sorted(weights["tres"].items())
        )
    for name, key in TIMES.items():
        if name in policy:
            config[key] = str(policy[name])
    if "calc_period" in policy:
        config["PriorityCalcPeriod"] = policy["calc_period"]
    if "usage_reset_period" in policy:
        config["PriorityUsageResetPeriod"] = str(policy["usage_reset_period"]).upper()
    if "favor_small" in policy:
        config["PriorityFavorSmall"] = policy["favor_small"]
    if policy.get("flags"):
        config["PriorityFlags"] = list(policy["flags"])
    return config


def priority_conflicts(policy, config_extra, variable=VARIABLE, extra_variable="slurm_common_config_extra"):
    """Keys set both by the priority data and by a site's free-form slurm.conf keys: one must go."""
    if not policy or not isinstance(config_extra, dict) or priority_errors(policy, variable):
        return []
    ours = set(priority_config(policy, variable))
    ours.add("PriorityType")
    clash = sorted(key for key in config_extra if key in ours or str(key).lower().startswith("priorityweight"))
    if not clash:
        return []
    return [f"variable {extra_variable} sets {', '.join(clash)}, which {variable} renders: keep one of them"]
