package nodeapi

import (
	"net/url"
	"testing"
)

// FuzzParseLogQuery: any query string parses to options within kubelet's ranges or
// fails with an error.
func FuzzParseLogQuery(f *testing.F) {
	for _, s := range []string{"", "follow=true&tailLines=10", "sinceSeconds=5&timestamps=1", "sinceTime=2026-01-01T00:00:00Z",
		"limitBytes=0", "tailLines=-1", "previous=yes", "a=b", "follow=true&follow=false", "sinceSeconds=9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := ParseLogQuery(q, now)
		if err != nil {
			return
		}
		if lq.Options.TailLines != nil && *lq.Options.TailLines < 0 {
			t.Fatalf("%q: negative tailLines %d accepted", raw, *lq.Options.TailLines)
		}
		if lq.Options.LimitBytes < 0 {
			t.Fatalf("%q: negative limitBytes accepted", raw)
		}
		if lq.Options.Since.After(now) && q.Get("sinceTime") == "" {
			t.Fatalf("%q: sinceSeconds gave a time after now: %v", raw, lq.Options.Since)
		}
		if lq.Previous && lq.Options.Follow {
			t.Fatalf("%q: previous with follow", raw)
		}
	})
}
