"""What the Kubernetes distribution (cluster_k8s_distribution) decides for every role: the admin kubeconfig.

Pure functions; the ``k8s_admin_kubeconfig`` filter (filter_plugins/k8s.py) is the roles' one way to read it.
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
    if distribution not in ADMIN_KUBECONFIG:
        raise ValueError(f"cluster_k8s_distribution must be one of {', '.join(sorted(ADMIN_KUBECONFIG))}, "
                         f"not {distribution!r}")
    return ADMIN_KUBECONFIG[distribution]
