package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth/plinth/control/apiserver/apitest"
)

// BenchmarkLeaseRenewal is one node heartbeat as the API serves it, with two watchers
// of Leases (as the node lifecycle controller and the lease collector watch them), with
// the object cache on and off. It runs the whole HTTP path in this process, client
// included, so compare the two variants with each other, not with the fleet benchmark:
//
//	go test -run '^$' -bench LeaseRenewal -benchtime 3000x -count 5 ./control/apiserver/
func BenchmarkLeaseRenewal(b *testing.B) {
	for _, v := range []struct {
		name  string
		bytes int64
	}{{"cache=on", 0}, {"cache=off", -1}} {
		b.Run(v.name, func(b *testing.B) {
			s := apitest.Start(b, apitest.Options{ObjectCacheBytes: v.bytes})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			leases := s.Client.CoordinationV1().Leases("kube-node-lease")
			for range 2 {
				w, err := leases.Watch(ctx, metav1.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					for range w.ResultChan() {
					}
				}()
				defer w.Stop()
			}
			const count = 64
			current := make([]*coordinationv1.Lease, count)
			duration := int32(40)
			for i := range current {
				holder := fmt.Sprintf("node-%03d", i)
				l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: holder},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration}}, metav1.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				current[i] = l
			}
			b.ReportAllocs()
			b.ResetTimer()
			for n := range b.N {
				i := n % count
				now := metav1.NewMicroTime(time.Now())
				current[i].Spec.RenewTime = &now
				out, err := leases.Update(ctx, current[i], metav1.UpdateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				current[i] = out
			}
		})
	}
}
