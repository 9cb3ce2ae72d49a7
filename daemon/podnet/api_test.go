package podnet_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/controllers/nodeipam"
	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/podnet"
)

// The contract between the halves: a Node registered with the control service gets
// pod CIDRs from node IPAM, and plinthd, through its own client, learns them from
// WaitForPodCIDRs.
func TestNodeLearnsItsPodCIDRsFromNodeIPAM(t *testing.T) {
	srv := apitest.Start(t, apitest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	factory := informers.NewSharedInformerFactory(srv.Client, 0)
	ctrl, err := nodeipam.New(nodeipam.Config{Client: srv.Client, Nodes: factory.Core().V1().Nodes(), Clock: clock.RealClock{},
		Options: nodeipam.Options{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")},
			NodeMaskSizeIPv4: 24, NodeMaskSizeIPv6: 64}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("nodeipam Run: %v", err)
		}
		factory.Shutdown()
	}()
	factory.Start(runCtx.Done())
	go func() { done <- ctrl.Run(runCtx) }()

	client, err := nodeclient.New(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cidrs, err := podnet.WaitForPodCIDRs(ctx, client, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cidrs) != 2 || !netip.MustParsePrefix("10.244.0.0/16").Contains(cidrs[0].Addr()) || cidrs[0].Bits() != 24 ||
		!netip.MustParsePrefix("fd00:10:244::/56").Contains(cidrs[1].Addr()) || cidrs[1].Bits() != 64 {
		t.Errorf("node-1 learned %v; want a /24 of 10.244.0.0/16 and a /64 of fd00:10:244::/56", cidrs)
	}
	// The pod CIDRs feed the allocator as they are.
	if _, err := podnet.NewFake(cidrs...); err != nil {
		t.Errorf("the learned pod CIDRs do not make a network: %v", err)
	}
}
