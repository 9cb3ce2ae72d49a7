package watchdog

import (
	"fmt"
	"os"
	"strings"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends one sd_notify state: one or more newline-separated KEY=VALUE
// assignments in a single datagram.
type Notifier interface {
	Notify(state string) error
}

// sdNotifier sends states to the socket named by NOTIFY_SOCKET.
type sdNotifier struct{}

// NewSystemdNotifier returns a Notifier that writes to the service manager's
// NOTIFY_SOCKET. When the variable is unset (not started by systemd, or a unit that is
// not Type=notify) every Notify is a successful no-op.
func NewSystemdNotifier() Notifier { return sdNotifier{} }

func (sdNotifier) Notify(state string) error {
	// unsetEnvironment=false: plinthd notifies many times over its life, and the
	// variable must survive for the later calls.
	if _, err := daemon.SdNotify(false, state); err != nil {
		return fmt.Errorf("sd_notify %q to NOTIFY_SOCKET=%q: %w", state, os.Getenv("NOTIFY_SOCKET"), err)
	}
	return nil
}

// Ready tells systemd that startup is finished (for plinthd: the Node is registered
// and the Lease is heartbeating) and, when status is not empty, what the daemon is
// doing, in the same datagram.
func Ready(n Notifier, status string) error {
	if status == "" {
		return n.Notify(daemon.SdNotifyReady)
	}
	return n.Notify(daemon.SdNotifyReady + "\n" + statusLine(status))
}

// Status sets the free-form status text systemctl status shows for the unit.
func Status(n Notifier, status string) error {
	return n.Notify(statusLine(status))
}

// Stopping tells systemd that the daemon has begun shutting down.
func Stopping(n Notifier) error {
	return n.Notify(daemon.SdNotifyStopping)
}

// statusLine builds a STATUS= assignment. The protocol separates assignments with
// newlines, so a newline inside the text would end STATUS early and let the rest be
// read as another assignment (an error message ending in "\nREADY=1", say); newlines
// become spaces instead.
func statusLine(status string) string {
	return "STATUS=" + strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(status)
}
