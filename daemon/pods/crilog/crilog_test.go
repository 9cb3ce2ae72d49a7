package crilog

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestCopyWritesCRIRecords(t *testing.T) {
	var out bytes.Buffer
	tick := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	w := NewWriter(&out, func() time.Time { tick = tick.Add(time.Millisecond); return tick })
	long := strings.Repeat("x", MaxLineBytes+10)
	if err := w.Copy(Stdout, strings.NewReader("hello\n\nworld\r\n"+long+"\ntail")); err != nil {
		t.Fatal(err)
	}
	if err := w.Copy(Stderr, strings.NewReader("oops\n")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []Record{
		{Stream: Stdout, Content: "hello"},
		{Stream: Stdout, Content: ""},
		{Stream: Stdout, Content: "world\r"},
		{Stream: Stdout, Partial: true, Content: long[:MaxLineBytes]},
		{Stream: Stdout, Content: long[MaxLineBytes:]},
		{Stream: Stdout, Content: "tail"},
		{Stream: Stderr, Content: "oops"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(lines), len(want), out.String())
	}
	var prev time.Time
	for i, l := range lines {
		r, err := ParseRecord(l)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !r.Time.After(prev) {
			t.Errorf("record %d time %v not after %v", i, r.Time, prev)
		}
		prev = r.Time
		r.Time = time.Time{}
		if r != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, r, want[i])
		}
	}
	if !strings.HasPrefix(lines[0], "2026-11-26T10:00:00.001Z stdout F hello") {
		t.Errorf("first line %q is not in the CRI format", lines[0])
	}
}

func TestParseRecordErrors(t *testing.T) {
	for _, l := range []string{"", "2026-11-26T10:00:00Z stdout F", "nottime stdout F x", "2026-11-26T10:00:00Z stdin F x", "2026-11-26T10:00:00Z stdout X x"} {
		if _, err := ParseRecord(l); err == nil {
			t.Errorf("ParseRecord(%q) succeeded", l)
		}
	}
}
