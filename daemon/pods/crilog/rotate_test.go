package crilog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRotatingFileKeepsNewestFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	tick := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { tick = tick.Add(time.Second); return tick }
	rf, err := OpenRotating(path, 100, 3, now)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	w := NewWriter(rf, now)
	for i := range 20 {
		if err := w.Copy(Stdout, strings.NewReader("line "+strings.Repeat("x", i%3)+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "0.log*"))
	if len(files) != 3 {
		t.Fatalf("files %q, want the live one and two rotated", files)
	}
	var total int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 100 {
			t.Errorf("%s holds %d bytes, over the 100 allowed", f, len(b))
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if _, err := ParseRecord(l); err != nil {
				t.Errorf("%s: a record was split by rotation: %v", f, err)
			}
			total++
		}
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if last, err := ParseRecord(lines[len(lines)-1]); err != nil || last.Content != "line x" { // i = 19
		t.Errorf("live file's last record = %+v, %v; want the last line written", last, err)
	}
	if total >= 20 {
		t.Errorf("%d records kept of 20: nothing was pruned", total)
	}
	// Reopening appends to the live file and keeps rotating from its size.
	rf.Close()
	rf2, err := OpenRotating(path, 100, 3, now)
	if err != nil {
		t.Fatal(err)
	}
	defer rf2.Close()
	if rf2.size != int64(len(b)) {
		t.Errorf("reopened size %d, want %d", rf2.size, len(b))
	}
}
