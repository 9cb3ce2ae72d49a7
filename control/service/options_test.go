package service

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestTerminatedPodGCThresholdFlag(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		o := DefaultOptions()
		fs := flag.NewFlagSet("plinth-control", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		return o, o.Complete()
	}
	o, err := parse()
	if err != nil || o.PodGC.TerminatedPodThreshold != 12500 {
		t.Fatalf("default: %d, %v; want 12500", o.PodGC.TerminatedPodThreshold, err)
	}
	if o, err := parse("--terminated-pod-gc-threshold=0"); err != nil || o.PodGC.TerminatedPodThreshold != 0 {
		t.Errorf("0 (off): %d, %v", o.PodGC.TerminatedPodThreshold, err)
	}
	if _, err := parse("--terminated-pod-gc-threshold=-1"); err == nil || !strings.Contains(err.Error(), "--terminated-pod-gc-threshold: -1") {
		t.Errorf("-1: %v, want an error naming the flag and the value", err)
	}
}
