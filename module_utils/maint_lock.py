"""Rolling maintenance to the node stack's version lock: which nodes differ from the lock.

Pure functions. ``maint_change: {kind: version_lock}`` makes maintain.yml converge the drained nodes
with the node stack roles to ``cluster_node_stack_versions`` (playbooks/vars/node_stack_versions.yml)
with each host's overrides (module_utils/node_stack.py ``OVERRIDES``). The nodes it takes, unless
``maint_nodes`` names them, are the node-stack hosts whose installed driver differs from their locked
driver: the driver is the component the toolkit reads back from the package manager (nvidia_driver's
version package). The other components converge with it; a change to them alone selects no node,
so name the nodes (``maint_nodes``) for such a change. See docs/maintenance.md.
"""

from ansible.module_utils.node_stack import effective_versions, lookup

# The package whose version is the installed driver's, per OS as nvidia_driver's vars/<os>.yml name it
# ("{branch}" is the driver branch). tests/unit/test_maint_lock.py keeps this equal to those files.
DRIVER_VERSION_PACKAGES = {
    "Debian": "libnvidia-ml1",
    "Ubuntu_22": "libnvidia-compute-{branch}-server",
    "Ubuntu_24": "libnvidia-compute-{branch}-server",
    "RedHat": "nvidia-driver-cuda-libs",
}


def driver_version_package(facts, branch):
    """The driver's version package on a host with Ansible *facts* (distribution, os_family,
    distribution_major_version), as nvidia_driver loads its vars files (vars/<os_family>.yml, overridden
    by vars/<distribution>_<major>.yml where one exists); None where no data exists."""
    facts = facts or {}
    major = str(facts.get("distribution_major_version") or "")
    for key in (f"{facts.get('distribution')}_{major}", str(facts.get("os_family"))):
        if key in DRIVER_VERSION_PACKAGES:
            return DRIVER_VERSION_PACKAGES[key].replace("{branch}", str(branch))
    return None


def installed_version(packages, name):
    """The installed upstream version of package *name* from Ansible's package facts (the Debian
    revision after the first ``-`` dropped, as nvidia_driver records it), None where it is absent."""
    found = (packages or {}).get(name) or []
    if not found or not isinstance(found[0], dict) or found[0].get("version") in (None, ""):
        return None
    return str(found[0]["version"]).split("-", 1)[0]


def lock_drift(host, facts, packages, lock, host_vars):
    """``({component: {installed, wanted}}, error)`` for one node-stack host.

    *facts*: the host's Ansible facts; *packages*: its package facts; *lock*: ``cluster_node_stack_versions``;
    *host_vars*: its variables (the role overrides). A host without a driver differs (installed None).
    The error (a string naming the host and the variable) is set where the lock or the OS data is missing.
    """
    if not isinstance(lock, dict) or not lock:
        return {}, f"host {host}: cluster_node_stack_versions is not set (playbooks/vars/node_stack_versions.yml)"
    versions = effective_versions(lock, host_vars or {})
    wanted, branch = lookup(versions, "driver.version"), lookup(versions, "driver.branch")
    if not wanted or not branch:
        return {}, (f"host {host}: cluster_node_stack_versions.driver.version and .branch (or nvidia_driver_version "
                    f"and nvidia_driver_branch) must be set, got {wanted!r} / {branch!r}")
    name = driver_version_package(facts, branch)
    if name is None:
        facts = facts or {}
        return {}, (f"host {host}: no driver package data for {facts.get('distribution')} "
                    f"{facts.get('distribution_major_version')} (known: {', '.join(sorted(DRIVER_VERSION_PACKAGES))})")
    have = installed_version(packages, name)
    if have == str(wanted):
        return {}, None
    return {"driver": {"installed": have, "wanted": str(wanted), "package": name}}, None


def fleet_lock_drift(hosts, hostvars, package_facts, lock):
    """``{"drift": {host: {component: {installed, wanted, package}}}, "errors": [...]}`` over *hosts*.

    *package_facts*: ``{host: package facts}`` (a host with none is an error: it was not read).
    """
    drift, errors = {}, []
    for host in sorted(hosts or []):
        hv = (hostvars or {}).get(host) or {}
        if host not in (package_facts or {}):
            errors.append(f"host {host}: its installed packages could not be read (package facts)")
            continue
        found, error = lock_drift(host, hv.get("ansible_facts") or {}, package_facts[host], lock, hv)
        if error:
            errors.append(error)
        elif found:
            drift[host] = found
    return {"drift": drift, "errors": errors}
