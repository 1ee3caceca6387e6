// Command controlplane runs etcd, kube-apiserver or kube-controller-manager, so that one build from Go
// modules gives the local control plane its servers, and the tests that need them a real HPA controller:
//
//	controlplane etcd <etcd flags>
//	controlplane apiserver <kube-apiserver flags>
//	controlplane controller-manager <kube-controller-manager flags>
//
// With CONTROLPLANE_EXIT_ON_STDIN_EOF=1 the process exits when its stdin reaches end of file. A parent
// that keeps the write end of a pipe open gets children that cannot outlive it, however it dies.
package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	if os.Getenv("CONTROLPLANE_EXIT_ON_STDIN_EOF") == "1" {
		go exitOnStdinEOF()
	}
	mode, rest := os.Args[1], os.Args[2:]
	switch mode {
	case "etcd":
		// etcdmain parses its flags from args[1:], as if called with its own os.Args.
		etcdmain.Main(append([]string{"etcd"}, rest...))
	case "apiserver":
		command := app.NewAPIServerCommand()
		command.SetArgs(rest)
		os.Exit(cli.Run(command))
	case "controller-manager":
		command := controllermanager.NewControllerManagerCommand()
		command.SetArgs(rest)
		os.Exit(cli.Run(command))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: controlplane etcd|apiserver|controller-manager [flags]")
	os.Exit(2)
}
