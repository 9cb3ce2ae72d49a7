package crilog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Stream names, as the CRI log format spells them.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// MaxLineBytes is the longest content one record carries; longer lines are split into
// P records (containerd's default max_container_log_line_size).
const MaxLineBytes = 16 * 1024

// Writer serialises records from several streams onto one file, so lines of stdout and
// stderr never interleave mid-record.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	buf []byte
}

// NewWriter writes records to w, stamping them with now().
func NewWriter(w io.Writer, now func() time.Time) *Writer {
	return &Writer{w: w, now: now}
}

// record writes one record. The timestamp is taken under the lock, so records in the
// file are in time order.
func (w *Writer) record(stream string, partial bool, content []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	tag := "F"
	if partial {
		tag = "P"
	}
	b := w.buf[:0]
	b = w.now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, ' ')
	b = append(b, tag...)
	b = append(b, ' ')
	b = append(b, content...)
	b = append(b, '\n')
	w.buf = b
	_, err := w.w.Write(b)
	return err
}

// Copy reads r until EOF and writes each line as records of stream. A line longer than
// MaxLineBytes becomes P records ending with an F record; a last line without its
// newline is written as F at EOF. It returns nil at EOF, or the first read or write
// error.
func (w *Writer) Copy(stream string, r io.Reader) error {
	br := bufio.NewReaderSize(r, MaxLineBytes)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			if werr := w.record(stream, false, trimNewline(line)); werr != nil {
				return werr
			}
		case errors.Is(err, bufio.ErrBufferFull):
			if werr := w.record(stream, true, line); werr != nil {
				return werr
			}
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				if werr := w.record(stream, false, line); werr != nil {
					return werr
				}
			}
			return nil
		default:
			if len(line) > 0 {
				_ = w.record(stream, false, line)
			}
			return err
		}
	}
}

func trimNewline(b []byte) []byte { return b[:len(b)-1] }

// Record is one parsed line of a CRI log file.
type Record struct {
	Time    time.Time
	Stream  string
	Partial bool
	Content string
}

// ParseRecord parses one line of a CRI log file (without its newline).
func ParseRecord(line string) (Record, error) {
	ts, rest, ok1 := strings.Cut(line, " ")
	stream, rest, ok2 := strings.Cut(rest, " ")
	tag, content, ok3 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !ok3 {
		return Record{}, fmt.Errorf("CRI log line %q: want \"<time> <stream> <tag> <content>\"", truncate(line))
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Record{}, fmt.Errorf("CRI log line %q: time %q: %w", truncate(line), ts, err)
	}
	if stream != Stdout && stream != Stderr {
		return Record{}, fmt.Errorf("CRI log line %q: stream %q is not stdout or stderr", truncate(line), stream)
	}
	if tag != "F" && tag != "P" {
		return Record{}, fmt.Errorf("CRI log line %q: tag %q is not F or P", truncate(line), tag)
	}
	return Record{Time: t, Stream: stream, Partial: tag == "P", Content: content}, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
