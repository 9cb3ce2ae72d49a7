package watchdog

import (
	"errors"
	"slices"
	"testing"
)

func TestNotificationPayloads(t *testing.T) {
	n := NewRecordingNotifier()
	steps := []struct {
		send func() error
		want string
	}{
		{func() error { return Ready(n, "node n1 registered, lease renewing") }, "READY=1\nSTATUS=node n1 registered, lease renewing"},
		{func() error { return Ready(n, "") }, "READY=1"},
		{func() error { return Status(n, "syncing 3 pods") }, "STATUS=syncing 3 pods"},
		// A newline in the text must not smuggle in another assignment.
		{func() error { return Status(n, "error: x\nREADY=1\r\nY") }, "STATUS=error: x READY=1 Y"},
		{func() error { return Stopping(n) }, "STOPPING=1"},
	}
	var want []string
	for i, s := range steps {
		if err := s.send(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want = append(want, s.want)
	}
	if got := n.States(); !slices.Equal(got, want) {
		t.Fatalf("states = %q, want %q", got, want)
	}
}

func TestNotificationErrorsReachTheCaller(t *testing.T) {
	n := NewRecordingNotifier()
	boom := errors.New("boom")
	n.FailWith(boom)
	for name, err := range map[string]error{
		"Ready":    Ready(n, "x"),
		"Status":   Status(n, "x"),
		"Stopping": Stopping(n),
	} {
		if !errors.Is(err, boom) {
			t.Errorf("%s returned %v, want the notifier's error", name, err)
		}
	}
	if got := n.States(); len(got) != 0 {
		t.Fatalf("a failing notifier recorded %q", got)
	}
}
