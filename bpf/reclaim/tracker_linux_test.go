package reclaim

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/plinth/plinth/bpf/attach"
	"github.com/plinth/plinth/bpf/internal/memcgtest"
	"github.com/plinth/plinth/internal/kerneltest"
)

func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

// A hog outgrowing its memory cgroup stalls in limit reclaim before the OOM kill: the
// stall time lands on its cgroup, and with a 1 ns threshold each stall is a burst.
func TestMemcgReclaimStall(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF, memcgtest.MemoryCgroup, memcgtest.V2Tree)
	for _, mode := range []attach.Mode{attach.BTF, attach.Tracepoints} {
		t.Run(mode.String(), func(t *testing.T) {
			tr, err := Load(Options{Mode: mode, BurstThreshold: time.Nanosecond, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if tr.Mode() != mode {
				t.Fatalf("Mode() = %v, want %v", tr.Mode(), mode)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			bursts := tr.StallBursts(ctx)

			cg := memcgtest.New(t, 32<<20)
			hog := cg.StartHog(t)
			if killed, err := memcgtest.Killed(hog, 5*time.Second); !killed {
				t.Fatalf("hog was not OOM-killed: %v", err)
			}

			totals, err := tr.ReclaimTotals()
			if err != nil {
				t.Fatal(err)
			}
			st, ok := totals[cg.V2ID]
			if !ok || st.MemcgCount == 0 || st.MemcgStall <= 0 || st.Stall() < st.MemcgStall {
				t.Fatalf("cgroup %d (%s): stats %+v (present %v); want memcg reclaim stalls", cg.V2ID, cg.V2Path, st, ok)
			}
			t.Logf("%v: cgroup %d: %+v", mode, cg.V2ID, st)

			pid := hog.Process.Pid
			for {
				select {
				case b, ok := <-bursts:
					if !ok {
						t.Fatal("burst channel closed")
					}
					if b.CgroupID != cg.V2ID {
						continue
					}
					if b.PID != pid || b.TGID != pid || b.Comm != "sh" || b.Kind != Memcg ||
						b.Duration <= 0 || b.Duration > st.MemcgStall || b.Mode != mode {
						t.Errorf("burst %+v: want pid %d, comm sh, kind memcg, a duration within the total %v", b, pid, st.MemcgStall)
					}
					if l, err := tr.Lost(); err != nil || l != (Lost{}) {
						t.Errorf("Lost() = %+v, %v; want nothing lost", l, err)
					}
					if err := tr.Forget(cg.V2ID); err != nil {
						t.Error(err)
					}
					totals, err := tr.ReclaimTotals()
					if _, still := totals[cg.V2ID]; err != nil || still {
						t.Errorf("after Forget: cgroup still in totals (%v)", err)
					}
					return
				case <-ctx.Done():
					t.Fatal("no stall burst for the hog's cgroup")
				}
			}
		})
	}
}

// Stalls shorter than the threshold count in the totals but make no burst.
func TestBurstThreshold(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, memcgtest.MemoryCgroup, memcgtest.V2Tree)
	tr, err := Load(Options{BurstThreshold: time.Hour, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bursts := tr.StallBursts(ctx)

	cg := memcgtest.New(t, 32<<20)
	if killed, err := memcgtest.Killed(cg.StartHog(t), 5*time.Second); !killed {
		t.Fatalf("hog was not OOM-killed: %v", err)
	}
	totals, err := tr.ReclaimTotals()
	if err != nil || totals[cg.V2ID].MemcgCount == 0 {
		t.Fatalf("no memcg reclaim counted for cgroup %d: %v %v", cg.V2ID, totals[cg.V2ID], err)
	}
	// Every stall of the hog ended before it died; a burst would already be in the ring.
	grace := time.After(300 * time.Millisecond)
	for {
		select {
		case b := <-bursts:
			if b.CgroupID == cg.V2ID {
				t.Fatalf("burst below a 1 h threshold: %+v", b)
			}
		case <-grace:
			return
		}
	}
}
