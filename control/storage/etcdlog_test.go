package storage

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestMessageLimiter(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newMessageLimiter(10*time.Second, func() time.Time { return now })
	if ok, n := l.allow("retrying"); !ok || n != 0 {
		t.Fatalf("first message: %v, %d; want logged", ok, n)
	}
	for i := range 5 {
		now = now.Add(time.Second)
		if ok, _ := l.allow("retrying"); ok {
			t.Fatalf("a repeat %d s after the first was logged", i+1)
		}
	}
	if ok, _ := l.allow("another message"); !ok {
		t.Error("a different message was held back by the first one's limit")
	}
	now = now.Add(5 * time.Second) // 10 s after the first
	if ok, n := l.allow("retrying"); !ok || n != 5 {
		t.Errorf("10 s later: %v, %d; want logged, saying 5 repeats were not", ok, n)
	}
}

// The etcd client's warnings during an outage reach the log once per interval, not
// once per retried request.
func TestEtcdLoggerLimitsRepeats(t *testing.T) {
	var buf bytes.Buffer
	logger := newEtcdLogger(slog.New(slog.NewTextHandler(&buf, nil)), new(atomic.Bool))
	for range 100 {
		logger.With(zap.String("target", "etcd-endpoints://x")).Warn("retrying of unary invoker failed", zap.String("error", "connection refused"))
	}
	logger.Error("a different error")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "etcd: retrying of unary invoker failed") || !strings.Contains(lines[1], "a different error") {
		t.Errorf("logged %d lines, want the first warning and the error:\n%s", len(lines), buf.String())
	}
}
