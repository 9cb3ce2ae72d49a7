package sysinfo

import (
	"maps"
	"strings"
	"testing"
)

func TestParseOSRelease(t *testing.T) {
	in := strings.Join([]string{
		`# comment`,
		``,
		`PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"`,
		`ID=debian`,
		`SINGLE='it is "quoted"'`,
		`ESCAPED="a \"b\" \$c \\d \x"`,
		`BARE=foo\ bar`,
		`EMPTY=`,
		`  INDENTED="yes"  `,
		`lower_case=ok`,
		`UNTERMINATED="oops`,
		`CONCAT="a""b"`,
		`SPACES=two words`,
		`1BAD=x`,
		`BAD-KEY=x`,
		`NOEQUALS`,
		`TRAILING=back\`,
	}, "\n")
	got, err := ParseOSRelease(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)",
		"ID":          "debian",
		"SINGLE":      `it is "quoted"`,
		"ESCAPED":     `a "b" $c \d \x`,
		"BARE":        "foo bar",
		"EMPTY":       "",
		"INDENTED":    "yes",
		"lower_case":  "ok",
	}
	if !maps.Equal(got, want) {
		t.Errorf("ParseOSRelease =\n%q\nwant\n%q", got, want)
	}
}

func TestPrettyNameDefault(t *testing.T) {
	if got := PrettyName(map[string]string{"NAME": "X"}); got != "Linux" {
		t.Errorf("PrettyName without PRETTY_NAME = %q, want Linux", got)
	}
	if got := PrettyName(map[string]string{"PRETTY_NAME": "X 1"}); got != "X 1" {
		t.Errorf("PrettyName = %q, want %q", got, "X 1")
	}
}

func FuzzParseOSRelease(f *testing.F) {
	f.Add("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n")
	f.Add("A='x'\nB=\"y\\\"z\"\n# c\n\nC=d\\ e\n")
	f.Add("X=\"unterminated\nY='also\nZ=\\")
	f.Fuzz(func(t *testing.T, in string) {
		vars, err := ParseOSRelease(strings.NewReader(in))
		if err != nil {
			return // only reader errors (a line longer than the scanner buffer)
		}
		for k := range vars {
			if !validOSReleaseKey(k) {
				t.Fatalf("invalid key %q accepted from %q", k, in)
			}
			if strings.ContainsAny(k, "=\n") {
				t.Fatalf("key %q holds a separator", k)
			}
		}
	})
}
