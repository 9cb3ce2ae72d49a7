package oomwatch

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

	"github.com/plinth/plinth/bpf/attach"
	"github.com/plinth/plinth/bpf/internal/memcgtest"
	"github.com/plinth/plinth/internal/kerneltest"
)

// tpBTFSeesVictim reports whether the tp_btf program can load here: oom:mark_victim
// must pass the victim's task_struct (recent kernels; older ones, 6.1 among them, pass
// its pid alone), and mm_struct.rss_stat must be the per-CPU counter array of 6.2 and
// later that the program reads. Debian's 6.1.192 has the first (backported) but not the
// second, so the loader must refuse tp_btf there too and fall back.
func tpBTFSeesVictim() error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return err
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_mark_victim", &td); err != nil {
		return err
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return fmt.Errorf("btf_trace_mark_victim is %v", td.Type)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(proto.Params) < 2 {
		return fmt.Errorf("btf_trace_mark_victim is %v", ptr.Target)
	}
	if p, ok := proto.Params[1].Type.(*btf.Pointer); !ok || p.Target.TypeName() != "task_struct" {
		return fmt.Errorf("mark_victim's argument is %v, not a task_struct pointer", proto.Params[1].Type)
	}
	var mm *btf.Struct
	if err := spec.TypeByName("mm_struct", &mm); err != nil {
		return err
	}
	rss := findMember(mm.Members, "rss_stat")
	if rss == nil {
		return fmt.Errorf("mm_struct has no rss_stat")
	}
	if _, ok := rss.Type.(*btf.Array); !ok {
		return fmt.Errorf("mm_struct.rss_stat is %v, not the per-CPU counter array (Linux 6.2+) the program reads", rss.Type)
	}
	return nil
}

// findMember looks for a named member, also inside anonymous structs and unions
// (mm_struct keeps its fields in one, for layout randomisation).
func findMember(members []btf.Member, name string) *btf.Member {
	for i, m := range members {
		if m.Name == name {
			return &members[i]
		}
		if m.Name != "" {
			continue
		}
		switch inner := m.Type.(type) {
		case *btf.Struct:
			if found := findMember(inner.Members, name); found != nil {
				return found
			}
		case *btf.Union:
			if found := findMember(inner.Members, name); found != nil {
				return found
			}
		}
	}
	return nil
}

