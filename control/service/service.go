package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/apiserver"
	"github.com/plinth/plinth/control/controllers/endpointslice"
	"github.com/plinth/plinth/control/controllers/gc"
	"github.com/plinth/plinth/control/controllers/leasegc"
	"github.com/plinth/plinth/control/controllers/namespace"
	"github.com/plinth/plinth/control/controllers/nodeipam"
	"github.com/plinth/plinth/control/controllers/nodelifecycle"
	"github.com/plinth/plinth/control/controllers/podgc"
	"github.com/plinth/plinth/control/controllers/scheduler"
	"github.com/plinth/plinth/control/controllers/tainteviction"
	"github.com/plinth/plinth/control/pki"
	"github.com/plinth/plinth/control/registry"
	"github.com/plinth/plinth/control/storage"
	"github.com/plinth/plinth/internal/profiling"
	plinthversion "github.com/plinth/plinth/internal/version"
	"github.com/plinth/plinth/internal/watchdog"
)

// Kubernetes minor version whose API subset the control service serves. kubectl
// dispatchers pick their client version from it, and kubectl warns about skew against it.
const (
	kubernetesMajor = "1"
	kubernetesMinor = "33"
)

// Running describes a started control service, for callers that wait on it (tests).
type Running struct {
	Addr            net.Addr
	AdminKubeconfig string
}

// Run starts everything and blocks until ctx is done or a part fails. ready, if not nil,
// receives the listening address once the API serves and the admin kubeconfig exists.
func Run(ctx context.Context, o Options, logger *slog.Logger, ready func(Running)) error {
	return RunNotifying(ctx, o, logger, nil, ready)
}

