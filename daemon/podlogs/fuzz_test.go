package podlogs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth/plinth/daemon/pods/crilog"
)

// FuzzParseRecord: any line parses with crilog's parser (the one Copy uses) or fails
// with an error; a parsed record formats back to a line that parses the same, and a
// full record written by crilog's writer reads back as itself.
func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{
		"2026-11-26T10:00:00.123456789Z stdout F hello",
		"2026-11-26T10:00:00Z stderr P part",
		"2026-11-26T10:00:00+01:00 stdout F ",
		"2026-11-26T10:00:00Z stdout F",
		"", " ", "x y z w", "2026-11-26T10:00:00Z stdout Q x", "2026-11-26T10:00:00Z stdout F:x y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		rec, err := crilog.ParseRecord(line)
		if err != nil {
			return
		}
		tag := "F"
		if rec.Partial {
			tag = "P"
		}
		again := rec.Time.Format(time.RFC3339Nano) + " " + rec.Stream + " " + tag + " " + rec.Content
		rec2, err := crilog.ParseRecord(again)
		if err != nil {
			t.Fatalf("reformatted %q does not parse: %v", again, err)
		}
		if !rec2.Time.Equal(rec.Time) || rec2.Stream != rec.Stream || rec2.Partial != rec.Partial || rec2.Content != rec.Content {
			t.Fatalf("round trip of %q changed %+v to %+v", line, rec, rec2)
		}
		if rec.Partial || strings.Contains(rec.Content, "\n") || len(rec.Content) >= crilog.MaxLineBytes {
			return
		}
		var buf bytes.Buffer
		if err := crilog.NewWriter(&buf, func() time.Time { return rec.Time }).Copy(rec.Stream, strings.NewReader(rec.Content+"\n")); err != nil {
			t.Fatal(err)
		}
		written, err := crilog.ParseRecord(strings.TrimSuffix(buf.String(), "\n"))
		if err != nil || !written.Time.Equal(rec.Time) || written.Content != rec.Content || written.Partial {
			t.Fatalf("crilog wrote %q for %+v, which reads back as %+v, %v", buf.String(), rec, written, err)
		}
	})
}

// FuzzCopy: any file content copies without error or panic, a byte limit is never
// exceeded, and a tail read backwards gives the last lines a forward reading finds.
func FuzzCopy(f *testing.F) {
	f.Add([]byte("2026-11-26T10:00:00Z stdout F a\n2026-11-26T10:00:01Z stderr P b\n2026-11-26T10:00:02Z stderr F c\n"), int64(2), int64(3))
	f.Add([]byte("junk\n\n\n2026-11-26T10:00:00Z stdout P x"), int64(-1), int64(0))
	f.Add([]byte("2026-11-26T10:00:00Z stdout P a\n2026-11-26T10:00:00Z stderr F x\n2026-11-26T10:00:00Z stdout F b\n2026-11-26T10:00:00Z stderr F y\n"), int64(1), int64(0))
	f.Add([]byte("2026-11-26T10:00:00Z stdout P a\n2026-11-26T10:00:00Z stderr P x\n2026-11-26T10:00:00Z stdout F b\n"+
		"2026-11-26T10:00:00Z stderr F y\n2026-11-26T10:00:00Z stdout F c\n2026-11-26T10:00:00Z stdout P d"), int64(2), int64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, tail, limit int64) {
		path := filepath.Join(dir, "0.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		o := Options{LimitBytes: limit}
		if tail >= 0 {
			o.TailLines = &tail
		}
		var buf bytes.Buffer
		if err := NewReader().Copy(context.Background(), &buf, path, o); err != nil {
			t.Fatalf("Copy: %v", err)
		}
		if limit > 0 && int64(buf.Len()) > limit {
			t.Fatalf("wrote %d bytes over the limit %d", buf.Len(), limit)
		}
		if tail >= 0 && limit <= 0 {
			if want, ok := forwardTail(data, tail); ok && buf.String() != want {
				t.Fatalf("tail %d of %q: got %q, want %q", tail, data, buf.String(), want)
			}
		}
	})
}

// forwardTail is the reference: lines assembled reading forward, the last n completed
// ones. It is not a reference (ok false) when the writer left a line unfinished: the
// backward scan shows such a line only when it reaches it.
func forwardTail(data []byte, n int64) (string, bool) {
	asm := newAssembler()
	var done []string
	lines := bytes.Split(data, []byte{'\n'})
	for i, l := range lines {
		if i == len(lines)-1 {
			break // no newline: not a line yet
		}
		e, err := crilog.ParseRecord(string(l))
		if err != nil || len(l) > maxLineBytes {
			continue
		}
		if p := asm.add(e, 0); p != nil {
			done = append(done, string(p.text)+"\n")
		}
	}
	if int64(len(done)) > n {
		done = done[int64(len(done))-n:]
	}
	return strings.Join(done, ""), len(asm.pending) == 0
}
