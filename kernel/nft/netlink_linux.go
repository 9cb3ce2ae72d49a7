//go:build linux

package nft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"syscall"

	gnft "github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Netlink is the kernel Programmer: it speaks nftables netlink through
// github.com/google/nftables in one network namespace.
type Netlink struct {
	netnsPath string // "" for the caller's namespace
	anonSeq   uint64
	anonTag   string
	// knownSets remembers the specs of sets this Programmer created, so later batches
	// can add elements without repeating AddSet.
	knownSets map[TableRef]map[string]SetSpec
}

// NewNetlink returns a Programmer for the network namespace at netnsPath (for example
// /run/netns/NAME), or for the calling process's namespace when netnsPath is "".
func NewNetlink(netnsPath string) *Netlink {
	return &Netlink{netnsPath: netnsPath, anonTag: fmt.Sprintf("%08x", rand.Uint32()), knownSets: map[TableRef]map[string]SetSpec{}}
}

// readConn returns a google/nftables Conn for reading whose requests go through one
// real netlink socket with Execute, which reads multi-part dumps to their end. (The
// library's own receive stops when the socket is momentarily empty, but the kernel
// fills a dump's next part only when it is read, so large tables came back cut.)
func (n *Netlink) readConn() (*gnft.Conn, func(), error) {
	var nsFD int
	closeNS := func() {}
	if n.netnsPath != "" {
		f, err := os.Open(n.netnsPath)
		if err != nil {
			return nil, nil, fmt.Errorf("opening network namespace: %w", err)
		}
		nsFD = int(f.Fd())
		closeNS = func() { f.Close() }
	}
	real, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: nsFD})
	if err != nil {
		closeNS()
		return nil, nil, fmt.Errorf("opening nftables netlink socket: %w", err)
	}
	_ = real.SetReadBuffer(4 << 20)
	c, err := gnft.New(gnft.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		if len(req) == 0 {
			return nil, nil
		}
		var out []netlink.Message
		for _, m := range req {
			seq, pid := m.Header.Sequence, m.Header.PID
			m.Header.Sequence, m.Header.PID, m.Header.Length = 0, 0, 0
			replies, err := real.Execute(m)
			if err != nil {
				return nil, err
			}
			multi := false
			for _, r := range replies {
				// Answer as the library's test connection expects.
				r.Header.Sequence, r.Header.PID = seq, pid
				multi = multi || r.Header.Flags&netlink.Multi != 0
				out = append(out, r)
			}
			if multi {
				// Execute ate the dump's end marker; the test connection needs it back.
				out = append(out, netlink.Message{Header: netlink.Header{Type: netlink.Done, Flags: netlink.Multi, Sequence: seq, PID: pid}, Data: make([]byte, 4)})
			}
		}
		return out, nil
	}))
	if err != nil {
		real.Close()
		closeNS()
		return nil, nil, err
	}
	return c, func() { real.Close(); closeNS() }, nil
}

// Apply builds every operation's netlink messages with google/nftables, then sends
// them itself as ONE batch in one sendmsg, so the kernel commits all of them or none.
// Sending itself (rather than through the library's Flush) lets it leave out the
// per-rule echo the library asks for (at 30,000 services that is hundreds of
// thousands of replies to read), size the socket buffer to the batch, and name the
// operation behind a kernel error. Element lists are split over several messages by
// the library, so no attribute overflows.
func (n *Netlink) Apply(ctx context.Context, b *Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	enc := &batchEncoder{buf: make([]byte, 0, b.sizeHint())}
	hdr := []byte{unix.AF_UNSPEC, 0, 0, unix.NFNL_SUBSYS_NFTABLES} // nfgenmsg, res_id = subsystem
	enc.raw(unix.NFNL_MSG_BATCH_BEGIN, unix.NLM_F_REQUEST, hdr, -1)
	current := 0
	c, err := gnft.New(gnft.AsLasting(), gnft.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		for _, m := range req {
			t := m.Header.Type
			if t == netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN) || t == netlink.HeaderType(unix.NFNL_MSG_BATCH_END) {
				continue
			}
			enc.raw(uint16(t), uint16(m.Header.Flags&^netlink.Echo), m.Data, current)
		}
		return nil, nil
	}))
	if err != nil {
		return err
	}
	tables := map[TableRef]*gnft.Table{}
	table := func(ref TableRef) *gnft.Table {
		if t, ok := tables[ref]; ok {
			return t
		}
		t := &gnft.Table{Name: ref.Name, Family: gnft.TableFamily(ref.Family)}
		tables[ref] = t
		return t
	}
	// Element ops need each set's spec to encode keys: from AddSet in this batch, or
	// learned from the kernel for sets created earlier.
	specs := map[TableRef]map[string]SetSpec{}
	specOf := func(ref TableRef, name string) (SetSpec, error) {
		if s, ok := specs[ref][name]; ok {
			return s, nil
		}
		if s, ok := n.knownSets[ref][name]; ok {
			return s, nil
		}
		return SetSpec{}, fmt.Errorf("set %s %s: type unknown (not added through this Programmer)", ref, name)
	}
	for i, o := range b.ops {
		current = i
		done, err := enc.fastOp(o, i, func() (SetSpec, error) { return specOf(o.table, o.name) })
		if err == nil && !done {
			if err = n.queue(c, table(o.table), o, specs, specOf); err == nil {
				// Hands this operation's messages to the capture function above.
				err = c.Flush()
			}
		}
		if err != nil {
			return fmt.Errorf("nftables batch operation %d of %d (%s): %w", i+1, len(b.ops), o.describe(), err)
		}
	}
	enc.raw(unix.NFNL_MSG_BATCH_END, unix.NLM_F_REQUEST, hdr, -1)
	if err := n.send(ctx, b, enc); err != nil {
		return err
	}
	// Remember set types in operation order (a batch may delete a table and recreate it).
	for _, o := range b.ops {
		switch o.kind {
		case opAddSet:
			if n.knownSets[o.table] == nil {
				n.knownSets[o.table] = map[string]SetSpec{}
			}
			n.knownSets[o.table][o.name] = o.set
		case opDeleteSet:
			delete(n.knownSets[o.table], o.name)
		case opDeleteTable:
			delete(n.knownSets, o.table)
		}
	}
	return nil
}

