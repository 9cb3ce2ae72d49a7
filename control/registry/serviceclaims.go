package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/ipalloc"
)

// ServiceClaims claims cluster IPs and node ports for services through the apiserver's
// hooks: before a service is stored (create and update), given back after it is deleted
// or when an update drops them, and rolled back when the write fails.
type ServiceClaims struct {
	ips    *ipalloc.ServiceIPs
	ports  *ipalloc.NodePorts
	logger *slog.Logger
}

// NewServiceClaims wires the allocators; logger receives releases that failed (the
// claim then stays until repaired).
func NewServiceClaims(ips *ipalloc.ServiceIPs, ports *ipalloc.NodePorts, logger *slog.Logger) *ServiceClaims {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ServiceClaims{ips: ips, ports: ports, logger: logger}
}

func (c *ServiceClaims) hooks() apiserver.Hooks {
	return apiserver.Hooks{
		BeforeCreate: func(ctx context.Context, obj runtime.Object) error {
			return c.claim(ctx, obj.(*corev1.Service), nil)
		},
		BeforeUpdate: func(ctx context.Context, obj, old runtime.Object) error {
			return c.claim(ctx, obj.(*corev1.Service), old.(*corev1.Service))
		},
		AfterUpdate: func(ctx context.Context, obj, old runtime.Object) {
			c.releaseDropped(ctx, obj.(*corev1.Service), old.(*corev1.Service))
		},
		Release: func(ctx context.Context, obj runtime.Object) {
			c.releaseDropped(ctx, &corev1.Service{}, obj.(*corev1.Service))
		},
	}
}

func serviceOwner(s *corev1.Service) ipalloc.Owner {
	return ipalloc.Owner{Namespace: s.Namespace, Name: s.Name, UID: string(s.UID)}
}

// heldClusterIP is the address a stored service holds a claim on, if any.
func heldClusterIP(s *corev1.Service) (netip.Addr, bool) {
	if s == nil || !needsClusterIP(s) {
		return netip.Addr{}, false
	}
	return parseServiceIP(s.Spec.ClusterIP)
}

// heldNodePorts are the node ports a stored service holds claims on.
func heldNodePorts(s *corev1.Service) map[int32]bool {
	out := map[int32]bool{}
	if s == nil {
		return out
	}
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			out[p.NodePort] = true
		}
	}
	if s.Spec.HealthCheckNodePort != 0 {
		out[s.Spec.HealthCheckNodePort] = true
	}
	return out
}

// claim takes what s needs beyond what old (nil on create) already holds, filling in
// the cluster IP and node ports it allocates. When a claim fails, the claims this call
// made are given back and the error names the field and value.
func (c *ServiceClaims) claim(ctx context.Context, s, old *corev1.Service) (err error) {
	owner := serviceOwner(s)
	var undo []func()
	defer func() {
		if err != nil {
			for _, u := range undo {
				u()
			}
		}
	}()
	spec := field.NewPath("spec")
	if needsClusterIP(s) && s.Spec.ClusterIP != corev1.ClusterIPNone {
		oldIP, oldHeld := heldClusterIP(old)
		switch ip, ok := parseServiceIP(s.Spec.ClusterIP); {
		case ok && oldHeld && ip == oldIP:
		case ok:
			if err := c.ips.Claim(ctx, ip, owner); err != nil {
				return c.claimError(s, spec.Child("clusterIP"), s.Spec.ClusterIP, err)
			}
			undo = append(undo, func() { c.releaseIP(ctx, ip, owner) })
		default:
			ip, err := c.ips.Allocate(ctx, owner)
			if err != nil {
				return c.claimError(s, spec.Child("clusterIP"), "", err)
			}
			undo = append(undo, func() { c.releaseIP(ctx, ip, owner) })
			s.Spec.ClusterIP, s.Spec.ClusterIPs = ip.String(), []string{ip.String()}
		}
	}
	oldPorts := heldNodePorts(old)
	claimPort := func(path *field.Path, port int32) error {
		if oldPorts[port] {
			return nil
		}
		if err := c.ports.Claim(ctx, int(port), owner); err != nil {
			return c.claimError(s, path, port, err)
		}
		oldPorts[port] = true // claimed once, even when two protocols share it
		undo = append(undo, func() { c.releasePort(ctx, port, owner) })
		return nil
	}
	allocatePort := func(path *field.Path) (int32, error) {
		var inUse []int
		for p := range heldNodePorts(s) {
			inUse = append(inUse, int(p))
		}
		port, err := c.ports.Allocate(ctx, owner, inUse)
		if err != nil {
			return 0, c.claimError(s, path, 0, err)
		}
		if !oldPorts[int32(port)] {
			undo = append(undo, func() { c.releasePort(ctx, int32(port), owner) })
		}
		return int32(port), nil
	}
	if needsNodePorts(s) {
		// Ports the client chose first, so allocation knows everything in use.
		for i, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				if err := claimPort(spec.Child("ports").Index(i).Child("nodePort"), p.NodePort); err != nil {
					return err
				}
			}
		}
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			if p.NodePort != 0 {
				continue
			}
			// The same port over another protocol shares its node port.
			if np := sharedNodePort(s, p); np != 0 {
				p.NodePort = np
				continue
			}
			np, err := allocatePort(spec.Child("ports").Index(i).Child("nodePort"))
			if err != nil {
				return err
			}
			p.NodePort = np
		}
	}
	if needsHealthCheckNodePort(s) {
		path := spec.Child("healthCheckNodePort")
		if hc := s.Spec.HealthCheckNodePort; hc != 0 {
			if err := claimPort(path, hc); err != nil {
				return err
			}
		} else {
			np, err := allocatePort(path)
			if err != nil {
				return err
			}
			s.Spec.HealthCheckNodePort = np
		}
	}
	return nil
}

