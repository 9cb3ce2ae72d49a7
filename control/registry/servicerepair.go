package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth/plinth/control/ipalloc"
)

// RepairReport counts what RepairServiceClaims changed.
type RepairReport struct {
	// Released are claims no stored service holds (left by a write that failed after
	// claiming, or a crash between claim and store).
	Released int
	// Reclaimed are addresses and ports a service holds whose claim was missing.
	Reclaimed int
	// Conflicts are addresses and ports a service holds that another owner claimed;
	// they need an operator (delete and recreate one of the services).
	Conflicts []string
}

// RepairServiceClaims brings the claims in cfg.Store in line with services, the
// stored services of every namespace: claims no service holds are released once older
// than minAge (younger ones may belong to a service still on its way to storage), and
// missing claims of services are made again. List the services before calling, so a
// service created meanwhile only has claims younger than minAge. It is idempotent; run
// it at start and every few minutes, as kube-apiserver's repair loops run.
func RepairServiceClaims(ctx context.Context, cfg Config, services []corev1.Service, minAge time.Duration) (RepairReport, error) {
	var rep RepairReport
	cfg, err := cfg.withDefaults()
	if err != nil {
		return rep, err
	}
	opts := ipalloc.Options{Clock: cfg.Clock}
	ips, err := ipalloc.NewServiceIPs(cfg.Store, cfg.ServiceClusterIPRange, opts)
	if err != nil {
		return rep, err
	}
	ports, err := ipalloc.NewNodePorts(cfg.Store, cfg.ServiceNodePortRange, opts)
	if err != nil {
		return rep, err
	}
	byUID := map[string]*corev1.Service{}
	for i := range services {
		byUID[string(services[i].UID)] = &services[i]
	}
	now := cfg.Clock.Now()
	old := func(o ipalloc.Owner) bool { return now.Sub(o.Claimed) >= minAge }

	heldIPs, err := ips.Held(ctx)
	if err != nil {
		return rep, fmt.Errorf("listing cluster IP claims: %w", err)
	}
	for ip, owner := range heldIPs {
		svc := byUID[owner.UID]
		if held, ok := heldClusterIP(svc); ok && held == ip {
			continue
		}
		if !old(owner) {
			continue
		}
		if err := ips.Release(ctx, ip, owner); err != nil {
			return rep, fmt.Errorf("releasing cluster IP %s of %s: %w", ip, owner, err)
		}
		rep.Released++
	}
	heldPorts, err := ports.Held(ctx)
	if err != nil {
		return rep, fmt.Errorf("listing node port claims: %w", err)
	}
	for port, owner := range heldPorts {
		if svc := byUID[owner.UID]; svc != nil && heldNodePorts(svc)[int32(port)] {
			continue
		}
		if !old(owner) {
			continue
		}
		if err := ports.Release(ctx, port, owner); err != nil {
			return rep, fmt.Errorf("releasing node port %d of %s: %w", port, owner, err)
		}
		rep.Released++
	}

	for i := range services {
		svc := &services[i]
		owner := serviceOwner(svc)
		if ip, ok := heldClusterIP(svc); ok {
			if h, claimed := heldIPs[ip]; !claimed || h.UID != owner.UID {
				rep.note(ips.Claim(ctx, ip, owner), claimed, fmt.Sprintf("cluster IP %s of service %s", ip, owner))
			}
		}
		for port := range heldNodePorts(svc) {
			if h, claimed := heldPorts[int(port)]; !claimed || h.UID != owner.UID {
				rep.note(ports.Claim(ctx, int(port), owner), claimed, fmt.Sprintf("node port %d of service %s", port, owner))
			}
		}
	}
	return rep, nil
}

func (rep *RepairReport) note(err error, wasClaimed bool, what string) {
	switch {
	case err == nil && !wasClaimed:
		rep.Reclaimed++
	case errors.Is(err, ipalloc.ErrAllocated):
		rep.Conflicts = append(rep.Conflicts, what+" is claimed by another service")
	case errors.Is(err, ipalloc.ErrNotInRange):
		rep.Conflicts = append(rep.Conflicts, what+" is outside the configured range")
	case err != nil:
		rep.Conflicts = append(rep.Conflicts, what+": "+err.Error())
	}
}