// RunNotifying is Run speaking the systemd notify protocol to notifier (nil: silent):
// STATUS= while it starts, READY=1 once the API serves, WATCHDOG=1 while the API
// answers its own /livez through the listener (when systemd asked for a watchdog in
// WATCHDOG_USEC), and STOPPING=1 when it begins to stop.
func RunNotifying(ctx context.Context, o Options, logger *slog.Logger, notifier watchdog.Notifier, ready func(Running)) error {
	if err := o.Complete(); err != nil {
		return err
	}
	if notifier == nil {
		notifier = silentNotifier{}
	}
	watchdogInterval, err := watchdog.IntervalFromEnv()
	if err != nil {
		return err
	}
	_ = watchdog.Status(notifier, "connecting to etcd "+etcdDescription(o))
	authority, err := pki.LoadOrCreate(o.pkiDir(), pki.Options{ServingHosts: o.TLSSANs, Logger: logger})
	if err != nil {
		return err
	}
	etcdClient, closeEtcd, etcdErrs, err := openEtcd(ctx, o, logger)
	if err != nil {
		return err
	}
	defer closeEtcd()
	store := storage.New(etcdClient, o.EtcdPrefix)
	nodes := &lateNodes{}
	authn, err := newAuthWiring(o, store, authority, nodes, logger)
	if err != nil {
		return err
	}
	tlsConfig, err := servingTLSConfig(authority)
	if err != nil {
		return err
	}

	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	serviceCIDR, nodePorts, _ := o.serviceRanges() // checked by Complete
	nodeProxy, err := newNodeProxy(authority, nodes, logger.With("component", "nodeproxy"))
	if err != nil {
		return err
	}
	defer nodeProxy.Close()
	regCfg := registry.Config{
		Store: store, ServiceClusterIPRange: serviceCIDR, ServiceNodePortRange: nodePorts,
		Logger: logger.With("component", "registry"), NodeLogs: nodeProxy,
	}
	resources, err := registry.Resources(regCfg)
	if err != nil {
		return err
	}
	reg, err := apiserver.NewRegistry(resources...)
	if err != nil {
		return err
	}
	api, err := apiserver.New(apiserver.Config{
		Store: store, Registry: reg, Logger: logger.With("component", "apiserver"), Metrics: metrics,
		MetricsHandler: promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}), OpenAPI: true, Inflight: o.Inflight,
		ObjectCacheBytes: objectCacheBytes(o.ObjectCacheMiB),
		Authenticators:   authn.authenticators, Authorizer: authn.authorizer, Admitters: []apiserver.Admitter{authn.admission, registry.NamespaceDeletionGuard{}},
		Version: version.Info{
			Major: kubernetesMajor, Minor: kubernetesMinor,
			GitVersion: fmt.Sprintf("v%s.%s.0+plinth.%s", kubernetesMajor, kubernetesMinor, plinthversion.String()),
			Platform:   "linux/" + runtime.GOARCH,
		},
	})
	if err != nil {
		return err
	}
	authn.bindPods(api, reg)
	nodes.bind(api, reg)

	addr := net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (--bind-address, --secure-port): %w", addr, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	server := o.serverURL(port)
	if err := authority.WriteClientKubeconfig(o.AdminKubeconfig, server, pki.AdminUser, []string{pki.AdminGroup}); err != nil {
		ln.Close()
		return err
	}
	loopback, loopbackConfig, err := loopbackClient(authority, port)
	if err != nil {
		ln.Close()
		return err
	}
	if err := authn.bindPodIndex(loopback); err != nil {
		ln.Close()
		return err
	}

	// One identity names this replica in the leader Lease and in its identity Lease.
	hostname, err := os.Hostname()
	if err != nil {
		ln.Close()
		return fmt.Errorf("reading the hostname, which names the replica's identity Lease: %w", err)
	}
	if o.LeaderElection.Identity == "" {
		o.LeaderElection.Identity = hostname + "_" + string(uuid.NewUUID())
	}
	identityLease, err := leasegc.NewPublisher(leasegc.PublisherConfig{Client: loopback, Clock: clock.RealClock{},
		Hostname: hostname, Identity: o.LeaderElection.Identity, Logger: logger})
	if err != nil {
		ln.Close()
		return err
	}

	// Leader election has a client of its own, as in kube-controller-manager: behind
	// the controllers' rate limiter (a burst of events, a sweep's writes) its renewals
	// could miss the renew deadline and stop the loops of a healthy leader.
	electionConfig := rest.CopyConfig(loopbackConfig)
	electionConfig.QPS, electionConfig.Burst = -1, 0
	electionClient, err := kubernetes.NewForConfig(electionConfig)
	if err != nil {
		ln.Close()
		return fmt.Errorf("leader election client: %w", err)
	}

	var profilingLn net.Listener
	if o.ProfilingAddress != "" {
		if profilingLn, err = net.Listen("tcp", o.ProfilingAddress); err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s (--profiling-address): %w", o.ProfilingAddress, err)
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	dog := watchdog.New(notifier, watchdogInterval, func() error { return livezThroughListener(loopback) },
		clock.RealClock{}, logger.With("component", "watchdog"))
	g.Go(func() error { return dog.Run(gctx) })
	if profilingLn != nil {
		g.Go(func() error {
			return profiling.Serve(gctx, profilingLn, "--profiling-address", logger.With("component", "profiling"))
		})
	}
	// The API stops serving only after the control loops stopped and the leader Lease
	// was released through it (or 5 s passed), so another replica, or this one
	// restarted, takes over at once instead of waiting out the Lease.
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	leaderDone := make(chan struct{})
	g.Go(func() error { return apiserver.Serve(serveCtx, ln, authn.wrap(api), tlsConfig, logger) })
	g.Go(func() error { api.TrackLatest(serveCtx, clock.RealClock{}); return nil })
	g.Go(func() error {
		<-gctx.Done()
		api.BeginShutdown() // /readyz fails: load balancers drain while the Lease goes
		_ = watchdog.Stopping(notifier)
		select {
		case <-leaderDone:
		case <-time.After(5 * time.Second):
		}
		stopServing()
		return nil
	})
	g.Go(func() error { authn.runTokenGC(gctx); return nil })
	g.Go(func() error { authn.runPodIndex(gctx); return nil })
	g.Go(func() error {
		select {
		case err := <-etcdErrs:
			return fmt.Errorf("etcd: %w", err)
		case <-gctx.Done():
			return nil
		}
	})
	g.Go(func() error {
		store.RunCompactor(gctx, o.CompactionInterval, clock.RealClock{}, logger.With("component", "compactor"))
		return nil
	})
	g.Go(func() error {
		defer close(leaderDone)
		return runAsLeader(gctx, electionClient, o.LeaderElection, metrics, logger.With("component", "leader-election"),
			func(ctx context.Context) error {
				// Each term of leadership registers its controllers' metrics anew.
				scoped := &scopedRegisterer{reg: metrics}
				defer scoped.unregisterAll()
				return runControllers(ctx, loopback, loopbackConfig, o, scoped, logger)
			})
	})

	// default, kube-system, kube-node-lease and kube-public exist before anyone is told
	// the API serves.
	if err := registry.EnsureDefaultNamespaces(gctx, loopback.CoreV1()); err != nil {
		g.Go(func() error { return err }) // stops everything started above
		werr := g.Wait()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("creating the default namespaces: %w", werr)
	}
	g.Go(func() error {
		runServiceClaimRepair(gctx, regCfg, loopback, logger.With("component", "service-claim-repair"))
		return nil
	})
	// Every replica, leader or not, publishes its identity Lease (in kube-system, which
	// exists now); the leader's loops delete those of replicas long gone.
	g.Go(func() error { return identityLease.Run(gctx) })
	logger.Info("control service serving", "address", ln.Addr().String(), "server", server,
		"admin_kubeconfig", o.AdminKubeconfig, "etcd", etcdDescription(o))
	if err := watchdog.Ready(notifier, fmt.Sprintf("serving the API on %s; etcd %s", ln.Addr(), etcdDescription(o))); err != nil {
		logger.Warn("telling systemd the service is ready", "err", err)
	}
	if ready != nil {
		ready(Running{Addr: ln.Addr(), AdminKubeconfig: o.AdminKubeconfig})
	}
	err = g.Wait()
	if err != nil && ctx.Err() == nil {
		return err
	}
	logger.Info("control service stopped")
	return nil
}

