//go:build linux

package runc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/pods/shim"
	"github.com/plinth/plinth/kernel/cgroup"
)

// Driver runs containers with runc. Its methods are safe for concurrent use on
// different containers; the caller serialises calls for one container.
type Driver struct {
	cfg   Config
	clock clock.Clock
	host  cgroup.Host
}

// New checks cfg and returns a Driver. It creates Root and StateDir if missing.
func New(cfg Config, clk clock.Clock) (*Driver, error) {
	if cfg.Runc == "" {
		p, err := exec.LookPath("runc")
		if err != nil {
			return nil, fmt.Errorf("runc driver: %w", err)
		}
		cfg.Runc = p
	}
	if cfg.Root == "" {
		cfg.Root = DefaultRoot
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	if len(cfg.ShimCommand) == 0 {
		return nil, errors.New("runc driver: no shim command")
	}
	for _, dir := range []string{cfg.Root, cfg.StateDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("runc driver: %w", err)
		}
	}
	host, err := cgroup.DetectHost()
	if err != nil {
		return nil, fmt.Errorf("runc driver: %w", err)
	}
	return &Driver{cfg: cfg, clock: clk, host: host}, nil
}

// shimReadyTimeout bounds `runc create` as seen from plinthd.
const shimReadyTimeout = 60 * time.Second

// Create creates the container (its processes exist, the user's program has not
// started) and records its checkpoint. On failure nothing is left behind, and the
// error carries runc's own message (for CreateContainerError).
func (d *Driver) Create(ctx context.Context, o CreateOptions) (Checkpoint, error) {
	if err := checkID(o.ID); err != nil {
		return Checkpoint{}, err
	}
	spec, err := readSpec(o.Bundle)
	if err != nil {
		return Checkpoint{}, err
	}
	dir := d.stateDir(o.ID)
	err = os.Mkdir(dir, 0o700)
	if errors.Is(err, os.ErrExist) {
		if _, cerr := d.Checkpoint(o.ID); !errors.Is(cerr, ErrNotFound) {
			return Checkpoint{}, fmt.Errorf("container %s already exists", o.ID)
		}
		// A create that a crash interrupted before its checkpoint was written: nothing
		// adopted it, so remove what it left (runc's container, killing it) and retry.
		d.cleanupFailedCreate(o.ID)
		err = os.Mkdir(dir, 0o700)
	}
	if err != nil {
		return Checkpoint{}, err
	}
	cp, err := d.startShim(ctx, o, dir)
	if err != nil {
		d.cleanupFailedCreate(o.ID)
		return Checkpoint{}, fmt.Errorf("create container %s: %w", o.ID, err)
	}
	if spec.Linux != nil {
		cp.CgroupPath = spec.Linux.CgroupsPath
	}
	if err := d.writeCheckpoint(cp); err != nil {
		d.cleanupFailedCreate(o.ID)
		return Checkpoint{}, err
	}
	return cp, nil
}

func readSpec(bundle string) (*specs.Spec, error) {
	b, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", bundle, err)
	}
	var s specs.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("bundle %s: config.json: %w", bundle, err)
	}
	return &s, nil
}

