package podlogs

import (
	"bytes"
	"io"
	"os"
)

// reverseChunk is how much reverseLines reads at a time.
const reverseChunk = 32 << 10

// reverseLines returns a file's newline-terminated lines last first, reading blocks
// from the end, so the tail of a large log costs only the tail. An unterminated last
// line (the writer is mid-line) is not returned: forward reading does not return it
// either until its newline arrives.
type reverseLines struct {
	f *os.File
	// buf holds the file's bytes [pos, pos+len(buf)). Once trimmed it ends with the
	// newline of the next line to return (or is empty at the beginning of the file).
	pos     int64
	buf     []byte
	trimmed bool
	// skipping drops the bytes of an overlong line until the newline before it.
	skipping bool
}

func newReverseLines(f *os.File, size int64) *reverseLines {
	return &reverseLines{f: f, pos: size}
}

// prev returns the previous line without its newline and its offset; ok is false at
// the beginning of the file. Lines longer than maxLineBytes are skipped.
func (r *reverseLines) prev() (line []byte, offset int64, ok bool, err error) {
	for {
		switch {
		case r.skipping || !r.trimmed:
			// Find the newline that ends the next line to return.
			if i := bytes.LastIndexByte(r.buf, '\n'); i >= 0 {
				r.buf, r.trimmed, r.skipping = r.buf[:i+1], true, false
				continue
			}
			r.buf = r.buf[:0]
		case len(r.buf) > 0:
			if i := bytes.LastIndexByte(r.buf[:len(r.buf)-1], '\n'); i >= 0 || r.pos == 0 {
				line, offset = r.buf[i+1:len(r.buf)-1], r.pos+int64(i)+1
				r.buf = r.buf[:i+1]
				if len(line) > maxLineBytes {
					continue
				}
				return line, offset, true, nil
			}
			if len(r.buf) > maxLineBytes {
				r.buf, r.skipping = r.buf[:0], true
			}
		}
		if r.pos == 0 {
			return nil, 0, false, nil
		}
		n := min(int64(reverseChunk), r.pos)
		chunk := make([]byte, n, n+int64(len(r.buf)))
		if _, err := r.f.ReadAt(chunk, r.pos-n); err != nil && err != io.EOF {
			return nil, 0, false, err
		}
		r.pos -= n
		r.buf = append(chunk, r.buf...)
	}
}
