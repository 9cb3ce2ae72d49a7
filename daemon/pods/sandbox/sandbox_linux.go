//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/daemon/pods/bundle"
)

// DefaultDir is where pod runtime directories live.
const DefaultDir = "/run/plinth/pods"

// Options describe a pod's sandbox.
type Options struct {
	// Dir is the pod's runtime directory (DefaultDir/<uid>).
	Dir      string
	Hostname string
	// HostNetwork pods keep the node's UTS namespace; HostIPC pods the node's IPC one.
	HostNetwork, HostIPC bool
	// NetNSPath is the pod's network namespace (from the pod network).
	NetNSPath string
	// Hosts and ResolvConf are the file contents to give the containers.
	Hosts, ResolvConf []byte
	// ShmBytes sizes /dev/shm (64 MiB when 0).
	ShmBytes int64
}

// Create prepares the sandbox, or finds the one a previous plinthd prepared
// (idempotent), and returns what bundle.Build needs. On failure it removes what it made.
func Create(o Options) (bundle.Sandbox, error) {
	if o.Dir == "" || !filepath.IsAbs(o.Dir) {
		return bundle.Sandbox{}, fmt.Errorf("sandbox: directory %q is not absolute", o.Dir)
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "ns"), 0o711); err != nil {
		return bundle.Sandbox{}, err
	}
	sb := bundle.Sandbox{Hostname: o.Hostname, NetNSPath: o.NetNSPath}
	ok := false
	defer func() {
		if !ok {
			_ = Remove(o.Dir)
		}
	}()
	// Only the namespaces not pinned yet (by a previous call) are created.
	var flags int
	ipcPin, utsPin := "", ""
	if !o.HostIPC {
		sb.IPCNSPath = filepath.Join(o.Dir, "ns", "ipc")
		if !isMount(sb.IPCNSPath) {
			flags, ipcPin = flags|unix.CLONE_NEWIPC, sb.IPCNSPath
		}
	}
	if !o.HostNetwork {
		sb.UTSNSPath = filepath.Join(o.Dir, "ns", "uts")
		if !isMount(sb.UTSNSPath) {
			flags, utsPin = flags|unix.CLONE_NEWUTS, sb.UTSNSPath
		}
	}
	if flags != 0 {
		if err := pinNamespaces(flags, o.Hostname, ipcPin, utsPin); err != nil {
			return bundle.Sandbox{}, err
		}
	}
	sb.ShmPath = filepath.Join(o.Dir, "shm")
	if !isMount(sb.ShmPath) {
		if err := os.MkdirAll(sb.ShmPath, 0o1777); err != nil {
			return bundle.Sandbox{}, err
		}
		size := o.ShmBytes
		if size <= 0 {
			size = 64 << 20
		}
		if err := unix.Mount("shm", sb.ShmPath, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, fmt.Sprintf("mode=1777,size=%d", size)); err != nil {
			return bundle.Sandbox{}, fmt.Errorf("sandbox: mount /dev/shm tmpfs on %s: %w", sb.ShmPath, err)
		}
	}
	files := []struct {
		path    *string
		name    string
		content []byte
	}{
		{&sb.HostsPath, "hosts", o.Hosts},
		{&sb.ResolvConfPath, "resolv.conf", o.ResolvConf},
		{&sb.HostnamePath, "hostname", []byte(o.Hostname + "\n")},
	}
	for _, f := range files {
		if f.content == nil {
			continue
		}
		p := filepath.Join(o.Dir, f.name)
		if err := os.WriteFile(p, f.content, 0o644); err != nil {
			return bundle.Sandbox{}, err
		}
		*f.path = p
	}
	ok = true
	return sb, nil
}

// pinNamespaces creates the namespaces on a throwaway thread and bind-mounts them.
func pinNamespaces(flags int, hostname, ipcPath, utsPath string) error {
	return onThrowawayThread(func() error {
		if err := unix.Unshare(flags); err != nil {
			return fmt.Errorf("sandbox: unshare: %w", err)
		}
		if utsPath != "" {
			if err := unix.Sethostname([]byte(hostname)); err != nil {
				return fmt.Errorf("sandbox: sethostname %q: %w", hostname, err)
			}
			if err := bindNS("uts", utsPath); err != nil {
				return err
			}
		}
		if ipcPath != "" {
			return bindNS("ipc", ipcPath)
		}
		return nil
	})
}

// onThrowawayThread runs fn on an OS thread that the runtime terminates afterwards
// (the goroutine exits still locked to it), so whatever namespaces fn enters never
// reach another goroutine. The main thread is never terminated (the runtime wedges it
// instead, and /proc/<pid>/ns shows its namespaces), so when the goroutine lands there
// it keeps the main thread and runs fn on yet another one.
func onThrowawayThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			errc <- onThrowawayThread(fn)
			runtime.UnlockOSThread()
			return
		}
		errc <- fn() // returns locked: the thread is discarded
	}()
	return <-errc
}

func bindNS(kind, target string) error {
	if isMount(target) {
		return nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o444)
	if err != nil {
		return err
	}
	f.Close()
	src := fmt.Sprintf("/proc/%d/task/%d/ns/%s", os.Getpid(), unix.Gettid(), kind)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("sandbox: pin %s namespace at %s: %w", kind, target, err)
	}
	return nil
}

// isMount tells whether path is a mount point (its device differs from its parent's,
// or, for nsfs bind mounts on files, it is on nsfs).
func isMount(path string) bool {
	if path == "" {
		return false
	}
	var st, parent unix.Statfs_t
	if unix.Statfs(path, &st) != nil || unix.Statfs(filepath.Dir(path), &parent) != nil {
		return false
	}
	const nsfsMagic = 0x6e736673
	if st.Type == nsfsMagic {
		return true
	}
	var s1, s2 unix.Stat_t
	if unix.Stat(path, &s1) != nil || unix.Stat(filepath.Dir(path), &s2) != nil {
		return false
	}
	return s1.Dev != s2.Dev
}

// Remove unmounts the pinned namespaces and /dev/shm and deletes the pod's runtime
// directory. A missing directory is not an error.
func Remove(dir string) error {
	var errs []error
	for _, p := range []string{filepath.Join(dir, "ns", "ipc"), filepath.Join(dir, "ns", "uts"), filepath.Join(dir, "shm")} {
		if isMount(p) {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("sandbox: unmount %s: %w", p, err))
			}
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
