package vm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// share is a host directory the guest mounts over virtio 9p under its tag.
type share struct {
	tag, dir string
	readOnly bool
}

// machine is one qemu run: a kernel, its initramfs and shares, under TCG (this machine
// has no /dev/kvm; where it has, qemu would still be told tcg so that runs compare).
type machine struct {
	label     string // prefix of the progress lines
	kernel    string // vmlinuz
	initramfs string
	shares    []share
	cpus      int
	memoryMB  int
	console   string // file the serial console is written to
	cmdline   string // appended to kernelCommandLine (for the guest's init)
	// silence, when set, is how long the console may stay quiet before the guest
	// counts as hung and qemu is killed (run then returns errGuestHung).
	silence time.Duration
}

// errGuestHung: the console stayed silent for longer than the machine's silence
// allowance. The guest's init prints a line when each test binary ends, and each
// binary runs under -test.timeout, so a silence beyond that timeout is a guest that
// no longer runs anything: a kernel lockup, not a slow test.
var errGuestHung = errors.New("the guest hung")

// kernelCommandLine: the serial console; panic=-1 reboots (and so, with -no-reboot,
// ends qemu) on a panic; psi=1 because many distribution kernels build PSI disabled at
// boot and Plinth's preflight asks for it, as the machines that build Plinth have it.
const kernelCommandLine = "console=ttyS0 panic=-1 psi=1 loglevel=4"

func (m machine) args() []string {
	args := []string{
		"-nodefaults", "-no-reboot", "-display", "none", "-serial", "stdio",
		"-accel", "tcg,thread=multi", "-cpu", "max",
		"-smp", fmt.Sprint(m.cpus), "-m", fmt.Sprint(m.memoryMB),
		"-kernel", m.kernel, "-initrd", m.initramfs, "-append", strings.TrimSpace(kernelCommandLine + " " + m.cmdline),
	}
	for i, s := range m.shares {
		opt := fmt.Sprintf("local,path=%s,mount_tag=%s,security_model=none,id=fs%d", s.dir, s.tag, i)
		if s.readOnly {
			opt += ",readonly=on"
		}
		args = append(args, "-virtfs", opt)
	}
	return args
}

// run boots the machine and waits until the guest powers off or ctx ends (then qemu is
// killed). The console goes to m.console; the guest's own progress lines ("plinth-vm:")
// are also copied to progress, prefixed with the label.
func (m machine) run(ctx context.Context, progress io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", m.args()...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	// Should this process die without cancelling, the kernel ends qemu too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	console, err := os.Create(m.console)
	if err != nil {
		return err
	}
	defer console.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = console
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting qemu: %w", err)
	}
	// The copier ends when qemu closes its stdout, before Wait returns.
	copied := make(chan struct{})
	var lastOutput atomic.Int64 // unix nanoseconds
	lastOutput.Store(time.Now().UnixNano())
	if m.silence > 0 {
		go m.watchSilence(ctx, &lastOutput, copied, cancel)
	}
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			lastOutput.Store(time.Now().UnixNano())
			line := strings.TrimRight(sc.Text(), "\r")
			fmt.Fprintln(console, line)
			if rest, ok := strings.CutPrefix(line, "plinth-vm: "); ok {
				fmt.Fprintf(progress, "vm %s: %s\n", m.label, rest)
			}
		}
	}()
	<-copied
	err = cmd.Wait()
	if cause := context.Cause(ctx); errors.Is(cause, errGuestHung) {
		return fmt.Errorf("qemu for %s: %w: no console output for %s (console in %s)", m.label, errGuestHung, m.silence, m.console)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("qemu for %s stopped: %w (console in %s)", m.label, ctx.Err(), m.console)
	}
	if err != nil {
		return fmt.Errorf("qemu for %s: %w (console in %s)", m.label, err, m.console)
	}
	return nil
}

// watchSilence cancels the run with errGuestHung once the console has been silent for
// longer than m.silence. It ends when the console closes or the run is cancelled.
func (m machine) watchSilence(ctx context.Context, lastOutput *atomic.Int64, copied <-chan struct{}, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(min(m.silence/4, 5*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-copied:
			return
		case now := <-tick.C:
			if now.Sub(time.Unix(0, lastOutput.Load())) > m.silence {
				cancel(errGuestHung)
				return
			}
		}
	}
}
