package pressurereport

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Print writes the report for a person: the signals with their thresholds, the feeds
// and the conditions. now dates the evaluation ("1.2s ago").
func Print(w io.Writer, r Report, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !r.Evaluated {
		fmt.Fprintln(tw, "not evaluated yet")
	} else {
		fmt.Fprintf(tw, "evaluated %s (%s ago, trigger %s)\n", r.At.Local().Format(time.RFC3339), now.Sub(r.At).Round(10*time.Millisecond), r.Trigger)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SIGNAL\tAVAILABLE\tCAPACITY\tTHRESHOLD\tCROSSED")
	seen := map[string]bool{}
	for _, s := range r.Signals {
		seen[s.Name] = true
		avail := amount(s.Unit, s.Available)
		if s.Basis != "" {
			avail += " (" + s.Basis + ")"
		}
		ths := r.thresholdsOf(s.Name)
		if len(ths) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\n", s.Name, avail, amount(s.Unit, s.Capacity))
		}
		for i, t := range ths {
			name, a, c := s.Name, avail, amount(s.Unit, s.Capacity)
			if i > 0 {
				name, a, c = "", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, a, c, describeThreshold(s.Unit, t), crossed(t))
		}
	}
	for _, t := range r.Thresholds {
		if !seen[t.Signal] {
			fmt.Fprintf(tw, "%s\tunobserved\t-\t%s\t-\n", t.Signal, describeThreshold("", t))
			seen[t.Signal] = true
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "FEED\tSTATE\tINFORMS")
	for _, f := range r.Feeds {
		state := "active"
		if !f.Active {
			state = "inactive"
			if f.Detail != "" {
				state += ": " + oneLine(f.Detail)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, state, strings.Join(f.Conditions, ","))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "CONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range r.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
	return tw.Flush()
}

func describeThreshold(unit string, t Threshold) string {
	s := "<" + t.Value
	if strings.HasSuffix(t.Value, "%") && t.Observed {
		s += " (" + amount(unit, t.Target) + ")"
	}
	s += " " + t.Kind
	if t.GracePeriod != "" {
		s += " grace " + t.GracePeriod
	}
	if t.MinReclaim != "" {
		s += " min-reclaim " + t.MinReclaim
	}
	return s
}

func crossed(t Threshold) string {
	switch {
	case !t.Observed:
		return "unobserved"
	case t.Holding:
		return "YES (until min-reclaim)"
	case t.Crossed && t.Actionable:
		return "YES"
	case t.Crossed:
		return "YES (in grace period)"
	}
	return "no"
}

// amount prints bytes in binary units with one decimal, counts as they are.
func amount(unit string, v int64) string {
	if unit != "bytes" {
		return strconv.FormatInt(v, 10)
	}
	sign := ""
	f := float64(v)
	if v < 0 {
		sign, f = "-", -f
	}
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return sign + strconv.FormatFloat(f, 'f', 0, 64)
	}
	return sign + strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") + units[i]
}

func oneLine(s string) string {
	return strings.NewReplacer("\r\n", "; ", "\n", "; ").Replace(s)
}
