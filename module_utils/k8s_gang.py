# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gang feasibility checks that only an admission webhook (or a stuck job) reveals today.

Pure functions over manifests (dicts), run offline by ``k8s_manifest_validate``:

* a Volcano ``Job`` whose ``spec.minAvailable`` exceeds the sum of its tasks' ``replicas``, or a task
  whose ``minAvailable`` exceeds its ``replicas`` (Volcano's job admission webhook refuses both: the
  gang could never start);
* with the pool's GPU count: a Volcano ``PodGroup`` whose ``minResources`` ask for more GPUs than the
  pool has, a Volcano ``Job`` whose gang (``minAvailable`` pods, the cheapest ones first) needs more
  GPUs than the pool has, and a Kueue ``ClusterQueue`` or Volcano ``Queue`` whose GPU quota exceeds the
  pool (it would admit work that can never run). These stay pending forever on a real cluster.
"""

from ansible.module_utils.k8s_pool import GPU_RESOURCE, parse_gpu_quantity

VOLCANO_BATCH = "batch.volcano.sh/"
VOLCANO_SCHEDULING = "scheduling.volcano.sh/"
KUEUE = "kueue.x-k8s.io/"


def _name(doc):
    meta = doc.get("metadata") or {}
    return f"{doc.get('kind')}/{meta.get('name', '<unnamed>')}"


def _int(value, default=0):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is not a whole number")
    return int(value)


def pod_gpus(template, resource=GPU_RESOURCE):
    """GPUs one pod of ``template`` (a PodTemplateSpec) needs: the sum over its containers' limits
    (else requests); init containers run one at a time, so the pod needs the larger of the two."""
    spec = (template or {}).get("spec") or {}

    def need(container):
        res = container.get("resources") or {}
        value = (res.get("limits") or {}).get(resource, (res.get("requests") or {}).get(resource, 0))
        return parse_gpu_quantity(value)

    main = sum(need(c) for c in spec.get("containers") or [])
    init = max((need(c) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def volcano_job_errors(doc, pool_gpus=None, resource=GPU_RESOURCE):
    """Errors of one Volcano Job: minAvailable above replicas, or a gang bigger than the pool."""
    spec = doc.get("spec") or {}
    tasks = spec.get("tasks") or []
    errors = []
    total = 0
    pods = []
    for index, task in enumerate(tasks):
        replicas = _int(task.get("replicas"), 0)
        total += replicas
        task_min = task.get("minAvailable")
        if task_min is not None and _int(task_min) > replicas:
            errors.append(
                f"{_name(doc)}: spec.tasks[{index}] ({task.get('name', index)}) minAvailable {task_min} exceeds "
                f"its replicas {replicas}; Volcano's admission webhook refuses it"
            )
        gpus = pod_gpus(task.get("template"), resource)
        pods.extend([gpus] * replicas)
    min_available = spec.get("minAvailable")
    if min_available is not None and _int(min_available) > total:
        errors.append(
            f"{_name(doc)}: spec.minAvailable {min_available} exceeds the total replicas {total} of its tasks; "
            f"the gang can never start (Volcano's admission webhook refuses it)"
        )
    elif pool_gpus is not None and tasks:
        gang = _int(min_available, total)
        need = sum(sorted(pods)[:gang])
        if need > pool_gpus:
            errors.append(
                f"{_name(doc)}: its gang of {gang} pod(s) needs at least {need} {resource}, the pool has {pool_gpus}"
            )
    return errors


def podgroup_errors(doc, pool_gpus, resource=GPU_RESOURCE):
    """A PodGroup whose minResources ask for more GPUs than the pool has can never be scheduled."""
    res = (doc.get("spec") or {}).get("minResources") or {}
    want = parse_gpu_quantity(res.get(resource, 0))
    if want > pool_gpus:
        return [f"{_name(doc)}: spec.minResources asks for {want} {resource}, the pool has {pool_gpus}"]
    return []


def queue_errors(doc, pool_gpus, resource=GPU_RESOURCE):
    """A Kueue ClusterQueue or Volcano Queue whose GPU quota exceeds the pool admits work that cannot run."""
    errors = []
    spec = doc.get("spec") or {}
    if doc.get("kind") == "ClusterQueue":
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    if res.get("name") == resource and parse_gpu_quantity(res.get("nominalQuota", 0)) > pool_gpus:
                        errors.append(
                            f"{_name(doc)}: flavor {flavor.get('name')} has a nominal {resource} quota of "
                            f"{res.get('nominalQuota')}, the pool has {pool_gpus}"
                        )
    else:
        for field in ("capability", "deserved", "guarantee"):
            block = spec.get(field) or {}
            if field == "guarantee":
                block = block.get("resource") or {}
            if resource in block and parse_gpu_quantity(block[resource]) > pool_gpus:
                errors.append(f"{_name(doc)}: spec.{field} {resource} is {block[resource]}, the pool has {pool_gpus}")
    return errors


def gang_errors(docs, pool_gpus=None, resource=GPU_RESOURCE):
    """Every gang feasibility error over ``docs``; the GPU checks run only when ``pool_gpus`` is given."""
    errors = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        api = str(doc.get("apiVersion", ""))
        kind = doc.get("kind")
        try:
            if api.startswith(VOLCANO_BATCH) and kind == "Job":
                errors.extend(volcano_job_errors(doc, pool_gpus, resource))
            elif pool_gpus is None:
                continue
            elif api.startswith(VOLCANO_SCHEDULING) and kind == "PodGroup":
                errors.extend(podgroup_errors(doc, pool_gpus, resource))
            elif (api.startswith(KUEUE) and kind == "ClusterQueue") or (
                api.startswith(VOLCANO_SCHEDULING) and kind == "Queue"
            ):
                errors.extend(queue_errors(doc, pool_gpus, resource))
        except ValueError as exc:
            errors.append(f"{_name(doc)}: {exc}")
    return errors
