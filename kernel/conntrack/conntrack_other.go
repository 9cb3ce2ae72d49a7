//go:build !linux

package conntrack

import (
	"context"
	"errors"
)

var errNotLinux = errors.New("conntrack: only implemented on Linux")

// Deleter is only implemented on Linux.
type Deleter struct{}

// Open is only implemented on Linux.
func Open() (*Deleter, error) { return nil, errNotLinux }

// Close does nothing.
func (d *Deleter) Close() {}

// DeleteUDP is only implemented on Linux.
func (d *Deleter) DeleteUDP(context.Context, []Match) (int, error) { return 0, errNotLinux }
