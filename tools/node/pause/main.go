// Command pause holds a pod's namespaces for the local node's container runtime, as the upstream pause
// image does: it sleeps until SIGTERM or SIGINT and exits 0. It says so on start, so that a container
// running it has a log line to read, and reaps the children that a pod's shared PID namespace gives it.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	fmt.Printf("pause: pid %d, uid %d, waiting for SIGTERM or SIGINT\n", os.Getpid(), os.Getuid())
	for {
		select {
		case got := <-stop:
			fmt.Printf("pause: %v, exiting\n", got)
			return
		case <-children:
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
