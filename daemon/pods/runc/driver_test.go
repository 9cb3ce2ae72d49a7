package runc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"a", "11111111-2222-3333-4444-555555555555-app-0", "x.y_z+1"} {
		if err := checkID(ok); err != nil {
			t.Errorf("checkID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "../x", "a/b", strings.Repeat("a", 129), "a b"} {
		if err := checkID(bad); err == nil {
			t.Errorf("checkID(%q) accepted", bad)
		}
	}
}

func TestListSkipsAndReportsBadCheckpoints(t *testing.T) {
	d := &Driver{cfg: Config{StateDir: t.TempDir()}}
	if err := os.MkdirAll(filepath.Join(d.cfg.StateDir, "good"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.writeCheckpoint(Checkpoint{ID: "good", ShimPID: 7, Labels: map[string]string{"pod.uid": "u"}}); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(filepath.Join(d.cfg.StateDir, "broken"), 0o700)
	_ = os.WriteFile(filepath.Join(d.cfg.StateDir, "broken", checkpointFile), []byte("{"), 0o600)
	_ = os.MkdirAll(filepath.Join(d.cfg.StateDir, ".hidden"), 0o700)
	list, err := d.List()
	if len(list) != 1 || list[0].ID != "good" || list[0].Labels["pod.uid"] != "u" {
		t.Errorf("List = %+v", list)
	}
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("List error = %v, want one naming the broken checkpoint", err)
	}
	if _, err := d.Checkpoint("missing"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Checkpoint(missing) = %v", err)
	}
}

func TestListReportsIncompleteCreates(t *testing.T) {
	d := &Driver{cfg: Config{StateDir: t.TempDir()}}
	_ = os.MkdirAll(filepath.Join(d.cfg.StateDir, "half-made"), 0o700)
	list, err := d.List()
	if len(list) != 0 || err == nil || !strings.Contains(err.Error(), "half-made") {
		t.Errorf("List with an incomplete create = %+v, %v", list, err)
	}
}

func TestRuncEnvDropsTheServiceProtocols(t *testing.T) {
	got := runcEnv([]string{"PATH=/usr/bin", "NOTIFY_SOCKET=/run/systemd/notify", "WATCHDOG_USEC=30000000",
		"WATCHDOG_PID=1", "LISTEN_FDS=1", "LISTEN_PID=1", "LISTEN_FDNAMES=x", "NOTIFY_SOCKETX=kept", "HOME=/root"})
	want := []string{"PATH=/usr/bin", "NOTIFY_SOCKETX=kept", "HOME=/root"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("runcEnv = %q, want %q", got, want)
	}
}

// A pod worker lists its own pod's containers: another pod's create in flight (its
// directory made, its checkpoint not yet written) is neither read nor reported.
func TestListWithIDPrefixReadsOnlyMatchingContainers(t *testing.T) {
	d := &Driver{cfg: Config{StateDir: t.TempDir()}}
	for _, id := range []string{"uid-a-app-0", "uid-a-app-1", "uid-b-app-0"} {
		if err := os.MkdirAll(filepath.Join(d.cfg.StateDir, id), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := d.writeCheckpoint(Checkpoint{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.MkdirAll(filepath.Join(d.cfg.StateDir, "uid-c-app-0"), 0o700) // half made
	list, err := d.ListWithIDPrefix("uid-a-")
	var ids []string
	for _, cp := range list {
		ids = append(ids, cp.ID)
	}
	if err != nil || strings.Join(ids, ",") != "uid-a-app-0,uid-a-app-1" {
		t.Errorf("ListWithIDPrefix(uid-a-) = %v, %v; want uid-a-app-0 and uid-a-app-1 and no error", ids, err)
	}
	if all, err := d.List(); len(all) != 3 || err == nil || !strings.Contains(err.Error(), "uid-c-app-0") {
		t.Errorf("List = %d checkpoints, %v; want 3 and an error naming uid-c-app-0", len(all), err)
	}
}
