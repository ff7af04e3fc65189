"""The driver-change guard reads the installed driver across a branch change and asks every scheduler.

module_utils/node_stack.py: ``installed_driver`` reads the driver from every driver package of the
package manager (Ubuntu's names carry the branch: nvidia-driver-535, nvidia-driver-550-server,
libnvidia-compute-535; Debian's do not: nvidia-driver, libnvidia-ml1 at 535.x), so a 535 -> 550 change
reads 535, not "no driver". ``k8s_gpu_use`` reads the Node and the pods bound to it (a pod requesting
nvidia.com/gpu uses the GPUs); ``driver_change_decision`` refuses a change while Slurm or Kubernetes shows
work, or while either cannot be read, and an installed driver it cannot read is never "none".
"""

import pathlib

import ansible.module_utils.node_stack as ns
import node_stack as ns_filters
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = pathlib.Path(__file__).resolve().parents[2]
WANTED = "550.163.01"


def pkg(name, version, origin="Ubuntu", arch="amd64"):
    return {name: [{"name": name, "version": version, "arch": arch, "category": "restricted/misc",
                    "origin": origin, "source": "apt"}]}


def facts(*pkgs, base=True):
    """Ansible's package facts of a GPU node: some unrelated packages and the given driver packages."""
    out = {}
    if base:
        out.update(pkg("libc6", "2.35-0ubuntu3.8"))
        out.update(pkg("nvidia-persistenced", "535.183.06-0ubuntu1"))  # versioned on its own: never the driver's
        out.update(pkg("nvidia-settings", "510.47.03-0ubuntu1"))
    for p in pkgs:
        out.update(p)
    return out


UBUNTU_535_SERVER = facts(*(pkg(n, "535.183.06-0ubuntu0.22.04.1") for n in (
    "nvidia-driver-535-server", "libnvidia-compute-535-server", "nvidia-utils-535-server",
    "nvidia-dkms-535-server", "nvidia-kernel-common-535-server")))
UBUNTU_535_DESKTOP = facts(*(pkg(n, "535.183.01-0ubuntu0.22.04.1") for n in (
    "nvidia-driver-535", "libnvidia-compute-535", "nvidia-utils-535")))
UBUNTU_550_OPEN = facts(*(pkg(n, "550.127.05-0ubuntu0.24.04.1") for n in (
    "nvidia-driver-550-server-open", "libnvidia-compute-550-server", "nvidia-dkms-550-server-open")))
DEBIAN_535 = facts(*(pkg(n, "535.216.03-1~deb12u1", origin="Debian") for n in (
    "nvidia-driver", "libnvidia-ml1", "nvidia-kernel-dkms", "libcuda1")))


def slurm(busy=False, drained=False, pool="slurm", reason=None):
    """The shape of slurm_node_info's view (module_utils/pool_live.node_view) the guard reads."""
    return {"pool": pool, "busy": busy, "drained": drained, "down": False, "reason": reason,
            "in_partition": pool == "slurm"}


# --- reading the installed driver -----------------------------------------------------------------------------------


def test_ubuntu_reads_the_installed_535_server_driver_while_the_lock_wants_550():
    got = ns.installed_driver(UBUNTU_535_SERVER, "apt")
    assert (got["state"], got["version"]) == ("installed", "535.183.06")
    assert "libnvidia-compute-535-server" in got["packages"]


def test_ubuntu_reads_the_desktop_and_open_flavours_of_every_branch():
    assert ns.installed_driver(UBUNTU_535_DESKTOP, "apt")["version"] == "535.183.01"
    assert ns.installed_driver(UBUNTU_550_OPEN, "apt")["version"] == "550.127.05"


def test_debian_reads_the_unbranched_driver_packages():
    got = ns.installed_driver(DEBIAN_535, "apt")
    assert (got["state"], got["version"]) == ("installed", "535.216.03")


def test_rhel_reads_the_cuda_repository_driver_with_its_epoch():
    rpm = {"nvidia-driver-cuda-libs": [{"name": "nvidia-driver-cuda-libs", "version": "550.54.15", "release": "1.el9",
                                        "epoch": 3, "arch": "x86_64", "source": "rpm"}],
           "kmod-nvidia-latest-dkms": [{"name": "kmod-nvidia-latest-dkms", "version": "3:550.54.15",
                                        "release": "1.el9", "arch": "x86_64", "source": "rpm"}]}
    assert ns.installed_driver(rpm, "dnf")["version"] == "550.54.15"


def test_a_node_without_any_driver_package_has_none():
    got = ns.installed_driver(facts(), "apt")
    assert (got["state"], got["version"]) == ("none", None)


