// Command controlplane runs either etcd or kube-apiserver, so that one build from Go modules gives the
// local control plane both of its servers:
//
//	controlplane etcd <etcd flags>
//	controlplane apiserver <kube-apiserver flags>
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
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: controlplane etcd|apiserver [flags]")
	os.Exit(2)
}
