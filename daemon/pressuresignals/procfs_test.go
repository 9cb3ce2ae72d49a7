package pressuresignals

import (
	"strings"
	"testing"
)

func TestParseLoadavgTasks(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		errPart string
	}{
		{in: "0.52 0.58 0.59 3/155 3420\n", want: 155},
		{in: "12.00 9.10 8.00 40/30000 1", want: 30000},
		{in: "0.00 0.00 0.00 0/1 1", want: 1},
		{in: "0.00 0.00 0.00 5/4 1", want: 4}, // counts read without a common lock
		{in: "0.52 0.58 0.59", errPart: "at least 4 fields"},
		{in: "0.52 0.58 0.59 155 3420", errPart: "running/total"},
		{in: "0.52 0.58 0.59 x/155 3420", errPart: "running"},
		{in: "0.52 0.58 0.59 3/-1 3420", errPart: "total"},
		{in: "", errPart: "at least 4 fields"},
	} {
		got, err := ParseLoadavgTasks(tc.in)
		if tc.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("ParseLoadavgTasks(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.errPart)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseLoadavgTasks(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseLoadavgTasks(f *testing.F) {
	for _, s := range []string{"0.52 0.58 0.59 3/155 3420\n", "0 0 0 0/0 0", "a b c d/e", "1 2 3 4/", "1 2 3 /5 6", strings.Repeat("9", 30) + " 1 1 1/" + strings.Repeat("9", 30)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseLoadavgTasks(s)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with a count %d", err, n)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error message of %d bytes does not clip the input", len(err.Error()))
			}
			return
		}
		// A count that parsed is the total of the 4th field, written in plain digits.
		fields := strings.Fields(s)
		_, total, _ := strings.Cut(fields[3], "/")
		if strings.TrimLeft(total, "0") != strings.TrimLeft(itoa(n), "0") {
			t.Fatalf("count %d from %q, whose total field is %q", n, s, total)
		}
	})
}
