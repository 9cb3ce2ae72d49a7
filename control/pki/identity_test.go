package pki

import (
	"strings"
	"testing"
)

func TestNodeUser(t *testing.T) {
	for name, want := range map[string]string{
		"worker-1":           "system:node:worker-1",
		"node.rack3.example": "system:node:node.rack3.example",
		"a":                  "system:node:a",
	} {
		got, err := NodeUser(name)
		if err != nil || got != want {
			t.Errorf("NodeUser(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"", "Worker", "under_score", "-x", "x-", "a..b", "system:node:x", strings.Repeat("a", 254)} {
		_, err := NodeUser(name)
		if err == nil {
			t.Errorf("NodeUser(%q) accepted an invalid node name", name)
			continue
		}
		if !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("NodeUser(%q): error %q does not name the value", name, err)
		}
	}
}
