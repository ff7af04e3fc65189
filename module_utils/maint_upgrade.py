"""Control-plane upgrades driven by maintain.yml: the input, the refusals, the order.

Pure functions (docs/maintenance.md, "Control-plane upgrades"). ``maint_upgrade`` names a Slurm or a
Kubernetes version change as data::

    maint_upgrade:
      slurm: {version: "24.11.5-1"}       # Debian package version of slurmdbd, slurmctld, slurmd
      # or
      k8s: {version: v1.35.0+k3s1, sha256: <k3s binary sha256>}   # k3s release (cluster_k8s_distribution k3s)

The version skip rules are module_utils/maint_plan.py's (slurm_upgrade_errors, k8s_upgrade_errors); this
module checks the input's shape, reads the installed version, and ties the node waves to the upgrade:
a Slurm upgrade's waves must install slurmd at the same version (``maint_change.packages``), since slurmd
goes last, in the waves, after slurmdbd and slurmctld.
"""

import re

from ansible.module_utils.maint_plan import k8s_upgrade_errors, slurm_upgrade_errors

VAR = "maint_upgrade"
KEYS = ("slurm", "k8s")
SLURM_KEYS = ("version", "installed")
K8S_KEYS = ("version", "sha256", "installed")
_DEB_VERSION_RE = re.compile(r"^(?:\d+:)?(\d+\.\d+(?:\.\d+)?)")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def debian_upstream(version):
    """``24.11.5`` from a Debian version (``24.11.5-1``, ``22.05.8-4+deb12u3``, ``1:22.05.8-4``); None if not one."""
    match = _DEB_VERSION_RE.match(str(version or "").strip())
    return match.group(1) if match else None


def installed_from_packages(packages, name):
    """The installed upstream version of package *name* from Ansible's package facts, or None."""
    found = (packages or {}).get(name) or []
    if not found or not isinstance(found[0], dict):
        return None
    return debian_upstream(found[0].get("version"))


def validate(upgrade, change, distribution="k3s", slurmd_packages=("slurmd",)):
    """Shape errors of ``maint_upgrade`` (None or {} means no upgrade), each naming the variable.

    A Slurm upgrade needs ``maint_change`` of kind packages that installs *slurmd_packages* at the same
    version (slurmd follows in the waves). A Kubernetes upgrade is k3s only (the kubeadm control-plane
    upgrade is not built: refused, never half-run).
    """
    if upgrade in (None, {}):
        return []
    if not isinstance(upgrade, dict):
        return [f"{VAR}: must be a mapping with slurm or k8s, got {type(upgrade).__name__}"]
    errors = [f"{VAR}.{k}: unknown key (known: {', '.join(KEYS)})" for k in sorted(map(str, upgrade)) if k not in KEYS]
    present = [k for k in KEYS if upgrade.get(k) is not None]
    if len(present) != 1:
        errors.append(f"{VAR}: give exactly one of slurm, k8s (one control plane per run), got {present or 'none'}")
    slurm = upgrade.get("slurm")
    if slurm is not None:
        if not isinstance(slurm, dict):
            errors.append(f"{VAR}.slurm: must be a mapping with version, got {slurm!r}")
        else:
            errors += [f"{VAR}.slurm.{k}: unknown key (known: {', '.join(SLURM_KEYS)})"
                       for k in sorted(map(str, slurm)) if k not in SLURM_KEYS]
            version = slurm.get("version")
            if not isinstance(version, str) or debian_upstream(version) is None:
                errors.append(f"{VAR}.slurm.version: must be the Slurm packages' version as a quoted string "
                              f"(24.11.5-1), got {version!r}")
            else:
                pkgs = (change or {}).get("packages") if isinstance(change, dict) else None
                if not isinstance(change, dict) or change.get("kind") != "packages" or not isinstance(pkgs, dict):
                    errors.append(f"maint_change: a Slurm upgrade's waves upgrade slurmd, so maint_change must be "
                                  f"kind packages with {', '.join(f'{p}: {version!r}' for p in slurmd_packages)}")
                else:
                    errors += [f"maint_change.packages.{p}: must be {version!r} ({VAR}.slurm.version), got "
                               f"{pkgs.get(p)!r}" for p in slurmd_packages if pkgs.get(p) != version]
    k8s = upgrade.get("k8s")
    if k8s is not None:
        if not isinstance(k8s, dict):
            errors.append(f"{VAR}.k8s: must be a mapping with version, got {k8s!r}")
        else:
            errors += [f"{VAR}.k8s.{k}: unknown key (known: {', '.join(K8S_KEYS)})"
                       for k in sorted(map(str, k8s)) if k not in K8S_KEYS]
            if distribution != "k3s":
                errors.append(f"cluster_k8s_distribution: {distribution!r}: maintain.yml upgrades the k3s control "
                              f"plane only; a kubeadm control-plane upgrade is not built (docs/maintenance.md)")
            version = k8s.get("version")
            if not isinstance(version, str) or not re.match(r"^v\d+\.\d+\.\d+\+k3s\d+$", version):
                errors.append(f"{VAR}.k8s.version: must be a k3s release tag (v1.35.0+k3s1), got {version!r}")
            sha = k8s.get("sha256")
            if not isinstance(sha, str) or not _SHA256_RE.match(sha):
                errors.append(f"{VAR}.k8s.sha256: the sha256 of the k3s release binary is required "
                              f"(64 hex digits; nothing is downloaded without one), got {sha!r}")
    return errors


def skip_errors(upgrade, installed):
    """The refusals of an upgrade that skips what Slurm or Kubernetes supports (*installed*: the version
    running now, read from the cluster or given as ``maint_upgrade.<x>.installed``)."""
    if not upgrade:
        return []
    try:
        if upgrade.get("slurm"):
            target = debian_upstream(upgrade["slurm"].get("version"))
            return slurm_upgrade_errors(installed, target, var=f"{VAR}.slurm.version")
        if upgrade.get("k8s"):
            return k8s_upgrade_errors(installed, upgrade["k8s"].get("version"), var=f"{VAR}.k8s.version")
    except ValueError as exc:
        return [str(exc)]
    return []


def plan(upgrade, installed, dbd, controllers, servers):
    """``{component, target, installed, phases}``: the control-plane phases this run executes before the
    node waves (slurmdbd then slurmctld; or the k3s servers one at a time). Assumes ``validate`` and
    ``skip_errors`` found nothing. Every phase is listed even when the first host is done already: each
    role skips a host already at the target, so a run killed half-way is finished by the next one."""
    if not upgrade:
        return {"component": None, "target": None, "installed": installed, "phases": []}
    if upgrade.get("slurm"):
        target = debian_upstream(upgrade["slurm"]["version"])
        phases = []
        if dbd:
            phases.append({"phase": "slurmdbd", "nodes": sorted(dbd), "backup_database": True})
        if controllers:
            # Slurm's upgrade guide: "When multiple slurmctld hosts are used, all should be upgraded
            # simultaneously" (stopped together, state saved, started primary first).
            phases.append({"phase": "slurmctld", "nodes": list(controllers), "backup_state": True})
        return {"component": "slurm", "target": target, "installed": installed, "phases": phases,
                "package_version": upgrade["slurm"]["version"]}
    target = upgrade["k8s"]["version"]
    phases = [{"phase": "control_plane", "nodes": [s]} for s in servers]
    return {"component": "k8s", "target": target, "installed": installed, "phases": phases,
            "sha256": upgrade["k8s"].get("sha256")}
