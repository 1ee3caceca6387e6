package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stopGrace bounds the supervised command's orderly shutdown before it is killed.
const stopGrace = 10 * time.Second

// supervise runs one command (containerd, for the local node) as a subreaper: every process it leaves
// behind (containerd's shims, and the containers under them) is reparented to the supervisor, which kills
// them all when it stops. It stops on SIGTERM, SIGINT, the command's exit or, with
// CONTROLPLANE_EXIT_ON_STDIN_EOF=1, the end of its stdin: so nothing of the node outlives its parent.
//
// It must run in a mount namespace other than its parent's (`unshare --mount --propagation slave`), which
// it refuses to run without: there it mounts an empty tmpfs on each --tmpfs directory, so that what the node writes
// to fixed host paths (/run, /var/lib, /var/log) stays in the namespace, and it freezes each
// --freeze-sysctl setting by binding a copy of its file over /proc/sys, so that the kubelet, which sets
// some at start, writes to the copy and the host's kernel settings never change. All of it goes with the
// namespace when the last process in it exits.
func supervise(args []string) int {
	flags := flag.NewFlagSet("supervise", flag.ContinueOnError)
	var tmpfs, sysctls multiFlag
	flags.Var(&tmpfs, "tmpfs", "directory to hide under an empty tmpfs (repeatable)")
	flags.Var(&sysctls, "freeze-sysctl", "kernel setting to freeze at its current value (repeatable)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	command := flags.Args()
	if len(command) == 0 {
		fmt.Fprintln(os.Stderr, "supervise: no command given")
		return 2
	}
	if err := prepareMountNamespace(tmpfs, sysctls); err != nil {
		fmt.Fprintf(os.Stderr, "supervise: %v\n", err)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "supervise: cannot become a subreaper: %v\n", err)
		return 1
	}
	// Pdeathsig follows the thread that started the child: keep this goroutine on it for good.
	runtime.LockOSThread()
	children := make(chan os.Signal, 16)
	signal.Notify(children, syscall.SIGCHLD)
	stop := make(chan os.Signal, 2)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if os.Getenv("CONTROLPLANE_EXIT_ON_STDIN_EOF") == "1" {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop <- syscall.SIGTERM
		}()
	}
	process, err := os.StartProcess(command[0], command, &os.ProcAttr{
		Files: []*os.File{nil, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervise: %v\n", err)
		return 1
	}
	status := waitForExitOrStop(process.Pid, children, stop)
	killOrphans()
	return status
}

// waitForExitOrStop reaps every child that exits (orphans included) until the command exits, or stops it
// (SIGTERM, then SIGKILL after the grace period) when asked to. Returns the command's exit status.
func waitForExitOrStop(pid int, children <-chan os.Signal, stop <-chan os.Signal) int {
	var deadline <-chan time.Time
	for {
		if status, done := reap(pid); done {
			return status
		}
		select {
		case <-children:
		case <-stop:
			if deadline == nil {
				_ = syscall.Kill(pid, syscall.SIGTERM)
				deadline = time.After(stopGrace)
			}
		case <-deadline:
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// reap collects every exited child without blocking; done when one of them was `pid`.
func reap(pid int) (status int, done bool) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if got <= 0 || err != nil {
			return 0, false
		}
		if got == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal()), true
			}
			return ws.ExitStatus(), true
		}
	}
}

// killOrphans kills whatever is still reparented to us (shims, then the containers they leave) until no
// child remains.
func killOrphans() {
	for {
		for _, child := range childrenOf(os.Getpid()) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
		if _, err := syscall.Wait4(-1, nil, 0, nil); errors.Is(err, syscall.ECHILD) {
			return
		}
	}
}

func childrenOf(parent int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var found []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses, the last ')' ends it.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			found = append(found, pid)
		}
	}
	return found
}

func prepareMountNamespace(tmpfs, sysctls []string) error {
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	// The parent (our caller, which ran `unshare`, which exec'd us) is in the mount namespace we must leave.
	parent, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	if err != nil {
		return err
	}
	if own == parent {
		return errors.New("refusing to mount anything in the host's mount namespace: run me under `unshare --mount --propagation slave`")
	}
	// Read before any tmpfs hides nothing in /proc, but copies must live somewhere private: the first tmpfs.
	values := make(map[string][]byte, len(sysctls))
	for _, name := range sysctls {
		value, err := os.ReadFile(sysctlPath(name))
		if err != nil {
			return err
		}
		values[name] = value
	}
	for _, dir := range tmpfs {
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
		}
	}
	if len(sysctls) == 0 {
		return nil
	}
	if len(tmpfs) == 0 {
		return errors.New("--freeze-sysctl needs a --tmpfs to keep its copies in")
	}
	copies := filepath.Join(tmpfs[0], ".frozen-sysctls")
	if err := os.MkdirAll(copies, 0o700); err != nil {
		return err
	}
	for _, name := range sysctls {
		copyPath := filepath.Join(copies, name)
		if err := os.WriteFile(copyPath, values[name], 0o644); err != nil {
			return err
		}
		if err := unix.Mount(copyPath, sysctlPath(name), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("freeze %s: %w", name, err)
		}
	}
	return nil
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(value string) error {
	*m = append(*m, value)
	return nil
}
