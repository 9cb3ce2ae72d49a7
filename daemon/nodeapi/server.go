package nodeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/podlogs"
)

// DefaultBindAddress is kubelet's: all addresses, port 10250.
const DefaultBindAddress = "0.0.0.0:10250"

// AdminGroup is the group whose members may use the node API: administrators and the
// control service (its loopback and node-proxy clients carry it, as kube-apiserver's
// kubelet client does).
const AdminGroup = "system:masters"

// shutdownTimeout bounds how long Run waits for in-flight requests (a log follow ends
// with the context; a slow client must not hold up shutdown).
const shutdownTimeout = 5 * time.Second

// Config wires a Server. Pods, Logs, Stats, Checkpointer, Certificate and ClientCA are
// required.
type Config struct {
	Pods         PodSource
	Logs         LogLocator
	Stats        ResourceStats
	Checkpointer Checkpointer
	Certificate  CertificateSource
	// ClientCA verifies client certificates: the cluster CA.
	ClientCA *x509.Certificate
	// Metrics is plinthd's registry, served on /metrics; nil serves none (404).
	Metrics prometheus.Gatherer
	// Configz is plinthd's effective configuration, served as JSON on /configz.
	Configz any
	// Healthy is /healthz's check; nil is always healthy.
	Healthy func() error
	Clock   clock.Clock
	Logger  *slog.Logger
	// LogPollInterval is how often a followed log is checked; 0 is the default.
	LogPollInterval time.Duration
}

// Server is the node API.
type Server struct {
	cfg     Config
	clients *x509.CertPool
	mux     *http.ServeMux
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Pods == nil || cfg.Logs == nil || cfg.Stats == nil || cfg.Checkpointer == nil || cfg.Certificate == nil || cfg.ClientCA == nil {
		return nil, errors.New("node API: Pods, Logs, Stats, Checkpointer, Certificate and ClientCA are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, clients: x509.NewCertPool(), mux: http.NewServeMux()}
	s.clients.AddCert(cfg.ClientCA)
	s.mux.HandleFunc("GET /healthz", s.healthz)
	if cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))
	}
	s.mux.HandleFunc("GET /metrics/resource", s.resourceMetrics)
	s.mux.HandleFunc("GET /pods", s.pods)
	s.mux.HandleFunc("GET /configz", s.configz)
	s.mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	s.mux.HandleFunc("POST /checkpoint/{namespace}/{pod}/{container}", s.checkpoint)
	return s, nil
}

// TLSConfig asks every client for a certificate without letting the handshake judge
// it: ServeHTTP verifies it against the cluster CA, so a missing or foreign
// certificate gets a 401 that says why rather than a bare handshake failure.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: s.cfg.Certificate.GetCertificate,
		ClientAuth:     tls.RequestClientCert,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}

// ServeHTTP authenticates, authorizes and routes one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	user, groups, err := s.authenticate(req)
	if err != nil {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", err.Error())
		return
	}
	if !slices.Contains(groups, AdminGroup) {
		writeStatus(w, http.StatusForbidden, "Forbidden",
			fmt.Sprintf("user %s (groups %q) may not use the node API: only %s (administrators and the control service) may", user, groups, AdminGroup))
		return
	}
	s.mux.ServeHTTP(w, req)
}

// authenticate returns the user and groups of a client certificate that chains to the
// cluster CA for client authentication.
func (s *Server) authenticate(req *http.Request) (string, []string, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return "", nil, errors.New("a client certificate signed by the cluster CA is required")
	}
	leaf := req.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range req.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: s.clients, Intermediates: inter, CurrentTime: s.cfg.Clock.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return "", nil, fmt.Errorf("client certificate %q is not valid for the cluster CA: %v", leaf.Subject.CommonName, err)
	}
	return leaf.Subject.CommonName, leaf.Subject.Organization, nil
}

