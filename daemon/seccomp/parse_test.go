package seccomp

import (
	"errors"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestParseAcceptsTheRuntimeSpecFormat(t *testing.T) {
	p, err := Parse("p.json", []byte(`{
		"defaultAction": "SCMP_ACT_ERRNO",
		"defaultErrnoRet": 38,
		"architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
		"flags": ["SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW"],
		"listenerPath": "/run/agent.sock",
		"listenerMetadata": "meta",
		"syscalls": [
			{"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
			{"names": ["personality"], "action": "SCMP_ACT_ALLOW",
			 "args": [{"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]},
			{"names": ["unshare"], "action": "SCMP_ACT_ALLOW",
			 "args": [{"index": 0, "value": 268435456, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]},
			{"names": ["mkdir"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13},
			{"names": ["getpid"], "action": "SCMP_ACT_TRACE", "errnoRet": 1},
			{"names": ["openat"], "action": "SCMP_ACT_NOTIFY"},
			{"names": ["kill"], "action": "SCMP_ACT_LOG"},
			{"names": ["ptrace"], "action": "SCMP_ACT_KILL_PROCESS"},
			{"names": ["reboot"], "action": "SCMP_ACT_KILL_THREAD"},
			{"names": ["kexec_load"], "action": "SCMP_ACT_KILL"},
			{"names": ["swapon"], "action": "SCMP_ACT_TRAP"},
			{"names": ["mmap"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 2, "value": 18446744073709551615, "op": "SCMP_CMP_NE"}]}
		]}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != specs.ActErrno || *p.DefaultErrnoRet != 38 || len(p.Architectures) != 3 || len(p.Flags) != 2 ||
		p.ListenerPath != "/run/agent.sock" || p.ListenerMetadata != "meta" || len(p.Syscalls) != 12 {
		t.Fatalf("parsed %+v", p)
	}
	if got := p.Syscalls[2].Args[0]; got != (specs.LinuxSeccompArg{Index: 0, Value: 0x10000000, Op: specs.OpMaskedEqual}) {
		t.Errorf("masked arg %+v", got)
	}
	if got := p.Syscalls[11].Args[0].Value; got != 1<<64-1 {
		t.Errorf("a 64-bit value lost precision: %d", got)
	}
	if *p.Syscalls[3].ErrnoRet != 13 {
		t.Errorf("errnoRet %d", *p.Syscalls[3].ErrnoRet)
	}
}

func TestParseErrorsNameThePathAndValue(t *testing.T) {
	for _, tc := range []struct {
		name, json          string
		path, value, reason string
	}{
		{"empty file", ``, "", "", "the file is empty"},
		{"not JSON", "{\n \"defaultAction\": \"SCMP_ACT_ALLOW\",\n}", "", "", "not valid JSON at line 3, column 1"},
		{"not an object", `[]`, "", "[]", "want a JSON object at the top level"},
		{"trailing value", `{"defaultAction":"SCMP_ACT_ALLOW"} {}`, "", "", "not valid JSON"},
		{"no default action", `{}`, "defaultAction", "", "missing"},
		{"unknown default action", `{"defaultAction":"SCMP_ACT_DENY"}`, "defaultAction", `"SCMP_ACT_DENY"`, "unknown action; want one of SCMP_ACT_ERRNO"},
		{"notify as default", `{"defaultAction":"SCMP_ACT_NOTIFY","listenerPath":"/x"}`, "defaultAction", `"SCMP_ACT_NOTIFY"`, "cannot be the default action"},
		{"lowercase action", `{"defaultAction":"scmp_act_allow"}`, "defaultAction", `"scmp_act_allow"`, "unknown action"},
		{"wrong type", `{"defaultAction":1}`, "defaultAction", "1", "want a string"},
		{"misspelt field", `{"defaultAction":"SCMP_ACT_ALLOW","syscall":[]}`, "syscall", "", "unknown field; want one of architectures, defaultAction"},
		{"field in the wrong case", `{"DefaultAction":"SCMP_ACT_ALLOW"}`, "DefaultAction", "", "unknown field"},
		{"repeated field", `{"defaultAction":"SCMP_ACT_ALLOW","defaultAction":"SCMP_ACT_LOG"}`, "defaultAction", "", "appears twice"},
		{"docker format", `{"defaultAction":"SCMP_ACT_ALLOW","archMap":[]}`, "archMap", "", "Docker's profile format"},
		{"negative errno", `{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":-1}`, "defaultErrnoRet", "-1", "want a non-negative integer"},
		{"errno too large", `{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":4096}`, "defaultErrnoRet", "4096", "from 0 to 4095"},
		{"errno with allow", `{"defaultAction":"SCMP_ACT_ALLOW","defaultErrnoRet":1}`, "defaultErrnoRet", "1", "only with SCMP_ACT_ERRNO and SCMP_ACT_TRACE"},
		{"unknown arch", `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64","x86_64"]}`, "architectures[1]", `"x86_64"`, "unknown architecture"},
		{"arch twice", `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86","SCMP_ARCH_X86"]}`, "architectures[1]", `"SCMP_ARCH_X86"`, "listed twice"},
		{"arch not a string", `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86",1]}`, "architectures[1]", "1", `want a string such as "SCMP_ARCH_X86_64"`},
		{"architectures not a list", `{"defaultAction":"SCMP_ACT_ALLOW","architectures":"SCMP_ARCH_X86"}`, "architectures", `"SCMP_ARCH_X86"`, `want a list of strings such as ["SCMP_ARCH_X86_64"]`},
		{"null name", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read",null],"action":"SCMP_ACT_ERRNO"}]}`, "syscalls[0].names[1]", "null", `want a string such as "mkdir"`},
		{"flag not a string", `{"defaultAction":"SCMP_ACT_ALLOW","flags":[{}]}`, "flags[0]", "{}", "want a string"},
		{"unknown flag", `{"defaultAction":"SCMP_ACT_ALLOW","flags":["SECCOMP_FILTER_FLAG_NEW_LISTENER"]}`, "flags[0]", `"SECCOMP_FILTER_FLAG_NEW_LISTENER"`, "unknown flag"},
		{"syscall not an object", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":["read"]}`, "syscalls[0]", `"read"`, "want a JSON object"},
		{"syscall null", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[null]}`, "syscalls[0]", "null", "want a JSON object"},
		{"no names", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"action":"SCMP_ACT_ERRNO"}]}`, "syscalls[0].names", "", "missing or empty"},
		{"docker's singular name", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"name":"read","action":"SCMP_ACT_ERRNO"}]}`, "syscalls[0].name", "", "Docker's profile format"},
		{"bad name", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"]},{"names":["mkdir","Mkdir"],"action":"SCMP_ACT_ERRNO"}]}`, "syscalls[0].action", "", "missing"},
		{"name with capitals", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","Mkdir"],"action":"SCMP_ACT_ERRNO"}]}`, "syscalls[0].names[1]", `"Mkdir"`, "not a syscall name"},
		{"empty name", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":[""],"action":"SCMP_ACT_ERRNO"}]}`, "syscalls[0].names[0]", `""`, "not a syscall name"},
		{"unknown rule action", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"},{"names":["mkdir"],"action":"ERRNO"}]}`, "syscalls[1].action", `"ERRNO"`, "unknown action"},
		{"errnoRet with kill", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_KILL","errnoRet":1}]}`, "syscalls[0].errnoRet", "1", "only with SCMP_ACT_ERRNO"},
		{"notify on write", `{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/a","syscalls":[{"names":["read","write"],"action":"SCMP_ACT_NOTIFY"}]}`, "syscalls[0].names[1]", `"write"`, "cannot be used for write"},
		{"notify without listener", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["openat"],"action":"SCMP_ACT_NOTIFY"}]}`, "listenerPath", "", "SCMP_ACT_NOTIFY needs"},
		{"relative listener", `{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"agent.sock"}`, "listenerPath", `"agent.sock"`, "absolute path"},
		{"arg index", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":1,"op":"SCMP_CMP_EQ"},{"index":6,"value":1,"op":"SCMP_CMP_EQ"}]}]}`, "syscalls[0].args[1].index", "6", "arguments 0 to 5"},
		{"arg op", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":1,"op":"SCMP_CMP_EQUAL"}]}]}`, "syscalls[0].args[0].op", `"SCMP_CMP_EQUAL"`, "unknown operator; want one of SCMP_CMP_EQ"},
		{"arg op missing", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":1}]}]}`, "syscalls[0].args[0].op", "", "missing"},
		{"valueTwo without mask", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":1,"valueTwo":2,"op":"SCMP_CMP_EQ"}]}]}`, "syscalls[0].args[0].valueTwo", "2", "only by SCMP_CMP_MASKED_EQ"},
		{"arg unknown field", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":1,"op":"SCMP_CMP_EQ","valuetwo":3}]}]}`, "syscalls[0].args[0].valuetwo", "", "unknown field; want one of index, op, value, valueTwo"},
		{"arg value negative", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":-1,"op":"SCMP_CMP_EQ"}]}]}`, "syscalls[0].args[0].value", "-1", "unsigned 64-bit"},
		{"arg value too big", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":18446744073709551616,"op":"SCMP_CMP_EQ"}]}]}`, "syscalls[0].args[0].value", "18446744073709551616", "unsigned 64-bit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/profiles/p.json", []byte(tc.json))
			var pe *ProfileError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ProfileError", err)
			}
			if pe.File != "/profiles/p.json" || pe.Path != tc.path || pe.Value != tc.value || !strings.Contains(pe.Reason, tc.reason) {
				t.Errorf("got file %q path %q value %q reason %q\nwant path %q value %q reason containing %q", pe.File, pe.Path, pe.Value, pe.Reason, tc.path, tc.value, tc.reason)
			}
			if !strings.HasPrefix(err.Error(), "seccomp profile /profiles/p.json: ") {
				t.Errorf("message %q does not start with the file", err)
			}
		})
	}
}

func TestProfileErrorMessage(t *testing.T) {
	err := &ProfileError{File: "/var/lib/plinth/seccomp/p.json", Path: "syscalls[3].names[1]", Value: `"mkdri"`, Reason: "unknown syscall on SCMP_ARCH_X86_64"}
	want := `seccomp profile /var/lib/plinth/seccomp/p.json: syscalls[3].names[1]: "mkdri": unknown syscall on SCMP_ARCH_X86_64`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	wrapped := &ProfileError{File: "/r/x.json", Reason: "cannot open it", Err: errors.New("boom")}
	if got := wrapped.Error(); got != "seccomp profile /r/x.json: cannot open it: boom" {
		t.Errorf("got %s", got)
	}
}
