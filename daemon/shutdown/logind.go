package shutdown

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// logind's and systemd's D-Bus names (org.freedesktop.login1(5), org.freedesktop.systemd1(5)).
const (
	logindName      = "org.freedesktop.login1"
	logindPath      = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
	systemdName     = "org.freedesktop.systemd1"
	systemdPath     = dbus.ObjectPath("/org/freedesktop/systemd1")
	logindUnit      = "systemd-logind.service"
)

// DBusLogind is logind over a private D-Bus connection of its own.
//
// It speaks godbus directly rather than through go-systemd's login1: login1 offers
// Inhibit and a Subscribe that matches signals from any sender on any path, but no
// read of Manager properties (InhibitDelayMaxUSec), no way to name the bus (tests run
// a private dbus-daemon), and it delivers signals through godbus's default handler,
// which may reorder a PrepareForShutdown(true) and the (false) right after it. godbus
// is go-systemd's own dependency, so no module is added.
type DBusLogind struct {
	conn   *dbus.Conn
	logind dbus.BusObject
	events chan bool
	wg     sync.WaitGroup
}

// DialLogind connects to the D-Bus system bus at address ("" means the system bus:
// $DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket) and subscribes to
// logind's PrepareForShutdown. It fails when there is no bus or no logind on it.
func DialLogind(ctx context.Context, address string) (*DBusLogind, error) {
	opts := []dbus.ConnOption{dbus.WithContext(ctx), dbus.WithSignalHandler(dbus.NewSequentialSignalHandler())}
	var conn *dbus.Conn
	var err error
	if address == "" {
		conn, err = dbus.SystemBusPrivate(opts...)
	} else {
		conn, err = dbus.Dial(address, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the D-Bus system bus: %w", err)
	}
	l := &DBusLogind{conn: conn, logind: conn.Object(logindName, logindPath), events: make(chan bool)}
	if err := l.init(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return l, nil
}

func (l *DBusLogind) init(ctx context.Context) error {
	if err := l.conn.Auth(nil); err != nil {
		return fmt.Errorf("authenticating to the D-Bus system bus: %w", err)
	}
	if err := l.conn.Hello(); err != nil {
		return fmt.Errorf("D-Bus Hello: %w", err)
	}
	// The match names logind's well-known name, so the bus delivers only what its
	// current owner sends: no other client can fake a shutdown.
	if err := l.conn.AddMatchSignalContext(ctx, dbus.WithMatchSender(logindName), dbus.WithMatchObjectPath(logindPath),
		dbus.WithMatchInterface(logindInterface), dbus.WithMatchMember("PrepareForShutdown")); err != nil {
		return fmt.Errorf("subscribing to logind's PrepareForShutdown: %w", err)
	}
	signals := make(chan *dbus.Signal, 16)
	l.conn.Signal(signals)
	// Is logind there at all? A system bus without it (a container without systemd)
	// would otherwise look like a logind that never announces a shutdown.
	if _, err := l.InhibitDelayMax(ctx); err != nil {
		return err
	}
	l.wg.Go(func() { l.forward(signals) })
	return nil
}

// forward turns the signals into PrepareForShutdown values until the connection
// closes (godbus then closes signals).
func (l *DBusLogind) forward(signals <-chan *dbus.Signal) {
	defer close(l.events)
	for s := range signals {
		if s.Path != logindPath || s.Name != logindInterface+".PrepareForShutdown" || len(s.Body) != 1 {
			continue
		}
		active, ok := s.Body[0].(bool)
		if !ok {
			continue
		}
		select {
		case l.events <- active:
		case <-l.conn.Context().Done():
			return
		}
	}
}

// PrepareForShutdown implements Logind.
func (l *DBusLogind) PrepareForShutdown() <-chan bool { return l.events }

// InhibitDelayMax implements Logind.
func (l *DBusLogind) InhibitDelayMax(ctx context.Context) (time.Duration, error) {
	var v dbus.Variant
	if err := l.logind.CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, logindInterface, "InhibitDelayMaxUSec").Store(&v); err != nil {
		return 0, fmt.Errorf("reading logind's InhibitDelayMaxUSec: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("logind's InhibitDelayMaxUSec is a %s, not a uint64", v.Signature())
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// InhibitShutdown implements Logind: logind hands back the write end of a FIFO and
// holds the lock until every copy of it is closed.
func (l *DBusLogind) InhibitShutdown(ctx context.Context, who, why string) (io.Closer, error) {
	var fd dbus.UnixFD
	if err := l.logind.CallWithContext(ctx, logindInterface+".Inhibit", 0, "shutdown", who, why, "delay").Store(&fd); err != nil {
		return nil, fmt.Errorf("logind Inhibit(shutdown, delay): %w", err)
	}
	return os.NewFile(uintptr(fd), "logind-inhibitor"), nil
}

// ReloadConfig implements Logind by having systemd send logind SIGHUP, on which logind
// rereads logind.conf and its drop-ins (kubelet does the same). Its unit has no
// ExecReload (systemd 252), so `systemctl reload` is refused, and restarting it would
// needlessly disturb every login session. The SIGHUP is only sent when this returns:
// the caller polls InhibitDelayMaxUSec for the new value.
func (l *DBusLogind) ReloadConfig(ctx context.Context) error {
	err := l.conn.Object(systemdName, systemdPath).CallWithContext(ctx, "org.freedesktop.systemd1.Manager.KillUnit", 0,
		logindUnit, "main", int32(unix.SIGHUP)).Err
	if err != nil {
		return fmt.Errorf("systemd KillUnit(%s, main, SIGHUP): %w", logindUnit, err)
	}
	return nil
}

// Close implements Logind; the signal goroutine ends with the connection.
func (l *DBusLogind) Close() error {
	err := l.conn.Close()
	l.wg.Wait()
	return err
}