// Run serves on addr until ctx is done; listening, when not nil, receives the bound
// address once the socket is open.
func (s *Server) Run(ctx context.Context, addr string, listening func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("node API: listen on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln, listening)
}

// Serve serves on ln until ctx is done.
func (s *Server) Serve(ctx context.Context, ln net.Listener, listening func(net.Addr)) error {
	srv := &http.Server{
		Handler: s, TLSConfig: s.TLSConfig(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	if listening != nil {
		listening(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("node API: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-done
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Healthy != nil {
		if err := s.cfg.Healthy(); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

func (s *Server) pods(w http.ResponseWriter, _ *http.Request) {
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: s.cfg.Pods.Pods()}
	if list.Items == nil {
		list.Items = []corev1.Pod{}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) configz(w http.ResponseWriter, _ *http.Request) {
	// kubelet wraps its configuration as {"kubeletconfig": ...}; plinthd does the same
	// with its own name.
	writeJSON(w, http.StatusOK, map[string]any{"plinthd": s.cfg.Configz})
}

func (s *Server) checkpoint(w http.ResponseWriter, req *http.Request) {
	ns, pod, container := req.PathValue("namespace"), req.PathValue("pod"), req.PathValue("container")
	path, err := s.cfg.Checkpointer.Checkpoint(req.Context(), ns, pod, container)
	switch {
	case errors.Is(err, ErrCheckpointUnavailable):
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	case err != nil:
		http.Error(w, fmt.Sprintf("checkpoint of %s/%s/%s failed: %v", ns, pod, container, err), http.StatusInternalServerError)
		return
	}
	// kubelet answers with the archive's path on the node.
	writeJSON(w, http.StatusOK, map[string][]string{"items": {path}})
}

func (s *Server) containerLogs(w http.ResponseWriter, req *http.Request) {
	ns, pod, container := req.PathValue("namespace"), req.PathValue("pod"), req.PathValue("container")
	q, err := ParseLogQuery(req.URL.Query(), s.cfg.Clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	uid, containerID := "", ""
	for _, p := range s.cfg.Pods.Pods() {
		if p.Namespace == ns && p.Name == pod {
			uid = string(p.UID)
			containerID, _, _ = containerState(&p, container)
		}
	}
	path, err := s.cfg.Logs.Locate(ns, pod, uid, container, q.Previous)
	if errors.Is(err, podlogs.ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	reader := &podlogs.Reader{Clock: s.cfg.Clock, PollInterval: s.cfg.LogPollInterval, Logger: s.cfg.Logger}
	if q.Options.Follow && uid != "" {
		// As kubelet: following ends once the container has stopped or was replaced by
		// a restart, after what it wrote is read.
		reader.Stopped = func() bool { return s.containerFinished(ns, pod, uid, container, containerID) }
	}
	out := &flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok && q.Options.Follow {
		out.flush = f.Flush
	}
	if err := reader.Copy(req.Context(), out, path, q.Options); err != nil && req.Context().Err() == nil {
		s.cfg.Logger.Warn("container log", "namespace", ns, "pod", pod, "container", container, "err", err)
	}
}

// containerFinished says whether the instance of the container that was current when
// a follow began (id, "" when the status did not show one yet) has finished: the pod is
// gone, the container terminated, or another instance replaced it. A status that lags
// behind a just-started container is not taken for an end.
func (s *Server) containerFinished(namespace, name, uid, container, id string) bool {
	for _, p := range s.cfg.Pods.Pods() {
		if p.Namespace != namespace || p.Name != name || string(p.UID) != uid {
			continue
		}
		now, state, ok := containerState(&p, container)
		switch {
		case !ok:
			return false
		case id != "" && now != "" && now != id:
			return true
		default:
			return state.Terminated != nil && (id == "" || now == id)
		}
	}
	return true
}

// containerState returns the status of the pod's container (init, sidecar or regular)
// by that name: its ID and state.
func containerState(pod *corev1.Pod, name string) (id string, state corev1.ContainerState, ok bool) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range list {
			if c.Name == name {
				return c.ContainerID, c.State, true
			}
		}
	}
	return "", corev1.ContainerState{}, false
}

// flushWriter flushes after every write, so a followed line reaches the client at once.
type flushWriter struct {
	w     http.ResponseWriter
	flush func()
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if f.flush != nil {
		f.flush()
	}
	return n, err
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeStatus answers with a metav1.Status, as kubelet's authentication filter does.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
	})
}
