"""Which fabric gates a node gets: on by its threshold profile, unless the inventory says otherwise (issue 37).

The health_gate role's three fabric switches, ``health_gate_rdma`` (the RDMA port gate),
``health_gate_nccl_pairs`` (the pairwise NCCL gate through Slurm) and ``health_gate_nccl_require_gdr``
(GPUDirect RDMA required on the pair runs' IB transport), are true, false or null. An explicit true or false always
wins. Null is decided by the node's threshold profile, selected as the gate modules select it
(``gate.profile_for`` over ``gate.merge_profiles(DEFAULT_PROFILES, health_gate_profiles)``, by
``health_gate_profile`` or by the first GPU's model and the GPU count):

* the node **has HCAs** when the fabric port count the RDMA gate would expect is a positive integer: the
  inventory's ``health_gate_rdma_expected_ports`` where set, else the profile's ``rdma_ports``; or when the
  inventory names the ports (``health_gate_rdma_devices``). This is the health check's rule too
  (``node_health``: "rdma_ports or named devices"). ``link_layer`` alone does not count: it says which layer
  the ports are on, not that there are any, and the RDMA gate cannot judge without a count or named ports.
  Then all three are on: an HCA node is gated on its ports, on NCCL between nodes, and on GDR.
* a profile without ports (``rdma_ports`` null or 0, as gh200_x4 ships) turns all three off.
* **no profile** (none matches the GPUs, a named one is not defined, the node reports no GPU) cannot say
  whether the node has HCAs. That fails closed: all three are on, and the RDMA gate does not run but records an
  ERROR row naming the missing profile (``error``), so the node is held, blaming nobody, until the site names or
  adds a profile, or sets ``health_gate_rdma``. Running the RDMA gate instead could blame a node without HCAs
  (``no HCA`` is a FAIL) for what is a missing profile. An explicit ``health_gate_rdma: true`` runs the gate as
  asked (it judges against the inventory's expectations, an ERROR where it has none).

A switch that is not true, false or null raises ValueError naming the host and the variable. The text ``true`` or
``false`` (any case) reads as that: ``-e health_gate_rdma=false`` on the command line arrives as text.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.module_utils.gate import ProfileError, merge_profiles, profile_for
from ansible.module_utils.gate_profiles import DEFAULT_PROFILES

# The role variable behind each switch, named in the errors and in ``why``.
SWITCHES = {"rdma": "health_gate_rdma", "nccl_pairs": "health_gate_nccl_pairs",
            "require_gdr": "health_gate_nccl_require_gdr"}
PORTS_VAR = "health_gate_rdma_expected_ports"
DEVICES_VAR = "health_gate_rdma_devices"


def fabric_switch(value, var, host):
    """One fabric switch as True, False or None (the profile decides); ValueError naming host and variable."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    kind = "text" if isinstance(value, str) else type(value).__name__
    raise ValueError(f"host {host}: {var} must be true, false or null (null: decided by the node's threshold "
                     f"profile), got {str(value)!r} ({kind})")


