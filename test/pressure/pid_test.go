package pressure

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/daemon/pressure"
	"github.com/plinth/plinth/daemon/pressuresignals"
	"github.com/plinth/plinth/internal/kerneltest"
	"github.com/plinth/plinth/kernel/cgroup/cgrouptest"
)

// The PID threshold is set relative to the tasks running now, so the test does not
// depend on this machine's pid_max: crossed once about pidMargin more tasks run.
const (
	pidMargin = 250
	pidSpawn  = 500
)

func readUint(tb testing.TB, path string) uint64 {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func taskCount(tb testing.TB) uint64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		tb.Fatal(err)
	}
	n, err := pressuresignals.ParseLoadavgTasks(string(b))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestPIDPressureFromSpawnedTasks(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, cgrouptest.Cgroups)
	cg := cgrouptest.New(t, cgrouptest.Options{}) // its cleanup kills every spawned task
	limit := min(readUint(t, "/proc/sys/kernel/pid_max"), readUint(t, "/proc/sys/kernel/threads-max"))
	tasks := taskCount(t)
	threshold := limit - tasks - pidMargin
	p := startInProcess(t, pressuresignals.Options{NodefsDir: t.TempDir(), ImagefsDir: t.TempDir()},
		map[string]string{"pid.available": strconv.FormatUint(threshold, 10)}, nil, nil)
	p.waitEvaluated(t)
	if c := conditionOf(p, corev1.NodePIDPressure); c.Status != corev1.ConditionFalse {
		t.Fatalf("PIDPressure before spawning (tasks %d, threshold %d of %d): %s %q", tasks, threshold, limit, c.Status, c.Message)
	}

	spawn := exec.Command("/bin/sh", "-c", fmt.Sprintf("i=0; while [ $i -lt %d ]; do sleep 120 & i=$((i+1)); done; wait", pidSpawn))
	if err := cg.Start(spawn); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	at, c := p.waitCondition(t, corev1.NodePIDPressure, corev1.ConditionTrue, 15*time.Second)
	t.Logf("PIDPressure True %s after spawning started (tasks were %d, threshold pid.available<%d): %s",
		at.Sub(started).Round(time.Millisecond), tasks, threshold, c.Message)
	if c.Reason != pressure.ReasonInsufficientPID || !strings.Contains(c.Message, "pid.available") {
		t.Errorf("PIDPressure = %s %q; want the pid.available crossing named", c.Reason, c.Message)
	}
}
