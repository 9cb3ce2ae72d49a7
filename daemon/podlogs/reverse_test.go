package podlogs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Reading backwards yields the lines reading forwards yields, in reverse, at the same
// offsets: across chunk boundaries, with empty lines, an unterminated last line and a
// line too long to keep.
func TestReverseLinesMatchForward(t *testing.T) {
	long := strings.Repeat("y", maxLineBytes+reverseChunk+7)
	for name, content := range map[string]string{
		"empty":           "",
		"no newline":      "abc",
		"one":             "abc\n",
		"empty lines":     "\n\na\n\n",
		"unterminated":    "a\nb\nhalf",
		"chunk crossing":  strings.Repeat(strings.Repeat("z", 1000)+"\n", 100),
		"overlong inside": "first\n" + long + "\nlast\n",
		"overlong first":  long + "\nafter\n",
	} {
		path := filepath.Join(t.TempDir(), "log")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		type at struct {
			line string
			off  int64
		}
		var forward, backward []at
		src := &lineSource{f: f}
		for {
			l, off, ok, err := src.next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			forward = append(forward, at{string(l), off})
		}
		rl := newReverseLines(f, int64(len(content)))
		for {
			l, off, ok, err := rl.prev()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			backward = append(backward, at{string(l), off})
		}
		f.Close()
		slices.Reverse(backward)
		if !slices.Equal(forward, backward) {
			t.Errorf("%s: forward %d lines, backward %d lines differ", name, len(forward), len(backward))
		}
	}
}
