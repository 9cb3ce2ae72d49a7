package vm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
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
}

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
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			fmt.Fprintln(console, line)
			if rest, ok := strings.CutPrefix(line, "plinth-vm: "); ok {
				fmt.Fprintf(progress, "vm %s: %s\n", m.label, rest)
			}
		}
	}()
	<-copied
	err = cmd.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("qemu for %s stopped: %w (console in %s)", m.label, ctx.Err(), m.console)
	}
	if err != nil {
		return fmt.Errorf("qemu for %s: %w (console in %s)", m.label, err, m.console)
	}
	return nil
}
