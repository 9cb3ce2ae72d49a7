//go:build !linux

package netlink

import (
	"errors"
	"net"
)

var errNotLinux = errors.New("netlink: only implemented on Linux")

// DefaultRouteSource is only implemented on Linux.
func DefaultRouteSource(family int) (net.IP, error) { return nil, errNotLinux }

// LinkAddresses is only implemented on Linux.
func LinkAddresses() ([]net.IP, error) { return nil, errNotLinux }
