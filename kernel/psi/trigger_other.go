//go:build !linux

package psi

import (
	"context"
	"errors"
	"time"
)

var errNotLinux = errors.New("psi triggers need Linux")

type triggerSys struct{}

// NewTrigger fails: PSI exists only on Linux.
func NewTrigger(path string, kind StallKind, stall, window time.Duration, opts ...TriggerOption) (*Trigger, error) {
	if _, err := TriggerSpec(kind, stall, window); err != nil {
		return nil, err
	}
	return nil, errNotLinux
}

// Wait fails: PSI exists only on Linux.
func (t *Trigger) Wait(ctx context.Context) error { return errNotLinux }

// Close does nothing.
func (t *Trigger) Close() error { return nil }

// PrivilegedTriggers is false: PSI exists only on Linux.
func PrivilegedTriggers() bool { return false }
