package pressuresignals

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/sysinfo"
)

// Feed names, as they appear in condition messages, plinthctl pressure and the feed
// label of plinth_eviction_feed_active.
const (
	FeedMeminfo = "meminfo"      // /proc/meminfo: memory.available from MemAvailable
	FeedCgroup  = "cgroup"       // root and pods cgroups: working sets, pods limit
	FeedStatfs  = "statfs"       // nodefs and imagefs space and inodes
	FeedPIDs    = "pids"         // pid_max, threads-max and the task count
	FeedPSI     = "psi"          // PSI trigger on /proc/pressure/memory
	FeedPSIPods = "psi-pods"     // PSI trigger on the pods cgroup's memory.pressure
	FeedOOM     = "ebpf-oom"     // OOM kill events
	FeedReclaim = "ebpf-reclaim" // reclaim stall bursts and totals
	FeedTasks   = "ebpf-tasks"   // fork bursts
)

// feedOrder is the order feeds are reported in; feedConditions the conditions each
// informs.
var (
	feedOrder      = []string{FeedMeminfo, FeedCgroup, FeedStatfs, FeedPIDs, FeedPSI, FeedPSIPods, FeedOOM, FeedReclaim, FeedTasks}
	memoryOnly     = []corev1.NodeConditionType{corev1.NodeMemoryPressure}
	feedConditions = map[string][]corev1.NodeConditionType{
		FeedMeminfo: memoryOnly,
		FeedCgroup:  memoryOnly,
		FeedStatfs:  {corev1.NodeDiskPressure},
		FeedPIDs:    {corev1.NodePIDPressure},
		FeedPSI:     memoryOnly,
		FeedPSIPods: memoryOnly,
		FeedOOM:     memoryOnly,
		FeedReclaim: memoryOnly,
		FeedTasks:   {corev1.NodePIDPressure},
	}
)

// Host says where the polled signals are read. HostFiles returns the running
// system's; tests point it at fixture trees.
type Host struct {
	// ProcDir is /proc: meminfo, loadavg, sys/kernel/pid_max, sys/kernel/threads-max
	// and pressure/*.
	ProcDir string
	// Cgroups is the host's cgroup layout, nil when it could not be detected, in which
	// case CgroupsErr says why.
	Cgroups    *cgroup.Host
	CgroupsErr error
	// Statfs returns the size and use of the filesystem holding a path.
	Statfs func(path string) (sysinfo.Filesystem, error)
}

// poller reads the polled signals; it is safe for concurrent use.
type poller struct {
	host                  Host
	nodefsDir, imagefsDir string
	podsCgroup            string
	allocatable           uint64 // node allocatable memory, for a pods cgroup without a limit

	mu       sync.Mutex
	inflight map[string]*statfsCall // statfs calls still running, by path
}

// statfsCall is one statfs running in its own goroutine, so a hung filesystem (a dead
// NFS server) delays no evaluation past its context; later evaluations wait on the
// same call instead of piling up goroutines behind it.
type statfsCall struct {
	started time.Time
	done    chan struct{}
	fs      sysinfo.Filesystem
	err     error
}

// polledFeeds is what one observation learnt about the polled feeds.
type polledFeeds map[string]error

