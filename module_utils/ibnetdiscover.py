# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ``ibnetdiscover`` topology files and find each host's leaf switch.

Format (ibnetdiscover(8), "TOPOLOGY FILE FORMAT"): blocks of ``key=value`` header lines
(``vendid``, ``devid``, ``sysimgguid``, ``switchguid``/``caguid``) followed by a node line

    Switch  24 "S-005442ba00003080"   # "ISR9024 Voltaire" base port 0 lid 6 lmc 0
    Ca      2 "H-0008f10403960984"    # "MT23108 InfiniHost Mellanox Technologies"

and one line per connected port. A switch port line names the remote end first:

    [22]  "H-0008f10403961354"[1](8f10403961355)   # "MT23108 ..." lid 4 4xSDR

a CA port line has its own port GUID after the port number:

    [1](8f10403960985)  "S-0008f10400410015"[6]   # lid 16 lmc 1 "SW-6IB4 Voltaire" lid 3 4xSDR

Host names come from the CA NodeDescription, which rdma-core sets to
"<hostname> <device>" (``node01 HCA-1``, ``node01 mlx5_0``). A description that does not
have that shape (``MT23108 InfiniHost Mellanox Technologies``, the man page example) gives
no host name: guessing one is how topology generators emit garbage.
"""

import re

_NODE = re.compile(
    r'^(?P<kind>Switch|Ca|Rt)\s+(?P<nports>\d+)\s+"(?P<tag>[SHR])-(?P<guid>[0-9a-fA-F]+)"'
    r'\s*(?:#\s*"(?P<desc>[^"]*)"(?P<rest>.*))?$'
)
_PORT = re.compile(
    r"^\[(?P<port>\d+)\](?:\[ext \d+\])?(?:\((?P<portguid>[0-9a-fA-F]+)\))?\s+"
    r'"(?P<rtag>[SHR])-(?P<rguid>[0-9a-fA-F]+)"\[(?P<rport>\d+)\](?:\[ext \d+\])?'
    r"(?:\((?P<rportguid>[0-9a-fA-F]+)\))?\s*(?:#\s*(?P<comment>.*))?$"
)
_LID = re.compile(r"\blid\s+(\d+)")
_SPEED = re.compile(r"\b(\d+x[A-Z]+)\s*$")
_QUOTED = re.compile(r'"([^"]*)"')
# "<host> <device>": HCA-1, mlx5_0, hfi1_0, irdma0, bnxt_re0, ...
_HOST_DESC = re.compile(
    r"^(?P<host>[A-Za-z0-9][A-Za-z0-9._-]*)\s+(?:HCA-?\d+|mlx\d+_\d+|hfi\d+_\d+|irdma\d+|bnxt_re\d+|qedr\d+|ib\w*\d+)\s*$"
)
_KIND = {"Switch": "switch", "Ca": "ca", "Rt": "router"}
_TAG = {"S": "switch", "H": "ca", "R": "router"}


class IbnetdiscoverError(ValueError):
    """ibnetdiscover output that cannot give a topology."""


def hostname_from_description(desc):
    """``"node01 HCA-1"`` -> ``"node01"``; ``"dgx01.lab mlx5_0"`` -> ``"dgx01"``; else None."""
    m = _HOST_DESC.match((desc or "").strip())
    if not m:
        return None
    return m.group("host").split(".", 1)[0]


def parse_ibnetdiscover(text):
    """Parse ibnetdiscover output.

    Returns ``{"switches": [node], "cas": [node], "links": [link], "problems": [str]}``:
    node = ``{"guid", "description", "lid", "nports", "hostname" (CAs), "ports": [
    {"port", "remote_kind", "remote_guid", "remote_port", "remote_description", "speed"}]}``;
    link = ``{"a": guid, "a_port", "b": guid, "b_port", "speed"}`` once per cable.
    ``problems`` lists what makes the result unusable for a topology (no switch at all,
    CAs without a host name); :func:`leaf_of` raises on the first of them.
    """
    nodes = {}
    current = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _NODE.match(line)
        if m:
            rest = m.group("rest") or ""
            lid = _LID.search(rest)
            current = {
                "kind": _KIND[m.group("kind")],
                "guid": m.group("guid").lower(),
                "description": m.group("desc") or "",
                "lid": int(lid.group(1)) if lid else None,
                "nports": int(m.group("nports")),
                "ports": [],
            }
            nodes[current["guid"]] = current
            continue
        m = _PORT.match(line)
        if m and current is not None:
            comment = m.group("comment") or ""
            quoted = _QUOTED.search(comment)
            speed = _SPEED.search(comment)
            if current["kind"] == "ca" and current["lid"] is None:
                lid = _LID.search(comment.split('"', 1)[0])
                current["lid"] = int(lid.group(1)) if lid else None
            current["ports"].append(
                {
                    "port": int(m.group("port")),
                    "remote_kind": _TAG[m.group("rtag")],
                    "remote_guid": m.group("rguid").lower(),
                    "remote_port": int(m.group("rport")),
                    "remote_description": quoted.group(1) if quoted else "",
                    "speed": speed.group(1) if speed else None,
                }
            )
            continue
        # vendid=, devid=, sysimgguid=, switchguid=, caguid=, "Non-Chassis Nodes", ...
    switches = sorted((n for n in nodes.values() if n["kind"] == "switch"), key=lambda n: n["guid"])
    cas = sorted((n for n in nodes.values() if n["kind"] == "ca"), key=lambda n: n["guid"])
    for ca in cas:
        ca["hostname"] = hostname_from_description(ca["description"])
    _name_switches(switches)
    for node in nodes.values():
        node["ports"].sort(key=lambda p: p["port"])
    return {"switches": switches, "cas": cas, "links": _links(nodes), "problems": _problems(switches, cas)}


def _name_switches(switches):
    """``name``: the NodeDescription where unique, else ``S-<guid>``."""
    seen = {}
    for sw in switches:
        seen[sw["description"]] = seen.get(sw["description"], 0) + 1
    for sw in switches:
        desc = sw["description"].strip()
        sw["name"] = desc if desc and seen[sw["description"]] == 1 else f"S-{sw['guid']}"


def _links(nodes):
    links = {}
    for node in nodes.values():
        for port in node["ports"]:
            a = (node["guid"], port["port"])
            b = (port["remote_guid"], port["remote_port"])
            key = tuple(sorted((a, b)))
            links.setdefault(
                key,
                {
                    "a": key[0][0],
                    "a_port": key[0][1],
                    "b": key[1][0],
                    "b_port": key[1][1],
                    "speed": port["speed"],
                },
            )
    return [links[k] for k in sorted(links)]


def _problems(switches, cas):
    problems = []
    if not switches:
        problems.append(
            f"ibnetdiscover found no switch ({len(cas)} CA record(s) only): the port is down or "
            f"there is no subnet manager path; refusing to derive a topology from it"
        )
    nameless = [ca["description"] or f"H-{ca['guid']}" for ca in cas if not ca["hostname"]]
    if nameless:
        problems.append(
            f"{len(nameless)} CA(s) have a NodeDescription that is not '<hostname> <device>' "
            f"(e.g. {nameless[0]!r}); set cluster_leaf_switch in the inventory for those hosts"
        )
    return problems


def _switch_names(parsed):
    return {sw["guid"]: sw["name"] for sw in parsed["switches"]}


def leaf_of_text(text, strict=True):
    """``{host: leaf switch name}`` straight from ibnetdiscover output (see :func:`leaf_of`)."""
    return leaf_of(parse_ibnetdiscover(text), strict=strict)


def leaf_of(parsed, strict=True):
    """``{host: leaf switch name}`` from :func:`parse_ibnetdiscover`'s result.

    A host with several HCAs (or ports) on different switches gets the switch most of
    its ports reach (ties: the lowest switch GUID). With ``strict`` (default) a fabric
    with no switch raises :class:`IbnetdiscoverError`; CAs without a host name are
    skipped (they are listed in ``parsed["problems"]``).
    """
    if not parsed["switches"]:
        if strict:
            raise IbnetdiscoverError(parsed["problems"][0])
        return {}
    descriptions = {ca["guid"]: ca["description"] for ca in parsed["cas"]}
    votes = {}
    # Every cable appears on its switch's port list, even for CAs without a Ca block.
    for sw in parsed["switches"]:
        for port in sw["ports"]:
            if port["remote_kind"] != "ca":
                continue
            host = hostname_from_description(
                descriptions.get(port["remote_guid"], port["remote_description"])
            )
            if host:
                host_votes = votes.setdefault(host, {})
                host_votes[sw["guid"]] = host_votes.get(sw["guid"], 0) + 1
    names = _switch_names(parsed)
    result = {}
    for host, counts in votes.items():
        guid = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        result[host] = names[guid]
    return dict(sorted(result.items()))


def spines(parsed):
    """Names of switches whose every connected port reaches another switch."""
    out = []
    for sw in parsed["switches"]:
        kinds = {p["remote_kind"] for p in sw["ports"]}
        if kinds == {"switch"}:
            out.append(sw["name"])
    return sorted(out)


def leaves(parsed):
    """Names of switches with at least one CA attached."""
    return sorted(
        sw["name"] for sw in parsed["switches"] if any(p["remote_kind"] == "ca" for p in sw["ports"])
    )


def switch_parents(parsed):
    """``{leaf name: [spine names]}``: the spines each leaf switch is cabled to."""
    names = _switch_names(parsed)
    spine_names = set(spines(parsed))
    parents = {}
    for sw in parsed["switches"]:
        if sw["name"] in spine_names:
            continue
        ups = {
            names[p["remote_guid"]]
            for p in sw["ports"]
            if p["remote_kind"] == "switch" and names.get(p["remote_guid"]) in spine_names
        }
        parents[sw["name"]] = sorted(ups)
    return parents
