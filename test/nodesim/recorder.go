package nodesim

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// RequestKind names what a node's request was for.
type RequestKind string

// The requests a node agent makes.
const (
	LeaseCreate      RequestKind = "lease-create"
	LeaseUpdate      RequestKind = "lease-update"
	LeaseGet         RequestKind = "lease-get"
	NodeCreate       RequestKind = "node-create"
	NodeGet          RequestKind = "node-get"
	NodeUpdate       RequestKind = "node-update"
	NodeStatusUpdate RequestKind = "node-status-update"
	OtherRequest     RequestKind = "other"
)

// isHeartbeat: a successful request of this kind is a heartbeat the node lifecycle
// controller counts (a new Lease renewTime, or a status post with a new Ready
// lastHeartbeatTime).
func (k RequestKind) isHeartbeat() bool {
	return k == LeaseCreate || k == LeaseUpdate || k == NodeStatusUpdate
}

const (
	leasesPath = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
	nodesPath  = "/api/v1/nodes"
)

// classify tells a node agent's request by method and path.
func classify(method, path string) RequestKind {
	switch {
	case path == leasesPath:
		if method == http.MethodPost {
			return LeaseCreate
		}
	case strings.HasPrefix(path, leasesPath+"/"):
		switch method {
		case http.MethodPut:
			return LeaseUpdate
		case http.MethodGet:
			return LeaseGet
		}
	case path == nodesPath:
		if method == http.MethodPost {
			return NodeCreate
		}
	case strings.HasPrefix(path, nodesPath+"/"):
		rest := strings.TrimPrefix(path, nodesPath+"/")
		name, sub, _ := strings.Cut(rest, "/")
		switch {
		case name == "":
		case sub == "status" && method == http.MethodPut:
			return NodeStatusUpdate
		case sub == "" && method == http.MethodPut:
			return NodeUpdate
		case sub == "" && method == http.MethodGet:
			return NodeGet
		}
	}
	return OtherRequest
}

// Recorder collects the latency of every request the simulated nodes make, by kind:
// from sending the request to receiving the response headers, as the node's client
// sees it. A request fails when it gets no response or a status other than 2xx; the
// failures that were 429 Too Many Requests (the control service shedding load, which
// client-go retries after Retry-After) are also counted apart.
type Recorder struct {
	mu        sync.Mutex
	latencies map[RequestKind][]time.Duration
	failures  map[RequestKind]int
	throttled map[RequestKind]int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{latencies: map[RequestKind][]time.Duration{}, failures: map[RequestKind]int{}, throttled: map[RequestKind]int{}}
}

func (r *Recorder) observe(kind RequestKind, took time.Duration, ok, throttled bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if throttled {
		r.throttled[kind]++
	}
	if !ok {
		r.failures[kind]++
		return
	}
	r.latencies[kind] = append(r.latencies[kind], took)
}

// Reset forgets everything recorded so far, for example what registration sent
// before the steady state to be measured.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.latencies)
	clear(r.failures)
	clear(r.throttled)
}

// Summary is what the Recorder saw of one kind of request.
type Summary struct {
	Count, Failures int
	// Throttled are the failures answered 429.
	Throttled     int
	P50, P99, Max time.Duration
}

// Summary returns the successful count, failures and latency percentiles of kind.
func (r *Recorder) Summary(kind RequestKind) Summary {
	r.mu.Lock()
	lat := slices.Clone(r.latencies[kind])
	failures, throttled := r.failures[kind], r.throttled[kind]
	r.mu.Unlock()
	slices.Sort(lat)
	s := Summary{Count: len(lat), Failures: failures, Throttled: throttled}
	if len(lat) > 0 {
		s.P50, s.P99, s.Max = Percentile(lat, 0.50), Percentile(lat, 0.99), lat[len(lat)-1]
	}
	return s
}

// Percentile returns the p-th percentile (0 < p <= 1) of sorted durations by the
// nearest-rank method; 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p+0.999999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// recordingTransport times one node's requests into the Recorder and tells the node of
// its successful heartbeats.
type recordingTransport struct {
	next     http.RoundTripper
	recorder *Recorder
	clock    clock.PassiveClock
	node     *Node
}

// WrappedRoundTripper lets client-go reach the transport underneath, to cancel
// requests through it.
func (t *recordingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := classify(req.Method, req.URL.Path)
	start := t.clock.Now()
	resp, err := t.next.RoundTrip(req)
	end := t.clock.Now()
	ok := err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300
	t.recorder.observe(kind, end.Sub(start), ok, err == nil && resp.StatusCode == http.StatusTooManyRequests)
	if ok && kind.isHeartbeat() {
		t.node.heartbeat(end)
	}
	return resp, err
}