func openEtcd(ctx context.Context, o Options, logger *slog.Logger) (*clientv3.Client, func(), <-chan error, error) {
	if len(o.EtcdServers) > 0 {
		started := time.Now()
		ext, err := storage.ConnectExternal(ctx, o.externalEtcd(logger.With("component", "etcd")))
		if err != nil {
			return nil, nil, nil, err
		}
		logger.Info("external etcd answered", "endpoint", ext.Endpoint, "version", ext.Version, "tls", ext.TLS, "took", time.Since(started).Round(time.Millisecond))
		return ext.Client, ext.Close, make(chan error), nil
	}
	started := time.Now()
	e, err := storage.StartEmbedded(ctx, o.etcdDir(), time.Minute, logger.With("component", "etcd"))
	if err != nil {
		return nil, nil, nil, err
	}
	logger.Info("embedded etcd ready", "dir", o.etcdDir(), "took", time.Since(started).Round(time.Millisecond))
	return e.Client, e.Close, e.Err(), nil
}

// silentNotifier is the Notifier of a control service not run by systemd.
type silentNotifier struct{}

func (silentNotifier) Notify(string) error { return nil }

// livezTimeout bounds the watchdog's own probe; a probe that takes longer withholds
// the ping, which is the point.
const livezTimeout = 5 * time.Second

// livezThroughListener asks the API's /livez over the loopback connection, so the
// watchdog pings only while the listener accepts, TLS completes and the handler
// chain answers: a hung server is restarted, not just a dead process.
func livezThroughListener(loopback kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(context.Background(), livezTimeout)
	defer cancel()
	body, err := loopback.Discovery().RESTClient().Get().AbsPath("/livez").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("GET /livez: %w", err)
	}
	if string(body) != "ok" {
		return fmt.Errorf("GET /livez: %q", body)
	}
	return nil
}

