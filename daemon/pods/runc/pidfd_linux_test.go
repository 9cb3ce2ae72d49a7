//go:build linux

package runc

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseStartTicks(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	stat := "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200"
	if got, err := parseStartTicks(stat); err != nil || got != 987654 {
		t.Errorf("parseStartTicks = %d, %v; want 987654", got, err)
	}
	if _, err := parseStartTicks("42 (x) S 1"); err == nil {
		t.Error("short stat accepted")
	}
}

func TestWaitProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	ticks, err := startTicks(pid)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := waitProcess(ctx, pid, ticks); err != context.DeadlineExceeded {
		t.Errorf("waitProcess on a live process = %v, want the context's deadline", err)
	}
	// A different start time means our process is gone: no wait.
	if err := waitProcess(context.Background(), pid, ticks+1); err != nil {
		t.Errorf("waitProcess with another start time = %v", err)
	}
	_ = cmd.Process.Signal(os.Kill)
	_ = cmd.Wait()
	if err := waitProcess(context.Background(), pid, ticks); err != nil {
		t.Errorf("waitProcess on an exited process = %v", err)
	}
}
