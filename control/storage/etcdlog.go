package storage

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdLogCore sends the warnings and errors of the embedded etcd and of the etcd client
// to the control service's slog logger, each message at most once per
// etcdLogRepeatInterval, and drops everything once the control service starts closing
// etcd: etcd reports its own listeners closing as errors, which would only alarm
// operators.
type etcdLogCore struct {
	logger  *slog.Logger
	fields  []zapcore.Field
	closing *atomic.Bool
	limit   *messageLimiter // shared by every core derived through With
}

func newEtcdLogger(logger *slog.Logger, closing *atomic.Bool) *zap.Logger {
	return zap.New(&etcdLogCore{logger: logger, closing: closing, limit: newMessageLimiter(etcdLogRepeatInterval, time.Now)})
}

// etcdLogRepeatInterval is how often one etcd message may be logged. While etcd is
// unreachable its client warns on every retried request, hundreds a second under load,
// which would bury everything else and run into journald's rate limit.
const etcdLogRepeatInterval = 10 * time.Second

// messageLimiter lets each message through at most once per interval and counts what
// it held back, so the next one that passes can say how many were dropped.
type messageLimiter struct {
	interval time.Duration
	now      func() time.Time
	mu       sync.Mutex
	seen     map[string]*messageCount
}

type messageCount struct {
	last       time.Time
	suppressed int
}

func newMessageLimiter(interval time.Duration, now func() time.Time) *messageLimiter {
	return &messageLimiter{interval: interval, now: now, seen: map[string]*messageCount{}}
}

// allow reports whether msg may be logged now and, if so, how many copies of it were
// held back since it was last logged.
func (l *messageLimiter) allow(msg string) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.seen[msg]
	if c == nil {
		if len(l.seen) >= maxLimitedMessages {
			clear(l.seen) // etcd's messages are a small fixed set; this only bounds memory
		}
		l.seen[msg] = &messageCount{last: now}
		return true, 0
	}
	if now.Sub(c.last) < l.interval {
		c.suppressed++
		return false, 0
	}
	suppressed, c.suppressed, c.last = c.suppressed, 0, now
	return true, suppressed
}

const maxLimitedMessages = 1024

func (c *etcdLogCore) Enabled(l zapcore.Level) bool {
	return l >= zapcore.WarnLevel && !c.closing.Load()
}

func (c *etcdLogCore) With(fields []zapcore.Field) zapcore.Core {
	return &etcdLogCore{logger: c.logger, fields: append(append([]zapcore.Field(nil), c.fields...), fields...), closing: c.closing, limit: c.limit}
}

func (c *etcdLogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// irrelevantEtcdWarnings are warnings about settings that do not apply to an etcd
// reachable only through a root-only unix socket, with etcd authentication off.
var irrelevantEtcdWarnings = map[string]bool{
	"simple token is not cryptographically signed": true,
}

func (c *etcdLogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if irrelevantEtcdWarnings[e.Message] {
		return nil
	}
	ok, suppressed := c.limit.allow(e.Message)
	if !ok {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(append([]zapcore.Field(nil), c.fields...), fields...) {
		f.AddTo(enc)
	}
	attrs := make([]any, 0, 2*len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, k, v)
	}
	level := slog.LevelWarn
	if e.Level >= zapcore.ErrorLevel {
		level = slog.LevelError
	}
	if suppressed > 0 {
		attrs = append(attrs, "repeats_not_logged", suppressed)
	}
	c.logger.Log(context.Background(), level, "etcd: "+e.Message, attrs...)
	return nil
}

func (c *etcdLogCore) Sync() error { return nil }
