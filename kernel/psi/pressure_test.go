package psi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFixtures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Pressure
	}{
		{"cpu-6.18", Pressure{
			Some:    Stall{Avg10: 77.98, Avg60: 44.32, Avg300: 23.79, Total: 1084662088 * time.Microsecond},
			HasFull: true, // node-wide cpu "full" is printed as zeros since 5.13
		}},
		{"cpu-5.4-nofull", Pressure{
			Some: Stall{Avg10: 2.04, Avg60: 0.75, Avg300: 0.40, Total: 157656722 * time.Microsecond},
		}},
		{"io-6.18", Pressure{
			Some:    Stall{Avg10: 0.51, Avg60: 1.02, Avg300: 1.24, Total: 21731213 * time.Microsecond},
			Full:    Stall{Avg10: 0.01, Avg60: 0.52, Avg300: 0.85, Total: 8940072 * time.Microsecond},
			HasFull: true,
		}},
		{"memory-6.18", Pressure{HasFull: true}},
		{"future-field", Pressure{
			Some:    Stall{Avg10: 12.34, Avg60: 5.67, Avg300: 1.00, Total: 987654 * time.Microsecond},
			Full:    Stall{Avg10: 1.00, Avg60: 0.50, Avg300: 0.25, Total: 4321 * time.Microsecond},
			HasFull: true,
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ReadFile = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // substrings the error must contain: where and what
	}{
		{"bad-unknown-line", []string{"line 3", `"bogus"`}},
		{"bad-avg", []string{"line 2", "full", "field avg10", `"1.5x"`, "0 to 100"}},
		{"bad-avg-over-100", []string{"line 1", "field avg10", `"100.01"`}},
		{"bad-missing-total", []string{"line 1", "missing field(s) total"}},
		{"bad-no-some", []string{`no "some" line`}},
		{"bad-negative-total", []string{"line 1", "field total", `"-5"`}},
		{"bad-duplicate-field", []string{"line 1", "avg10 appears twice"}},
		{"bad-two-some", []string{"line 2", `second "some"`}},
		{"bad-no-equals", []string{"line 1", `field "avg60"`, "key=value"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			_, err := ReadFile(path)
			if err == nil {
				t.Fatal("ReadFile succeeded, want an error")
			}
			// ReadFile names the file before the parser's line and field.
			for _, s := range append([]string{path + ": "}, tc.want...) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestParseEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"empty", "", false},
		{"blank lines around", "\n some avg10=0 avg60=0 avg300=0 total=0 \n\n", true},
		{"two full lines", "some avg10=0 avg60=0 avg300=0 total=0\nfull avg10=0 avg60=0 avg300=0 total=0\nfull avg10=0 avg60=0 avg300=0 total=0\n", false},
		{"NaN", "some avg10=NaN avg60=0 avg300=0 total=0\n", false},
		{"Inf", "some avg10=+Inf avg60=0 avg300=0 total=0\n", false},
		{"total overflows a Duration", "some avg10=0 avg60=0 avg300=0 total=9223372036854776\n", false},
		{"largest total", "some avg10=0 avg60=0 avg300=0 total=9223372036854775\n", true},
		{"keyword alone", "some\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in))
			if (err == nil) != tc.ok {
				t.Errorf("Parse(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
			}
		})
	}
}

func TestResourcePaths(t *testing.T) {
	for _, tc := range []struct {
		res           Resource
		system, group string
	}{
		{CPU, "/proc/pressure/cpu", "/sys/fs/cgroup/unified/x/cpu.pressure"},
		{Memory, "/proc/pressure/memory", "/sys/fs/cgroup/unified/x/memory.pressure"},
		{IO, "/proc/pressure/io", "/sys/fs/cgroup/unified/x/io.pressure"},
	} {
		if got := SystemPath(tc.res); got != tc.system {
			t.Errorf("SystemPath(%v) = %q, want %q", tc.res, got, tc.system)
		}
		if got := CgroupPath("/sys/fs/cgroup/unified/x", tc.res); got != tc.group {
			t.Errorf("CgroupPath(%v) = %q, want %q", tc.res, got, tc.group)
		}
		back, err := ParseResource(tc.res.String())
		if err != nil || back != tc.res {
			t.Errorf("ParseResource(%q) = %v, %v", tc.res.String(), back, err)
		}
	}
	if _, err := ParseResource("disk"); err == nil || !strings.Contains(err.Error(), `"disk"`) {
		t.Errorf("ParseResource(disk) error = %v, want one naming the value", err)
	}
}

func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("some avg10=0 avg60=0 avg300=0 total=0")
	f.Add("full total=1 avg300=1 avg60=1 avg10=1\nsome avg10=1e2 avg60=0 avg300=0 total=0")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		// Whatever parses is within the kernel's ranges.
		stalls := []Stall{p.Some}
		if p.HasFull {
			stalls = append(stalls, p.Full)
		} else if p.Full != (Stall{}) {
			t.Fatalf("Full = %+v without a full line (input %q)", p.Full, in)
		}
		for _, s := range stalls {
			for _, v := range []float64{s.Avg10, s.Avg60, s.Avg300} {
				if !(v >= 0 && v <= 100) {
					t.Fatalf("average %v out of 0..100 (input %q)", v, in)
				}
			}
			if s.Total < 0 || s.Total%time.Microsecond != 0 {
				t.Fatalf("total %v is not a whole non-negative number of µs (input %q)", s.Total, in)
			}
		}
	})
}