func etcdDescription(o Options) string {
	if len(o.EtcdServers) > 0 {
		return fmt.Sprint(o.EtcdServers)
	}
	return "embedded in " + o.etcdDir()
}

// protobufContentType is Kubernetes' protobuf media type.
const protobufContentType = "application/vnd.kubernetes.protobuf"

// loopbackClient is the controllers' client: an in-memory certificate for the control
// service's own identity, talking to its own listener. The config is for controllers
// that need other clients (dynamic, metadata) to the same place.
func loopbackClient(authority *pki.Authority, port int) (kubernetes.Interface, *rest.Config, error) {
	cert, key, err := authority.IssueClientCert(pki.ControlUser, []string{pki.AdminGroup}, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("loopback client certificate: %w", err)
	}
	cfg := &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", port),
		TLSClientConfig: rest.TLSClientConfig{CAData: authority.CAPEM(), CertData: cert, KeyData: key},
		QPS:             100,
		Burst:           200,
		UserAgent:       "plinth-control/" + plinthversion.String(),
	}
	// Protobuf, as kube-controller-manager speaks: decoding the informers' watch events
	// in JSON was a tenth of the control service's CPU at 5,000 nodes. client-go's typed
	// clients ask for it anyway when no content type is set; this makes every request
	// of the clientset do so. The dynamic client built from this config speaks JSON
	// regardless (it works on unstructured objects); the metadata client sets its own
	// media types (PartialObjectMetadata in protobuf).
	cfg.ContentType = protobufContentType
	cfg.AcceptContentTypes = protobufContentType + ",application/json"
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("loopback client: %w", err)
	}
	return c, cfg, nil
}

