// Command etcd is etcd's own server main, built from go.etcd.io/etcd/server
// at the version the test control plane's Kubernetes release pins.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
