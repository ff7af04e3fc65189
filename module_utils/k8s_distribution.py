"""What the Kubernetes distribution (cluster_k8s_distribution) decides for every role: the admin kubeconfig, the
cluster CA a server holds once the cluster exists, and the node agent's service.

Pure functions; the ``k8s_admin_kubeconfig``, ``k8s_server_ca`` and ``k8s_agent_service`` filters
(filter_plugins/k8s.py) are the roles' one way to read them.
"""

# The admin kubeconfig each distribution writes on its servers: k3s on every server
# (--write-kubeconfig default), kubeadm on every control-plane node (kubeadm init / join --control-plane).
ADMIN_KUBECONFIG = {
    "k3s": "/etc/rancher/k3s/k3s.yaml",
    "kubeadm": "/etc/kubernetes/admin.conf",
}


def admin_kubeconfig(distribution):
    """The admin kubeconfig path of ``distribution`` (``k3s`` or ``kubeadm``).

    An unknown distribution raises ValueError naming cluster_k8s_distribution: a guessed path would send every
    kubernetes.core task to a file the cluster never wrote.

    Work at risk: none (read-only).
    """
    return _of(ADMIN_KUBECONFIG, distribution)


def _of(table, distribution):
    """``table[distribution]``; an unknown distribution raises ValueError naming cluster_k8s_distribution."""
    if not isinstance(distribution, str) or distribution not in table:
        raise ValueError(f"cluster_k8s_distribution must be one of {', '.join(sorted(table))}, not {distribution!r}")
    return table[distribution]


# The cluster CA each distribution's first server writes when it creates the cluster (k3s server's bootstrap,
# kubeadm init's certs phase); nothing but a cluster's creation writes it, so its absence means no cluster yet.
SERVER_CA = {
    "k3s": "/var/lib/rancher/k3s/server/tls/server-ca.crt",
    "kubeadm": "/etc/kubernetes/pki/ca.crt",
}


def server_ca(distribution):
    """The cluster CA path on a server of ``distribution``; an unknown one raises ValueError as admin_kubeconfig.

    Work at risk: none (read-only).
    """
    return _of(SERVER_CA, distribution)


# The service that runs a worker's kubelet: k3s's agent (its install's unit name), kubeadm's kubelet unit.
AGENT_SERVICE = {
    "k3s": "k3s-agent",
    "kubeadm": "kubelet",
}


def agent_service(distribution):
    """The node agent's service on a worker of ``distribution``; an unknown one raises ValueError as admin_kubeconfig.

    Work at risk: none (read-only).
    """
    return _of(AGENT_SERVICE, distribution)
