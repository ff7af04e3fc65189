// gpufleet: kubeadm built from its upstream command package (see ../README.md).
package main

import (
	"k8s.io/kubernetes/cmd/kubeadm/app"
	kubeadmerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
)

func main() { kubeadmerrors.HandleError(app.Run()) }
