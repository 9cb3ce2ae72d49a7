package gc

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
)

// Options are the collector's tunables.
type Options struct {
	// Workers is how many objects are processed at once (kube-controller-manager's
	// --concurrent-gc-syncs, whose default of 20 is sized for bigger machines).
	Workers int
	// DiscoveryPeriod is how often the collector asks discovery for resources to
	// watch, so resources served later are collected too.
	DiscoveryPeriod time.Duration
	// CacheSyncTimeout bounds the wait for the informers' first lists before workers
	// start. Workers also run on a partial graph: every deletion is confirmed by live
	// reads, and Orphan and Foreground processing wait for the graph to be complete.
	CacheSyncTimeout time.Duration
	// Ignored resources are never watched. Nil means DefaultIgnoredResources.
	Ignored map[schema.GroupResource]bool
}

// DefaultIgnoredResources are the resources Kubernetes' collector ignores: events
// are many, short-lived and never owners.
func DefaultIgnoredResources() map[schema.GroupResource]bool {
	return map[schema.GroupResource]bool{
		{Group: "", Resource: "events"}:              true,
		{Group: "events.k8s.io", Resource: "events"}: true,
	}
}

// DefaultOptions returns 4 workers, discovery every 30 s and a one-minute cache sync
// bound.
func DefaultOptions() Options {
	return Options{Workers: 4, DiscoveryPeriod: 30 * time.Second, CacheSyncTimeout: time.Minute}
}

// Validate reports the first option out of range.
func (o Options) Validate() error {
	if o.Workers < 1 {
		return fmt.Errorf("gc: option Workers: %d is not at least 1 (default %d)", o.Workers, DefaultOptions().Workers)
	}
	for _, f := range []struct {
		name     string
		got, def time.Duration
	}{
		{"DiscoveryPeriod", o.DiscoveryPeriod, DefaultOptions().DiscoveryPeriod},
		{"CacheSyncTimeout", o.CacheSyncTimeout, DefaultOptions().CacheSyncTimeout},
	} {
		if f.got <= 0 {
			return fmt.Errorf("gc: option %s: %v is not a positive duration (want > 0, default %v)", f.name, f.got, f.def)
		}
	}
	return nil
}

// EventRecorder is the part of client-go's record.EventRecorder the collector uses,
// to warn about owner references it refuses to follow.
type EventRecorder interface {
	Event(object runtime.Object, eventtype, reason, message string)
}

// Config wires a Controller. Client, Discovery and Clock are required.
type Config struct {
	// Client watches, reads, patches and deletes objects of any resource, seeing only
	// their metadata (client-go's metadata client, which asks for
	// PartialObjectMetadata in protobuf: no object is decoded whole).
	Client metadata.Interface
	// Discovery lists the resources to watch.
	Discovery discovery.DiscoveryInterface
	// Mapper resolves an owner reference's apiVersion and kind to a resource and its
	// scope. Nil means a deferred discovery mapper over Discovery with a memory cache,
	// reset whenever the watched resources change.
	Mapper meta.RESTMapper
	Clock  clock.WithTicker
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// Recorder receives warning events; nil only logs them.
	Recorder EventRecorder
	Options  Options
}

func (c Config) check() error {
	if c.Client == nil || c.Discovery == nil || c.Clock == nil {
		return errors.New("gc: Config needs Client, Discovery and Clock; one of them is nil")
	}
	return c.Options.Validate()
}
