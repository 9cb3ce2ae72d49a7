package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth/plinth/control/service"
)

// startControl runs the whole control service in-process: embedded etcd in a temporary
// directory, TLS with client certificates, and the controllers.
func startControl(b *testing.B) kubernetes.Interface {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := service.DefaultOptions()
	opts.DataDir = b.TempDir()
	opts.BindAddress = "127.0.0.1"
	opts.SecurePort = 0
	ready := make(chan service.Running, 1)
	done := make(chan error, 1)
	go func() {
		done <- service.Run(ctx, opts, slog.New(slog.NewTextHandler(io.Discard, nil)), func(r service.Running) { ready <- r })
	}()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	var running service.Running
	select {
	case running = <-ready:
	case err := <-done:
		b.Fatalf("control service: %v", err)
	case <-time.After(time.Minute):
		b.Fatal("control service did not start")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", running.AdminKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	// The benchmark paces itself; client-side rate limiting would only hide the server.
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// parallel runs fn(i) for i in [0, n) on workers goroutines.
func parallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

const (
	leaseCount  = 5000
	targetRate  = 500 // updates per second
	pacedPeriod = 10 * time.Second
	workers     = 64
)

// BenchmarkLeaseUpdates measures node heartbeats as the control service sees them:
// 5,000 distinct Leases, updated at a steady 500 per second (p50 and p99 latency), then
// as fast as 64 clients can (sustained updates per second).
func BenchmarkLeaseUpdates(b *testing.B) { benchLeaseUpdates(b, startControl(b)) }

// BenchmarkListNodes measures listing 5,000 Nodes through client-go, in one response
// and in pages of 500 as kubectl asks for them.
func BenchmarkListNodes(b *testing.B) { benchListNodes(b, startControl(b)) }

func benchLeaseUpdates(b *testing.B, client kubernetes.Interface) {
	ctx := context.Background()
	leases := client.CoordinationV1().Leases("kube-node-lease")
	cache := make([]*coordinationv1.Lease, leaseCount)
	duration := int32(40)
	err := parallel(leaseCount, workers, func(i int) error {
		holder := fmt.Sprintf("node-%05d", i)
		l, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: holder},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration},
		}, metav1.CreateOptions{})
		cache[i] = l
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	renew := func(i int) (time.Duration, error) {
		mu.Lock()
		l := cache[i].DeepCopy()
		mu.Unlock()
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		start := time.Now()
		out, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		took := time.Since(start)
		if err != nil {
			return took, err
		}
		mu.Lock()
		cache[i] = out
		mu.Unlock()
		return took, nil
	}

	// Paced: one update every 2 ms, handed to the workers.
	b.ResetTimer()
	jobs := make(chan int, workers)
	latencies := make([]time.Duration, 0, int(pacedPeriod.Seconds())*targetRate)
	var latMu sync.Mutex
	var failures atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				took, err := renew(i)
				if err != nil {
					failures.Add(1)
					continue
				}
				latMu.Lock()
				latencies = append(latencies, took)
				latMu.Unlock()
			}
		})
	}
	// Each update has its slot on an absolute schedule, so a late slot is caught up
	// rather than dropped (as a ticker would drop it).
	start := time.Now()
	interval := time.Second / targetRate
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= pacedPeriod {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		jobs <- i % leaseCount
	}
	close(jobs)
	wg.Wait()
	pacedTook := time.Since(start)
	slices.Sort(latencies)

	// Unthrottled for a few seconds.
	var done atomic.Int64
	stop := time.Now().Add(5 * time.Second)
	var wg2 sync.WaitGroup
	for w := range workers {
		wg2.Go(func() {
			for i := w; time.Now().Before(stop); i += workers {
				if _, err := renew(i % leaseCount); err == nil {
					done.Add(1)
				}
			}
		})
	}
	maxStart := time.Now()
	wg2.Wait()
	maxRate := float64(done.Load()) / time.Since(maxStart).Seconds()
	b.StopTimer()

	b.ReportMetric(float64(len(latencies))/pacedTook.Seconds(), "paced-updates/s")
	b.ReportMetric(float64(percentile(latencies, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(maxRate, "max-updates/s")
	b.ReportMetric(float64(failures.Load()), "failures")
}

func benchListNodes(b *testing.B, client kubernetes.Interface) {
	ctx := context.Background()
	nodes := client.CoreV1().Nodes()
	err := parallel(5000, workers, func(i int) error {
		_, err := nodes.Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node-%05d", i)}},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "PlinthdReady"}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v0.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)"},
			},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var whole, paged time.Duration
	for range 5 {
		start := time.Now()
		list, err := nodes.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 5000 {
			b.Fatalf("list: %v, %d items", err, len(list.Items))
		}
		whole += time.Since(start)
		start = time.Now()
		count := 0
		opts := metav1.ListOptions{Limit: 500}
		for {
			page, err := nodes.List(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			count += len(page.Items)
			if page.Continue == "" {
				break
			}
			opts.Continue = page.Continue
		}
		if count != 5000 {
			b.Fatalf("paged list saw %d nodes", count)
		}
		paged += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(whole.Milliseconds())/5, "list-ms")
	b.ReportMetric(float64(paged.Milliseconds())/5, "paged-list-ms")
}