func (p *poller) observe(ctx context.Context) (pressure.Observations, polledFeeds, error) {
	var obs pressure.Observations
	feeds := polledFeeds{}

	mi, hasAvailable, miErr := readMeminfo(p.host.ProcDir)
	feeds[FeedMeminfo] = miErr
	var cgErrs []error
	if miErr == nil {
		mem := &pressure.MemoryStats{CapacityBytes: mi.MemTotal}
		mem.MemAvailableBytes, mem.HasMemAvailable = mi.MemAvailable, hasAvailable
		if p.host.Cgroups != nil {
			if nm, err := p.host.Cgroups.NodeMemory(); err == nil {
				mem.WorkingSetBytes, mem.HasWorkingSet = nm.WorkingSetBytes, true
			} else {
				cgErrs = append(cgErrs, fmt.Errorf("node working set: %w", err))
			}
		}
		obs.Memory = mem
	}
	if p.host.Cgroups == nil {
		cgErrs = append(cgErrs, fmt.Errorf("cgroups: %w", p.host.CgroupsErr))
	}
	if p.podsCgroup != "" && p.host.Cgroups != nil {
		if a, err := p.podsMemory(mi, miErr); err == nil {
			obs.AllocatableMemory = a
		} else {
			cgErrs = append(cgErrs, err)
		}
	}
	feeds[FeedCgroup] = errors.Join(cgErrs...)

	var fsErrs []error
	nodefs, err := p.statfs(ctx, p.nodefsDir)
	if err == nil {
		obs.Nodefs = nodefs
	} else {
		fsErrs = append(fsErrs, fmt.Errorf("nodefs: %w", err))
	}
	if p.imagefsDir == p.nodefsDir && obs.Nodefs != nil {
		imagefs := *obs.Nodefs
		obs.Imagefs = &imagefs
	} else if imagefs, err := p.statfs(ctx, p.imagefsDir); err == nil {
		obs.Imagefs = imagefs
	} else {
		fsErrs = append(fsErrs, fmt.Errorf("imagefs: %w", err))
	}
	feeds[FeedStatfs] = errors.Join(fsErrs...)

	pids, err := readPIDs(p.host.ProcDir)
	if err == nil {
		obs.PIDs = &pids
	}
	feeds[FeedPIDs] = err

	if obs.Memory == nil && obs.AllocatableMemory == nil && obs.Nodefs == nil && obs.Imagefs == nil && obs.PIDs == nil {
		var all []error
		for _, name := range []string{FeedMeminfo, FeedCgroup, FeedStatfs, FeedPIDs} {
			if feeds[name] != nil {
				all = append(all, fmt.Errorf("%s: %w", name, feeds[name]))
			}
		}
		return obs, feeds, fmt.Errorf("no pressure signal could be read: %w", errors.Join(all...))
	}
	return obs, feeds, nil
}

// podsMemory reads the pods cgroup: its limit is what pods may use, or the node's
// allocatable memory (MemTotal when none was configured) when it has none.
func (p *poller) podsMemory(mi sysinfo.Meminfo, miErr error) (*pressure.AllocatableMemoryStats, error) {
	m, err := p.host.Cgroups.Memory(p.podsCgroup)
	if err != nil {
		return nil, fmt.Errorf("pods cgroup %s: %w", p.podsCgroup, err)
	}
	capacity := m.LimitBytes
	if capacity == cgroup.Unlimited {
		capacity = p.allocatable
		if capacity == 0 {
			if miErr != nil {
				return nil, fmt.Errorf("pods cgroup %s has no memory limit and MemTotal is unknown: %w", p.podsCgroup, miErr)
			}
			capacity = mi.MemTotal
		}
	}
	return &pressure.AllocatableMemoryStats{AllocatableBytes: capacity, WorkingSetBytes: m.WorkingSetBytes}, nil
}

// statfs measures the filesystem of dir, or of its nearest existing ancestor while dir
// does not exist yet (the images directory before the first image): that is the
// filesystem it will be on.
func (p *poller) statfs(ctx context.Context, dir string) (*pressure.FilesystemStats, error) {
	if dir == "" {
		return nil, errors.New("no directory configured")
	}
	path := existingAncestor(dir)
	p.mu.Lock()
	call, ok := p.inflight[path]
	if !ok {
		call = &statfsCall{started: time.Now(), done: make(chan struct{})}
		if p.inflight == nil {
			p.inflight = map[string]*statfsCall{}
		}
		p.inflight[path] = call
		go func() {
			call.fs, call.err = p.host.Statfs(path)
			p.mu.Lock()
			delete(p.inflight, path)
			p.mu.Unlock()
			close(call.done)
		}()
	}
	p.mu.Unlock()
	select {
	case <-call.done:
		if call.err != nil {
			return nil, call.err
		}
		fs := pressure.FilesystemStats(call.fs)
		return &fs, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("statfs %s has not returned after %s (hung filesystem?)", path, time.Since(call.started).Round(time.Millisecond))
	}
}

// existingAncestor is dir, or its nearest ancestor that exists.
func existingAncestor(dir string) string {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) || p == filepath.Dir(p) {
			return p
		}
	}
}

// readMeminfo reads procDir/meminfo and says whether it has a MemAvailable line
// (kernels before 3.14 lack it, and a zero MemAvailable on a starving node must not
// read as "unknown").
func readMeminfo(procDir string) (sysinfo.Meminfo, bool, error) {
	file := filepath.Join(procDir, "meminfo")
	b, err := os.ReadFile(file)
	if err != nil {
		return sysinfo.Meminfo{}, false, err
	}
	m, err := sysinfo.ParseMeminfo(bytes.NewReader(b))
	if err != nil {
		return sysinfo.Meminfo{}, false, fmt.Errorf("%s: %w", file, err)
	}
	return m, bytes.HasPrefix(b, []byte("MemAvailable:")) || bytes.Contains(b, []byte("\nMemAvailable:")), nil
}
