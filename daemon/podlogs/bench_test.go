package podlogs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchLog writes a CRI log of n lines of about 100 bytes, one in ten split in two
// partial entries, and returns its path and size.
func benchLog(b *testing.B, n int) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "0.log")
	var sb strings.Builder
	payload := strings.Repeat("x", 60)
	for i := range n {
		ts := t0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
		if i%10 == 0 {
			fmt.Fprintf(&sb, "%s stdout P %s\n%s stdout F %d\n", ts, payload, ts, i)
			continue
		}
		fmt.Fprintf(&sb, "%s stdout F %s %d\n", ts, payload, i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path, int64(sb.Len())
}

// BenchmarkCopyAll reads a 100,000-line log (about 10 MB) whole.
func BenchmarkCopyAll(b *testing.B) {
	path, size := benchLog(b, 100_000)
	r := NewReader()
	b.SetBytes(size)
	for b.Loop() {
		if err := r.Copy(context.Background(), io.Discard, path, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCopyTail100 reads the last 100 lines of the same log: kubectl logs --tail.
func BenchmarkCopyTail100(b *testing.B) {
	path, _ := benchLog(b, 100_000)
	r := NewReader()
	tail := int64(100)
	for b.Loop() {
		if err := r.Copy(context.Background(), io.Discard, path, Options{TailLines: &tail}); err != nil {
			b.Fatal(err)
		}
	}
}
