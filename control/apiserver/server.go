package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/control/storage"
)

// Config wires a Server.
type Config struct {
	Store    *storage.Store
	Registry *Registry
	Clock    clock.PassiveClock
	Logger   *slog.Logger
	// Metrics receives the request metrics; nil means none are exported.
	Metrics prometheus.Registerer
	// Version is what /version reports.
	Version version.Info
	// BookmarkInterval is how often a watch that allows bookmarks gets one.
	BookmarkInterval time.Duration
	// MaxBodyBytes caps request bodies; 0 means 3 MiB, as kube-apiserver.
	MaxBodyBytes int64

	// Authenticators are tried in order; the first that recognises the request's
	// credentials decides. Nil means client certificates only.
	Authenticators []Authenticator
	// Authorizer decides whether a user may make a request; nil allows everyone who
	// authenticated (tests).
	Authorizer Authorizer
	// Admitters check writes with their objects, in order.
	Admitters []Admitter
	// OpenAPI serves /openapi/v3 when set.
	OpenAPI bool
	// Metrics, when set, is served at /metrics to authorized users.
	MetricsHandler http.Handler
	// Inflight caps the requests served at once; the zero value limits nothing.
	Inflight InflightLimits
	// ObjectCacheBytes bounds the cache of decoded objects by their stored size: 0
	// means DefaultObjectCacheBytes, negative turns the cache off.
	ObjectCacheBytes int64
}

// Server is the HTTP handler of the API.
type Server struct {
	cfg      Config
	metrics  *requestMetrics
	inflight *inflightLimiter
	objects  *objectCache
	health   *health
	// latest tells which cached objects are current, while TrackLatest runs.
	latest latestRevisions
	// watches counts open watch streams, so a shutdown can let them end cleanly
	// before the connections close.
	watches sync.WaitGroup
}

// WaitForWatches waits until every open watch has returned, or timeout passes. Serve
// calls it on shutdown after the request contexts are cancelled: clients then see their
// watch end cleanly and resume it from their last resourceVersion, instead of seeing a
// connection error and relisting everything.
func (s *Server) WaitForWatches(timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		s.watches.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}

// New checks the configuration and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Registry == nil {
		return nil, errors.New("apiserver: Store and Registry are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 3 << 20
	}
	if cfg.Authenticators == nil {
		cfg.Authenticators = []Authenticator{ClientCertAuthenticator{}}
	}
	if cfg.Inflight.ReadOnly < 0 || cfg.Inflight.Mutating < 0 {
		return nil, fmt.Errorf("apiserver: in-flight limits %+v: want 0 (no limit) or more", cfg.Inflight)
	}
	m, err := newRequestMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	inflight := newInflightLimiter(cfg.Inflight)
	if cfg.Metrics != nil {
		for _, c := range inflight.collectors() {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, err
			}
		}
	}
	cacheBytes := cfg.ObjectCacheBytes
	if cacheBytes == 0 {
		cacheBytes = DefaultObjectCacheBytes
	}
	objects, err := newObjectCache(max(cacheBytes, 0), cfg.Metrics)
	if err != nil {
		return nil, err
	}
	health, err := newHealth(cfg)
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, metrics: m, inflight: inflight, objects: objects, health: health}, nil
}

// ServeHTTP routes a request to discovery or to a resource.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := s.cfg.Clock.Now()
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	var verb, resource string
	if req2, ok := s.authenticate(rec, req); ok {
		req = req2
		verb, resource = s.serveWithinLimits(rec, req)
	}
	s.metrics.observe(verb, resource, rec.code, s.cfg.Clock.Since(start))
	s.cfg.Logger.Debug("request", "user", userFrom(req.Context()).Name, "method", req.Method,
		"uri", req.URL.RequestURI(), "code", rec.code, "duration", s.cfg.Clock.Since(start))
}

// serveWithinLimits serves the request if its kind has a free in-flight slot (or it is
// exempt) and refuses it with 429 otherwise. Authentication comes first because who
// asks decides whether the limits apply.
func (s *Server) serveWithinLimits(w http.ResponseWriter, req *http.Request) (verb, resource string) {
	kind, exempt := inflightKind(req, userFrom(req.Context()))
	if exempt {
		return s.serve(w, req)
	}
	release, ok := s.inflight.acquire(kind)
	if !ok {
		writeTooManyRequests(w)
		return refusedVerbResource(req)
	}
	defer release()
	return s.serve(w, req)
}

