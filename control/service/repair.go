package service

import (
	"context"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth/plinth/control/registry"
)

// serviceClaimRepairPeriod is how often leaked or missing cluster IP and node port
// claims are repaired, as kube-apiserver's repair loops run every few minutes.
const serviceClaimRepairPeriod = 3 * time.Minute

// runServiceClaimRepair repairs the Service claims at start and then periodically, until
// ctx is done: a crash between a claim and the Service's write leaks the claim, and a
// restored etcd backup may lack claims.
func runServiceClaimRepair(ctx context.Context, cfg registry.Config, client kubernetes.Interface, logger *slog.Logger) {
	repair := func() {
		services, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				logger.Warn("service claim repair: listing services", "err", err)
			}
			return
		}
		report, err := registry.RepairServiceClaims(ctx, cfg, services.Items, time.Minute)
		if err != nil {
			logger.Warn("service claim repair", "err", err)
			return
		}
		logger.Debug("service claims repaired", "report", report)
	}
	repair()
	t := time.NewTicker(serviceClaimRepairPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			repair()
		}
	}
}
