package pressurereport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/plinth/plinth/daemon/pressure"
)

// Path is where plinthd serves the report.
const Path = "/pressure"

// Report is the pressure manager's state after its last evaluation.
type Report struct {
	// Evaluated is false before the first evaluation; only Conditions are set then.
	Evaluated bool      `json:"evaluated"`
	At        time.Time `json:"at,omitzero"`
	// Trigger is what made the last evaluation run (periodic, psi, oom-kill, ...).
	Trigger    string      `json:"trigger,omitempty"`
	Signals    []Signal    `json:"signals"`
	Thresholds []Threshold `json:"thresholds"`
	Feeds      []Feed      `json:"feeds"`
	Conditions []Condition `json:"conditions"`
}

// Signal is one observed eviction signal.
type Signal struct {
	Name string `json:"name"`
	// Unit is "bytes", "inodes" or "pids".
	Unit      string `json:"unit"`
	Available int64  `json:"available"`
	Capacity  int64  `json:"capacity"`
	// Basis says how memory.available was obtained (MemAvailable, or capacity minus
	// working set).
	Basis string `json:"basis,omitempty"`
}

// Threshold is one configured threshold and where it stands.
type Threshold struct {
	Signal string `json:"signal"`
	// Kind is "hard" or "soft".
	Kind string `json:"kind"`
	// Value is the threshold as configured ("100Mi", "10%").
	Value       string `json:"value"`
	GracePeriod string `json:"gracePeriod,omitempty"`
	MinReclaim  string `json:"minReclaim,omitempty"`
	// Observed is false when the signal had no value; the rest is then unset.
	Observed bool `json:"observed"`
	// Target is Value resolved against the signal's capacity, in the signal's unit.
	Target     int64      `json:"target"`
	Crossed    bool       `json:"crossed"`
	Holding    bool       `json:"holding,omitempty"`
	Actionable bool       `json:"actionable,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
}

// Feed is one source of information.
type Feed struct {
	Name       string   `json:"name"`
	Active     bool     `json:"active"`
	Detail     string   `json:"detail,omitempty"`
	Conditions []string `json:"conditions"`
}

// Condition is one pressure condition as the manager reports it to the Node.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// FromSnapshot builds the report from the manager's snapshot.
func FromSnapshot(s pressure.Snapshot) Report {
	r := Report{Evaluated: s.Evaluated, Trigger: string(s.Trigger), Signals: []Signal{}, Thresholds: []Threshold{},
		Feeds: []Feed{}, Conditions: []Condition{}}
	if s.Evaluated {
		r.At = s.At
	}
	for _, sig := range pressure.KnownSignals() {
		if v, ok := s.Signals[sig]; ok {
			r.Signals = append(r.Signals, Signal{Name: string(sig), Unit: unit(sig), Available: v.Available, Capacity: v.Capacity, Basis: v.Basis})
		}
	}
	for _, t := range s.Thresholds {
		th := Threshold{Signal: string(t.Signal), Kind: t.Kind(), Value: t.Value.String(), Observed: t.Observed,
			Target: t.Target, Crossed: t.Crossed, Holding: t.Holding, Actionable: t.Actionable}
		if t.Soft() {
			th.GracePeriod = t.GracePeriod.String()
		}
		if !t.MinReclaim.IsZero() {
			th.MinReclaim = t.MinReclaim.String()
		}
		if t.Crossed && !t.Since.IsZero() {
			since := t.Since
			th.Since = &since
		}
		r.Thresholds = append(r.Thresholds, th)
	}
	for _, f := range s.Feeds {
		fd := Feed{Name: f.Name, Active: f.Active, Detail: f.Detail, Conditions: []string{}}
		for _, c := range f.Conditions {
			fd.Conditions = append(fd.Conditions, string(c))
		}
		r.Feeds = append(r.Feeds, fd)
	}
	for _, c := range s.Conditions {
		r.Conditions = append(r.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return r
}

// unit names what a signal counts.
func unit(s pressure.Signal) string {
	switch s.Resource() {
	case pressure.ResourceInodes:
		return "inodes"
	case pressure.ResourcePIDs:
		return "pids"
	}
	return "bytes"
}

// Snapshotter is what the handler reads; *pressure.Manager is one.
type Snapshotter interface {
	Snapshot() pressure.Snapshot
}

// Handler serves the report of m as JSON.
func Handler(m Snapshotter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(FromSnapshot(m.Snapshot()))
	})
}

// Fetch reads the report from plinthd's healthz address.
func Fetch(ctx context.Context, addr string) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := "http://" + addr + Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Report{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Report{}, fmt.Errorf("is plinthd running? %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Report{}, fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Report{}, fmt.Errorf("%s: %s (a plinthd without the pressure manager?)", url, resp.Status)
	}
	var r Report
	if err := json.Unmarshal(body, &r); err != nil {
		return Report{}, fmt.Errorf("%s: not a pressure report: %w", url, err)
	}
	return r, nil
}

// thresholdsOf returns the thresholds on signal, hard first.
func (r Report) thresholdsOf(signal string) []Threshold {
	var out []Threshold
	for _, t := range r.Thresholds {
		if t.Signal == signal {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b Threshold) int {
		if a.Kind == b.Kind {
			return 0
		}
		if a.Kind == "hard" {
			return -1
		}
		return 1
	})
	return out
}