// serve handles the request and returns the verb and resource for metrics.
func (s *Server) serve(w http.ResponseWriter, req *http.Request) (verb, resource string) {
	path := req.URL.Path
	switch {
	case !isResourcePath(path) && !s.authorize(w, req, nonResourceAttributes(req)):
		return "unknown", ""
	case path == "/version" || path == "/version/":
		writeJSON(w, http.StatusOK, s.cfg.Version)
		return "get", "version"
	case path == "/metrics" && s.cfg.MetricsHandler != nil:
		s.cfg.MetricsHandler.ServeHTTP(w, req)
		return "get", "metrics"
	case isHealthPath(path):
		return s.serveHealth(w, req)
	}
	if s.serveDiscovery(w, req) {
		return "get", "discovery"
	}
	if s.cfg.OpenAPI && s.serveOpenAPI(w, req) {
		return "get", "openapi"
	}
	info, ok := parseResourcePath(path)
	if !ok {
		writeError(w, notFoundPath(path))
		return "unknown", ""
	}
	r, ok := s.cfg.Registry.Lookup(info.gv, info.plural)
	if !ok {
		writeError(w, notFoundPath(path))
		return "unknown", ""
	}
	if err := checkScope(r, info); err != nil {
		writeError(w, err)
		return "unknown", r.Plural
	}
	attrs := resourceAttributes(req, r, info)
	if !s.authorize(w, req, attrs) {
		return attrs.Verb, r.Plural
	}
	req = req.WithContext(context.WithValue(req.Context(), attributesKey{}, attrs))
	verb = s.dispatch(w, req, r, info)
	return verb, r.Plural
}

func (s *Server) dispatch(w http.ResponseWriter, req *http.Request, r *Resource, info requestInfo) string {
	q := req.URL.Query()
	switch {
	case req.Method == http.MethodGet && info.name == "" && isTrue(q.Get("watch")):
		s.watch(w, req, r, info)
		return "watch"
	case req.Method == http.MethodGet && info.name == "":
		s.list(w, req, r, info)
		return "list"
	case req.Method == http.MethodGet && r.Readers[info.subresource].Serve != nil:
		r.Readers[info.subresource].Serve(w, req, s.Objects(r), info.namespace, info.name)
		return "get"
	case req.Method == http.MethodGet && info.subresource != "" && info.subresource != "status":
		writeError(w, apierrors.NewMethodNotSupported(schemaGroupResource(r.GroupVersion.Group, r.Plural+"/"+info.subresource), "get"))
		return "unknown"
	case req.Method == http.MethodGet:
		s.get(w, req, r, info)
		return "get"
	case req.Method == http.MethodPost && info.name == "":
		s.create(w, req, r, info)
		return "create"
	case req.Method == http.MethodPost && info.subresource != "":
		s.action(w, req, r, info)
		return "create"
	case req.Method == http.MethodPut && info.name != "":
		s.update(w, req, r, info)
		return "update"
	case req.Method == http.MethodPatch && info.name != "":
		s.patch(w, req, r, info)
		return "patch"
	case req.Method == http.MethodDelete && info.name != "":
		s.delete(w, req, r, info)
		return "delete"
	case req.Method == http.MethodDelete:
		s.deleteCollection(w, req, r, info)
		return "deletecollection"
	}
	writeError(w, apierrors.NewMethodNotSupported(schemaGroupResource(r.GroupVersion.Group, r.Plural), strings.ToLower(req.Method)))
	return "unknown"
}

// checkScope refuses URLs whose namespace or subresource do not fit the resource.
func checkScope(r *Resource, info requestInfo) error {
	gr := schemaGroupResource(r.GroupVersion.Group, r.Plural)
	if !r.Namespaced && info.namespace != "" {
		return apierrors.NewNotFound(gr, info.name)
	}
	_, isAction := r.Actions[info.subresource]
	_, isReader := r.Readers[info.subresource]
	if info.subresource != "" && !(info.subresource == "status" && r.HasStatus) && !isAction && !isReader {
		return apierrors.NewNotFound(gr, info.name+"/"+info.subresource)
	}
	if info.subresource != "" && info.name == "" {
		return apierrors.NewNotFound(gr, "")
	}
	return nil
}

func notFoundPath(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("the server could not find the requested resource (%s)", path),
	}}
}

// isResourcePath reports whether path names a resource (or a resource collection), which
// is authorized with its resource attributes rather than as a non-resource path.
func isResourcePath(path string) bool {
	_, ok := parseResourcePath(path)
	return ok
}

func isTrue(v string) bool { return v == "true" || v == "1" }

// WriteJSON writes one JSON response, for handlers mounted beside the API.
func WriteJSON(w http.ResponseWriter, code int, v any) { writeJSON(w, code, v) }

// WriteError writes err as a metav1.Status, as the API does, for handlers mounted
// beside it.
func WriteError(w http.ResponseWriter, err error) { writeError(w, err) }

// writeJSON writes one JSON response.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeObject writes an object, or its metadata alone as PartialObjectMetadata, in
// JSON or protobuf, stamping its apiVersion and kind.
func writeObject(w http.ResponseWriter, format responseFormat, code int, r *Resource, obj runtime.Object) {
	if format.metadataOnly() {
		m, err := asPartialObjectMetadata(obj)
		if err != nil {
			writeError(w, apierrors.NewInternalError(err))
			return
		}
		obj = m
	} else {
		stampKind(obj, r.GroupVersionKind())
	}
	if format.protobuf() {
		writeProtobuf(w, code, obj)
		return
	}
	writeJSON(w, code, obj)
}

// writeError writes err as a metav1.Status; errors that are not API statuses are 500s.
// It is JSON whatever the request negotiated: client-go decodes a response by its
// Content-Type, and every client has a JSON decoder for a Status.
func writeError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	writeJSON(w, int(st.Code), st)
}

// statusRecorder remembers the response code for metrics and logs, and keeps
// http.Flusher working for watches.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
