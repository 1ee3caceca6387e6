package main

import (
	"io"
	"os"
	"syscall"
	"time"
)

// gracePeriod bounds the orderly shutdown that SIGTERM starts before the process exits regardless.
const gracePeriod = 5 * time.Second

// exitOnStdinEOF blocks until the parent closes (or loses) its end of our stdin, then shuts down: first
// through the server's own SIGTERM handling, so etcd syncs its data, then unconditionally.
func exitOnStdinEOF() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	time.Sleep(gracePeriod)
	os.Exit(1)
}
