package storage

import (
	"context"
	"log/slog"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdLogCore sends the embedded etcd's warnings and errors to the control service's
// slog logger, and drops everything once the control service starts closing etcd:
// etcd reports its own listeners closing as errors, which would only alarm operators.
type etcdLogCore struct {
	logger  *slog.Logger
	fields  []zapcore.Field
	closing *atomic.Bool
}

func newEtcdLogger(logger *slog.Logger, closing *atomic.Bool) *zap.Logger {
	return zap.New(&etcdLogCore{logger: logger, closing: closing})
}

func (c *etcdLogCore) Enabled(l zapcore.Level) bool {
	return l >= zapcore.WarnLevel && !c.closing.Load()
}

func (c *etcdLogCore) With(fields []zapcore.Field) zapcore.Core {
	return &etcdLogCore{logger: c.logger, fields: append(append([]zapcore.Field(nil), c.fields...), fields...), closing: c.closing}
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
	c.logger.Log(context.Background(), level, "etcd: "+e.Message, attrs...)
	return nil
}

func (c *etcdLogCore) Sync() error { return nil }
