// gpufleet: kube-controller-manager built from its upstream command package (see ../README.md).
package main

import (
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"os"
	_ "time/tzdata"
)

func main() { os.Exit(cli.Run(app.NewControllerManagerCommand())) }
