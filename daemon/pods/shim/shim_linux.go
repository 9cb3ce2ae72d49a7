//go:build linux

package shim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/daemon/pods/crilog"
	"github.com/plinth/plinth/internal/atomicfile"
)

// ReadyFD is the descriptor a shim reports on: the first of exec.Cmd.ExtraFiles.
const ReadyFD = 3

// detachedEnv marks the second stage of a shim: the first stage re-executes itself
// with it set, in a new session, and exits, so the shim is never plinthd's child (its
// parent becomes init) whether or not plinthd restarts.
const detachedEnv = "PLINTH_SHIM_DETACHED"

// drainTimeout bounds how long the shim copies output after the init process exits:
// with the host's PID namespace a forked daemon may keep the pipes open forever.
const drainTimeout = 5 * time.Second

// Main runs a shim with args (the flags of Config.Args) and returns the process exit
// code. cmd/plinth-shim calls it; tests call it from TestMain in a re-executed test
// binary.
func Main(args []string) int {
	ready := os.NewFile(ReadyFD, "ready")
	cfg, err := parseArgs(args)
	if err != nil {
		report(ready, "error "+err.Error())
		return 2
	}
	if os.Getenv(detachedEnv) == "" {
		return detach(ready)
	}
	os.Unsetenv(detachedEnv)
	if err := run(cfg, ready); err != nil {
		fmt.Fprintf(os.Stderr, "plinth-shim %s: %v\n", cfg.ID, err)
		return 1
	}
	return 0
}

func report(ready *os.File, msg string) {
	if ready == nil {
		return
	}
	_, _ = ready.WriteString(strings.ReplaceAll(msg, "\n", " ") + "\n")
	_ = ready.Close()
}

// detach starts the second stage in its own session with the same arguments and the
// ready pipe, and returns once it runs.
func detach(ready *os.File) int {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), detachedEnv+"=1")
	cmd.ExtraFiles = []*os.File{ready}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		report(ready, "error start detached shim: "+err.Error())
		return 1
	}
	_ = cmd.Process.Release()
	return 0
}

func run(cfg Config, ready *os.File) error {
	// plinthd's stop, a terminal's Ctrl-C or a hangup must not end the shim: only the
	// container's exit does.
	signal.Ignore(unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGPIPE)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		report(ready, "error set child subreaper: "+err.Error())
		return err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o755); err != nil {
		report(ready, "error "+err.Error())
		return err
	}
	maxBytes, maxFiles := cfg.LogMaxBytes, cfg.LogMaxFiles
	if maxBytes == 0 {
		maxBytes = crilog.DefaultMaxBytes
	}
	if maxFiles == 0 {
		maxFiles = crilog.DefaultMaxFiles
	}
	logFile, err := crilog.OpenRotating(cfg.LogPath, maxBytes, maxFiles, time.Now)
	if err != nil {
		report(ready, "error "+err.Error())
		return err
	}
	defer logFile.Close()
	logs := crilog.NewWriter(logFile, time.Now)

	var copiers sync.WaitGroup
	startCopy := func(stream string) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		copiers.Add(1)
		go func() {
			defer copiers.Done()
			defer r.Close()
			if err := logs.Copy(stream, r); err != nil {
				fmt.Fprintf(os.Stderr, "plinth-shim %s: %s: %v\n", cfg.ID, stream, err)
				_, _ = io.Copy(io.Discard, r) // never block the container on a full pipe
			}
		}()
		return w, nil
	}
	stdout, err := startCopy(crilog.Stdout)
	if err != nil {
		report(ready, "error "+err.Error())
		return err
	}
	stderr, err := startCopy(crilog.Stderr)
	if err != nil {
		report(ready, "error "+err.Error())
		return err
	}

	runcLog := filepath.Join(cfg.StateDir, RuncLogFile)
	pidFile := filepath.Join(cfg.StateDir, InitPIDFile)
	create := exec.Command(cfg.Runc, "--root", cfg.Root, "--log", runcLog, "--log-format", "json",
		"create", "--bundle", cfg.Bundle, "--pid-file", pidFile, cfg.ID)
	create.Stdin = nil // /dev/null
	create.Stdout, create.Stderr = stdout, stderr
	create.Dir = cfg.Bundle
	err = create.Run()
	stdout.Close()
	stderr.Close()
	if err != nil {
		b, _ := os.ReadFile(runcLog)
		msg := runcLogError(b)
		if msg == "" {
			msg = err.Error()
		}
		report(ready, "error runc create: "+msg)
		copiers.Wait()
		return fmt.Errorf("runc create: %s", msg)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		report(ready, "error "+err.Error())
		return err
	}
	initPID, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || initPID <= 0 {
		report(ready, fmt.Sprintf("error %s: %q is not a pid", pidFile, b))
		return fmt.Errorf("%s: %q is not a pid", pidFile, b)
	}
	report(ready, fmt.Sprintf("ok %d %d", os.Getpid(), initPID))

	exit := reap(initPID)
	done := make(chan struct{})
	go func() { copiers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
		fmt.Fprintf(os.Stderr, "plinth-shim %s: output still open %v after the container exited; not waiting\n", cfg.ID, drainTimeout)
	}
	_ = logFile.Sync()
	data, err := json.Marshal(exit)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(cfg.StateDir, ExitFile), data, 0o644)
}

// reap waits for every child the shim inherits as subreaper until the container's
// init process exits, and returns how it ended.
func reap(initPID int) Exit {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			// ECHILD: the init process is not ours to wait for (it cannot happen while
			// we are its subreaper); report an unknown exit rather than hang.
			return Exit{Code: 255, FinishedAt: time.Now()}
		}
		if pid != initPID {
			continue
		}
		e := Exit{FinishedAt: time.Now()}
		switch {
		case ws.Exited():
			e.Code = ws.ExitStatus()
		case ws.Signaled():
			e.Signal = int(ws.Signal())
			e.Code = 128 + e.Signal
		}
		return e
	}
}
