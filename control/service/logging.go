package service

import (
	"fmt"
	"io"
	"log/slog"
)

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level: %q is not debug, info, warn or error", s)
	}
	return l, nil
}

// NewLogger returns a text logger at the options' level.
func (o *Options) NewLogger(w io.Writer) *slog.Logger {
	level, _ := parseLogLevel(o.LogLevel)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
