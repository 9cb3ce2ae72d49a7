package cgroup

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeStatfs answers from a table of path → magic; missing paths are ENOENT-like.
func fakeStatfs(table map[string]int64) StatfsFunc {
	return func(p string) (int64, error) {
		if m, ok := table[p]; ok {
			return m, nil
		}
		return 0, &fs.PathError{Op: "statfs", Path: p, Err: fs.ErrNotExist}
	}
}

func TestDetectMode(t *testing.T) {
	const ext4 = 0xef53
	for _, tc := range []struct {
		name   string
		table  map[string]int64
		want   Mode
		errHas string
	}{
		{name: "unified", table: map[string]int64{"/sys/fs/cgroup": Cgroup2SuperMagic}, want: Unified},
		{name: "hybrid", table: map[string]int64{"/sys/fs/cgroup": TmpfsMagic, "/sys/fs/cgroup/unified": Cgroup2SuperMagic}, want: Hybrid},
		{name: "legacy without unified", table: map[string]int64{"/sys/fs/cgroup": TmpfsMagic}, want: Legacy},
		{name: "legacy with unified dir not cgroup2", table: map[string]int64{"/sys/fs/cgroup": TmpfsMagic, "/sys/fs/cgroup/unified": TmpfsMagic}, want: Legacy},
		{name: "single v1 hierarchy at root", table: map[string]int64{"/sys/fs/cgroup": CgroupSuperMagic}, want: Legacy},
		{name: "not mounted", table: map[string]int64{}, errHas: "statfs /sys/fs/cgroup"},
		{name: "wrong filesystem", table: map[string]int64{"/sys/fs/cgroup": ext4}, errHas: "magic 0xef53"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DetectMode("/sys/fs/cgroup", fakeStatfs(tc.table))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("DetectMode = %v, %v; want an error containing %q", got, err, tc.errHas)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DetectMode = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestDetectModeUnifiedStatfsError(t *testing.T) {
	// An error other than "does not exist" on root/unified must not pass for legacy.
	statfs := func(p string) (int64, error) {
		if p == "/cg" {
			return TmpfsMagic, nil
		}
		return 0, errors.New("permission denied")
	}
	if m, err := DetectMode("/cg", statfs); err == nil || !strings.Contains(err.Error(), "/cg/unified") {
		t.Fatalf("DetectMode = %v, %v; want an error naming /cg/unified", m, err)
	}
}

func TestHostDirs(t *testing.T) {
	h := Host{Mode: Hybrid, Root: filepath.Join("testdata", "hybrid")}
	for _, tc := range []struct{ ctrl, want string }{
		{"memory", "testdata/hybrid/memory/kubepods"},
		{"pids", "testdata/hybrid/pids/kubepods"},
		// Not mounted as v1 but listed by the v2 tree: it lives there.
		{"hugetlb", "testdata/hybrid/unified/kubepods"},
	} {
		got, err := h.Dir(tc.ctrl, "/kubepods")
		if err != nil || got != tc.want {
			t.Errorf("Dir(%s) = %q, %v; want %q", tc.ctrl, got, err, tc.want)
		}
	}
	if _, err := h.Dir("blkio", "/x"); err == nil || !strings.Contains(err.Error(), `"blkio"`) {
		t.Errorf("Dir(blkio) error = %v, want one naming the controller", err)
	}
	for _, bad := range []string{"kubepods", "/a/../../etc", "/a//b", "/a/"} {
		if _, err := h.Dir("memory", bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Dir(memory, %q) error = %v, want one naming the path", bad, err)
		}
	}
	for _, bad := range []string{"", "cpu,cpuacct", "../memory"} {
		if _, err := h.ControllerDir(bad); err == nil {
			t.Errorf("ControllerDir(%q) succeeded, want an error", bad)
		}
	}

	u := Host{Mode: Unified, Root: "/sys/fs/cgroup"}
	if got := u.UnifiedDir(); got != "/sys/fs/cgroup" {
		t.Errorf("unified UnifiedDir = %q", got)
	}
	if got, _ := u.Dir("memory", "/a"); got != "/sys/fs/cgroup/a" {
		t.Errorf("unified Dir(memory, /a) = %q", got)
	}
	if got := (Host{Mode: Legacy, Root: "/r"}).UnifiedDir(); got != "" {
		t.Errorf("legacy UnifiedDir = %q, want empty", got)
	}
}

func TestMemoryAndPIDsHybrid(t *testing.T) {
	h := Host{Mode: Hybrid, Root: filepath.Join("testdata", "hybrid")}
	m, err := h.Memory("/pod1")
	if err != nil {
		t.Fatal(err)
	}
	// Working set uses the hierarchical total_inactive_file, not the local inactive_file.
	want := Memory{UsageBytes: 52428800, InactiveFileBytes: 10485760, WorkingSetBytes: 52428800 - 10485760, LimitBytes: 67108864}
	if m != want {
		t.Errorf("Memory(/pod1) = %+v, want %+v", m, want)
	}
	node, err := h.NodeMemory()
	if err != nil {
		t.Fatal(err)
	}
	wantNode := Memory{UsageBytes: 8589934592, InactiveFileBytes: 1686732800, WorkingSetBytes: 8589934592 - 1686732800, LimitBytes: Unlimited}
	if node != wantNode {
		t.Errorf("NodeMemory = %+v, want %+v", node, wantNode)
	}
	if viaRoot, err := h.Memory("/"); err != nil || viaRoot != node {
		t.Errorf("Memory(/) = %+v, %v; want NodeMemory's %+v", viaRoot, err, node)
	}
	p, err := h.PIDs("/pod1")
	if err != nil || p != (PIDs{Current: 3, Max: Unlimited}) {
		t.Errorf("PIDs(/pod1) = %+v, %v; want 3 of unlimited", p, err)
	}
	if _, err := h.PIDs("/"); err == nil {
		t.Error("PIDs(/) succeeded, want an error: the root has no pids files")
	}
	if _, err := h.Memory("/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Memory(/missing) error = %v, want not-exist", err)
	}
}

func TestMemoryAndPIDsUnified(t *testing.T) {
	h := Host{Mode: Unified, Root: filepath.Join("testdata", "unified"), ProcDir: filepath.Join("testdata", "unified-proc")}
	m, err := h.Memory("/pod1")
	if err != nil {
		t.Fatal(err)
	}
	want := Memory{UsageBytes: 41943040, InactiveFileBytes: 5242880, WorkingSetBytes: 41943040 - 5242880, LimitBytes: Unlimited}
	if m != want {
		t.Errorf("Memory(/pod1) = %+v, want %+v", m, want)
	}
	node, err := h.NodeMemory()
	if err != nil {
		t.Fatal(err)
	}
	usage := uint64(16318412-1000000) * 1024 // MemTotal - MemFree
	wantNode := Memory{UsageBytes: usage, InactiveFileBytes: 4096, WorkingSetBytes: usage - 4096, LimitBytes: Unlimited}
	if node != wantNode {
		t.Errorf("NodeMemory = %+v, want %+v", node, wantNode)
	}
	p, err := h.PIDs("/pod1")
	if err != nil || p != (PIDs{Current: 2, Max: 100}) {
		t.Errorf("PIDs(/pod1) = %+v, %v; want 2 of 100", p, err)
	}
}

func TestMemoryWorkingSetNeverNegative(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "g")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"cgroup.procs":   "",
		"memory.current": "100\n",
		"memory.stat":    "inactive_file 4096\n",
		"memory.max":     "1048576\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Host{Mode: Unified, Root: root}.Memory("/g")
	if err != nil {
		t.Fatal(err)
	}
	if m.WorkingSetBytes != 0 || m.LimitBytes != 1048576 {
		t.Errorf("Memory = %+v, want working set 0 (inactive > usage) and limit 1048576", m)
	}
}

func TestReadErrorsNameFileAndValue(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "g")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := Host{Mode: Unified, Root: root}
	write("memory.current", "lots\n")
	if _, err := h.Memory("/g"); err == nil || !strings.Contains(err.Error(), "memory.current") || !strings.Contains(err.Error(), `"lots"`) {
		t.Errorf("bad memory.current: error = %v", err)
	}
	write("memory.current", "10\n")
	write("memory.stat", "active_file 1\n")
	if _, err := h.Memory("/g"); err == nil || !strings.Contains(err.Error(), `no "inactive_file" line`) {
		t.Errorf("memory.stat without inactive_file: error = %v", err)
	}
	write("memory.stat", "inactive_file 1\n")
	write("memory.max", "unbounded\n")
	if _, err := h.Memory("/g"); err == nil || !strings.Contains(err.Error(), `"unbounded"`) || !strings.Contains(err.Error(), `"max"`) {
		t.Errorf("bad memory.max: error = %v", err)
	}
}

func TestParseFlatKeyed(t *testing.T) {
	got, err := ParseFlatKeyed(strings.NewReader("a 1\n\nb 18446744073709551615\n"))
	if err != nil || !maps.Equal(got, map[string]uint64{"a": 1, "b": 18446744073709551615}) {
		t.Errorf("ParseFlatKeyed = %v, %v", got, err)
	}
	for in, errHas := range map[string]string{
		"a 1\na 2\n": `line 2: key "a" appears twice`,
		"a\n":        `line 1: "a"`,
		"a -1\n":     `line 1: key "a": "-1"`,
	} {
		if _, err := ParseFlatKeyed(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), errHas) {
			t.Errorf("ParseFlatKeyed(%q) error = %v, want %q", in, err, errHas)
		}
	}
}
