package sysinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMeminfoFixtures(t *testing.T) {
	cases := []struct {
		file    string
		want    Meminfo
		wantErr string
	}{
		{file: "debian/proc/meminfo", want: Meminfo{MemTotal: 16318412 * 1024, MemFree: 15260112 * 1024, MemAvailable: 15701076 * 1024}},
		{file: "meminfo/old-kernel", want: Meminfo{MemTotal: 2048000 * 1024, MemFree: 1024000 * 1024}},
		{file: "meminfo/missing-total", wantErr: "no MemTotal line"},
		{file: "meminfo/bad-value", wantErr: `line 1: MemTotal: value "lots" is not a number of kB`},
		{file: "meminfo/wrong-unit", wantErr: `line 1: MemTotal: value "2048000 MB" is not "<number> kB"`},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := ParseMeminfo(f)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseMeminfo error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMeminfo: %v", err)
			}
			if got != tc.want {
				t.Errorf("ParseMeminfo = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseMeminfoOverflow(t *testing.T) {
	_, err := ParseMeminfo(strings.NewReader("MemTotal: 18446744073709551615 kB\n"))
	if err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("error = %v, want an overflow error", err)
	}
}

func FuzzParseMeminfo(f *testing.F) {
	for _, name := range []string{"debian/proc/meminfo", "meminfo/old-kernel", "meminfo/bad-value", "meminfo/wrong-unit"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("MemTotal: 1 kB")
	f.Add("MemTotal:")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseMeminfo(strings.NewReader(in))
		if err != nil {
			return
		}
		// A successful parse reports whole KiB, since the kernel prints kB.
		for _, v := range []uint64{m.MemTotal, m.MemFree, m.MemAvailable} {
			if v%1024 != 0 {
				t.Fatalf("value %d bytes is not a whole number of KiB (input %q)", v, in)
			}
		}
	})
}