func TestOOMKillReported(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF, memcgtest.MemoryCgroup)

	t.Run("tp_btf", func(t *testing.T) {
		if err := tpBTFSeesVictim(); err != nil {
			// Nothing for tp_btf to read: the kernel must refuse it and Auto fall back.
			t.Logf("tp_btf cannot see the victim here (%v)", err)
			if w, err := Load(Options{Mode: attach.BTF}); err == nil {
				w.Close()
				t.Fatal("tp_btf mark_victim program loaded on a kernel whose victim it cannot read")
			}
			w, err := Load(Options{Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if w.Mode() != attach.Tracepoints {
				t.Fatalf("Auto loaded %v, want tracepoint", w.Mode())
			}
			return
		}
		cg, kill := oomKillIn(t, attach.BTF)
		if kill.Comm != "sh" {
			t.Errorf("Comm = %q, want sh", kill.Comm)
		}
		if kill.MemcgID != cg.MemcgID {
			t.Errorf("MemcgID = %d, want %d (inode of %s)", kill.MemcgID, cg.MemcgID, cg.MemoryPath)
		}
		if cg.V2ID != 0 && kill.CgroupID != cg.V2ID {
			t.Errorf("CgroupID = %d, want %d (inode of %s)", kill.CgroupID, cg.V2ID, cg.V2Path)
		}
		d := kill.Details
		if d == nil {
			t.Fatal("tp_btf event has no details")
		}
		if d.TGID != kill.PID || d.UID != 0 {
			t.Errorf("TGID %d UID %d, want %d and 0 (root's single-threaded shell)", d.TGID, d.UID, kill.PID)
		}
		// The shell was killed for growing past 32 MiB of anonymous memory.
		if d.AnonRSS < 4<<20 || d.AnonRSS > 64<<20 || d.TotalVM < d.AnonRSS || d.PageTables == 0 {
			t.Errorf("memory figures %+v: want anonymous RSS between 4 and 64 MiB within TotalVM, and page tables", d)
		}
	})

	t.Run("tracepoint", func(t *testing.T) {
		cg, kill := oomKillIn(t, attach.Tracepoints)
		if kill.Details != nil {
			t.Errorf("plain tracepoint event has details %+v", kill.Details)
		}
		// The hog itself allocated, so the program knows its comm and cgroup.
		if kill.Comm != "sh" {
			t.Errorf("Comm = %q, want sh", kill.Comm)
		}
		if cg.V2ID != 0 && kill.CgroupID != cg.V2ID {
			t.Errorf("CgroupID = %d, want %d (inode of %s)", kill.CgroupID, cg.V2ID, cg.V2Path)
		}
	})
}

// oomKillIn runs a memory hog in a 32 MiB cgroup with the programs loaded in mode and
// returns the OOM kill reported for it, after checking what every mode reports.
func oomKillIn(t *testing.T, mode attach.Mode) (*memcgtest.Cgroup, OOMKill) {
	w, err := Load(Options{Mode: mode, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if w.Mode() != mode {
		t.Fatalf("Mode() = %v, want %v", w.Mode(), mode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events := w.OOMEvents(ctx)

	cg := memcgtest.New(t, 32<<20)
	hog := cg.StartHog(t)
	pid := hog.Process.Pid
	if killed, err := memcgtest.Killed(hog, 5*time.Second); !killed {
		t.Fatalf("hog pid %d was not OOM-killed: %v", pid, err)
	}

	timeout := time.After(5 * time.Second)
	for {
		select {
		case k, ok := <-events:
			if !ok {
				t.Fatalf("event channel closed before the kill of pid %d arrived", pid)
			}
			if k.PID != pid {
				t.Logf("OOM kill of another process: %+v", k)
				continue
			}
			t.Logf("%v: %+v details %+v", mode, k, k.Details)
			if k.Mode != mode || k.Seen.IsZero() {
				t.Errorf("Mode %v Seen %v, want %v and a time", k.Mode, k.Seen, mode)
			}
			if cg.V2ID != 0 && k.TriggerCgroupID != cg.V2ID {
				t.Errorf("TriggerCgroupID = %d, want the hog's own cgroup %d", k.TriggerCgroupID, cg.V2ID)
			}
			if n, err := w.Lost(); err != nil || n != 0 {
				t.Errorf("Lost() = %d, %v; want 0", n, err)
			}
			return cg, k
		case <-timeout:
			t.Fatalf("no OOM event for pid %d within 5 s of its death", pid)
		}
	}
}

// On kernels whose mark_victim passes only the pid, the verifier refuses the tp_btf
// program's dereferences and Auto must fall back. Attaching it to a tracepoint whose
// first argument is an int stands in for such a kernel.
func TestScalarArgumentFallsBack(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF)
	spec, err := loadOom()
	if err != nil {
		t.Fatal(err)
	}
	spec.Programs[oomProgOomMarkVictimBtf].AttachTo = "mm_vmscan_direct_reclaim_begin" // (int order, gfp_t)
	set, err := attach.Load(spec, attach.Auto, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Mode != attach.Tracepoints {
		t.Errorf("loaded %v; want the tracepoint fallback", set.Mode)
	}
}

func TestOOMEventsStopsWithContext(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root)
	w, err := Load(Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Mode() == attach.Auto {
		t.Fatal("Mode() is still auto after loading")
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := w.OOMEvents(ctx)
	if again, ok := <-w.OOMEvents(context.Background()); ok {
		t.Fatalf("second consumer got an event: %+v", again)
	}
	cancel()
	select {
	case _, ok := <-events:
		if ok {
			t.Fatal("got an event instead of a closed channel")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("channel still open 2 s after its context ended")
	}
}

func TestDecodeEvent(t *testing.T) {
	in := oomOomEvent{
		CgroupId: 11, MemcgId: 12, TriggerCgroupId: 13,
		TotalVmPages: 100, AnonRssPages: 10, FileRssPages: 2, ShmemRssPages: 1, PgtablesBytes: 8192,
		Pid: 42, Tgid: 41, Uid: 1000, OomScoreAdj: -500,
		Flags: flagDetails | flagVictimCgroup,
	}
	copy(in.Comm[:], []int8{'h', 'o', 'g'})
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.NativeEndian, &in); err != nil {
		t.Fatal(err)
	}
	got, err := decodeEvent(buf.Bytes(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	want := OOMKill{PID: 42, Comm: "hog", CgroupID: 11, MemcgID: 12, TriggerCgroupID: 13,
		Details: &OOMDetails{TGID: 41, UID: 1000, OOMScoreAdj: -500,
			TotalVM: 100 * 4096, AnonRSS: 10 * 4096, FileRSS: 2 * 4096, ShmemRSS: 4096, PageTables: 8192}}
	if got.PID != want.PID || got.Comm != want.Comm || got.CgroupID != want.CgroupID ||
		got.MemcgID != want.MemcgID || got.TriggerCgroupID != want.TriggerCgroupID ||
		got.Details == nil || *got.Details != *want.Details {
		t.Errorf("decoded %+v %+v\nwant %+v %+v", got, got.Details, want, want.Details)
	}

	// Without the flags the victim's cgroups and details are unknown, whatever the bytes say.
	in.Flags = 0
	buf.Reset()
	binary.Write(&buf, binary.NativeEndian, &in)
	got, err = decodeEvent(buf.Bytes(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if got.CgroupID != 0 || got.MemcgID != 0 || got.Details != nil || got.TriggerCgroupID != 13 {
		t.Errorf("flags 0 decoded to %+v", got)
	}

	if _, err := decodeEvent(buf.Bytes()[:10], 4096); err == nil {
		t.Error("a 10-byte record decoded without error")
	}
}

func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }
