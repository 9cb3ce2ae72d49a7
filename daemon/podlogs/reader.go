package podlogs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/pods/crilog"
)

// DefaultPollInterval is how often a followed file is checked for new entries and for
// rotation.
const DefaultPollInterval = 250 * time.Millisecond

// maxLineBytes bounds one file line: runtimes split longer output into partial entries
// of 16 KiB, so anything far beyond is not a CRI log and is skipped, not buffered.
const maxLineBytes = 1 << 20

// Options are kubelet's log options (PodLogOptions after validation).
type Options struct {
	// TailLines keeps only the last lines; nil means every line.
	TailLines *int64
	// Since drops lines written before it; zero keeps all.
	Since time.Time
	// Timestamps prefixes each line with its time (RFC 3339 with nanoseconds) and a
	// space, as kubectl logs --timestamps.
	Timestamps bool
	// LimitBytes stops after that many bytes of output; 0 or less means no limit.
	LimitBytes int64
	// Follow keeps reading as the file grows and across rotation until the context
	// ends or Reader.Stopped says the writer is gone.
	Follow bool
}

// Reader copies container logs. The zero value is not usable: set Clock (or use
// NewReader).
type Reader struct {
	Clock clock.Clock
	// PollInterval is how often a followed file is checked; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Stopped, when set, is asked whenever a followed file has no new entries; true
	// ends the follow (the container exited and nothing more will be written).
	Stopped func() bool
	// Logger receives malformed lines, which are skipped as kubelet skips them.
	Logger *slog.Logger
}

// NewReader returns a Reader on the real clock that discards its log.
func NewReader() *Reader {
	return &Reader{Clock: clock.RealClock{}, Logger: slog.New(slog.DiscardHandler)}
}

// errLimitReached ends a copy once LimitBytes were written.
var errLimitReached = errors.New("byte limit reached")

// Copy writes the log at path to w as o says. It returns nil at the end of the file
// (without Follow), at the byte limit, or when a follow ends because ctx ended or the
// writer stopped.
func (r *Reader) Copy(ctx context.Context, w io.Writer, path string, o Options) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	out := &lineWriter{w: w, timestamps: o.Timestamps, remaining: o.LimitBytes, since: o.Since}
	src := &lineSource{f: f}
	if o.TailLines != nil {
		start, firstEnd, err := r.tailStart(f, max(*o.TailLines, 0))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out.skipEndingBefore = firstEnd
		src.offset = start
	}
	err = r.drain(src, out)
	if err == nil && o.Follow {
		err = r.follow(ctx, path, src, out)
	}
	if errors.Is(err, errLimitReached) {
		return nil
	}
	if err != nil {
		return err
	}
	if !o.Follow {
		// A line the writer never finished is still output the container wrote.
		return ignoreLimit(out.flushPartial())
	}
	return nil
}

func ignoreLimit(err error) error {
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// tailStart finds where the last n whole lines begin, reading the file backwards: the
// offset of the first entry of the oldest of them, and the offset of the entry that
// completes that oldest line. Lines of stdout and stderr may interleave, so lines
// completing before that entry are skipped even when they start after the offset. A
// line the writer left unfinished is shown when the scan meets its entries; one begun
// and abandoned before the last n lines is not (kubelet, counting entries rather than
// lines, would show it cut short).
func (r *Reader) tailStart(f *os.File, n int64) (start, firstEnd int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return fi.Size(), fi.Size(), nil
	}
	// Per stream: whether it has entries to keep (at or after firstEnd, or the parts of
	// a line still unfinished at the end of the file), whether an F entry was seen yet
	// (a P entry after the last F is such an unfinished line), and where its kept
	// lines begin: after its last F entry before firstEnd.
	type streamState struct {
		kept, sawFull, bounded bool
		begin                  int64
	}
	states := map[string]*streamState{crilog.Stdout: {}, crilog.Stderr: {}}
	rl := newReverseLines(f, fi.Size())
	var completed int64
	firstEnd = -1
	for {
		line, off, ok, err := rl.prev()
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		e, perr := crilog.ParseRecord(string(line))
		if perr != nil {
			r.logMalformed(perr)
			continue
		}
		st := states[e.Stream]
		if firstEnd < 0 {
			st.kept = true
			if !e.Partial {
				st.sawFull = true
				if completed++; completed == n {
					firstEnd = off
				}
			}
			continue
		}
		switch {
		case e.Partial && !st.sawFull:
			st.kept = true // part of a line the writer has not finished
		case !e.Partial && !st.bounded:
			st.sawFull, st.bounded, st.begin = true, true, off+int64(len(line))+1
		}
		if (!states[crilog.Stdout].kept || states[crilog.Stdout].bounded) && (!states[crilog.Stderr].kept || states[crilog.Stderr].bounded) {
			break
		}
	}
	if firstEnd < 0 {
		// Fewer than n lines: all of them.
		return 0, 0, nil
	}
	start = firstEnd
	for _, st := range states {
		switch {
		case !st.kept:
		case st.bounded:
			start = min(start, st.begin)
		default:
			start = 0
		}
	}
	return start, firstEnd, nil
}

// drain writes every whole line available now.
func (r *Reader) drain(src *lineSource, out *lineWriter) error {
	for {
		line, off, ok, err := src.next()
		if err != nil || !ok {
			return err
		}
		e, perr := crilog.ParseRecord(string(line))
		if perr != nil {
			r.logMalformed(perr)
			continue
		}
		if err := out.entry(e, off); err != nil {
			return err
		}
	}
}

