package nodesim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/plinth/plinth/controlclient/nodeclient"
	"github.com/plinth/plinth/daemon/node"
)

// Options configure a Simulator. Credentials is required; zero durations take
// plinthd's defaults.
type Options struct {
	Credentials Credentials
	// LeaseDuration, StatusUpdateFrequency and StatusReportFrequency are the node
	// agent's settings of the same names (40 s, 10 s and 5 min by default); the Lease
	// is renewed every quarter of LeaseDuration.
	LeaseDuration         time.Duration
	StatusUpdateFrequency time.Duration
	StatusReportFrequency time.Duration
	// Labels are added to every Node.
	Labels map[string]string
	// StartSpread: each node starts after a random delay in [0, StartSpread), so the
	// fleet's heartbeats are spread evenly; 0 means one renew interval.
	StartSpread time.Duration
	// Seed makes the start delays repeatable.
	Seed uint64
	// Recorder receives every request's latency; nil makes a new one (see Recorder).
	Recorder *Recorder
	// Clock drives the agents and the recorder; nil is the real clock.
	Clock clock.WithTicker
	// Logger receives the agents' logs; nil discards them.
	Logger *slog.Logger
}

// Simulator runs simulated nodes until they, or it, are stopped.
type Simulator struct {
	opts  Options
	renew time.Duration
	// scheme is shared by every node's client: one per client is 30 KiB a node of
	// heap the simulator's garbage collector would scan, stealing CPU from the control
	// service it measures.
	scheme *runtime.Scheme

	mu    sync.Mutex
	rand  *rand.Rand
	nodes map[string]*Node
	count int // nodes ever started, for their InternalIP
	wg    sync.WaitGroup
}

// New checks opts and returns a Simulator with no nodes.
func New(opts Options) (*Simulator, error) {
	if opts.Credentials == nil {
		return nil, errors.New("nodesim: Options.Credentials is nil; want how each node connects (AuthorityCredentials or SharedConfig)")
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = node.DefaultLeaseDuration
	}
	if opts.LeaseDuration < time.Second || opts.LeaseDuration%time.Second != 0 {
		return nil, fmt.Errorf("nodesim: Options.LeaseDuration %s: want a whole number of seconds, at least 1s", opts.LeaseDuration)
	}
	renew := opts.LeaseDuration / 4
	if opts.StartSpread == 0 {
		opts.StartSpread = renew
	}
	if opts.StartSpread < 0 {
		return nil, fmt.Errorf("nodesim: Options.StartSpread %s: want 0 or more", opts.StartSpread)
	}
	if opts.Recorder == nil {
		opts.Recorder = NewRecorder()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	scheme, err := nodeclient.NewScheme()
	if err != nil {
		return nil, fmt.Errorf("nodesim: API scheme: %w", err)
	}
	return &Simulator{
		opts:   opts,
		renew:  renew,
		scheme: scheme,
		rand:   rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		nodes:  map[string]*Node{},
	}, nil
}

// Recorder is where the nodes' request latencies go.
func (s *Simulator) Recorder() *Recorder { return s.opts.Recorder }

// Start builds a client and an agent for each name and starts them, each after its
// random delay. The nodes run until ctx ends, Node.Stop, or Stop. An error (bad
// credentials, a name that is not a valid Node name, a name already running) starts
// none of the nodes.
func (s *Simulator) Start(ctx context.Context, names ...string) ([]*Node, error) {
	type prepared struct {
		n     *Node
		ctx   context.Context
		agent *node.Agent
		delay time.Duration
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ready []prepared
	abort := func() {
		for _, p := range ready {
			p.n.cancel()
		}
	}
	for _, name := range names {
		if _, ok := s.nodes[name]; ok {
			abort()
			return nil, fmt.Errorf("nodesim: node %s is already running", name)
		}
		nctx, cancel := context.WithCancel(ctx)
		n := newNode(name, cancel, s.opts.Clock)
		agent, err := s.newAgent(n, s.count+len(ready))
		if err != nil {
			cancel()
			abort()
			return nil, err
		}
		ready = append(ready, prepared{n: n, ctx: nctx, agent: agent, delay: s.startDelay()})
	}
	out := make([]*Node, 0, len(ready))
	for _, p := range ready {
		s.nodes[p.n.Name] = p.n
		out = append(out, p.n)
		s.wg.Go(func() {
			defer close(p.n.done)
			if !s.wait(p.ctx, p.delay) {
				return
			}
			_ = p.agent.Run(p.ctx)
		})
	}
	s.count += len(ready)
	return out, nil
}

func (s *Simulator) startDelay() time.Duration {
	return time.Duration(s.rand.Int64N(int64(s.opts.StartSpread) + 1))
}

// newAgent builds the client and the agent of n, the index-th node started.
func (s *Simulator) newAgent(n *Node, index int) (*node.Agent, error) {
	cfg, err := s.opts.Credentials(n.Name)
	if err != nil {
		return nil, fmt.Errorf("nodesim: credentials of node %s: %w", n.Name, err)
	}
	node.ConfigureClient(cfg, s.opts.LeaseDuration, "plinth-nodesim")
	// A node agent's own client-side rate limits (client-go's defaults) stay: they are
	// part of what a real node sends.
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &recordingTransport{next: rt, recorder: s.opts.Recorder, clock: s.opts.Clock, node: n}
	})
	client, err := nodeclient.NewWithScheme(cfg, s.scheme)
	if err != nil {
		return nil, fmt.Errorf("nodesim: client of node %s: %w", n.Name, err)
	}
	nodeCfg := node.DefaultConfig(n.Name)
	nodeCfg.Labels = s.opts.Labels
	nodeCfg.LeaseDuration = s.opts.LeaseDuration
	nodeCfg.StatusUpdateFrequency = s.opts.StatusUpdateFrequency
	nodeCfg.StatusReportFrequency = s.opts.StatusReportFrequency
	nodeCfg.StateDir = "" // facts are made up, not read from the host
	return node.NewAgent(client, nodeCfg, simulatedFacts(index), nil, s.opts.Clock, nil, s.opts.Logger)
}

// simulatedFacts are a plausible machine with a distinct InternalIP per node
// (10.128.0.0/9, in start order).
func simulatedFacts(index int) node.HostFacts {
	i := index + 1
	return node.HostFacts{
		CPUs:                  4,
		MemoryBytes:           16 << 30,
		EphemeralStorageBytes: 100 << 30,
		KernelVersion:         "6.18.0-nodesim",
		OSImage:               "Plinth node simulator",
		MachineID:             fmt.Sprintf("%032x", i),
		BootID:                fmt.Sprintf("00000000-0000-4000-8000-%012x", i),
		InternalIP:            net.IPv4(10, byte(128+(i>>16)&0x7f), byte(i>>8), byte(i)),
	}
}

func (s *Simulator) wait(ctx context.Context, d time.Duration) bool {
	t := s.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// Node returns the node started under name, or nil.
func (s *Simulator) Node(name string) *Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[name]
}

// Stop stops every node and waits until all have returned.
func (s *Simulator) Stop() {
	s.mu.Lock()
	now := s.opts.Clock.Now()
	for _, n := range s.nodes {
		n.stopAt(now)
	}
	s.mu.Unlock()
	s.wg.Wait()
}
