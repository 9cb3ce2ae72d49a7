// Command svcload loads a control plane with N selector-less ClusterIP Services, each
// with one hand-made EndpointSlice of 10 ready endpoints, and can then change one
// Service's slice. It is the load for the side-by-side comparison of plinthd's Service
// proxy with kube-proxy in docs/benchmarks.md; it touches only the objects it names
// (svcload-<i> in the namespace given).
//
//	svcload --kubeconfig admin.kubeconfig --services 10000 create
//	svcload --kubeconfig admin.kubeconfig --from 10000 --services 5000 create   # grow to 15,000
//	svcload --kubeconfig admin.kubeconfig change    # svcload-0's slice: one endpoint replaced
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const endpointsPerService = 10

func main() {
	kubeconfig := flag.String("kubeconfig", "", "admin kubeconfig")
	services := flag.Int("services", 1000, "number of Services to create")
	from := flag.Int("from", 0, "index of the first Service to create (to grow an earlier load)")
	namespace := flag.String("namespace", "default", "namespace of the Services")
	workers := flag.Int("workers", 16, "concurrent requests")
	flag.Parse()
	if flag.NArg() != 1 || (flag.Arg(0) != "create" && flag.Arg(0) != "change") {
		fmt.Fprintln(os.Stderr, "usage: svcload [flags] create|change")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	start := time.Now()
	if flag.Arg(0) == "change" {
		err = change(ctx, client, *namespace)
	} else {
		err = create(ctx, client, *namespace, *from, *from+*services, *workers)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s done in %v\n", flag.Arg(0), time.Since(start).Round(time.Millisecond))
}

// create makes Services from..to-1 and their slices with workers concurrent requests.
func create(ctx context.Context, client kubernetes.Interface, ns string, from, to, workers int) error {
	var next atomic.Int64
	next.Store(int64(from))
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if err := createOne(ctx, client, ns, i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func createOne(ctx context.Context, client kubernetes.Interface, ns string, i int) error {
	name := fmt.Sprintf("svcload-%d", i)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}
	if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("service %s: %w", name, err)
	}
	_, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice(name, ns, i*endpointsPerService), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("endpointslice %s: %w", name, err)
	}
	return nil
}

// slice is name's EndpointSlice with endpoints numbered first..first+9, each a distinct
// address in 10.245.0.0/16 and beyond, on another node.
func slice(name, ns string, first int) *discoveryv1.EndpointSlice {
	ready, port, proto, portName := true, int32(8080), corev1.ProtocolTCP, "http"
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: name,
			discoveryv1.LabelManagedBy:   "svcload",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Protocol: &proto, Port: &port}},
	}
	for e := first; e < first+endpointsPerService; e++ {
		node := "other-node"
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{endpointAddr(e).String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			NodeName:   &node,
		})
	}
	return s
}

func endpointAddr(e int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(245 + e>>16), byte(e >> 8), byte(e)})
}

// change replaces the first endpoint of svcload-0's slice with a fresh address, keeping
// the endpoint count (a partial sync of one Service).
func change(ctx context.Context, client kubernetes.Interface, ns string) error {
	s, err := client.DiscoveryV1().EndpointSlices(ns).Get(ctx, "svcload-0-1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.Endpoints[0].Addresses = []string{netip.AddrFrom4([4]byte{10, 250, byte(time.Now().Unix() >> 8), byte(time.Now().Unix())}).String()}
	_, err = client.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{})
	return err
}
