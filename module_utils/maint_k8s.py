"""Kubernetes-pool maintenance: which wave nodes Kubernetes serves, how they are drained, where their step lives.

Pure functions (docs/maintenance.md, "Kubernetes-pool nodes"). A Kubernetes-pool node in a wave is cordoned
and drained (kubernetes.core.k8s_drain: the eviction API, so PodDisruptionBudgets hold; DaemonSet pods
stay; emptyDir data goes; ``force`` only when the operator forces), changed, rebooted, gated, and
uncordoned by the gate on PASS. Its step lives in the label ``node-restriction.kubernetes.io/gpufleet-maint``
(``drain``, ``applied``), which the node's own kubelet cannot write (NodeRestriction), so a killed run is finished
by the next one and a node cannot forge maintenance's cordon; the annotation ``gpufleet.io/maint`` (the toolkit's
reason format, module_utils/node_reason.py) carries the run for people and reports, and is never trusted alone.
"""

from ansible.module_utils.k8s_state import node_state
from ansible.module_utils.maint_plan import wave_check, wave_schedule
from ansible.module_utils.node_reason import make_reason, parse_reason

ANNOTATION = "gpufleet.io/maint"
# Maintenance's own record of its step (and so of its cordon): a label a kubelet may not set, change or remove on its
# own Node (the NodeRestriction admission plugin refuses kubelets labels under node-restriction.kubernetes.io/).
STEP_LABEL = "node-restriction.kubernetes.io/gpufleet-maint"
STEPS = ("drain", "applied")
K8S = "k8s"


def drain_options(timeout, force=False):
    """``delete_options`` of kubernetes.core.k8s_drain, the same for a pool move and for maintenance.

    ``kubectl drain --ignore-daemonsets --delete-emptydir-data`` (``--force`` only when *force*); pods are
    evicted, never deleted (``disable_eviction`` stays false), so a PodDisruptionBudget refuses an eviction
    that would break it and the caller retries until *timeout*.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0:
        raise ValueError(f"drain timeout must be a non-negative integer (seconds), got {timeout!r}")
    return {"ignore_daemonsets": True, "delete_emptydir_data": True, "wait_timeout": timeout,
            "force": bool(force), "disable_eviction": False}


def schedule(plan, nodes):
    """The Kubernetes-pool nodes of the plan's waves, in wave order: ``{order, serial}`` (the k8s wave play).

    *nodes*: maint_plan.planner_nodes' list, the plan's input (maint_plan.wave_schedule reads each node's
    pool from it; a node of no known pool goes to neither wave play).
    """
    return wave_schedule(plan, nodes, True)[K8S]


def step_annotation(step, run_id):
    """The annotation value for *step* (``drain``, ``applied``) of run *run_id*."""
    if step not in ("drain", "applied"):
        raise ValueError(f"maintenance step must be drain or applied, got {step!r}")
    return make_reason("maint", step, run_id, K8S)


def step_labels(step):
    """The Node labels of maintenance's *step* (``drain``, ``applied``), or of none (``None``: the record removed)."""
    if step is not None and step not in STEPS:
        raise ValueError(f"maintenance step must be drain or applied, got {step!r}")
    return {STEP_LABEL: step}


def node_step(node):
    """Where an earlier run left a Kubernetes node: ``{step, run_id, cordoned}`` from a Node object.

    ``step`` is ``drain`` or ``applied`` when the node carries maintenance's label ``STEP_LABEL`` with that
    value, None otherwise. The annotation ``ANNOTATION`` alone is no step: the node's own kubelet may write any
    annotation on its Node, the label it may not. ``run_id`` is the annotation's run where the annotation is
    ours and names the same step, else None.

    Work at risk: an admin's cordon and a node's maintenance. Refused: a step only an annotation claims (what a
    node's kubelet can forge) is no step, so its cordon reads as an admin's, is never lifted by a gate and the
    node is left out of maintenance; guarded: the step a run recorded in the label survives a killed run.
    """
    meta = (node or {}).get("metadata") or {}
    label = (meta.get("labels") or {}).get(STEP_LABEL)
    step = label if label in STEPS else None
    parsed = parse_reason((meta.get("annotations") or {}).get(ANNOTATION))
    run_id = None
    if step and parsed and parsed["kind"] == "maint" and parsed["detail"] == step:
        run_id = parsed["run_id"]
    return {"step": step, "run_id": run_id,
            "cordoned": bool(((node or {}).get("spec") or {}).get("unschedulable"))}


