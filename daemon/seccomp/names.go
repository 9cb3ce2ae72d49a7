package seccomp

import (
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func sortedKeys(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func knownActions() string {
	return strings.Join([]string{
		string(specs.ActErrno), string(specs.ActAllow), string(specs.ActKillProcess),
		string(specs.ActKillThread), string(specs.ActKill), string(specs.ActTrap),
		string(specs.ActNotify), string(specs.ActTrace), string(specs.ActLog),
	}, ", ")
}

func knownOperators() string {
	return strings.Join([]string{
		string(specs.OpEqualTo), string(specs.OpNotEqual), string(specs.OpLessThan),
		string(specs.OpLessEqual), string(specs.OpGreaterThan), string(specs.OpGreaterEqual),
		string(specs.OpMaskedEqual),
	}, ", ")
}
