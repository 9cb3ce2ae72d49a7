//go:build linux

package psi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
	"github.com/plinth/plinth/kernel/psi"
)

func TestMain(m *testing.M) {
	cgrouptest.HelperMain()
	os.Exit(m.Run())
}

// testWindow is the shortest window this process may use: 500 ms with
// CAP_SYS_RESOURCE, else 2 s (sandboxes drop the capability even for root).
func testWindow(t *testing.T) time.Duration {
	if psi.PrivilegedTriggers() {
		return 500 * time.Millisecond
	}
	t.Logf("no CAP_SYS_RESOURCE: using %v trigger windows", psi.UnprivilegedWindowStep)
	return psi.UnprivilegedWindowStep
}

func TestShortWindowNeedsCapability(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.PSI)
	tr, err := psi.NewTrigger(psi.SystemPath(psi.CPU), psi.Some, 100*time.Millisecond, time.Second)
	if psi.PrivilegedTriggers() {
		if err != nil {
			t.Fatalf("with CAP_SYS_RESOURCE a 1s window must arm: %v", err)
		}
		tr.Close()
		return
	}
	if err == nil {
		tr.Close()
		t.Fatal("without CAP_SYS_RESOURCE a 1s window armed; the kernel should refuse it")
	}
	if !strings.Contains(err.Error(), "CAP_SYS_RESOURCE") || !strings.Contains(err.Error(), "window 1s") {
		t.Errorf("error %q should name the window and the capability", err)
	}
}

func TestReadSystemPressure(t *testing.T) {
	kerneltest.Require(t, kerneltest.PSI)
	first := map[psi.Resource]psi.Pressure{}
	for _, res := range psi.Resources() {
		p, err := psi.ReadSystem(res)
		if err != nil {
			t.Fatal(err)
		}
		first[res] = p
		// memory and io have had a "full" line since PSI began (4.20).
		if res != psi.CPU && !p.HasFull {
			t.Errorf("%s: no full line", psi.SystemPath(res))
		}
	}
	// Totals only grow.
	for _, res := range psi.Resources() {
		p, err := psi.ReadSystem(res)
		if err != nil {
			t.Fatal(err)
		}
		if p.Some.Total < first[res].Some.Total || p.Full.Total < first[res].Full.Total {
			t.Errorf("%v totals went backwards: %+v then %+v", res, first[res], p)
		}
	}
}

func TestTriggerOnSystemFile(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.PSI)
	w := testWindow(t)
	tr, err := psi.NewTrigger(psi.SystemPath(psi.Memory), psi.Full, 100*time.Millisecond, w)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("full 100000 %d", w.Microseconds()); tr.Spec() != want || tr.Path() != "/proc/pressure/memory" {
		t.Errorf("trigger = %q on %q", tr.Spec(), tr.Path())
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(t.Context()); !errors.Is(err, psi.ErrClosed) {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestNewTriggerMissingFile(t *testing.T) {
	_, err := psi.NewTrigger("/sys/fs/cgroup/no-such-cgroup/cpu.pressure", psi.Some, 50*time.Millisecond, 2*time.Second)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("NewTrigger error = %v, want not-exist", err)
	}
}

// TestTriggerFiresOnCPUPressure throttles three busy loops to half of one CPU, so they
// are runnable but not running most of the time (they want three CPUs): "some" CPU
// stall far above the 50 ms per window threshold. Half rather than less, because each
// helper starts inside the throttled cgroup: on a slow (emulated) CPU, at 10% the third
// could not finish starting within StartHelper's 10 s. Without CAP_SYS_RESOURCE the
// window is 2 s and the kernel checks the trigger only every 2 s, hence the generous
// bounds.
func TestTriggerFiresOnCPUPressure(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.PSI, cgrouptest.Cgroups)
	cg := cgrouptest.New(t, cgrouptest.Options{CPUQuota: 50 * time.Millisecond, CPUPeriod: 100 * time.Millisecond})
	tr, err := psi.NewTrigger(cg.PressurePath(psi.CPU), psi.Some, 50*time.Millisecond, testWindow(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	before, err := psi.ReadFile(cg.PressurePath(psi.CPU))
	if err != nil {
		t.Fatal(err)
	}

	for range 3 {
		cg.StartHelper(cgrouptest.ModeSpin)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := tr.Wait(ctx); err != nil {
		t.Fatalf("trigger did not fire within 5s of pressure: %v", err)
	}
	t.Logf("fired %v after the spinners started", time.Since(start))
	after, err := psi.ReadFile(cg.PressurePath(psi.CPU))
	if err != nil {
		t.Fatal(err)
	}
	if stalled := after.Some.Total - before.Some.Total; stalled < 50*time.Millisecond {
		t.Errorf("cgroup cpu some total grew %v, want at least the 50ms threshold", stalled)
	}

	// With the pressure still on, Events delivers further firings, then closes when
	// its context ends.
	evCtx, evCancel := context.WithCancel(t.Context())
	events := tr.Events(evCtx)
	select {
	case ts, ok := <-events:
		if !ok {
			t.Fatalf("events closed early: %v", tr.Err())
		}
		if ts.Before(start) {
			t.Errorf("event time %v before the spinners started at %v", ts, start)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s under continued pressure")
	}
	evCancel()
	deadline := time.After(2 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-events:
		case <-deadline:
			t.Fatal("events channel still open 2s after its context ended")
		}
	}
	if err := tr.Err(); err != nil {
		t.Errorf("Err after cancel = %v, want nil", err)
	}
}

func TestWaitReturnsOnCancelWithoutPressure(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.PSI, cgrouptest.Cgroups)
	cg := cgrouptest.New(t, cgrouptest.Options{}) // empty: it cannot stall
	tr, err := psi.NewTrigger(cg.PressurePath(psi.CPU), psi.Some, 50*time.Millisecond, testWindow(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	err = tr.Wait(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled (nothing in the cgroup can stall)", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Wait took %v to notice the cancel", took)
	}
	// A wake-up left from that cancel must not end a later Wait early.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	if err := tr.Wait(ctx2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second Wait = %v, want its own deadline", err)
	}
}

func TestCloseWakesWait(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.PSI, cgrouptest.Cgroups)
	cg := cgrouptest.New(t, cgrouptest.Options{})
	tr, err := psi.NewTrigger(cg.PressurePath(psi.Memory), psi.Full, 100*time.Millisecond, testWindow(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tr.Wait(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, psi.ErrClosed) {
			t.Errorf("Wait = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Wait still blocked 2s after Close")
	}
}

func TestWaitReportsRemovedCgroup(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.PSI, cgrouptest.Cgroups)
	cg := cgrouptest.New(t, cgrouptest.Options{})
	tr, err := psi.NewTrigger(cg.PressurePath(psi.IO), psi.Some, 50*time.Millisecond, testWindow(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	done := make(chan error, 1)
	go func() { done <- tr.Wait(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	if err := unix.Rmdir(cg.UnifiedDir()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, psi.ErrGone) {
			t.Errorf("Wait = %v, want ErrGone", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Wait still blocked 2s after its cgroup was removed")
	}
}
