package pki

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

func FuzzNodeUser(f *testing.F) {
	for _, seed := range []string{"worker-1", "a.b.c", "", "UPPER", "x_y", "-a", strings.Repeat("n", 260), "system:node:x", "ü"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		user, err := NodeUser(name)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(name)) {
				t.Fatalf("error %q does not name the value", err)
			}
			return
		}
		if user != "system:node:"+name {
			t.Fatalf("NodeUser(%q) = %q", name, user)
		}
		if strings.ContainsAny(name, ":/ _") || name != strings.ToLower(name) || len(name) > 253 {
			t.Fatalf("NodeUser accepted %q", name)
		}
	})
}

func FuzzParseServingHosts(f *testing.F) {
	for _, seed := range []string{"localhost", "10.0.0.1", "::1", "*.example.com", "Example.COM", "", "a:b", "[::1]", "1.2.3.4.5", "x..y"} {
		f.Add(seed, "control.example.com")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		hosts, err := parseServingHosts([]string{a, b})
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, name := range hosts.dnsNames {
			if name != strings.ToLower(name) || len(dnsNameProblems(name)) > 0 || net.ParseIP(name) != nil || seen[name] {
				t.Fatalf("parseServingHosts(%q, %q) kept DNS name %q", a, b, name)
			}
			seen[name] = true
		}
		if len(hosts.dnsNames)+len(hosts.ips) == 0 || len(hosts.dnsNames)+len(hosts.ips) > 2 {
			t.Fatalf("parseServingHosts(%q, %q) = %+v", a, b, hosts)
		}
		if missing := hosts.missingFrom(hosts.dnsNames, hosts.ips); len(missing) > 0 {
			t.Fatalf("hosts do not cover themselves: %v", missing)
		}
	})
}

// The CA key file is read from disk an operator may have edited by hand.
func FuzzParsePrivateKeyPEM(f *testing.F) {
	key, err := newKey()
	if err != nil {
		f.Fatal(err)
	}
	keyPEM, err := encodeECKey(key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(keyPEM)
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		signer, err := parsePrivateKeyPEM(data)
		if err == nil && signer.Public() == nil {
			t.Fatal("parsed a key without a public half")
		}
	})
}
