package plinthd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/proxy/desired"
)

// fakeRules records Cleanup calls.
type fakeRules struct {
	cleanups   int
	cleanupErr error
}

func (f *fakeRules) Sync(context.Context, *desired.Snapshot, desired.Changes) error { return nil }
func (f *fakeRules) Cleanup(context.Context) error {
	f.cleanups++
	return f.cleanupErr
}

func TestCleanupCallsTheRuleSyncer(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	rules := &fakeRules{}
	backends := Backends{NewProxyRules: func(*slog.Logger) (ProxyRules, error) { return rules, nil }}
	cfg := config.Defaults()
	// A parent no pod ever used: the pod cgroup part finds nothing to remove.
	cfg.Pods.CgroupParent = fmt.Sprintf("/plinth-test-cleanup-%d", os.Getpid())
	if err := Cleanup(context.Background(), cfg, backends, logger); err != nil || rules.cleanups != 1 {
		t.Fatalf("Cleanup = %v after %d cleanups, want nil after 1", err, rules.cleanups)
	}
	rules.cleanupErr = errors.New("netlink: operation not permitted")
	if err := Cleanup(context.Background(), cfg, backends, logger); err == nil || !strings.Contains(err.Error(), "operation not permitted") {
		t.Fatalf("Cleanup = %v, want the syncer's error", err)
	}
	if err := Cleanup(context.Background(), cfg, Backends{}, logger); err == nil {
		t.Fatal("Cleanup without a rule syncer reported success")
	}
}

func TestServiceProxyOnlyWhenEnabledAndBuilt(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	built := 0
	backends := Backends{NewProxyRules: func(*slog.Logger) (ProxyRules, error) { built++; return &fakeRules{}, nil }}
	standalone := config.Defaults()
	if p, err := newServiceProxy(standalone, backends, nil, "node-a", nil, logger); p != nil || err != nil {
		t.Fatalf("standalone: proxy %v, err %v; want none", p, err)
	}
	disabled := config.Defaults()
	disabled.Kubeconfig = "/etc/plinth/kubeconfig"
	off := false
	disabled.Proxy.Enabled = &off
	if p, err := newServiceProxy(disabled, backends, nil, "node-a", nil, logger); p != nil || err != nil {
		t.Fatalf("proxy.enabled false: proxy %v, err %v; want none", p, err)
	}
	// Enabled with a client, but this build has no rule syncer: no proxy, no error.
	disabled.Proxy.Enabled = nil
	if p, err := newServiceProxy(disabled, Backends{}, &nodeclient.Client{}, "node-a", nil, logger); p != nil || err != nil {
		t.Fatalf("no rule syncer: proxy %v, err %v; want none", p, err)
	}
	if built != 0 {
		t.Fatalf("the rule syncer was built %d times for a proxy that does not run", built)
	}
}
