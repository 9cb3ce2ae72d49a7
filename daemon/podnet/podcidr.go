package podnet

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/plinth/plinth/controlclient/nodeclient"
)

// NodePodCIDRs parses a Node's pod CIDRs: spec.podCIDRs, or spec.podCIDR alone when
// only that is set. None is (nil, nil); an unparsable one is an error naming it.
func NodePodCIDRs(n *corev1.Node) ([]netip.Prefix, error) {
	list := n.Spec.PodCIDRs
	if len(list) == 0 && n.Spec.PodCIDR != "" {
		list = []string{n.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for i, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("node %s: spec.podCIDRs[%d]: %q is not a CIDR", n.Name, i, s)
		}
		if err := CheckPodCIDR(p); err != nil {
			return nil, fmt.Errorf("node %s: spec.podCIDRs[%d]: %w", n.Name, i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// WaitForPodCIDRs watches the Node named node until the control service has given it
// pod CIDRs (node IPAM does so at registration), and returns them; ctx bounds the
// wait. The runtime calls it before the first Setup; hostNetwork pods need not wait.
func WaitForPodCIDRs(ctx context.Context, client nodeclient.Interface, node string) ([]netip.Prefix, error) {
	var cidrs []netip.Prefix
	_, err := watchtools.UntilWithSync(ctx, nodeclient.NodeListerWatcher(client, node), &corev1.Node{}, nil,
		func(ev watch.Event) (bool, error) {
			n, ok := ev.Object.(*corev1.Node)
			// The name is checked here too: the field selector is the server's to apply.
			if !ok || ev.Type == watch.Deleted || n.Name != node {
				return false, nil
			}
			got, err := NodePodCIDRs(n)
			if err != nil {
				return false, err
			}
			cidrs = got
			return len(got) > 0, nil
		})
	if err != nil {
		return nil, fmt.Errorf("waiting for node %s's pod CIDRs: %w", node, err)
	}
	return cidrs, nil
}
