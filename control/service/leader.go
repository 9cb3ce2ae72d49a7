package service

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaderLeaseName is the Lease in kube-system that elects the replica running the
// control loops.
const leaderLeaseName = "plinth-control"

// LeaderElection configures how replicas sharing one etcd elect the one that runs the
// controllers (the API is served by every replica).
type LeaderElection struct {
	Enabled       bool
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Identity names this replica in the Lease; empty means hostname_<random>.
	Identity string
}

// DefaultLeaderElection is kube-controller-manager's: 15 s lease, 10 s renew deadline,
// 2 s retry.
func DefaultLeaderElection() LeaderElection {
	return LeaderElection{Enabled: true, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

func (le LeaderElection) validate() error {
	if !le.Enabled {
		return nil
	}
	if le.RetryPeriod <= 0 || le.RenewDeadline <= le.RetryPeriod || le.LeaseDuration <= le.RenewDeadline {
		return fmt.Errorf("--leader-elect-lease-duration %s > --leader-elect-renew-deadline %s > --leader-elect-retry-period %s > 0 must hold",
			le.LeaseDuration, le.RenewDeadline, le.RetryPeriod)
	}
	return nil
}

// runAsLeader runs fn only while this replica holds the leader Lease. Losing the Lease
// cancels fn's context at once; once fn has returned the replica competes again, so a
// replica never runs the loops twice nor beside another leader's. It returns when ctx
// is done, after fn has returned; a clean stop releases the Lease for a fast handover.
func runAsLeader(ctx context.Context, client kubernetes.Interface, le LeaderElection, reg prometheus.Registerer, logger *slog.Logger, fn func(context.Context) error) error {
	if !le.Enabled {
		return fn(ctx)
	}
	id := le.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + string(uuid.NewUUID())
	}
	leading := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "plinth_leader_election_master_status",
		Help: "1 while this replica holds the leader Lease and runs the control loops, else 0.",
	})
	if reg != nil {
		if err := reg.Register(leading); err != nil {
			return err
		}
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", leaderLeaseName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		started := make(chan struct{})
		done := make(chan error, 1)
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
			ReleaseOnCancel: true, Name: leaderLeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					close(started)
					logger.Info("became leader; starting the control loops", "identity", id)
					leading.Set(1)
					done <- fn(lctx)
				},
				OnStoppedLeading: func() { leading.Set(0) },
			},
		})
		if err != nil {
			return err
		}
		elector.Run(ctx)
		// Run returns once the Lease is lost or ctx ends, without waiting for fn: wait
		// here, so the loops never run twice or beside the next leader's.
		select {
		case <-started:
			if err := <-done; err != nil && ctx.Err() == nil {
				logger.Error("control loops failed", "err", err)
			}
			if ctx.Err() == nil {
				logger.Warn("lost the leader Lease; control loops stopped, competing again", "identity", id)
			}
		default:
		}
	}
	return nil
}

// scopedRegisterer registers on reg and remembers what it registered, so one term of
// leadership can unregister its controllers' metrics and the next term register anew.
type scopedRegisterer struct {
	reg prometheus.Registerer
	cs  []prometheus.Collector
}

func (s *scopedRegisterer) Register(c prometheus.Collector) error {
	if err := s.reg.Register(c); err != nil {
		return err
	}
	s.cs = append(s.cs, c)
	return nil
}

func (s *scopedRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := s.Register(c); err != nil {
			panic(err)
		}
	}
}

func (s *scopedRegisterer) Unregister(c prometheus.Collector) bool { return s.reg.Unregister(c) }

func (s *scopedRegisterer) unregisterAll() {
	for _, c := range s.cs {
		s.reg.Unregister(c)
	}
	s.cs = nil
}
