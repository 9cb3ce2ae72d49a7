package attach

import (
	"log/slog"
	"os/exec"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/internal/kerneltest"
)

func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

// twoVariants has a tp_btf and a plain tracepoint program that do nothing, the first
// attached to btfTarget.
func twoVariants(btfTarget string) *ebpf.CollectionSpec {
	nop := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
		"fork_btf": {Name: "fork_btf", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp,
			AttachTo: btfTarget, SectionName: "tp_btf/" + btfTarget, Instructions: nop, License: "GPL"},
		"fork_tp": {Name: "fork_tp", Type: ebpf.TracePoint,
			SectionName: "tracepoint/sched/sched_process_fork", Instructions: nop, License: "GPL"},
	}}
}

func TestLoadPicksVariant(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF)
	for _, c := range []struct {
		mode     Mode
		want     Mode
		wantProg string
	}{
		{Auto, BTF, "fork_btf"},
		{BTF, BTF, "fork_btf"},
		{Tracepoints, Tracepoints, "fork_tp"},
	} {
		set, err := Load(twoVariants("sched_process_fork"), c.mode, testLogger(t))
		if err != nil {
			t.Fatalf("%v: %v", c.mode, err)
		}
		if set.Mode != c.want || len(set.Collection.Programs) != 1 || set.Collection.Programs[c.wantProg] == nil {
			t.Errorf("Load(%v): mode %v with programs %v; want %v with only %s", c.mode, set.Mode, set.Collection.Programs, c.want, c.wantProg)
		}
		if err := set.Close(); err != nil {
			t.Error(err)
		}
		if err := set.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

// When the kernel refuses the tp_btf program (here: no such tracepoint), Auto falls
// back to plain tracepoints and BTF fails.
func TestAutoFallsBackToTracepoints(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF)
	spec := twoVariants("plinth_no_such_tracepoint")
	set, err := Load(spec, Auto, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Mode != Tracepoints {
		t.Errorf("Auto loaded %v, want the tracepoint fallback", set.Mode)
	}
	if _, err := Load(spec, BTF, testLogger(t)); err == nil {
		t.Error("BTF mode loaded a program for a tracepoint that does not exist")
	}
}

func TestStatsCountRuns(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF)
	set, err := Load(twoVariants("sched_process_fork"), BTF, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	stats, err := EnableStats()
	if err != nil {
		t.Fatal(err)
	}
	defer stats.Close()
	for range 5 {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := set.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s := got["fork_btf"]; s.Runs < 5 || s.Runtime <= 0 {
		t.Errorf("fork_btf stats after 5 forks: %+v", s)
	}
}

func TestEnsureMounts(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root)
	for range 2 { // the second call finds both mounted
		if err := EnsureMounts(); err != nil {
			t.Fatal(err)
		}
	}
	if !isFS(bpffsPath, unix.BPF_FS_MAGIC) {
		t.Errorf("%s is not bpffs", bpffsPath)
	}
	if !isFS(tracefsPath, unix.TRACEFS_MAGIC) && !isFS(debugTracefsPath, unix.TRACEFS_MAGIC) {
		t.Errorf("no tracefs at %s or %s", tracefsPath, debugTracefsPath)
	}
}