// follow polls src for new entries, moving to a new file when path is rotated: renamed
// away and recreated (the old file is drained first), or truncated in place.
func (r *Reader) follow(ctx context.Context, path string, src *lineSource, out *lineWriter) error {
	interval := r.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.Clock.After(interval):
		}
		before := src.offset
		if err := r.drain(src, out); err != nil {
			return err
		}
		if src.offset != before {
			continue
		}
		next, err := r.rotated(path, src, out)
		if err != nil {
			return err
		}
		if next != nil {
			// Entries appended to the old file between the last read and the rename
			// come before the new file's.
			if err := r.drain(src, out); err != nil {
				_ = next.Close()
				return err
			}
			_ = src.f.Close()
			src.f = next
			src.reset(0)
			out.skipEndingBefore = 0 // tail offsets were the old file's
			if err := r.drain(src, out); err != nil {
				return err
			}
			continue
		}
		if r.Stopped != nil && r.Stopped() {
			return ignoreLimit(out.flushPartial())
		}
	}
}

// rotated returns the file now at path when it is not src's (renamed away and
// recreated), or rewinds src when its file shrank below what was read (truncated in
// place). A missing path, between a rename and a create, is not yet a rotation.
func (r *Reader) rotated(path string, src *lineSource, out *lineWriter) (*os.File, error) {
	cur, err := src.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cur.Size() < src.offset {
		if _, err := src.f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		src.reset(0)
		out.skipEndingBefore = 0
		return nil, nil
	}
	now, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if os.SameFile(cur, now) {
		return nil, nil
	}
	nf, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return nf, err
}

func (r *Reader) logMalformed(err error) {
	if r.Logger != nil {
		r.Logger.Warn("skipping a malformed container log line", "err", err)
	}
}

// lineSource reads newline-terminated lines from a file, keeping an unfinished last
// line until the rest arrives.
type lineSource struct {
	f *os.File
	// offset is where buf begins in the file: buf holds read but unconsumed bytes.
	offset int64
	buf    []byte
	chunk  [32 << 10]byte
	// skipping is set while discarding an overlong line up to its newline.
	skipping bool
}

func (s *lineSource) reset(offset int64) {
	s.offset, s.buf, s.skipping = offset, s.buf[:0], false
}

// next returns the next whole line (without its newline) and its offset; ok is false
// when no whole line is available yet.
func (s *lineSource) next() (line []byte, offset int64, ok bool, err error) {
	for {
		if i := bytes.IndexByte(s.buf, '\n'); i >= 0 {
			line, offset = s.buf[:i], s.offset
			s.buf = s.buf[i+1:]
			s.offset += int64(i) + 1
			if s.skipping {
				s.skipping = false
				continue
			}
			return line, offset, true, nil
		}
		if len(s.buf) > maxLineBytes {
			s.offset += int64(len(s.buf))
			s.buf = s.buf[:0]
			s.skipping = true
		}
		n, rerr := s.f.Read(s.chunk[:])
		if n > 0 {
			// Compact before growing, so buf does not creep along its backing array.
			s.buf = append(append(make([]byte, 0, len(s.buf)+n), s.buf...), s.chunk[:n]...)
			continue
		}
		if rerr == io.EOF || rerr == nil {
			return nil, 0, false, nil
		}
		return nil, 0, false, rerr
	}
}

// assembler merges partial entries into lines, per stream.
type assembler struct {
	pending map[string]*partialLine
}

type partialLine struct {
	time   time.Time
	start  int64
	stream string
	text   []byte
}

func newAssembler() *assembler { return &assembler{pending: map[string]*partialLine{}} }

// add takes entry e found at offset and returns the line it completed, or nil when e
// is partial.
func (a *assembler) add(e crilog.Record, offset int64) *partialLine {
	p := a.pending[e.Stream]
	if p == nil {
		p = &partialLine{time: e.Time, start: offset, stream: e.Stream}
		a.pending[e.Stream] = p
	}
	p.text = append(p.text, e.Content...)
	if e.Partial {
		return nil
	}
	delete(a.pending, e.Stream)
	return p
}

// lineWriter assembles entries into lines and writes those the options keep.
type lineWriter struct {
	w          io.Writer
	asm        *assembler
	timestamps bool
	since      time.Time
	// remaining is the byte budget; 0 or less at the start means unlimited.
	remaining int64
	limited   bool
	started   bool
	// skipEndingBefore drops lines completed before this offset (tail).
	skipEndingBefore int64
	scratch          []byte
}

func (lw *lineWriter) entry(e crilog.Record, offset int64) error {
	if !lw.started {
		lw.started, lw.limited, lw.asm = true, lw.remaining > 0, newAssembler()
	}
	line := lw.asm.add(e, offset)
	if line == nil || offset < lw.skipEndingBefore {
		return nil
	}
	return lw.write(line)
}

func (lw *lineWriter) write(p *partialLine) error {
	if !lw.since.IsZero() && p.time.Before(lw.since) {
		return nil
	}
	b := lw.scratch[:0]
	if lw.timestamps {
		b = p.time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, ' ')
	}
	b = append(append(b, p.text...), '\n')
	lw.scratch = b
	if lw.limited && int64(len(b)) >= lw.remaining {
		_, err := lw.w.Write(b[:lw.remaining])
		lw.remaining = 0
		if err != nil {
			return err
		}
		return errLimitReached
	}
	if _, err := lw.w.Write(b); err != nil {
		return err
	}
	if lw.limited {
		lw.remaining -= int64(len(b))
	}
	return nil
}

// flushPartial writes the lines still waiting for their final entry, oldest first.
func (lw *lineWriter) flushPartial() error {
	if lw.asm == nil {
		return nil
	}
	for _, s := range []string{crilog.Stdout, crilog.Stderr} {
		if p := lw.asm.pending[s]; p != nil {
			delete(lw.asm.pending, s)
			if err := lw.write(p); err != nil {
				return err
			}
		}
	}
	return nil
}