func (d *Driver) startShim(ctx context.Context, o CreateOptions, dir string) (Checkpoint, error) {
	cfg := shim.Config{Runc: d.cfg.Runc, Root: d.cfg.Root, ID: o.ID, Bundle: o.Bundle, StateDir: dir, LogPath: o.LogPath,
		LogMaxBytes: d.cfg.LogMaxBytes, LogMaxFiles: d.cfg.LogMaxFiles}
	argv := append(append([]string(nil), d.cfg.ShimCommand...), cfg.Args()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	shimLog, err := os.OpenFile(filepath.Join(dir, "shim.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Checkpoint{}, err
	}
	defer shimLog.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return Checkpoint{}, err
	}
	defer readyR.Close()
	cmd.Env = runcEnv(os.Environ()) // the shim's runc create inherits it
	cmd.Stderr = shimLog
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		readyW.Close()
		return Checkpoint{}, fmt.Errorf("start shim: %w", err)
	}
	readyW.Close()
	// The first stage only re-executes itself detached and exits.
	if err := cmd.Wait(); err != nil {
		return Checkpoint{}, fmt.Errorf("shim: %w (see %s)", err, filepath.Join(dir, "shim.log"))
	}
	type result struct {
		b   []byte
		err error
	}
	got := make(chan result, 1)
	go func() { b, err := io.ReadAll(readyR); got <- result{b, err} }()
	timer := d.clock.NewTimer(shimReadyTimeout)
	defer timer.Stop()
	var res result
	select {
	case res = <-got:
	case <-ctx.Done():
		readyR.Close() // ends the reader
		return Checkpoint{}, ctx.Err()
	case <-timer.C():
		readyR.Close()
		return Checkpoint{}, fmt.Errorf("shim did not report within %v", shimReadyTimeout)
	}
	if res.err != nil {
		return Checkpoint{}, res.err
	}
	ready, err := shim.ParseReady(string(res.b))
	if err != nil {
		return Checkpoint{}, err
	}
	ticks, err := startTicks(ready.ShimPID)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("shim pid %d: %w", ready.ShimPID, err)
	}
	return Checkpoint{ID: o.ID, Bundle: o.Bundle, LogPath: o.LogPath, ShimPID: ready.ShimPID, ShimStartTicks: ticks,
		InitPID: ready.InitPID, CreatedAt: d.clock.Now(), Labels: o.Labels}, nil
}

// cleanupFailedCreate removes what a failed Create may have left: runc's state (the
// shim's runc create may have got far) and the checkpoint directory.
func (d *Driver) cleanupFailedCreate(id string) {
	_, _ = d.runc(context.Background(), "delete", "--force", id)
	_ = os.RemoveAll(d.stateDir(id))
}

// Start runs the user's program of a created container.
func (d *Driver) Start(ctx context.Context, id string) error {
	cp, err := d.Checkpoint(id)
	if err != nil {
		return err
	}
	if _, err := d.runc(ctx, "start", id); err != nil {
		return err
	}
	cp.StartedAt = d.clock.Now()
	return d.writeCheckpoint(cp)
}

// State returns runc's state of the container.
func (d *Driver) State(ctx context.Context, id string) (State, error) {
	if err := checkID(id); err != nil {
		return State{}, err
	}
	out, err := d.runc(ctx, "state", id)
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(out, &s); err != nil {
		return State{}, fmt.Errorf("runc state %s: %w", id, err)
	}
	return s, nil
}

// Kill sends sig to the container's init process. A container that has already
// stopped is not an error.
func (d *Driver) Kill(ctx context.Context, id string, sig unix.Signal) error {
	if err := checkID(id); err != nil {
		return err
	}
	_, err := d.runc(ctx, "kill", id, strconv.Itoa(int(sig)))
	if err != nil && d.stopped(ctx, id) {
		return nil
	}
	return err
}

func (d *Driver) stopped(ctx context.Context, id string) bool {
	s, err := d.State(ctx, id)
	return err == nil && s.Status == "stopped"
}

// Stop sends stopSignal (SIGTERM when 0), waits up to grace for the container to exit,
// then sends SIGKILL, and returns the exit status.
func (d *Driver) Stop(ctx context.Context, id string, stopSignal unix.Signal, grace time.Duration) (ExitStatus, error) {
	if stopSignal == 0 {
		stopSignal = unix.SIGTERM
	}
	if err := d.Kill(ctx, id, stopSignal); err != nil {
		return ExitStatus{}, err
	}
	if grace > 0 {
		graceCtx, cancel := context.WithCancel(ctx)
		timer := d.clock.NewTimer(grace)
		go func() { // ends with cancel below at the latest
			select {
			case <-timer.C():
				cancel()
			case <-graceCtx.Done():
			}
		}()
		st, err := d.Wait(graceCtx, id)
		timer.Stop()
		cancel()
		if err == nil {
			return st, nil
		}
		if ctx.Err() != nil {
			return ExitStatus{}, ctx.Err()
		}
	}
	if err := d.Kill(ctx, id, unix.SIGKILL); err != nil {
		return ExitStatus{}, err
	}
	return d.Wait(ctx, id)
}

