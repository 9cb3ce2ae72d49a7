package attach

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const (
	tracefsPath = "/sys/kernel/tracing"
	// Where tracefs appears on its own when debugfs is mounted.
	debugTracefsPath = "/sys/kernel/debug/tracing"
	bpffsPath        = "/sys/fs/bpf"
)

// EnsureMounts mounts tracefs and bpffs at their usual places when they are missing.
func EnsureMounts() error {
	return errors.Join(EnsureTracefs(), EnsureBPFFS())
}

// EnsureTracefs mounts tracefs on /sys/kernel/tracing unless it is already there or
// under /sys/kernel/debug/tracing. Attaching a plain tracepoint needs it, to look up
// the tracepoint's id.
func EnsureTracefs() error {
	for _, p := range []string{tracefsPath, debugTracefsPath} {
		if isFS(p, unix.TRACEFS_MAGIC) {
			return nil
		}
	}
	return mountFS("tracefs", tracefsPath)
}

// EnsureBPFFS mounts bpffs on /sys/fs/bpf unless it is already there. Plinth's own
// programs do not pin anything; this is for operators and tools (bpftool) that do.
func EnsureBPFFS() error {
	if isFS(bpffsPath, unix.BPF_FS_MAGIC) {
		return nil
	}
	return mountFS("bpf", bpffsPath)
}

func isFS(path string, magic int64) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return int64(st.Type) == magic
}

func mountFS(fstype, path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("mount %s on %s: %w", fstype, path, err)
	}
	if err := unix.Mount(fstype, path, fstype, 0, ""); err != nil {
		return fmt.Errorf("mount %s on %s: %w", fstype, path, err)
	}
	return nil
}