// sharedNodePort finds the node port another entry for the same port number uses,
// unless that node port already serves this protocol.
func sharedNodePort(s *corev1.Service, p *corev1.ServicePort) int32 {
	for _, q := range s.Spec.Ports {
		if q.Port != p.Port || q.NodePort == 0 || q.Protocol == p.Protocol {
			continue
		}
		taken := false
		for _, r := range s.Spec.Ports {
			if r.NodePort == q.NodePort && r.Protocol == p.Protocol {
				taken = true
			}
		}
		if !taken {
			return q.NodePort
		}
	}
	return 0
}

// claimError turns an allocator error into the API's answer: 422 naming the field for
// a value that is taken or out of range, 500 for a full range or a storage failure.
func (c *ServiceClaims) claimError(s *corev1.Service, path *field.Path, value any, err error) error {
	ipField := path.String() == "spec.clusterIP"
	what, kind := "port", "ports"
	rng := c.ports.Range().String()
	if ipField {
		what, kind, rng = "IP", "IPs", c.ips.Range().String()
	}
	switch {
	case errors.Is(err, ipalloc.ErrAllocated):
		return apierrors.NewInvalid(serviceGroupKind, s.Name, field.ErrorList{
			field.Invalid(path, value, fmt.Sprintf("provided %s is already allocated", what)),
		})
	case errors.Is(err, ipalloc.ErrNotInRange):
		return apierrors.NewInvalid(serviceGroupKind, s.Name, field.ErrorList{
			field.Invalid(path, value, fmt.Sprintf("provided %s is not in the valid range. The range of valid %s is %s", what, kind, rng)),
		})
	case errors.Is(err, ipalloc.ErrFull):
		if ipField {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range %s is full", rng))
		}
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range %s is full", rng))
	}
	return apierrors.NewInternalError(fmt.Errorf("claiming %s for service %s/%s: %w", path, s.Namespace, s.Name, err))
}

// releaseDropped gives back what old held and s no longer does.
func (c *ServiceClaims) releaseDropped(ctx context.Context, s, old *corev1.Service) {
	owner := serviceOwner(old)
	if ip, ok := heldClusterIP(old); ok {
		if now, ok := heldClusterIP(s); !ok || now != ip {
			c.releaseIP(ctx, ip, owner)
		}
	}
	keep := heldNodePorts(s)
	for port := range heldNodePorts(old) {
		if !keep[port] {
			c.releasePort(ctx, port, owner)
		}
	}
}

func (c *ServiceClaims) releaseIP(ctx context.Context, ip netip.Addr, owner ipalloc.Owner) {
	if err := c.ips.Release(context.WithoutCancel(ctx), ip, owner); err != nil {
		c.logger.Error("cluster IP not released; it stays claimed until repaired", "ip", ip, "service", owner.String(), "err", err)
	}
}

func (c *ServiceClaims) releasePort(ctx context.Context, port int32, owner ipalloc.Owner) {
	if err := c.ports.Release(context.WithoutCancel(ctx), int(port), owner); err != nil {
		c.logger.Error("node port not released; it stays claimed until repaired", "port", port, "service", owner.String(), "err", err)
	}
}