def test_what_cannot_be_read_is_unknown_never_none():
    # No package facts; two branches half-swapped; a version that is not one; a package manager with no data.
    half = facts(pkg("libnvidia-compute-535-server", "535.183.06-0ubuntu0.22.04.1"),
                 pkg("nvidia-driver-550-server", "550.127.05-0ubuntu0.22.04.1"))
    odd = facts(pkg("nvidia-driver", "latest"))
    for packages, manager in ((None, "apt"), (half, "apt"), (odd, "apt"), (UBUNTU_535_SERVER, "zypper")):
        got = ns.installed_driver(packages, manager)
        assert got["state"] == "unknown" and got["version"] is None and got["reason"], (packages, manager)


# --- the decision: Ubuntu branch change -----------------------------------------------------------------------------


def test_a_busy_ubuntu_node_is_refused_a_branch_change():
    decision = ns.driver_change_decision(ns.installed_driver(UBUNTU_535_SERVER, "apt"), WANTED, slurm(busy=True))
    assert decision["action"] == "refuse", decision
    assert decision["reason"].startswith("driver 535.183.06 -> 550.163.01: the node runs jobs")


def test_a_drained_idle_ubuntu_node_takes_the_branch_change():
    decision = ns.driver_change_decision(ns.installed_driver(UBUNTU_535_SERVER, "apt"), WANTED,
                                         slurm(drained=True))
    assert decision["action"] == "change", decision


def test_an_unreadable_driver_on_a_busy_node_is_refused_not_installed():
    unknown = ns.installed_driver(None, "apt")
    decision = ns.driver_change_decision(unknown, WANTED, slurm(busy=True, drained=True))
    assert decision["action"] == "refuse", decision
    assert "installed driver unknown" in decision["reason"]


def test_an_unreadable_driver_on_a_drained_idle_node_is_changed_not_installed():
    decision = ns.driver_change_decision(ns.installed_driver(None, "apt"), WANTED, slurm(drained=True))
    assert decision["action"] == "change", decision


def test_the_filter_reads_the_packages_the_guard_registers():
    filters = ns_filters.FilterModule().filters()
    assert filters["node_stack_installed_driver"](UBUNTU_535_SERVER, "apt")["version"] == "535.183.06"


# --- the decision: Kubernetes-pool nodes ----------------------------------------------------------------------------


def node(name="gpu05", cordoned=False, pool="kubernetes"):
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "gpufleet.io/pool": pool}},
           "spec": {"podCIDR": "10.42.5.0/24"},
           "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
    if cordoned:
        obj["spec"]["unschedulable"] = True
    return obj


def pod(name, gpus=None, phase="Running", namespace="ml", limits_only=True, init=False):
    resources = {}
    if gpus is not None:
        resources["limits"] = {"nvidia.com/gpu": gpus, "cpu": "8"}
        if not limits_only:
            resources["requests"] = {"nvidia.com/gpu": gpus}
    container = {"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "resources": resources}
    spec = {"nodeName": "gpu05", "containers": [{"name": "side", "image": "busybox"}]}
    if init:
        spec["initContainers"] = [container]
    else:
        spec["containers"].append(container)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"phase": phase}}


def k8s_info(*resources, failed=False):
    """A registered kubernetes.core.k8s_info result."""
    if failed:
        return {"failed": True, "msg": "Failed to get client due to HTTPSConnectionPool(host='10.0.0.10', port=6443)"}
    return {"changed": False, "api_found": True, "resources": list(resources)}


PARKED = slurm(drained=True, pool="k8s", reason="gpufleet:move,to=k8s,run=20261101T0900,left_slurm")


def test_a_k8s_pool_node_whose_pods_use_its_gpus_is_refused_though_slurm_says_drained_and_idle():
    use = ns.k8s_gpu_use(k8s_info(node(cordoned=True)), k8s_info(pod("train-0", "8"), pod("exporter")))
    assert use["gpu_pods"] == ["ml/train-0"]
    decision = ns.driver_change_decision("535.183.06", WANTED, PARKED, k8s=use)
    assert decision["action"] == "refuse", decision
    assert "ml/train-0" in decision["reason"]


def test_gpu_pods_count_from_requests_limits_and_init_containers_until_they_end():
    pods = [pod("a", 1, limits_only=False), pod("b", "2"), pod("c", 1, init=True), pod("d", 1, phase="Pending"),
            pod("e", 4, phase="Succeeded"), pod("f", 4, phase="Failed"), pod("g", "0"), pod("h")]
    assert ns.k8s_gpu_use(k8s_info(node()), k8s_info(*pods))["gpu_pods"] == ["ml/a", "ml/b", "ml/c", "ml/d"]


def test_a_k8s_pool_node_whose_kubernetes_state_cannot_be_read_is_busy():
    for node_result, pods_result in ((k8s_info(failed=True), k8s_info()), (k8s_info(node()), k8s_info(failed=True)),
                                     (None, None)):
        use = ns.k8s_gpu_use(node_result, pods_result)
        assert use["read"] is False
        decision = ns.driver_change_decision("535.183.06", WANTED, PARKED, k8s=use)
        assert decision["action"] == "refuse" and "Kubernetes" in decision["reason"], decision


