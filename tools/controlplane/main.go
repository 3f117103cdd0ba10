// Command controlplane is one binary for the three Kubernetes control-plane
// servers driftwave's tests run against: it behaves as kube-apiserver,
// kube-controller-manager or kube-scheduler according to the name it is
// invoked by (make tools links the three names to it), so their shared
// packages are compiled and linked once.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata" // CronJob time zones, as the upstream mains do

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func command(name string) *cobra.Command {
	switch name {
	case "kube-apiserver":
		return apiserver.NewAPIServerCommand()
	case "kube-controller-manager":
		return controllermanager.NewControllerManagerCommand()
	case "kube-scheduler":
		return scheduler.NewSchedulerCommand()
	}
	return nil
}

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	cmd := command(name)
	if cmd == nil && len(args) > 0 {
		name, args = args[0], args[1:]
		cmd = command(name)
	}
	if cmd == nil {
		fmt.Fprintln(os.Stderr, "usage: controlplane kube-apiserver|kube-controller-manager|kube-scheduler [flags]")
		os.Exit(2)
	}
	cmd.SetArgs(args)
	os.Exit(cli.Run(cmd))
}
