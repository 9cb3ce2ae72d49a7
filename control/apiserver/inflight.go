package apiserver

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// InflightLimits cap how many requests the server works on at once, as kube-apiserver's
// --max-requests-inflight and --max-mutating-requests-inflight. A request beyond its
// limit is answered at once with 429 Too Many Requests and Retry-After, which client-go
// honors by retrying later: under overload the server sheds work it cannot do in time
// instead of queueing it until every request, heartbeats included, is seconds late.
type InflightLimits struct {
	// ReadOnly caps gets and lists; 0 means no limit.
	ReadOnly int
	// Mutating caps creates, updates, patches, deletes and actions; 0 means no limit.
	Mutating int
}

// DefaultInflightLimits are kube-apiserver's defaults.
func DefaultInflightLimits() InflightLimits { return InflightLimits{ReadOnly: 400, Mutating: 200} }

// The request_kind label values, kube-apiserver's.
const (
	kindReadOnly = "readOnly"
	kindMutating = "mutating"
)

// inflightRetryAfterSeconds is what a refused client is told to wait: kube-apiserver's
// one second, short enough that a shed heartbeat still lands well inside its grace.
const inflightRetryAfterSeconds = 1

// privilegedGroup is never limited, as kube-apiserver's API Priority and Fairness
// exempts system:masters. It is the control service's own loopback identity (its
// control loops and its leader Lease renewals, which must never starve behind the
// nodes they watch over) and administrators; both are few, and the loops are rate
// limited on their client side.
const privilegedGroup = "system:masters"

// inflightLimiter holds one slot per request being served, per kind. Acquiring never
// waits: a full kind refuses.
type inflightLimiter struct {
	slots   map[string]chan struct{} // nil channel: that kind is not limited
	current *prometheus.GaugeVec
	dropped *prometheus.CounterVec
}

func newInflightLimiter(limits InflightLimits) *inflightLimiter {
	l := &inflightLimiter{
		slots: map[string]chan struct{}{kindReadOnly: nil, kindMutating: nil},
		current: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plinth_apiserver_current_inflight_requests",
			Help: "Requests being served that count against the in-flight limits, by kind (readOnly, mutating).",
		}, []string{"request_kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plinth_apiserver_dropped_requests_total",
			Help: "Requests refused with 429 because their kind's in-flight limit was reached, by kind.",
		}, []string{"request_kind"}),
	}
	if limits.ReadOnly > 0 {
		l.slots[kindReadOnly] = make(chan struct{}, limits.ReadOnly)
	}
	if limits.Mutating > 0 {
		l.slots[kindMutating] = make(chan struct{}, limits.Mutating)
	}
	// Both series exist from the start, so a dashboard sees 0 rather than nothing.
	for kind := range l.slots {
		l.current.WithLabelValues(kind)
		l.dropped.WithLabelValues(kind)
	}
	return l
}

func (l *inflightLimiter) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.current, l.dropped}
}

// acquire takes a slot of kind, returning the function that gives it back, or false
// when kind is at its limit.
func (l *inflightLimiter) acquire(kind string) (release func(), ok bool) {
	slots := l.slots[kind]
	gauge := l.current.WithLabelValues(kind)
	if slots == nil {
		gauge.Inc()
		return gauge.Dec, true
	}
	select {
	case slots <- struct{}{}:
		gauge.Inc()
		return func() { gauge.Dec(); <-slots }, true
	default:
		l.dropped.WithLabelValues(kind).Inc()
		return nil, false
	}
}

// inflightKind says which limit a request counts against; exempt requests count
// against none. Watches are exempt because they are long-running: each would hold a
// slot for its whole life, as kube-apiserver exempts them. Health probes are exempt so
// an overloaded server is not also restarted by its supervisor.
func inflightKind(req *http.Request, u User) (kind string, exempt bool) {
	switch {
	case u.InGroup(privilegedGroup):
		return "", true
	case isHealthPath(req.URL.Path):
		return "", true
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if isTrue(req.URL.Query().Get("watch")) {
			return "", true
		}
		return kindReadOnly, false
	}
	return kindMutating, false
}

// writeTooManyRequests answers a request refused by the limiter the way kube-apiserver
// does: 429, Retry-After, and a Status whose details carry the same delay.
func writeTooManyRequests(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(inflightRetryAfterSeconds))
	writeError(w, apierrors.NewTooManyRequests("too many requests, please try again later", inflightRetryAfterSeconds))
}

// refusedVerbResource names a request that was refused before it was routed, for the
// request metrics: the verb from its method, the resource from its path.
func refusedVerbResource(req *http.Request) (verb, resource string) {
	info, ok := parseResourcePath(req.URL.Path)
	if !ok {
		return "unknown", ""
	}
	switch req.Method {
	case http.MethodGet:
		if info.name == "" {
			return "list", info.plural
		}
		return "get", info.plural
	case http.MethodPost:
		return "create", info.plural
	case http.MethodPut:
		return "update", info.plural
	case http.MethodPatch:
		return "patch", info.plural
	case http.MethodDelete:
		return "delete", info.plural
	}
	return "unknown", info.plural
}