def may_uncordon(node):
    """Whether a gate PASS lifts *node*'s cordon: only where maintenance's label says maintenance cordoned it.

    Work at risk: an admin's cordon. Refused: a cordon without maintenance's label (an admin's, or one whose
    node forged the ``gpufleet.io/maint`` annotation through its own kubelet) is never lifted.
    """
    step = node_step(node)
    return step["cordoned"] and step["step"] is not None


def node_ready(node):
    """Whether a Node object reports condition Ready=True (anything else, or no conditions, is not ready)."""
    for cond in (((node or {}).get("status") or {}).get("conditions")) or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def outcome(verdict, node):
    """The maintenance outcome of a gated Kubernetes node: resumed (PASS and schedulable again), failed
    (FAIL: the gate tainted it) or error (anything else, including a PASS the gate could not admit)."""
    v = (verdict or {}).get("verdict") if isinstance(verdict, dict) else verdict
    cordoned = node_step(node)["cordoned"] if node else True
    if v == "PASS" and not cordoned:
        return "resumed"
    if v == "FAIL":
        return "failed"
    return "error"


def live_view(node):
    """A Kubernetes-pool node's service state, from its Node object (kubernetes.core.k8s_info).

    ``{name, pool, ready, cordoned, in_service, step, drained, down, reason, ours}``. ``in_service`` is
    module_utils/k8s_state.py's (Ready, not cordoned, no NoSchedule/NoExecute taint but the pool's);
    ``step`` is maintenance's label's (:func:`node_step`). ``drained`` (cordoned), ``down`` (not
    Ready, or tainted out of service), ``reason`` and ``ours`` (our maintenance annotation, else our
    pool hold reason, parsed) are the shape maint_plan.wave_check reads, as slurm_node_info gives it for
    Slurm. Raises ValueError on an object that is not a Node.

    Work at risk: none (read-only). A Ready condition that is not True is never in service.
    """
    state = node_state(node)
    step = node_step(node)
    annotation = (((node or {}).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    reason = state["reason"]
    if step["step"]:
        reason = annotation if step["run_id"] is not None else make_reason("maint", step["step"], None, K8S)
    return {"name": state["name"], "pool": state["pool"], "ready": state["ready"] is True,
            "cordoned": state["unschedulable"], "in_service": state["in_service"], "step": step["step"],
            "drained": state["unschedulable"], "down": not state["in_service"] and not state["unschedulable"],
            "reason": reason, "ours": parse_reason(reason)}


def live_views(node_objs, node_names):
    """``{host: live_view}`` for each inventory host whose Node (*node_names*: ``{host: Node name}``) is among
    *node_objs* (a k8s_info ``resources`` list); a host without a Node is absent (nothing shows it in service).

    Work at risk: none (read-only).
    """
    by_name = {}
    for obj in node_objs or []:
        name = ((obj or {}).get("metadata") or {}).get("name") if isinstance(obj, dict) else None
        if name:
            by_name[name] = obj
    return {host: live_view(by_name[name]) for host, name in sorted((node_names or {}).items()) if name in by_name}


def live_wave_check(wave, node_objs, node_names, pools):
    """The Slurm path's live check (maint_plan.wave_check) for a Kubernetes wave, on Kubernetes' state now:
    ``{go, left_out}``.

    Every node of *wave* with a Node is in the Kubernetes pool (the plan put it in the Kubernetes wave); the
    pool's nodes in service are those whose Node carries the pool label and is in service (:func:`live_view`).
    A wave node without a Node goes on to maint_k8s, which leaves it out as unknown to the API.

    Work at risk: the Nodes decide which wave nodes are cordoned and drained now. Guarded: a node that would take the
    pool's nodes in service below its ``cluster_pools`` minimum is left out with the reason; a node someone
    else cordoned is left as it is; a node Kubernetes does not show in service never counts toward the minimum.
    """
    views = live_views(node_objs, node_names)
    pool_of = {host: view["pool"] for host, view in views.items()}
    pool_of.update({node: K8S for node in wave or [] if node in views})
    return wave_check(wave, views, pools, pool_of)
