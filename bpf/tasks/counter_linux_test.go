package tasks

import (
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"github.com/plinth/plinth/bpf/attach"
	"github.com/plinth/plinth/bpf/internal/memcgtest"
	"github.com/plinth/plinth/internal/kerneltest"
)

func testLogger(t testing.TB) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

var modes = []attach.Mode{attach.BTF, attach.Tracepoints}

func load(t testing.TB, mode attach.Mode) *Counter {
	t.Helper()
	c, err := Load(Options{Mode: mode, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.Mode() != mode {
		t.Fatalf("Mode() = %v, want %v", c.Mode(), mode)
	}
	return c
}

func runTrue(t testing.TB, n int) {
	t.Helper()
	for range n {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestForkCounter(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF)
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			c := load(t, mode)
			before, err := c.Totals()
			if err != nil {
				t.Fatal(err)
			}
			runTrue(t, 50)
			after, err := c.Totals()
			if err != nil {
				t.Fatal(err)
			}
			forks, exits := after.Forks-before.Forks, after.Exits-before.Exits
			if forks < 50 || exits < 50 {
				t.Errorf("50 runs of /bin/true moved forks by %d and exits by %d, want at least 50 each", forks, exits)
			}
			if n, err := c.ForkCount(); err != nil || n < after.Forks {
				t.Errorf("ForkCount() = %d, %v; want at least %d", n, err, after.Forks)
			}
		})
	}
}

// A shell placed in a fresh cgroup runs /bin/true 50 times. Every child is created and
// exits in the cgroup; the shell itself was created outside, so the cgroup sees one
// more exit than forks.
func TestTaskCountsPerCgroup(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF, memcgtest.MemoryCgroup, memcgtest.V2Tree)
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			c := load(t, mode)
			cg := memcgtest.New(t, 256<<20)
			sh := cg.Start(t, "/bin/sh", "-c", "i=0; while [ $i -lt 50 ]; do /bin/true; i=$((i+1)); done")
			done := make(chan error, 1)
			go func() { done <- sh.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("shell loop: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("shell loop still running after 5 s")
			}

			counts, err := c.TaskCounts()
			if err != nil {
				t.Fatal(err)
			}
			got := counts[cg.V2ID]
			if got.Forks < 50 || got.Exits != got.Forks+1 || got.Live() != -1 {
				t.Errorf("cgroup %d (%s): %+v, Live %d; want at least 50 forks, one exit more, Live -1",
					cg.V2ID, cg.V2Path, got, got.Live())
			}
			if n, err := c.Lost(); err != nil || n != 0 {
				t.Errorf("Lost() = %d, %v; want 0", n, err)
			}
			if err := c.Forget(cg.V2ID); err != nil {
				t.Fatal(err)
			}
			counts, err = c.TaskCounts()
			if _, still := counts[cg.V2ID]; err != nil || still {
				t.Errorf("cgroup %d still counted after Forget (%v)", cg.V2ID, err)
			}
		})
	}
}

// BenchmarkForkExit runs /bin/true (one fork, one exit) per iteration with the programs
// detached and attached in each mode. The attached runs also report the programs' own
// mean run time per event (bpf-ns/event), from the kernel's BPF statistics, which the
// wall-clock difference alone is too noisy to show.
func BenchmarkForkExit(b *testing.B) {
	kerneltest.Require(b, kerneltest.Root, kerneltest.BTF)
	b.Run("detached", func(b *testing.B) {
		for b.Loop() {
			runTrue(b, 1)
		}
	})
	for _, mode := range modes {
		b.Run(mode.String(), func(b *testing.B) {
			c := load(b, mode)
			stats, err := attach.EnableStats()
			if err != nil {
				b.Fatal(err)
			}
			defer stats.Close()
			before, err := c.Stats()
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				runTrue(b, 1)
			}
			after, err := c.Stats()
			if err != nil {
				b.Fatal(err)
			}
			var runs uint64
			var runtime time.Duration
			for name, s := range after {
				runs += s.Runs - before[name].Runs
				runtime += s.Runtime - before[name].Runtime
			}
			if runs > 0 {
				b.ReportMetric(float64(runtime.Nanoseconds())/float64(runs), "bpf-ns/event")
			}
		})
	}
}
