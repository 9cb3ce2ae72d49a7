package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

type handshakeResult struct {
	serverErr  error
	clientErr  error
	peerUser   string
	peerGroups []string
}

// handshake runs one TLS connection over loopback between a server using a's
// ServerTLSConfig and a client using clientCfg. The server writes one byte after its
// handshake; in TLS 1.3 a client only learns that the server rejected its certificate
// when it reads, so the client reads that byte.
func handshake(t *testing.T, a *Authority, clientCfg *tls.Config) handshakeResult {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	type serverSide struct {
		err    error
		user   string
		groups []string
	}
	done := make(chan serverSide, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- serverSide{err: err}
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		srv := tls.Server(conn, a.ServerTLSConfig())
		if err := srv.Handshake(); err != nil {
			done <- serverSide{err: err}
			return
		}
		var res serverSide
		if peers := srv.ConnectionState().PeerCertificates; len(peers) > 0 {
			res.user, res.groups = peers[0].Subject.CommonName, peers[0].Subject.Organization
		}
		_, res.err = srv.Write([]byte{1})
		done <- res
	}()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	client := tls.Client(conn, clientCfg)
	clientErr := client.Handshake()
	if clientErr == nil {
		var b [1]byte
		if _, err := io.ReadFull(client, b[:]); err != nil {
			clientErr = err
		}
	}
	client.Close()
	srv := <-done
	return handshakeResult{serverErr: srv.err, clientErr: clientErr, peerUser: srv.user, peerGroups: srv.groups}
}

func clientConfig(t *testing.T, a *Authority, certPEM, keyPEM []byte, serverName string) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: a.ClientCAs(), ServerName: serverName}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func TestServerTLSConfigRequiresClientCert(t *testing.T) {
	a := mustLoadOrCreate(t, t.TempDir(), Options{})
	if got := a.ServerTLSConfig().ClientAuth; got != tls.RequireAndVerifyClientCert {
		t.Fatalf("ServerTLSConfig ClientAuth %v, want RequireAndVerifyClientCert", got)
	}
	certPEM, keyPEM, err := a.IssueClientCert(AdminUser, []string{AdminGroup}, 0)
	if err != nil {
		t.Fatal(err)
	}

	// The client checks the server too: by name and by IP address.
	for _, serverName := range []string{"localhost", "127.0.0.1"} {
		res := handshake(t, a, clientConfig(t, a, certPEM, keyPEM, serverName))
		if res.serverErr != nil || res.clientErr != nil {
			t.Fatalf("handshake as %s to %s: server %v, client %v", AdminUser, serverName, res.serverErr, res.clientErr)
		}
		if res.peerUser != AdminUser || len(res.peerGroups) != 1 || res.peerGroups[0] != AdminGroup {
			t.Errorf("server saw user %q groups %v, want %q [%s]", res.peerUser, res.peerGroups, AdminUser, AdminGroup)
		}
	}

	other := mustLoadOrCreate(t, t.TempDir(), Options{})
	foreignCert, foreignKey, err := other.IssueClientCert(AdminUser, []string{AdminGroup}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*tls.Config{
		"no client certificate":             clientConfig(t, a, nil, nil, "localhost"),
		"client certificate of another CA":  clientConfig(t, a, foreignCert, foreignKey, "localhost"),
		"serving certificate as the client": clientConfig(t, a, readFile(t, a.ServingCertFile()), readFile(t, a.ServingKeyFile()), "localhost"),
	} {
		res := handshake(t, a, cfg)
		if res.serverErr == nil {
			t.Errorf("%s: server accepted the connection", name)
		}
		if res.clientErr == nil {
			t.Errorf("%s: client read data although the server rejected it", name)
		}
		if res.peerUser != "" {
			t.Errorf("%s: server saw user %q", name, res.peerUser)
		}
	}

	// And the client refuses a server whose certificate its CA did not sign.
	res := handshake(t, a, &tls.Config{RootCAs: other.ClientCAs(), ServerName: "localhost"})
	var unknown x509.UnknownAuthorityError
	if res.clientErr == nil || !errors.As(res.clientErr, &unknown) {
		t.Errorf("client trusting another CA: error %v, want unknown authority", res.clientErr)
	}
}
