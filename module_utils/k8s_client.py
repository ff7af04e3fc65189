"""Which Python kubernetes client the first Kubernetes server gets: the distribution's package or a pinned venv.

Pure functions; the k8s_client role reads them through the ``k8s_client_plan`` filter (filter_plugins/k8s_client.py).
"""

import re

_CANDIDATE = re.compile(r"^\s*Candidate:\s*(\S+)\s*$", re.MULTILINE)
_UPSTREAM = re.compile(r"^\d+(\.\d+)*$")


def apt_candidate(policy_text):
    """The candidate version ``apt-cache policy <package>`` prints, or None when apt has none to install."""
    match = _CANDIDATE.search(policy_text or "")
    if not match or match.group(1) == "(none)":
        return None
    return match.group(1)


def upstream_version(version):
    """The upstream part of a Debian version (epoch and revision dropped) as a tuple of ints.

    None when it is not plain dotted digits (a ``~rc`` pre-release, an empty string): such a version cannot be
    ordered here, and the caller must not treat it as new enough.
    """
    upstream = str(version or "").split(":", 1)[-1].rsplit("-", 1)[0] if version else ""
    if not _UPSTREAM.match(upstream):
        return None
    return tuple(int(part) for part in upstream.split("."))


def client_plan(method, candidate, minimum, host, venv):
    """How ``host`` gets a kubernetes client of at least ``minimum``.

    ``method`` is k8s_client_install_method: ``apt`` installs the distribution's python3-kubernetes (``candidate``,
    its apt candidate version) and keeps the host's interpreter (python None); ``venv`` installs the pinned client
    in the virtualenv ``venv`` and names its interpreter. Raises ValueError naming the host, the version found, the
    minimum and k8s_client_install_method when apt offers no version at least ``minimum`` (an unparseable one
    included), or when the method is unknown.

    Work at risk: none (read-only).
    """
    if method == "venv":
        return {"method": "venv", "candidate": candidate, "python": f"{venv}/bin/python"}
    if method != "apt":
        raise ValueError(f"{host}: k8s_client_install_method must be apt or venv, not {method!r}")
    found, floor = upstream_version(candidate), upstream_version(minimum)
    if floor is None:
        raise ValueError(f"{host}: the minimum kubernetes client version {minimum!r} is not a plain version")
    if found is None or found < floor:
        shown = candidate if candidate else "(no apt candidate)"
        raise ValueError(
            f"{host}: python3-kubernetes {shown} is below {minimum}, the minimum the kubernetes.core collection needs; "
            f"set k8s_client_install_method: venv to install the pinned client in {venv}")
    return {"method": "apt", "candidate": candidate, "python": None}