// Wait blocks until the container has exited and its shim has recorded how, or ctx is
// done. It works the same for containers this driver created and for those a previous
// plinthd left behind.
func (d *Driver) Wait(ctx context.Context, id string) (ExitStatus, error) {
	cp, err := d.Checkpoint(id)
	if err != nil {
		return ExitStatus{}, err
	}
	dir := d.stateDir(id)
	if e, err := shim.ReadExit(dir); err == nil {
		return d.exitStatus(cp, e), nil
	}
	if err := waitProcess(ctx, cp.ShimPID, cp.ShimStartTicks); err != nil {
		return ExitStatus{}, err
	}
	e, err := shim.ReadExit(dir)
	if errors.Is(err, os.ErrNotExist) {
		// The shim died without recording the exit (killed, or the node lost power
		// mid-write): the status is gone, as kubelet's ContainerStatusUnknown.
		return ExitStatus{Exit: shim.Exit{Code: 255, FinishedAt: d.clock.Now()}, Unknown: true}, nil
	}
	if err != nil {
		return ExitStatus{}, err
	}
	return d.exitStatus(cp, e), nil
}

// Exited reports whether container id has ended: its shim recorded the exit, or the
// shim is gone without recording one (the exit status is lost, but nothing runs).
// Container garbage collection asks it before removing what a container left.
func (d *Driver) Exited(id string) (bool, error) {
	cp, err := d.Checkpoint(id)
	if err != nil {
		return false, err
	}
	if _, err := shim.ReadExit(d.stateDir(id)); err == nil {
		return true, nil
	}
	ticks, err := startTicks(cp.ShimPID)
	return err != nil || ticks != cp.ShimStartTicks, nil
}

func (d *Driver) exitStatus(cp Checkpoint, e shim.Exit) ExitStatus {
	st := ExitStatus{Exit: e}
	if cp.CgroupPath != "" {
		if n, err := d.host.OOMKills(cp.CgroupPath); err == nil && n > 0 {
			st.OOMKilled = true
		}
	}
	return st
}

// Exec runs args in the container (exec probes) and returns their combined output,
// bounded to maxOutput bytes, and exit code. The error is for failures to run at all.
func (d *Driver) Exec(ctx context.Context, id string, args []string) ([]byte, int, error) {
	if err := checkID(id); err != nil {
		return nil, 0, err
	}
	if len(args) == 0 {
		return nil, 0, errors.New("exec: no command")
	}
	full := append([]string{"--root", d.cfg.Root, "exec", id}, args...)
	cmd := exec.CommandContext(ctx, d.cfg.Runc, full...)
	cmd.Env = runcEnv(os.Environ())
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && ctx.Err() == nil {
		return out.Bytes(), exitErr.ExitCode(), nil
	}
	if err != nil {
		return out.Bytes(), 0, runcError(full, out.Bytes(), err)
	}
	return out.Bytes(), 0, nil
}

// maxOutput is what kubelet keeps of an exec probe's output.
const maxOutput = 10 * 1024

type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Delete removes the container from runc (killing it first if it still runs) and its
// checkpoint directory. Deleting a container that does not exist is not an error.
func (d *Driver) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if out, err := d.runc(ctx, "delete", "--force", id); err != nil && !strings.Contains(string(out)+err.Error(), "does not exist") {
		return err
	}
	return os.RemoveAll(d.stateDir(id))
}

// runc runs one runc command and returns its standard output.
func (d *Driver) runc(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"--root", d.cfg.Root}, args...)
	cmd := exec.CommandContext(ctx, d.cfg.Runc, full...)
	cmd.Env = runcEnv(os.Environ())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.Bytes(), runcError(args, stderr.Bytes(), err)
	}
	return stdout.Bytes(), nil
}
