package node

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/internal/version"
)

// Register creates the Node, or, when it already exists, reconciles this node's labels,
// addresses, capacity, allocatable and nodeInfo onto it, keeping the object, its UID,
// other labels and taints. It retries with backoff (200 ms doubling to 7 s) until it
// succeeds or ctx ends. With RegisterNode off it does nothing and returns nil, nil.
func (a *Agent) Register(ctx context.Context) (*corev1.Node, error) {
	if !a.cfg.RegisterNode {
		a.logger.Info("node registration is disabled; expecting the Node to exist")
		return nil, nil
	}
	for failures := 0; ; {
		node, err := a.registerOnce(ctx)
		if err == nil {
			a.setNodeUID(node.UID)
			a.logger.Info("node registered", "uid", node.UID, "attempts", failures+1)
			return node, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("registering node %s: %w (last error: %v)", a.cfg.NodeName, ctx.Err(), err)
		}
		failures++
		delay := backoffDelay(failures)
		a.logger.Warn("node registration failed; retrying", "attempt", failures, "retryIn", delay, "err", err)
		if !a.wait(ctx, delay) {
			return nil, fmt.Errorf("registering node %s: %w (last error: %v)", a.cfg.NodeName, ctx.Err(), err)
		}
	}
}

func (a *Agent) registerOnce(ctx context.Context) (*corev1.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, registerAttemptTimeout)
	defer cancel()
	nodes := a.client.Nodes()

	created, err := nodes.Create(ctx, a.desiredNode(), metav1.CreateOptions{})
	if err == nil {
		// A server may drop status on create (the API allows either); put it back.
		if !a.applyStatusFacts(&created.Status) {
			return created, nil
		}
		updated, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("node %s created, but setting its status failed: %w", a.cfg.NodeName, err)
		}
		return updated, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating node %s: %w", a.cfg.NodeName, err)
	}

	existing, err := nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("node %s exists, but reading it failed: %w", a.cfg.NodeName, err)
	}
	node := existing.DeepCopy()
	if a.applyLabels(&node.ObjectMeta) {
		if node, err = nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating labels of existing node %s: %w", a.cfg.NodeName, err)
		}
	}
	if a.applyStatusFacts(&node.Status) {
		if node, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating status of existing node %s: %w", a.cfg.NodeName, err)
		}
	}
	return node, nil
}

// desiredNode is the Node as this machine would create it.
func (a *Agent) desiredNode() *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: a.cfg.NodeName},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(a.cfg.Taints)},
	}
	a.applyLabels(&n.ObjectMeta)
	a.applyStatusFacts(&n.Status)
	return n
}

// desiredLabels are the standard labels kubelet sets, then the configured ones.
func (a *Agent) desiredLabels() map[string]string {
	l := map[string]string{
		corev1.LabelArchStable: runtime.GOARCH,
		corev1.LabelOSStable:   "linux",
		corev1.LabelHostname:   a.cfg.NodeName,
	}
	for k, v := range a.cfg.Labels {
		l[k] = v
	}
	return l
}

// applyLabels sets this node's labels on meta, leaving others, and reports a change.
func (a *Agent) applyLabels(meta *metav1.ObjectMeta) bool {
	changed := false
	for k, v := range a.desiredLabels() {
		if cur, ok := meta.Labels[k]; ok && cur == v {
			continue
		}
		if meta.Labels == nil {
			meta.Labels = map[string]string{}
		}
		meta.Labels[k] = v
		changed = true
	}
	return changed
}

// Addresses are the addresses the Node reports: InternalIP (when known) and Hostname.
func (a *Agent) Addresses() []corev1.NodeAddress { return a.desiredAddresses() }

// desiredAddresses lists InternalIP (when known) then Hostname, kubelet's order.
func (a *Agent) desiredAddresses() []corev1.NodeAddress {
	var out []corev1.NodeAddress
	if ip := a.facts.InternalIP; ip != nil && !ip.Equal(net.IPv4zero) && !ip.Equal(net.IPv6zero) {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: a.cfg.NodeName})
}

// applyStatusFacts writes addresses, capacity, allocatable and nodeInfo into st and
// reports whether anything differed. Conditions are the status loop's business.
func (a *Agent) applyStatusFacts(st *corev1.NodeStatus) bool {
	changed := false
	if addrs := a.desiredAddresses(); !apiequality.Semantic.DeepEqual(st.Addresses, addrs) {
		st.Addresses = addrs
		changed = true
	}
	if st.DaemonEndpoints.KubeletEndpoint.Port != a.cfg.APIPort {
		st.DaemonEndpoints.KubeletEndpoint.Port = a.cfg.APIPort
		changed = true
	}
	capacity := nodeCapacity(a.facts, a.cfg.MaxPods)
	if mergeResources(&st.Capacity, capacity) {
		changed = true
	}
	if mergeResources(&st.Allocatable, nodeAllocatable(capacity, a.cfg.SystemReserved, a.cfg.KubeReserved)) {
		changed = true
	}
	// Start from what is there so fields this package does not manage survive.
	info := st.NodeInfo
	info.MachineID = a.facts.MachineID
	info.SystemUUID = a.facts.SystemUUID
	info.BootID = a.facts.BootID
	info.KernelVersion = a.facts.KernelVersion
	info.OSImage = a.facts.OSImage
	info.ContainerRuntimeVersion = a.facts.ContainerRuntimeVersion
	info.KubeletVersion = version.String()
	info.OperatingSystem = "linux"
	info.Architecture = runtime.GOARCH
	if !apiequality.Semantic.DeepEqual(info, st.NodeInfo) {
		st.NodeInfo = info
		changed = true
	}
	return changed
}
