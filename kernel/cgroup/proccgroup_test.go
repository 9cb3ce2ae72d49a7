package cgroup

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProcessCgroupsFixtures(t *testing.T) {
	h := Host{ProcDir: filepath.Join("testdata", "proc")}

	// This machine's own /proc/self/cgroup, captured: hybrid with nine v1 hierarchies.
	p, err := h.ProcessCgroups(100)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := p.For("memory"); got != "/process_api/e402272c82c001987069525404068dd7" {
		t.Errorf("pid 100 memory = %q", got)
	}
	if got, ok := p.For(""); !ok || got != "/" {
		t.Errorf("pid 100 v2 = %q, %v; want /", got, ok)
	}
	if got := p.V1["name=systemd"]; got != "/" {
		t.Errorf("pid 100 name=systemd = %q", got)
	}
	if len(p.V1) != 9 {
		t.Errorf("pid 100 has %d v1 entries, want 9: %v", len(p.V1), p.V1)
	}

	// Co-mounted controllers each get the path.
	p, err = h.ProcessCgroups(200)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "/kubepods/burstable/pod1", "cpuacct": "/kubepods/burstable/pod1", "memory": "/kubepods/burstable/pod1", "name=systemd": "/kubepods/burstable/pod1"}
	if !maps.Equal(p.V1, want) {
		t.Errorf("pid 200 V1 = %v, want %v", p.V1, want)
	}
	// A controller without a v1 hierarchy is found in the v2 tree.
	if got, ok := p.For("pids"); !ok || got != "/kubepods/burstable/pod1" {
		t.Errorf("pid 200 pids = %q, %v", got, ok)
	}

	// Pure v2.
	p, err = h.ProcessCgroups(300)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := p.For("memory"); got != "/system.slice/plinthd.service" || len(p.V1) != 0 {
		t.Errorf("pid 300 = %+v", p)
	}

	if _, err := h.ProcessCgroups(0); err == nil {
		t.Error("ProcessCgroups(0) succeeded")
	}
	if _, err := h.ProcessCgroups(999); !os.IsNotExist(err) {
		t.Errorf("ProcessCgroups(999) error = %v, want not-exist", err)
	}
}

func TestParseProcCgroupMalformed(t *testing.T) {
	for in, errHas := range map[string]string{
		"":                            "no cgroup lines",
		"4:memory\n":                  `line 1: "4:memory"`,
		"x:memory:/a\n":               `hierarchy ID "x"`,
		"4:memory:relative\n":         `"relative" does not start with /`,
		"0:memory:/a\n":               `hierarchy 0 (cgroup v2) lists controllers "memory"`,
		"0::/a\n0::/b\n":              "line 2: second cgroup v2",
		"4::/a\n":                     "v1 hierarchy 4 lists no controllers",
		"4:memory,:/a\n":              "empty controller name",
		"4:memory:/a\n5:memory:/b\n":  `line 2: controller "memory" listed twice`,
		"1:cpu:/\n2:cpu,cpuacct:/x\n": `controller "cpu" listed twice`,
	} {
		if _, err := ParseProcCgroup(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), errHas) {
			t.Errorf("ParseProcCgroup(%q) error = %v, want %q", in, err, errHas)
		}
	}
	// A path with colons is kept whole: only the first two colons separate fields.
	p, err := ParseProcCgroup(strings.NewReader("0::/a:b\n"))
	if err != nil || p.Unified != "/a:b" {
		t.Errorf("ParseProcCgroup(0::/a:b) = %+v, %v", p, err)
	}
}

func FuzzParseProcCgroup(f *testing.F) {
	for _, pid := range []string{"100", "200", "300"} {
		b, err := os.ReadFile(filepath.Join("testdata", "proc", pid, "cgroup"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("0::/\n")
	f.Add("1:cpu,cpuacct:/x\n0::/x")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParseProcCgroup(strings.NewReader(in))
		if err != nil {
			return
		}
		if len(p.V1) == 0 && !p.HasUnified {
			t.Fatalf("parsed %q to nothing without an error", in)
		}
		for ctrl, path := range p.V1 {
			if ctrl == "" || strings.Contains(ctrl, ",") || !strings.HasPrefix(path, "/") {
				t.Fatalf("bad entry %q → %q from %q", ctrl, path, in)
			}
		}
		if p.HasUnified && !strings.HasPrefix(p.Unified, "/") {
			t.Fatalf("bad v2 path %q from %q", p.Unified, in)
		}
	})
}