def _port_count(value, what, host):
    """A port count as an int (None where unset); ValueError for a value that is not a whole number >= 0."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    raise ValueError(f"host {host}: {what} must be a whole number of fabric ports (or null), got {value!r}")


def _gpu_model(gpus):
    first = (gpus or [None])[0]
    return str(first["name"]) if isinstance(first, Mapping) and first.get("name") else None


def _gpu_count(count):
    try:
        return int(str(count).strip())
    except (TypeError, ValueError):
        return None


def fabric_defaults(host, gpus=None, gpu_count=None, profile=None, profiles=None, rdma=None, nccl_pairs=None,
                    require_gdr=None, rdma_expected_ports=None, rdma_devices=None):
    """The node's fabric gates: ``{"profile", "hcas", "rdma", "nccl_pairs", "require_gdr", "error", "why"}``.

    ``profile`` is the selected profile's name (None: none); ``hcas`` True, False, or None where no profile and
    no inventory port setting tell; ``rdma``, ``nccl_pairs`` and ``require_gdr`` the decisions (bools);
    ``error`` the RDMA row's ERROR reason where the RDMA gate is on only because no profile could tell (else
    None); ``why`` one line saying where each decision came from. See the module's docstring for the rule.

    Work at risk: a PASS admits the node to jobs. Refused: a node whose profile cannot be selected is not let
    off its fabric gates (they stay on, and the RDMA row is an ERROR); a switch that is not a bool or null, or a
    port count that is not a whole number, raises before anything is decided.
    """
    given = {key: fabric_switch(value, SWITCHES[key], host)
             for key, value in (("rdma", rdma), ("nccl_pairs", nccl_pairs), ("require_gdr", require_gdr))}
    inventory_ports = _port_count(rdma_expected_ports, PORTS_VAR, host)
    devices = [str(d) for d in (rdma_devices or [])]

    name, selected, profile_error = None, None, None
    try:
        name, selected = profile_for(merge_profiles(DEFAULT_PROFILES, profiles), profile or None,
                                     _gpu_model(gpus), _gpu_count(gpu_count))
    except ProfileError as exc:
        profile_error = str(exc)

    if devices:
        hcas, source = True, f"{DEVICES_VAR} names {len(devices)}"
    elif inventory_ports is not None:
        hcas, source = inventory_ports > 0, f"{PORTS_VAR} {inventory_ports}"
    elif selected is not None:
        ports = _port_count(selected.get("rdma_ports"), f"profile {name!r} rdma_ports", host)
        hcas, source = bool(ports), f"profile {name} rdma_ports {'null' if ports is None else ports}"
    else:
        hcas, source = None, profile_error

    decided = {key: (value if value is not None else (True if hcas is None else hcas))
               for key, value in given.items()}
    error = None
    if given["rdma"] is None and hcas is None:
        error = (f"rdma: cannot tell whether {host} has HCAs: {profile_error}; name a profile "
                 f"(health_gate_profile), add one (health_gate_profiles) or set {SWITCHES['rdma']}")

    if hcas is None:
        ground = f"{source}: whether it has HCAs is unknown, so the fabric gates are on (fails closed)"
    else:
        ground = f"{source}: {'HCAs, so the fabric gates are on' if hcas else 'no HCAs, so the fabric gates are off'}"
    explicit = [f"{SWITCHES[key]}: {str(value).lower()}" for key, value in given.items() if value is not None]
    why = ground + (f"; set in the inventory: {', '.join(explicit)}" if explicit else "")
    return {"profile": name, "hcas": hcas, **decided, "error": error, "why": why}


def fabric_nodes(nodes, hostvars, var, key):
    """The ``nodes`` whose fabric decision (host variable ``var``, the gate's ``__health_gate_fabric``) turns
    ``key`` on. A node without the decision is kept (fails closed: it is gated, not let off)."""
    picked = []
    for node in nodes or []:
        hv = hostvars[node] if node in hostvars else {}  # noqa: SIM401 (HostVars.get, see gate_gpu_reports)
        decision = hv.get(var)
        if not isinstance(decision, Mapping) or decision.get(key) is not False:
            picked.append(node)
    return picked


def fabric_pair_gdr(pair, hostvars, var):
    """Whether a NCCL pair must run with GPUDirect RDMA: true when either node's decision (host variable ``var``)
    requires it. A partner from outside the run has no decision and does not count; a pair where neither node
    has one requires GDR (fails closed)."""
    known = []
    for node in pair or []:
        hv = hostvars[node] if node in hostvars else {}  # noqa: SIM401 (HostVars.get, see gate_gpu_reports)
        decision = hv.get(var)
        if isinstance(decision, Mapping) and "require_gdr" in decision:
            known.append(decision["require_gdr"] is True)
    return any(known) if known else True
