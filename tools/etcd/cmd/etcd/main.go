// gpufleet: etcd built from its upstream command package (see ../../k8sbins/README.md).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
