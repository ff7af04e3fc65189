"""Kubernetes-pool maintenance: which wave nodes Kubernetes serves, how they are drained, where their step lives.

Pure functions (docs/maintenance.md, "Kubernetes-pool nodes"). A Kubernetes-pool node in a wave is cordoned
and drained (kubernetes.core.k8s_drain: the eviction API, so PodDisruptionBudgets hold; DaemonSet pods
stay; emptyDir data goes; ``force`` only when the operator forces), changed, rebooted, gated, and
uncordoned by the gate on PASS. Its step lives in the node annotation ``gpufleet.io/maint`` (the toolkit's
reason format, module_utils/node_reason.py), so a killed run is finished by the next one.
"""

from ansible.module_utils.node_reason import make_reason, parse_reason

ANNOTATION = "gpufleet.io/maint"
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


def _pool(view):
    view = view or {}
    return view.get("pool") or ("slurm" if view.get("in_partition") else None)


def schedule(plan, views):
    """The Kubernetes-pool nodes of the plan's waves, in wave order: ``{order, serial}`` (the k8s wave play)."""
    order, serial = [], []
    for wave in (plan or {}).get("waves") or []:
        keep = [n for n in wave if _pool((views or {}).get(n)) == K8S]
        if keep:
            order.extend(keep)
            serial.append(len(keep))
    return {"order": order, "serial": serial or [1]}


def step_annotation(step, run_id):
    """The annotation value for *step* (``drain``, ``applied``) of run *run_id*."""
    if step not in ("drain", "applied"):
        raise ValueError(f"maintenance step must be drain or applied, got {step!r}")
    return make_reason("maint", step, run_id, K8S)


def node_step(node):
    """Where an earlier run left a Kubernetes node: ``{step, run_id, cordoned}`` from a Node object.

    ``step`` is ``drain`` or ``applied`` when the node carries our annotation, None otherwise (an
    annotation someone else wrote is not ours and reads as None).
    """
    meta = (node or {}).get("metadata") or {}
    parsed = parse_reason((meta.get("annotations") or {}).get(ANNOTATION))
    step = None
    if parsed and parsed["kind"] == "maint" and parsed["detail"] in ("drain", "applied"):
        step = parsed["detail"]
    return {"step": step, "run_id": parsed["run_id"] if step else None,
            "cordoned": bool(((node or {}).get("spec") or {}).get("unschedulable"))}


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
