package podlogs

import (
	"bytes"
	"fmt"
	"time"
)

// Stream names the output a log entry came from.
type Stream string

const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Tags of the CRI log format: the first tag says whether the entry ends a line.
const (
	tagPartial = "P"
	tagFull    = "F"
)

// Entry is one line of a CRI log file.
type Entry struct {
	Time   time.Time
	Stream Stream
	// Partial is true for a P entry: Content is the beginning of a line that the
	// following entries of the same stream continue.
	Partial bool
	// Content is the text without the trailing newline; it aliases the parsed line.
	Content []byte
}

// maxQuoted bounds how much of a bad line an error quotes.
const maxQuoted = 64

// ParseEntry parses one line of a CRI log file, without its trailing newline.
func ParseEntry(line []byte) (Entry, error) {
	var e Entry
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return e, fmt.Errorf("log line %q: want \"<time> <stream> <tag> <content>\", found no space after the time", quote(line))
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return e, fmt.Errorf("log line %q: time %q is not an RFC 3339 time such as 2006-01-02T15:04:05.999999999Z", quote(line), quote(ts))
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return e, fmt.Errorf("log line %q: no space after the stream", quote(line))
	}
	switch Stream(stream) {
	case Stdout, Stderr:
	default:
		return e, fmt.Errorf("log line %q: stream %q is neither stdout nor stderr", quote(line), quote(stream))
	}
	tags, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		// "<time> <stream> F" with empty content and no separator: kubelet writes the
		// space, but an empty line cut short is still an empty line.
		tags, content = rest, nil
	}
	first, _, _ := bytes.Cut(tags, []byte{':'})
	switch string(first) {
	case tagPartial:
		e.Partial = true
	case tagFull:
	default:
		return e, fmt.Errorf("log line %q: tag %q is neither P nor F", quote(line), quote(tags))
	}
	e.Time, e.Stream, e.Content = t, Stream(stream), content
	return e, nil
}

func quote(b []byte) string {
	if len(b) > maxQuoted {
		return string(b[:maxQuoted]) + "..."
	}
	return string(b)
}
