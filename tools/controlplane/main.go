// Command controlplane runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler or the kubelet,
// so that one build from Go modules gives the local control plane its servers and the local node its
// agent, plus the two helpers the node needs (see supervise.go and forward.go):
//
//	controlplane etcd <etcd flags>
//	controlplane apiserver <kube-apiserver flags>
//	controlplane controller-manager <kube-controller-manager flags>
//	controlplane scheduler <kube-scheduler flags>
//	controlplane kubelet <kubelet flags>
//	controlplane supervise [--tmpfs DIR]... [--freeze-sysctl NAME]... -- COMMAND [ARGS]
//	controlplane forward --netns PATH --listen ADDR --to ADDR
//
// With CONTROLPLANE_EXIT_ON_STDIN_EOF=1 the process exits when its stdin reaches end of file. A parent
// that keeps the write end of a pipe open gets children that cannot outlive it, however it dies.
package main

import (
	"context"
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	mode, rest := os.Args[1], os.Args[2:]
	// The supervisor watches its stdin itself: its shutdown outlasts the watchdog's grace period.
	if os.Getenv("CONTROLPLANE_EXIT_ON_STDIN_EOF") == "1" && mode != "supervise" {
		go exitOnStdinEOF()
	}
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
	case "scheduler":
		command := scheduler.NewSchedulerCommand()
		command.SetArgs(rest)
		os.Exit(cli.Run(command))
	case "kubelet":
		command := kubelet.NewKubeletCommand(context.Background())
		command.SetArgs(rest)
		os.Exit(cli.Run(command))
	case "supervise":
		os.Exit(supervise(rest))
	case "forward":
		os.Exit(forward(rest))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: controlplane etcd|apiserver|controller-manager|scheduler|kubelet|supervise|forward [flags]")
	os.Exit(2)
}
