package service

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// parseFlags is plinth-control's flag parsing and completion on args.
func parseFlags(args ...string) (Options, error) {
	o := DefaultOptions()
	fs := flag.NewFlagSet("plinth-control", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Complete()
}

func TestTerminatedPodGCThresholdFlag(t *testing.T) {
	o, err := parseFlags()
	if err != nil || o.PodGC.TerminatedPodThreshold != 12500 {
		t.Fatalf("default: %d, %v; want 12500", o.PodGC.TerminatedPodThreshold, err)
	}
	if o, err := parseFlags("--terminated-pod-gc-threshold=0"); err != nil || o.PodGC.TerminatedPodThreshold != 0 {
		t.Errorf("0 (off): %d, %v", o.PodGC.TerminatedPodThreshold, err)
	}
	if _, err := parseFlags("--terminated-pod-gc-threshold=-1"); err == nil || !strings.Contains(err.Error(), "--terminated-pod-gc-threshold: -1") {
		t.Errorf("-1: %v, want an error naming the flag and the value", err)
	}
}

func TestInflightLimitFlags(t *testing.T) {
	o, err := parseFlags()
	if err != nil || o.Inflight.ReadOnly != 400 || o.Inflight.Mutating != 200 {
		t.Fatalf("defaults: %+v, %v; want kube-apiserver's 400 and 200", o.Inflight, err)
	}
	if o, err := parseFlags("--max-requests-inflight=0", "--max-mutating-requests-inflight=50"); err != nil || o.Inflight.ReadOnly != 0 || o.Inflight.Mutating != 50 {
		t.Errorf("0 and 50: %+v, %v", o.Inflight, err)
	}
	for _, tc := range []struct{ arg, want string }{
		{"--max-requests-inflight=-1", "--max-requests-inflight: -1"},
		{"--max-mutating-requests-inflight=-5", "--max-mutating-requests-inflight: -5"},
	} {
		if _, err := parseFlags(tc.arg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming the flag and the value", tc.arg, err)
		}
	}
}

func TestObjectCacheSizeFlag(t *testing.T) {
	o, err := parseFlags()
	if err != nil || objectCacheBytes(o.ObjectCacheMiB) != 32<<20 {
		t.Fatalf("default: %d MiB, %v; want 32 MiB", o.ObjectCacheMiB, err)
	}
	if o, err := parseFlags("--object-cache-size=0"); err != nil || objectCacheBytes(o.ObjectCacheMiB) >= 0 {
		t.Errorf("0 must turn the cache off: %d bytes, %v", objectCacheBytes(o.ObjectCacheMiB), err)
	}
	if _, err := parseFlags("--object-cache-size=-5"); err == nil || !strings.Contains(err.Error(), "--object-cache-size: -5") {
		t.Errorf("-5: %v, want an error naming the flag and the value", err)
	}
}

func TestExternalEtcdTLSFlags(t *testing.T) {
	o, err := parseFlags("--etcd-servers", "https://10.0.0.1:2379,https://10.0.0.2:2379",
		"--etcd-cafile", "/etc/etcd/ca.crt", "--etcd-certfile", "/etc/etcd/client.crt", "--etcd-keyfile", "/etc/etcd/client.key")
	if err != nil {
		t.Fatal(err)
	}
	ext := o.externalEtcd(nil)
	if len(ext.Endpoints) != 2 || ext.CAFile != "/etc/etcd/ca.crt" || ext.CertFile != "/etc/etcd/client.crt" || ext.KeyFile != "/etc/etcd/client.key" || ext.ReadyTimeout <= 0 {
		t.Errorf("external etcd settings: %+v", ext)
	}
	if _, err := parseFlags("--etcd-keyfile", "/etc/etcd/client.key"); err == nil || !strings.Contains(err.Error(), "--etcd-servers") {
		t.Errorf("a key file without --etcd-servers: %v; want an error naming --etcd-servers", err)
	}
}
