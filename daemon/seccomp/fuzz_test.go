package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary documents to the profile parser: it must never panic, must
// answer every refusal with a *ProfileError, and a profile it accepts must survive a
// round trip through the runtime spec's JSON unchanged (what runc reads is what Plinth
// checked) and go through libseccomp validation without a panic.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob("testdata/profiles/*.json")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed profiles: %v", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":null}`,
		`{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":4095,"syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","args":[{"index":5,"value":18446744073709551615,"valueTwo":1,"op":"SCMP_CMP_MASKED_EQ"}]}]}`,
		`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_ERRNO","errnoRet":1e3}]}`,
		`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO"},{"names":["mkdir"],"action":"SCMP_ACT_LOG"}]}`,
		`{"defaultAction":"SCMP_ACT_ALLOW","archMap":[{"architecture":"SCMP_ARCH_X86_64"}]}`,
		`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":0,"op":"SCMP_CMP_EQ"},{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]}]}`,
		"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\n\"syscalls\":[{\"names\":[\"\\u006dkdir\"],\"action\":\"SCMP_ACT_ERRNO\"}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.json", data)
		if err != nil {
			var pe *ProfileError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ProfileError", err)
			}
			return
		}
		once, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse("fuzz.json", once)
		if err != nil {
			t.Fatalf("the accepted profile, re-encoded, is refused: %v\n%s", err, once)
		}
		twice, _ := json.Marshal(again)
		if !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the profile:\n%s\n%s", once, twice)
		}
		_, _ = Validate(Libseccomp{}, "fuzz.json", p)
	})
}
