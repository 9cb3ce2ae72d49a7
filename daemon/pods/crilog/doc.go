// Package crilog writes container output in the CRI log format that kubelet's log
// readers and `kubectl logs` expect: one line per record, "<RFC3339Nano time> <stream>
// <tag> <content>", where stream is stdout or stderr and tag is F for a full line or P
// for a part of a longer line (the next record continues it).
//
// It owns only the writes it makes to the writer it is given; the caller opens and
// closes the file.
package crilog
