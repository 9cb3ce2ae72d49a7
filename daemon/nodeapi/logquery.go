package nodeapi

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/plinth/plinth/daemon/podlogs"
)

// LogQuery is a /containerLogs request's options.
type LogQuery struct {
	Options  podlogs.Options
	Previous bool
}

// logParams are the query parameters /containerLogs accepts, kubelet's names.
var logParams = map[string]bool{
	"follow": true, "previous": true, "timestamps": true, "tailLines": true,
	"sinceSeconds": true, "sinceTime": true, "limitBytes": true, "pretty": true,
}

// ParseLogQuery reads the log options of q as kubelet validates PodLogOptions: numbers
// in range, sinceSeconds and sinceTime not both, no unknown parameters. now turns
// sinceSeconds into a time.
func ParseLogQuery(q url.Values, now time.Time) (LogQuery, error) {
	var lq LogQuery
	for k, v := range q {
		if !logParams[k] {
			return lq, fmt.Errorf("query parameter %q is not a log option", k)
		}
		if len(v) != 1 {
			return lq, fmt.Errorf("query parameter %q: given %d times, want once", k, len(v))
		}
	}
	var err error
	if lq.Options.Follow, err = boolParam(q, "follow"); err != nil {
		return lq, err
	}
	if lq.Previous, err = boolParam(q, "previous"); err != nil {
		return lq, err
	}
	if lq.Options.Timestamps, err = boolParam(q, "timestamps"); err != nil {
		return lq, err
	}
	if v, ok, err := intParam(q, "tailLines", 0); err != nil {
		return lq, err
	} else if ok {
		lq.Options.TailLines = &v
	}
	if v, ok, err := intParam(q, "limitBytes", 1); err != nil {
		return lq, err
	} else if ok {
		lq.Options.LimitBytes = v
	}
	secs, haveSecs, err := intParam(q, "sinceSeconds", 1)
	if err != nil {
		return lq, err
	}
	if haveSecs {
		lq.Options.Since = now.Add(-time.Duration(min(secs, int64(1<<62)/int64(time.Second))) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		if haveSecs {
			return lq, fmt.Errorf("query parameters sinceSeconds and sinceTime: give at most one")
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return lq, fmt.Errorf("query parameter sinceTime: %q is not an RFC 3339 time such as 2006-01-02T15:04:05Z", v)
		}
		lq.Options.Since = t
	}
	if lq.Previous && lq.Options.Follow {
		// kubelet allows it; a previous instance's log never grows, so the follow
		// would only hang. Serve the file once instead.
		lq.Options.Follow = false
	}
	return lq, nil
}

func boolParam(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("query parameter %s: %q is not true or false", name, v)
	}
	return b, nil
}

func intParam(q url.Values, name string, least int64) (int64, bool, error) {
	v, ok := q[name]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || n < least {
		return 0, false, fmt.Errorf("query parameter %s: %q is not an integer of at least %d", name, v[0], least)
	}
	return n, true, nil
}
