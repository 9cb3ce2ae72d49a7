//go:build !linux

package linkns

import (
	"errors"
	"net/netip"
)

var errNotLinux = errors.New("linkns: network namespaces and links need Linux")

// Host is a network namespace acting as the node.
type Host struct{ nsPath string }

// NewHost returns the Host for the namespace bind-mounted at nsPath, or the caller's.
func NewHost(nsPath string) Host { return Host{nsPath: nsPath} }

func (Host) EnsureBridge(string, []netip.Prefix) error { return errNotLinux }
func (Host) DeleteLink(string) error                   { return errNotLinux }
func (Host) LinkExists(string) (bool, error)           { return false, errNotLinux }
func (Host) WriteSysctl(string, string) error          { return errNotLinux }
func (Host) SysctlExists(string) (bool, error)         { return false, errNotLinux }
func (Host) EnsurePodInterface(PodInterface) error     { return errNotLinux }
func (Host) Path() string                              { return "" }
func CreateNetNS(string) error                         { return errNotLinux }
func DeleteNetNS(string) error                         { return errNotLinux }
func IsNetNS(string) (bool, error)                     { return false, errNotLinux }