def test_a_k8s_pool_node_in_service_is_refused_until_cordoned():
    use = ns.k8s_gpu_use(k8s_info(node(cordoned=False)), k8s_info())
    decision = ns.driver_change_decision("535.183.06", WANTED, PARKED, k8s=use)
    assert decision["action"] == "refuse" and "cordon" in decision["reason"], decision


def test_a_cordoned_k8s_pool_node_without_gpu_pods_takes_the_change():
    use = ns.k8s_gpu_use(k8s_info(node(cordoned=True)), k8s_info(pod("exporter")))
    assert ns.driver_change_decision("535.183.06", WANTED, PARKED, k8s=use)["action"] == "change"


def test_a_k8s_pool_node_no_kubernetes_server_can_show_is_refused():
    decision = ns.driver_change_decision("535.183.06", WANTED, PARKED)
    assert decision["action"] == "refuse" and "Kubernetes" in decision["reason"], decision


def test_the_decision_filter_passes_kubernetes_on():
    use = ns.k8s_gpu_use(k8s_info(node(cordoned=True)), k8s_info(pod("train-0", 8)))
    filters = ns_filters.FilterModule().filters()
    assert filters["node_stack_driver_decision"]("535.183.06", WANTED, PARKED, True, False, use)["action"] == "refuse"


STATES = st.fixed_dictionaries({
    "installed": st.sampled_from(["ubuntu535", "debian535", "none", "unknown", "same"]),
    "slurm": st.sampled_from([None, "busy", "busy_drained", "idle", "drained"]),
    "pool": st.sampled_from(["slurm", "k8s"]),
    "k8s": st.sampled_from([None, "unreadable", "gpu_pods", "idle_cordoned", "idle_schedulable"]),
    "scheduler": st.booleans(), "declared": st.booleans()})
INSTALLED = {"ubuntu535": UBUNTU_535_SERVER, "debian535": DEBIAN_535, "none": facts(), "unknown": None,
             "same": facts(pkg("libnvidia-ml1", "550.163.01-1", origin="Debian"))}


@settings(max_examples=200, deadline=None)
@given(STATES)
def test_property_a_change_never_goes_ahead_while_work_is_shown_or_unreadable(s):
    installed = ns.installed_driver(INSTALLED[s["installed"]], "apt")
    view = None if s["slurm"] is None else slurm(busy=s["slurm"].startswith("busy"),
                                                  drained="drained" in s["slurm"], pool=s["pool"])
    k8s = {None: None, "unreadable": ns.k8s_gpu_use(k8s_info(failed=True), None),
           "gpu_pods": ns.k8s_gpu_use(k8s_info(node(cordoned=True)), k8s_info(pod("t", 1))),
           "idle_cordoned": ns.k8s_gpu_use(k8s_info(node(cordoned=True)), k8s_info()),
           "idle_schedulable": ns.k8s_gpu_use(k8s_info(node()), k8s_info())}[s["k8s"]]
    action = ns.driver_change_decision(installed, WANTED, view, s["scheduler"], s["declared"], k8s)["action"]
    if s["installed"] == "none":
        assert action == "install"
    elif s["installed"] == "same":
        assert action == "keep"
    else:
        # A changed or unreadable driver never goes in as a first install, and never under work.
        assert action in ("change", "refuse")
        if s["k8s"] in ("unreadable", "gpu_pods") or (view and view["busy"] and s["scheduler"]):
            assert action == "refuse"
        if s["k8s"] is None and view and view["pool"] == "k8s" and not s["declared"]:
            assert action == "refuse"


# --- the wiring -----------------------------------------------------------------------------------------------------


def test_the_guard_reads_every_driver_package_and_asks_kubernetes():
    tasks = yaml.safe_load((ROOT / "roles/nvidia_driver/tasks/guard.yml").read_text())
    text = yaml.safe_dump(tasks)
    assert "node_stack_installed_driver(__nvidia_driver_pkg_manager" in text
    assert "replace('{branch}', nvidia_driver_branch)" not in text
    block = next(t for t in tasks if "block" in t and "Kubernetes" in t["name"])
    reads = {t["kubernetes.core.k8s_info"]["kind"]: t for t in block["block"]}
    assert set(reads) == {"Node", "Pod"}
    assert all(t.get("check_mode") is False for t in reads.values())
    assert reads["Pod"]["kubernetes.core.k8s_info"]["field_selectors"] == [
        "spec.nodeName={{ nvidia_driver_k8s_node_name }}"]
    decide = next(t for t in tasks if t.get("name") == "guard | Decide")
    assert "node_stack_k8s_gpu_use" in str(decide)
