package plinthd

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/preflight"
	"github.com/plinth/plinth/internal/watchdog"
	"github.com/plinth/plinth/kernel/cgroup"
	"github.com/plinth/plinth/kernel/features"
)

func TestRunRefusesOnPreflightFailBeforeChangingAnything(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.LockFile = filepath.Join(dir, "run", "plinthd.lock")
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.HealthzBindAddress = "127.0.0.1:0"
	var gotNeeds preflight.Needs
	backends := Backends{Preflight: func(_ context.Context, n preflight.Needs) preflight.Report {
		gotNeeds = n
		return preflight.Report{Checks: []preflight.Check{
			{Name: "kernel", Status: preflight.Pass, Reason: "6.1.0"},
			{Name: "psi", Status: preflight.Warn, Reason: "disabled at boot"},
			{Name: "swap", Status: preflight.Fail, Reason: "on and failSwapOn is true"},
		}}
	}}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	err := Run(context.Background(), cfg, nil, watchdog.NewSystemdNotifier(), backends, logger)
	if err == nil || !strings.Contains(err.Error(), "swap: on and failSwapOn is true") || strings.Contains(err.Error(), "psi") {
		t.Fatalf("Run = %v, want an error naming only the failed swap check", err)
	}
	if !gotNeeds.FailSwapOn || gotNeeds.Pods || gotNeeds.SwapBehavior != config.NoSwap {
		t.Errorf("preflight asked with %+v, want the configuration's needs", gotNeeds)
	}
	for _, p := range []string{filepath.Dir(cfg.LockFile), cfg.StateDir} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after a refused start (%v)", p, err)
		}
	}
	out := logs.String()
	for _, want := range []string{
		`level=INFO msg=preflight component=preflight check=kernel status=PASS reason=6.1.0`,
		`level=WARN msg=preflight component=preflight check=psi status=WARN`,
		`level=ERROR msg=preflight component=preflight check=swap status=FAIL`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestContainerSwap(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/vda2 partition 1048576 0 -2\n")
	sys := features.NewSystem(root)
	cfg := config.Defaults()
	cfg.FailSwapOn, cfg.MemorySwap.SwapBehavior = false, config.LimitedSwap
	logger := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))

	// No accounting: no limits at all.
	s, err := containerSwap(cfg, sys, cgroup.Unified, logger)
	if err != nil || s.Behavior != "" {
		t.Errorf("without accounting: %+v, %v", s, err)
	}
	write("sys/fs/cgroup/init.scope/memory.swap.max", "max\n")
	s, err = containerSwap(cfg, sys, cgroup.Unified, logger)
	if err != nil || s.Behavior != config.LimitedSwap || !s.Unified || s.NodeSwapBytes != 1<<30 {
		t.Errorf("v2: %+v, %v", s, err)
	}
	write("sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", "9223372036854771712\n")
	cfg.MemorySwap.SwapBehavior = config.NoSwap
	s, err = containerSwap(cfg, sys, cgroup.Hybrid, logger)
	if err != nil || s.Behavior != config.NoSwap || s.Unified {
		t.Errorf("v1: %+v, %v", s, err)
	}
	write("proc/swaps", "garbage\n")
	if _, err := containerSwap(cfg, sys, cgroup.Hybrid, logger); err == nil || !strings.Contains(err.Error(), "swaps") {
		t.Errorf("unreadable swaps: %v", err)
	}
}
