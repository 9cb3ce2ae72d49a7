package auth_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/apiserver/apitest"
	"github.com/plinth/plinth/control/auth"
)

// BenchmarkNodeSecretAuthorization measures what a node's secret get costs the
// authorizer with 1,000 pods in the secret's namespace (10 nodes of 100 pods): read
// live from the real embedded etcd, and from the PodIndex cache.
func BenchmarkNodeSecretAuthorization(b *testing.B) {
	authz := &auth.Authorizer{}
	s := apitest.Start(b, apitest.Options{
		Bind: func(api *apiserver.Server, reg *apiserver.Registry) {
			pods, _ := reg.Lookup(schema.GroupVersion{Version: "v1"}, "pods")
			authz.Pods = auth.ObjectsNodePods(api.Objects(pods))
		},
	})
	ctx := context.Background()
	for i := range 1000 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i)}, Spec: corev1.PodSpec{
			NodeName:         fmt.Sprintf("node-%d", i%10),
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: fmt.Sprintf("pull-%d", i)}},
			Containers:       []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
		}}
		if _, err := s.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	index, err := auth.NewPodIndex(s.Client)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); index.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(runCtx.Done(), index.HasSynced) {
		b.Fatal("pod index did not sync")
	}
	node := apiserver.User{Name: "system:node:node-3", Groups: []string{"system:nodes"}}
	a := apiserver.Attributes{User: node, Verb: "get", Resource: "secrets", Namespace: "default", Name: "pull-993"}
	for _, bc := range []struct {
		name  string
		authz auth.Authorizer
	}{{"live", auth.Authorizer{LivePods: authz.Pods}}, {"cached", auth.Authorizer{Pods: index}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if ok, reason := bc.authz.Authorize(ctx, a); !ok {
					b.Fatal(reason)
				}
			}
		})
	}
}
