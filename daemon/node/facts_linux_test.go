package node

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/plinth/plinth/internal/kerneltest"
)

// TestGatherHostFactsRealHost reads this machine through the real kernel readers.
func TestGatherHostFactsRealHost(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root)
	cfg := DefaultConfig("n")
	cfg.StateDir = t.TempDir()
	f, err := GatherHostFacts(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	if f.CPUs < 1 || f.MemoryBytes == 0 || f.EphemeralStorageBytes == 0 {
		t.Errorf("capacity facts %s, want CPUs, memory and storage above zero", f)
	}
	if f.KernelVersion != strings.TrimSpace(string(release)) {
		t.Errorf("KernelVersion = %q, /proc/sys/kernel/osrelease says %q", f.KernelVersion, strings.TrimSpace(string(release)))
	}
	if len(f.BootID) != 36 {
		t.Errorf("BootID = %q, want a 36-character UUID", f.BootID)
	}
}