// send transmits the batch in one sendmsg. The kernel processes it before sendmsg
// returns; it answers only errors (no message asks for an acknowledgement), so a
// drained socket means success.
func (n *Netlink) send(ctx context.Context, b *Batch, enc *batchEncoder) error {
	var nsFD int
	if n.netnsPath != "" {
		f, err := os.Open(n.netnsPath)
		if err != nil {
			return fmt.Errorf("opening network namespace: %w", err)
		}
		defer f.Close()
		nsFD = int(f.Fd())
	}
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: nsFD})
	if err != nil {
		return fmt.Errorf("opening nftables netlink socket: %w", err)
	}
	defer conn.Close()
	_ = conn.SetOption(netlink.ExtendedAcknowledge, true)
	if err := conn.SetWriteBuffer(len(enc.buf) + 64<<10); err != nil {
		return fmt.Errorf("sizing the netlink send buffer to %d bytes: %w", len(enc.buf), err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	if err := ctx.Err(); err != nil {
		return err
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	if err := rc.Write(func(fd uintptr) bool {
		sendErr = unix.Sendto(int(fd), enc.buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return sendErr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if sendErr != nil {
		return fmt.Errorf("sending an nftables batch of %d operations (%d messages, %d bytes): %w", len(b.ops), enc.n, len(enc.buf), sendErr)
	}
	seqToOp := make(map[uint32]int, enc.n)
	seqToOp[1] = -1 // commit errors are reported against BATCH_BEGIN
	for i, op := range enc.owner {
		seqToOp[uint32(i+2)] = op
	}
	errs, err := drainErrors(conn)
	if err != nil {
		return fmt.Errorf("reading the kernel's answer to an nftables batch: %w", err)
	}
	if len(errs) > 0 {
		return n.describeError(b, seqToOp, errs[0])
	}
	return nil
}

// kernelError is one NLMSG_ERROR answer.
type kernelError struct {
	seq   uint32
	errno syscall.Errno
	msg   string // extended ack message, when the kernel gave one
}

// drainErrors reads, without waiting, every message the kernel queued: after sendmsg
// returned, the batch was processed, and only failures were answered.
func drainErrors(conn *netlink.Conn) ([]kernelError, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var out []kernelError
	buf := make([]byte, 1<<16)
	for {
		var n int
		var rerr error
		if err := rc.Control(func(fd uintptr) {
			for {
				n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
				if rerr != unix.EINTR {
					return
				}
			}
		}); err != nil {
			return out, err
		}
		if rerr == unix.EAGAIN || rerr == unix.EWOULDBLOCK {
			return out, nil
		}
		if rerr != nil {
			return out, rerr
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			code := int32(binary.NativeEndian.Uint32(m.Data[:4]))
			if code == 0 {
				continue // an acknowledgement
			}
			ke := kernelError{seq: m.Header.Seq, errno: syscall.Errno(-code)}
			if m.Header.Flags&unix.NLM_F_ACK_TLVS != 0 {
				rest := m.Data[4:]
				if m.Header.Flags&unix.NLM_F_CAPPED != 0 && len(rest) >= unix.NLMSG_HDRLEN {
					rest = rest[unix.NLMSG_HDRLEN:]
				} else if len(rest) >= unix.NLMSG_HDRLEN {
					l := int(binary.NativeEndian.Uint32(rest[:4]))
					rest = rest[min((l+3)/4*4, len(rest)):]
				}
				if ad, err := netlink.NewAttributeDecoder(rest); err == nil {
					for ad.Next() {
						if ad.Type() == unix.NLMSGERR_ATTR_MSG {
							ke.msg = ad.String()
						}
					}
				}
			}
			out = append(out, ke)
		}
	}
}

func (n *Netlink) describeError(b *Batch, seqToOp map[uint32]int, ke kernelError) error {
	detail := ""
	if ke.msg != "" {
		detail = " (" + ke.msg + ")"
	}
	i, ok := seqToOp[ke.seq]
	if !ok || i < 0 {
		return fmt.Errorf("nftables transaction of %d operations failed at commit, nothing applied: %w%s", len(b.ops), ke.errno, detail)
	}
	return fmt.Errorf("nftables rejected batch operation %d of %d (%s), nothing applied: %w%s", i+1, len(b.ops), b.ops[i].describe(), ke.errno, detail)
}

func (n *Netlink) queue(c *gnft.Conn, t *gnft.Table, o op, specs map[TableRef]map[string]SetSpec, specOf func(TableRef, string) (SetSpec, error)) error {
	switch o.kind {
	case opAddTable:
		c.AddTable(t)
	case opDeleteTable:
		c.DelTable(t)
	case opAddChain:
		ch := &gnft.Chain{Name: o.chain.Name, Table: t}
		if bc := o.chain.Base; bc != nil {
			hook := gnft.ChainHook(bc.Hook)
			prio := gnft.ChainPriority(bc.Priority)
			policy := gnft.ChainPolicyAccept
			ch.Hooknum, ch.Priority, ch.Type, ch.Policy = &hook, &prio, gnft.ChainType(bc.Type), &policy
		}
		c.AddChain(ch)
	case opFlushChain:
		c.FlushChain(&gnft.Chain{Name: o.name, Table: t})
	case opDeleteChain:
		c.DelChain(&gnft.Chain{Name: o.name, Table: t})
	case opAddRule, opInsertRule:
		exprs, err := compileRule(o.table.Family, o.rule, func(elems []gnft.SetElement) (*gnft.Set, error) {
			// Anonymous maps get a unique name here: with nft's "__map%d" the kernel
			// scans every set of the table for a free number, quadratic over a sync.
			n.anonSeq++
			s := &gnft.Set{Table: t, Anonymous: true, Constant: true, IsMap: true,
				ID: uint32(n.anonSeq) | 1<<31, Name: fmt.Sprintf("__map%s_%d", n.anonTag, n.anonSeq),
				KeyType: gnft.TypeInteger, DataType: gnft.TypeVerdict, KeyByteOrder: nativeEndian()}
			return s, c.AddSet(s, elems)
		})
		if err != nil {
			return err
		}
		r := &gnft.Rule{Table: t, Chain: &gnft.Chain{Name: o.name, Table: t}, Exprs: exprs}
		if o.kind == opInsertRule {
			c.InsertRule(r)
		} else {
			c.AddRule(r)
		}
	case opAddSet:
		s, err := gnftSet(t, o.set)
		if err != nil {
			return err
		}
		if err := c.AddSet(s, nil); err != nil {
			return err
		}
		if specs[o.table] == nil {
			specs[o.table] = map[string]SetSpec{}
		}
		specs[o.table][o.name] = o.set
	case opFlushSet:
		c.FlushSet(&gnft.Set{Table: t, Name: o.name})
	case opDeleteSet:
		c.DelSet(&gnft.Set{Table: t, Name: o.name})
	case opAddElements, opDeleteElements:
		spec, err := specOf(o.table, o.name)
		if err != nil {
			return err
		}
		elems, err := gnftElements(spec, o.elems)
		if err != nil {
			return err
		}
		s, err := gnftSet(t, spec)
		if err != nil {
			return err
		}
		if o.kind == opAddElements {
			return c.SetAddElements(s, elems)
		}
		return c.SetDeleteElements(s, elems)
	default:
		return fmt.Errorf("unknown operation %d", o.kind)
	}
	return nil
}

// List reads the table back: chains with their rules, sets and maps with their
// elements (anonymous maps folded back into the rules that use them).
func (n *Netlink) List(ctx context.Context, ref TableRef) (*Table, bool, error) {
	c, done, err := n.readConn()
	if err != nil {
		return nil, false, err
	}
	defer done()
	tables, err := c.ListTablesOfFamily(gnft.TableFamily(ref.Family))
	if err != nil {
		return nil, false, fmt.Errorf("listing %s tables: %w", ref.Family, err)
	}
	var gt *gnft.Table
	for _, t := range tables {
		if t.Name == ref.Name {
			gt = t
		}
	}
	if gt == nil {
		return nil, false, nil
	}
	out := NewTable(ref)
	sets, err := c.GetSets(gt)
	if err != nil {
		return nil, false, fmt.Errorf("listing sets of table %s: %w", ref, err)
	}
	anon := map[string][]gnft.SetElement{}
	for _, s := range sets {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		elems, err := stableElements(c, s)
		if err != nil {
			return nil, false, fmt.Errorf("listing elements of set %s in table %s: %w", s.Name, ref, err)
		}
		if s.Anonymous {
			anon[s.Name] = elems
			continue
		}
		spec, err := decodeSetSpec(s)
		if err != nil {
			return nil, false, fmt.Errorf("table %s: %w", ref, err)
		}
		set := &Set{SetSpec: spec, Elements: map[string]Element{}}
		decoded, err := decodeElements(spec, elems)
		if err != nil {
			return nil, false, fmt.Errorf("table %s set %s: %w", ref, s.Name, err)
		}
		for _, e := range decoded {
			set.Elements[ElementKey(spec, e)] = e
		}
		out.Sets[s.Name] = set
	}
	chains, err := c.ListChainsOfTableFamily(gnft.TableFamily(ref.Family))
	if err != nil {
		return nil, false, fmt.Errorf("listing chains of table %s: %w", ref, err)
	}
	for _, ch := range chains {
		if ch.Table.Name != ref.Name {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		spec := ChainSpec{Name: ch.Name}
		if ch.Hooknum != nil && ch.Priority != nil {
			spec.Base = &BaseChain{Type: ChainType(ch.Type), Hook: Hook(*ch.Hooknum), Priority: int32(*ch.Priority)}
		}
		rules, err := c.GetRules(gt, ch)
		if err != nil {
			return nil, false, fmt.Errorf("listing rules of chain %s in table %s: %w", ch.Name, ref, err)
		}
		chain := &Chain{ChainSpec: spec}
		for _, r := range rules {
			ir, err := decodeRule(ref.Family, r.Exprs, anon)
			if err != nil {
				return nil, false, fmt.Errorf("table %s chain %s rule handle %d: %w", ref, ch.Name, r.Handle, err)
			}
			chain.Rules = append(chain.Rules, ir)
		}
		out.Chains[ch.Name] = chain
	}
	return out, true, nil
}

// stableElements dumps a set's elements until two dumps agree on the count. Right
// after a large commit the kernel may still be growing a hash set's table, and a dump
// walking it meanwhile can miss elements.
func stableElements(c *gnft.Conn, s *gnft.Set) ([]gnft.SetElement, error) {
	prev := -1
	var elems []gnft.SetElement
	for try := 0; try < 10; try++ {
		var err error
		if elems, err = c.GetSetElements(s); err != nil {
			return nil, err
		}
		if len(elems) == prev {
			return elems, nil
		}
		prev = len(elems)
	}
	return elems, nil
}

// DeleteTables removes the given tables in one transaction; tables that do not exist
// are skipped, so it succeeds on a clean system.
func (n *Netlink) DeleteTables(ctx context.Context, refs ...TableRef) error {
	c, done, err := n.readConn()
	if err != nil {
		return err
	}
	existing := map[TableRef]bool{}
	for _, fam := range uniqueFamilies(refs) {
		ts, err := c.ListTablesOfFamily(gnft.TableFamily(fam))
		if err != nil {
			done()
			return fmt.Errorf("listing %s tables: %w", fam, err)
		}
		for _, t := range ts {
			existing[TableRef{Family: fam, Name: t.Name}] = true
		}
	}
	done()
	var b Batch
	for _, ref := range refs {
		if existing[ref] {
			b.DeleteTable(ref)
		}
	}
	err = n.Apply(ctx, &b)
	if errors.Is(err, syscall.ENOENT) {
		// Removed by someone else between listing and deleting.
		return nil
	}
	return err
}

func uniqueFamilies(refs []TableRef) []Family {
	seen := map[Family]bool{}
	var out []Family
	for _, r := range refs {
		if !seen[r.Family] {
			seen[r.Family] = true
			out = append(out, r.Family)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
