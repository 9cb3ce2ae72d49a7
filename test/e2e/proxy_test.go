package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
)

// tcpProxy forwards loopback connections to a target and can cut them all, so a test
// can partition a client from the control service without touching either. While down
// its port is closed, so clients see "connection refused", as from a stopped server.
type tcpProxy struct {
	ln         net.Listener
	listenAddr string
	target     string
	mu         sync.Mutex
	down       bool
	conns      map[net.Conn]bool
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, listenAddr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	go p.serve(ln)
	t.Cleanup(func() {
		_ = p.setDown(true)
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.listenAddr }

func (p *tcpProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *tcpProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// setDown closes the port while down (clients see "connection refused", as from a
// stopped server) and listens on the same port again when up. Connections already open
// are left alone: a server that closes them cleanly is seen doing so.
func (p *tcpProxy) setDown(down bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if down == p.down {
		return nil
	}
	p.down = down
	if down {
		return p.ln.Close()
	}
	ln, err := net.Listen("tcp", p.listenAddr)
	if err != nil {
		return err
	}
	p.ln = ln
	go p.serve(ln)
	return nil
}
