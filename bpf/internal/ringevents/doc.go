// Package ringevents turns a BPF ring buffer into a channel of decoded Go values, read
// by one goroutine that stops when its context ends or the reader is closed.
//
// It owns the ringbuf.Reader it creates and that goroutine. It touches nothing but the
// ring buffer map it is given.
package ringevents
