"""Filters for maintain.yml's reservation mode, Kubernetes-pool waves and control-plane upgrades.

Names mapped to module_utils/maint_resv.py, maint_k8s.py and maint_upgrade.py (pure, unit-tested there).
"""

import os

import ansible.module_utils

_MU = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")
if _MU not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_MU)

from ansible.module_utils import maint_k8s, maint_resv, maint_upgrade
from ansible.module_utils.filter_errors import as_filter


def maint_resv_plan(nodes, reservations_text, squeue_text, run_id, timeout, duration, users):
    """The wave's reservation plan from the raw ``scontrol -o show reservation`` and squeue outputs."""
    return maint_resv.plan_wave(sorted(nodes), maint_resv.parse_reservations(reservations_text),
                                maint_resv.parse_squeue_jobs(squeue_text), run_id, int(timeout), int(duration),
                                list(users))


def maint_resv_ready(reservations_text, name, views, nodes):
    return maint_resv.ready(maint_resv.parse_reservations(reservations_text), name, views, nodes)


def k8s_drain_options(timeout, force=False):
    """k8s_drain's delete_options, shared by pool moves (pool_executor) and maintenance (maint_k8s)."""
    return maint_k8s.drain_options(int(timeout), bool(force))


def maint_kube_step(node_info):
    """The step an earlier run left on a Node (k8s_info's ``resources[0]``, or None when absent)."""
    return maint_k8s.node_step(node_info)


def maint_kube_annotation(step, run_id):
    return {maint_k8s.ANNOTATION: maint_k8s.step_annotation(step, run_id)}


def maint_kube_step_labels(step):
    """Maintenance's step label (``node-restriction.kubernetes.io/gpufleet-maint``; None removes it)."""
    return maint_k8s.step_labels(step)


def maint_kube_wave_check(wave, node_objs, node_names, pools):
    """maint_k8s.live_wave_check: the Slurm path's live minimum check (maint_plan.wave_check) on the Nodes now."""
    return maint_k8s.live_wave_check(list(wave), list(node_objs or []), dict(node_names or {}), pools)


def maint_ctlplane_errors(upgrade, change, distribution, slurmd_packages, installed):
    """Every refusal of ``maint_upgrade``: its shape, then (with *installed*, the version running now) the skip."""
    errors = maint_upgrade.validate(upgrade, change, distribution, tuple(slurmd_packages))
    if errors or not upgrade or installed is None:
        return errors
    return maint_upgrade.skip_errors(upgrade, installed)


def maint_ctlplane_installed(packages, name):
    return maint_upgrade.installed_from_packages(packages, name)


class FilterModule:
    def filters(self):
        return {
            "maint_resv_plan": maint_resv_plan,
            "maint_resv_ready": maint_resv_ready,
            "maint_resv_squeue_argv": maint_resv.squeue_argv,
            "maint_kube_schedule": maint_k8s.schedule,
            "k8s_drain_options": k8s_drain_options,
            "maint_kube_step": maint_kube_step,
            "maint_kube_annotation": maint_kube_annotation,
            "maint_kube_step_labels": maint_kube_step_labels,
            "maint_kube_may_uncordon": maint_k8s.may_uncordon,
            "maint_kube_ready": maint_k8s.node_ready,
            "maint_kube_outcome": maint_k8s.outcome,
            "maint_kube_wave_check": as_filter(maint_kube_wave_check, (ValueError,)),
            "maint_ctlplane_errors": maint_ctlplane_errors,
            "maint_ctlplane_installed": maint_ctlplane_installed,
            "maint_ctlplane_plan": maint_upgrade.plan,
            "maint_ctlplane_version": maint_upgrade.debian_upstream,
        }
