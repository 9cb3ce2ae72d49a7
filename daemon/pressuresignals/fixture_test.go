package pressuresignals

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/sysinfo"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

// fixture is a fake /proc and hybrid /sys/fs/cgroup in a temporary directory, plus a
// fake statfs, for the polled signals.
type fixture struct {
	t       *testing.T
	proc    string
	cgroups string

	mu        sync.Mutex
	fs        map[string]sysinfo.Filesystem // statfs answers by path
	fsErr     error
	fsCalls   int
	fsBlock   chan struct{} // when not nil, statfs waits on it
	statfsSaw []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, proc: filepath.Join(dir, "proc"), cgroups: filepath.Join(dir, "cgroup"), fs: map[string]sysinfo.Filesystem{}}
	f.write("proc/meminfo", "MemTotal:       8388608 kB\nMemFree:        1048576 kB\nMemAvailable:   4194304 kB\nBuffers:          1024 kB\n")
	f.write("proc/loadavg", "0.52 0.58 0.59 3/155 3420\n")
	f.write("proc/sys/kernel/pid_max", "32768\n")
	f.write("proc/sys/kernel/threads-max", "192730\n")
	// Root memory cgroup (v1): 5 GiB used, 1 GiB of it inactive file.
	f.write("cgroup/memory/cgroup.procs", "1\n")
	f.write("cgroup/memory/memory.usage_in_bytes", "5368709120\n")
	f.write("cgroup/memory/memory.stat", "cache 2147483648\ntotal_inactive_file 1073741824\n")
	f.write("cgroup/unified/cgroup.procs", "")
	return f
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(filepath.Dir(f.proc), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// podsCgroup writes a v1 memory cgroup at path with usage, inactive file and limit
// ("" for v1's "no limit" value).
func (f *fixture) podsCgroup(path string, usage, inactive uint64, limit string) {
	if limit == "" {
		limit = "9223372036854771712"
	}
	base := "cgroup/memory" + path
	f.write(base+"/memory.usage_in_bytes", itoa(usage))
	f.write(base+"/memory.stat", "total_inactive_file "+itoa(inactive)+"\n")
	f.write(base+"/memory.limit_in_bytes", limit)
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

func (f *fixture) host() Host {
	return Host{
		ProcDir: f.proc,
		Cgroups: &cgroup.Host{Mode: cgroup.Hybrid, Root: f.cgroups, ProcDir: f.proc},
		Statfs:  f.statfs,
	}
}

func (f *fixture) setFS(path string, fs sysinfo.Filesystem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fs[path] = fs
}

func (f *fixture) statfs(path string) (sysinfo.Filesystem, error) {
	f.mu.Lock()
	f.fsCalls++
	f.statfsSaw = append(f.statfsSaw, path)
	block, err := f.fsBlock, f.fsErr
	fs, ok := f.fs[path]
	f.mu.Unlock()
	if block != nil {
		<-block
	}
	if err != nil {
		return sysinfo.Filesystem{}, err
	}
	if !ok {
		return sysinfo.Filesystem{}, errors.New("statfs " + path + ": no such filesystem in the fixture")
	}
	return fs, nil
}

func (f *fixture) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fsCalls
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
