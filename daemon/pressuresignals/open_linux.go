package pressuresignals

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/plinth/plinth/bpf/attach"
	"github.com/plinth/plinth/bpf/oomwatch"
	"github.com/plinth/plinth/bpf/reclaim"
	"github.com/plinth/plinth/bpf/tasks"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/psi"
	"github.com/plinth/plinth/kernel/sysinfo"
)

// psiStallShare is the share of the trigger window that tasks must spend stalled on
// memory for a PSI trigger to fire: 10% is well above the noise of a healthy node
// (avg10 stays at 0.00) and well below a node thrashing in reclaim.
const psiStallShare = 10

// HostFiles returns the running system's Host.
func HostFiles() Host {
	h := Host{ProcDir: "/proc", Statfs: sysinfo.FilesystemStats}
	if cg, err := cgroup.DetectHost(); err == nil {
		h.Cgroups = &cg
	} else {
		h.CgroupsErr = err
	}
	return h
}

// Open builds the signals from the running system: the polled files, a PSI trigger on
// the node's memory pressure and one on the pods cgroup's, and the OOM, reclaim and
// fork BPF programs. Whatever cannot be set up is reported as an inactive feed with
// the reason and logged; only a missing Logger is an error. Call Start, then Close.
func Open(opts Options) (*Signals, error) {
	if opts.Logger == nil {
		return nil, errors.New("pressuresignals: Open needs a Logger")
	}
	log := opts.Logger
	deps := Deps{Host: HostFiles(), Unavailable: map[string]error{}}

	window := psi.UnprivilegedWindowStep
	if psi.PrivilegedTriggers() {
		window = psi.MinWindow
	}
	stall := window * psiStallShare / 100
	arm := func(feed, path string) {
		t, err := psi.NewTrigger(path, psi.Some, stall, window)
		if err != nil {
			deps.Unavailable[feed] = err
			return
		}
		deps.Triggers = append(deps.Triggers, Trigger{Feed: feed, Path: path, Events: t})
		deps.Closers = append(deps.Closers, t)
	}
	arm(FeedPSI, filepath.Join(deps.Host.ProcDir, "pressure", psi.Memory.String()))
	if opts.PodsCgroup != "" {
		switch {
		case deps.Host.Cgroups == nil:
			deps.Unavailable[FeedPSIPods] = fmt.Errorf("cgroups: %w", deps.Host.CgroupsErr)
		case deps.Host.Cgroups.UnifiedDir() == "":
			deps.Unavailable[FeedPSIPods] = errors.New("this host mounts no cgroup v2 tree, where per-cgroup PSI lives")
		default:
			arm(FeedPSIPods, psi.CgroupPath(filepath.Join(deps.Host.Cgroups.UnifiedDir(), opts.PodsCgroup), psi.Memory))
		}
	}

	bpfErr := bpfPrecondition()
	if bpfErr == nil {
		// Plain tracepoints look their ids up in tracefs, which is not always mounted.
		if err := attach.EnsureMounts(); err != nil {
			log.Warn("mounting tracefs and bpffs failed; the BPF programs may still load with BTF", "err", err)
		}
	}
	start := time.Now()
	if bpfErr != nil {
		deps.Unavailable[FeedOOM], deps.Unavailable[FeedReclaim], deps.Unavailable[FeedTasks] = bpfErr, bpfErr, bpfErr
	} else {
		if w, err := oomwatch.Load(oomwatch.Options{Logger: log, Clock: opts.Clock}); err == nil {
			deps.OOM = w
			deps.Closers = append(deps.Closers, w)
		} else {
			deps.Unavailable[FeedOOM] = err
		}
		if t, err := reclaim.Load(reclaim.Options{Logger: log, Clock: opts.Clock}); err == nil {
			deps.Reclaim = t
			deps.Closers = append(deps.Closers, t)
		} else {
			deps.Unavailable[FeedReclaim] = err
		}
		if c, err := tasks.Load(tasks.Options{Logger: log}); err == nil {
			deps.Tasks = c
			deps.Closers = append(deps.Closers, c)
		} else {
			deps.Unavailable[FeedTasks] = err
		}
	}
	for _, feed := range []string{FeedPSI, FeedPSIPods, FeedOOM, FeedReclaim, FeedTasks} {
		if err, ok := deps.Unavailable[feed]; ok {
			log.Warn("pressure feed unavailable; pressure is still evaluated from the other signals", "feed", feed, "err", err)
		}
	}
	log.Info("pressure feeds set up", "psi_window", window, "psi_triggers", len(deps.Triggers),
		"bpf", deps.OOM != nil || deps.Reclaim != nil || deps.Tasks != nil, "took", time.Since(start).Round(time.Millisecond))

	s, err := New(opts, deps)
	if err != nil {
		for _, c := range deps.Closers {
			_ = c.Close()
		}
		return nil, err
	}
	return s, nil
}

// bpfPrecondition says why no BPF program can load, before trying: loading needs
// root (CAP_BPF and CAP_PERFMON at least), and saying so beats three EPERMs.
func bpfPrecondition() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("BPF programs need root; plinthd runs as uid %d", os.Geteuid())
	}
	return nil
}
