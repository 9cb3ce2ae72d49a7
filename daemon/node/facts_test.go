package node

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/plinth/plinth/kernel/sysinfo"
)

func fixtureSources(route func(int) (net.IP, error)) factSources {
	return factSources{
		host:          sysinfo.Host{Root: "testdata/host"},
		kernelRelease: func() (string, error) { return "6.18.0-fixture", nil },
		cpuCount:      func() int { return 2 },
		filesystem: func(path string) (sysinfo.Filesystem, error) {
			if path != "/var/lib/plinth" {
				return sysinfo.Filesystem{}, errors.New("unexpected path " + path)
			}
			return sysinfo.Filesystem{CapacityBytes: 50 << 30}, nil
		},
		routeSource: route,
	}
}

func TestGatherFactsFromFixture(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	f, err := gatherFacts(DefaultConfig("n"), fixtureSources(func(int) (net.IP, error) { return net.ParseIP("192.0.2.7"), nil }), logger)
	if err != nil {
		t.Fatal(err)
	}
	want := HostFacts{
		CPUs: 2, MemoryBytes: 4046812 * 1024, EphemeralStorageBytes: 50 << 30,
		KernelVersion: "6.18.0-fixture", OSImage: "Plinth Fixture Linux 1",
		MachineID: "0123456789abcdef0123456789abcdef", BootID: "11111111-2222-3333-4444-555555555555",
	}
	gotIP := f.InternalIP
	f.InternalIP = nil
	if f.String() != want.String() {
		t.Errorf("facts =\n%+v\nwant\n%+v", f, want)
	}
	if !gotIP.Equal(net.ParseIP("192.0.2.7")) {
		t.Errorf("InternalIP = %v, want the default route source 192.0.2.7", gotIP)
	}
	// The fixture has no DMI product_uuid: logged, left empty, not fatal.
	if !strings.Contains(logs.String(), "system UUID") {
		t.Errorf("missing system UUID not logged:\n%s", logs.String())
	}
}

func TestGatherFactsConfiguredNodeIPWins(t *testing.T) {
	cfg := DefaultConfig("n")
	cfg.NodeIP = net.ParseIP("10.1.2.3")
	called := false
	f, err := gatherFacts(cfg, fixtureSources(func(int) (net.IP, error) { called = true; return net.ParseIP("192.0.2.7"), nil }), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !f.InternalIP.Equal(cfg.NodeIP) || called {
		t.Errorf("InternalIP = %v (route consulted: %v), want the configured 10.1.2.3 without a route lookup", f.InternalIP, called)
	}
}

func TestGatherFactsNoDefaultRoute(t *testing.T) {
	var logs syncBuffer
	f, err := gatherFacts(DefaultConfig("n"), fixtureSources(func(int) (net.IP, error) {
		return nil, errors.New("no IPv4 default route in the main routing table")
	}), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if f.InternalIP != nil {
		t.Errorf("InternalIP = %v, want none", f.InternalIP)
	}
	if !strings.Contains(logs.String(), "no IPv4 default route") {
		t.Errorf("the reason for no InternalIP is not logged:\n%s", logs.String())
	}
}

func TestGatherFactsRequiresCapacity(t *testing.T) {
	src := fixtureSources(nil)
	src.host = sysinfo.Host{Root: t.TempDir()}
	if _, err := gatherFacts(DefaultConfig("n"), src, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "memory capacity") {
		t.Errorf("error = %v, want a memory capacity error", err)
	}
	src = fixtureSources(nil)
	cfg := DefaultConfig("n")
	cfg.StateDir = "/elsewhere"
	if _, err := gatherFacts(cfg, src, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "ephemeral-storage") {
		t.Errorf("error = %v, want an ephemeral-storage error", err)
	}
}
