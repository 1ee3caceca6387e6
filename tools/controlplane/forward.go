package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// forward listens on an address inside another network namespace and relays each connection to an address
// in ours. The local node uses it to give its network namespace (the kubelet, and pods through the
// `kubernetes` Service's address) the apiserver, which listens on the host's loopback only.
func forward(args []string) int {
	flags := flag.NewFlagSet("forward", flag.ContinueOnError)
	netns := flags.String("netns", "", "network namespace to listen in, e.g. /proc/<pid>/ns/net")
	listen := flags.String("listen", "", "address to listen on in that namespace")
	to := flags.String("to", "", "address to connect to from ours")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *netns == "" || *listen == "" || *to == "" {
		fmt.Fprintln(os.Stderr, "forward: --netns, --listen and --to are required")
		return 2
	}
	listener, err := listenIn(*netns, *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "forward: listen on %s in %s: %v\n", *listen, *netns, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "forward: %s (in %s) -> %s\n", *listen, *netns, *to)
	for {
		conn, err := listener.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "forward: accept: %v\n", err)
			return 1
		}
		go relay(conn, *to)
	}
}

// listenIn opens the listening socket from a thread that has entered the namespace; the socket stays
// there. The thread is never unlocked, so it ends with its goroutine and no other code runs in it.
func listenIn(netns, address string) (net.Listener, error) {
	type result struct {
		listener net.Listener
		err      error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		file, err := os.Open(netns)
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer file.Close()
		if err := unix.Setns(int(file.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{nil, fmt.Errorf("setns: %w", err)}
			return
		}
		listener, err := net.Listen("tcp", address)
		done <- result{listener, err}
	}()
	got := <-done
	return got.listener, got.err
}

func relay(client net.Conn, to string) {
	defer client.Close()
	server, err := net.Dial("tcp", to)
	if err != nil {
		fmt.Fprintf(os.Stderr, "forward: dial %s: %v\n", to, err)
		return
	}
	defer server.Close()
	finished := make(chan struct{}, 2)
	copyHalf := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		finished <- struct{}{}
	}
	go copyHalf(server, client)
	go copyHalf(client, server)
	<-finished
	<-finished
}