// runControllers starts the informers and the control loops and waits for them.
func runControllers(ctx context.Context, client kubernetes.Interface, cfg *rest.Config, o Options, reg prometheus.Registerer, logger *slog.Logger) error {
	// The garbage collector watches every resource but reads only metadata, through
	// the metadata client, as kube-controller-manager's does: the server sends
	// PartialObjectMetadata in protobuf, so no watch event (a Lease renewal per node
	// every 10 s) is decoded whole, as JSON into an unstructured map.
	metadataClient, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("loopback metadata client: %w", err)
	}
	// The namespace controller works on every resource, as unstructured objects
	// through the dynamic client, which speaks JSON.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("loopback dynamic client: %w", err)
	}
	collector, err := gc.New(gc.Config{Client: metadataClient, Discovery: client.Discovery(), Clock: clock.RealClock{},
		Registerer: reg, Logger: logger, Options: gc.DefaultOptions()})
	if err != nil {
		return err
	}
	namespaces, err := namespace.New(namespace.Config{Client: dyn, Discovery: client.Discovery(), Clock: clock.RealClock{},
		Registerer: reg, Logger: logger, Options: namespace.DefaultOptions()})
	if err != nil {
		return err
	}
	all := informers.NewSharedInformerFactory(client, 0)
	nodeLeases := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("kube-node-lease"))
	// Events go through the API like any client's; the broadcaster drops rather than
	// blocks when the API is slow, so recording never stalls a control loop.
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer events.Shutdown()
	lifecycle, err := nodelifecycle.New(nodelifecycle.Config{Client: client, Nodes: all.Core().V1().Nodes(),
		Leases: nodeLeases.Coordination().V1().Leases(), Pods: all.Core().V1().Pods(), Clock: clock.RealClock{},
		Registerer: reg, Logger: logger, Options: o.NodeLifecycle,
		Recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "node-controller"})})
	if err != nil {
		return err
	}
	evictions, err := tainteviction.New(tainteviction.Config{Client: client, Pods: all.Core().V1().Pods(),
		Nodes: all.Core().V1().Nodes(), Clock: clock.RealClock{}, Registerer: reg, Logger: logger,
		Recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "taint-eviction-controller"})})
	if err != nil {
		return err
	}
	endpointSlices, err := endpointslice.New(endpointslice.Config{Client: client, Services: all.Core().V1().Services(),
		Pods: all.Core().V1().Pods(), Nodes: all.Core().V1().Nodes(), Slices: all.Discovery().V1().EndpointSlices(),
		Clock: clock.RealClock{}, Registerer: reg, Logger: logger, Options: endpointslice.DefaultOptions(),
		Recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "endpoint-slice-controller"})})
	if err != nil {
		return err
	}
	placement, err := scheduler.New(scheduler.Config{Client: client, Pods: all.Core().V1().Pods(), Nodes: all.Core().V1().Nodes(),
		Clock: clock.RealClock{}, Registerer: reg, Logger: logger, Options: scheduler.DefaultOptions(),
		Recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: corev1.DefaultSchedulerName})})
	if err != nil {
		return err
	}
	podCollector, err := podgc.New(podgc.Config{Client: client, Pods: all.Core().V1().Pods(), Nodes: all.Core().V1().Nodes(),
		Clock: clock.RealClock{}, Registerer: reg, Logger: logger, Options: o.PodGC})
	if err != nil {
		return err
	}
	identityLeases := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(leasegc.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = leasegc.LabelSelector }))
	identityCollector, err := leasegc.NewCollector(leasegc.CollectorConfig{Client: client, Leases: identityLeases.Coordination().V1().Leases(),
		Clock: clock.RealClock{}, Registerer: reg, Logger: logger})
	if err != nil {
		return err
	}
	nodeIPAM, err := newNodeIPAM(client, all.Core().V1().Nodes(), o, reg, logger, events)
	if err != nil {
		return err
	}
	// The informers stop when this function returns, also when a loop failed.
	ctx, stop := context.WithCancel(ctx)
	all.Start(ctx.Done())
	nodeLeases.Start(ctx.Done())
	identityLeases.Start(ctx.Done())
	defer func() {
		stop()
		all.Shutdown()
		nodeLeases.Shutdown()
		identityLeases.Shutdown()
	}()
	loops, lctx := errgroup.WithContext(ctx)
	loops.Go(func() error { return collector.Run(lctx) })
	loops.Go(func() error { return namespaces.Run(lctx) })
	loops.Go(func() error {
		if err := lifecycle.Run(lctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	})
	loops.Go(func() error { return evictions.Run(lctx) })
	loops.Go(func() error { return endpointSlices.Run(lctx) })
	loops.Go(func() error { return placement.Run(lctx) })
	loops.Go(func() error { return podCollector.Run(lctx) })
	loops.Go(func() error { return identityCollector.Run(lctx) })
	if nodeIPAM != nil {
		loops.Go(func() error { return nodeIPAM.Run(lctx) })
	}
	return loops.Wait()
}

// newNodeIPAM is the node IPAM controller, nil when --cluster-cidr is empty.
func newNodeIPAM(client kubernetes.Interface, nodes coreinformers.NodeInformer, o Options, reg prometheus.Registerer,
	logger *slog.Logger, events record.EventBroadcaster) (*nodeipam.Controller, error) {
	if !o.NodeIPAM.Enabled() {
		logger.Info("node IPAM off: no --cluster-cidr")
		return nil, nil
	}
	return nodeipam.New(nodeipam.Config{Client: client, Nodes: nodes, Clock: clock.RealClock{}, Registerer: reg, Logger: logger,
		Options:  o.NodeIPAM,
		Recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "node-controller"})})
}

// objectCacheBytes turns --object-cache-size into the API's setting, where 0 means the
// default and negative means off.
func objectCacheBytes(mib int) int64 {
	if mib == 0 {
		return -1
	}
	return int64(mib) << 20
}
