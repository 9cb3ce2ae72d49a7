//go:build !linux

package podnet

import (
	"context"
	"errors"
	"log/slog"
)

var errNotLinux = errors.New("podnet: the pod network needs Linux")

// Bridge is the Linux Network; elsewhere it cannot be made.
type Bridge struct{}

// New fails: the pod network needs Linux.
func New(Config, *slog.Logger) (*Bridge, error) { return nil, errNotLinux }

func (*Bridge) Setup(context.Context, string, string) (Attachment, error) {
	return Attachment{}, errNotLinux
}
func (*Bridge) Teardown(context.Context, string) error { return errNotLinux }
func (*Bridge) Cleanup(context.Context) error          { return errNotLinux }

// CleanupConfig names the node-wide state Cleanup removes.
type CleanupConfig struct {
	BridgeName, TableName, NodeNetNS string
}

// Cleanup fails: the pod network needs Linux.
func Cleanup(context.Context, CleanupConfig) error { return errNotLinux }
