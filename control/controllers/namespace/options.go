package namespace

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"
)

// Options are the controller's tunables.
type Options struct {
	// Workers is how many namespaces are emptied at once
	// (kube-controller-manager's --concurrent-namespace-syncs).
	Workers int
	// RecheckPeriod is how soon a namespace whose content has not all gone yet is
	// looked at again.
	RecheckPeriod time.Duration
	// DiscoveryPeriod is how often the controller checks, until it does, whether the
	// API serves namespaces.
	DiscoveryPeriod time.Duration
}

// DefaultOptions returns 2 workers, a recheck every 5 s and discovery every 30 s.
func DefaultOptions() Options {
	return Options{Workers: 2, RecheckPeriod: 5 * time.Second, DiscoveryPeriod: 30 * time.Second}
}

// Validate reports the first option out of range.
func (o Options) Validate() error {
	if o.Workers < 1 {
		return fmt.Errorf("namespace: option Workers: %d is not at least 1 (default %d)", o.Workers, DefaultOptions().Workers)
	}
	for _, f := range []struct {
		name     string
		got, def time.Duration
	}{
		{"RecheckPeriod", o.RecheckPeriod, DefaultOptions().RecheckPeriod},
		{"DiscoveryPeriod", o.DiscoveryPeriod, DefaultOptions().DiscoveryPeriod},
	} {
		if f.got <= 0 {
			return fmt.Errorf("namespace: option %s: %v is not a positive duration (want > 0, default %v)", f.name, f.got, f.def)
		}
	}
	return nil
}

// Config wires a Controller. Client, Discovery and Clock are required.
type Config struct {
	// Client reads namespaces, lists and deletes their content.
	Client dynamic.Interface
	// Discovery lists the namespaced resources to empty.
	Discovery discovery.DiscoveryInterface
	Clock     clock.WithTicker
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger  *slog.Logger
	Options Options
}

func (c Config) check() error {
	if c.Client == nil || c.Discovery == nil || c.Clock == nil {
		return errors.New("namespace: Config needs Client, Discovery and Clock; one of them is nil")
	}
	return c.Options.Validate()
}
