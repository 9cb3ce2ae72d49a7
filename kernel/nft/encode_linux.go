//go:build linux

package nft

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// batchEncoder writes one nftables batch (BATCH_BEGIN, messages, BATCH_END) straight
// into one buffer. Chains, rules and plain set elements — nearly all of a large sync —
// are encoded here; tables, base chains and sets still come from google/nftables
// (through the capture in Apply), and expressions are marshalled by its expr package.
// Message i carries sequence number i+1; owner maps it back to the operation.
type batchEncoder struct {
	buf     []byte
	owner   []int // owner[seq-2]: operation index of the message after BATCH_BEGIN
	n       int   // messages written
	opIndex int   // the operation being encoded
}

const (
	nlaHdrLen    = 4
	maxElemBytes = 60000 // element list per message: nla_len is 16 bits
	nftSubsys    = unix.NFNL_SUBSYS_NFTABLES << 8
)

func (e *batchEncoder) begin(typ, flags uint16, family uint8) int {
	start := len(e.buf)
	e.n++
	e.buf = binary.NativeEndian.AppendUint32(e.buf, 0) // length, set by end
	e.buf = binary.NativeEndian.AppendUint16(e.buf, typ)
	e.buf = binary.NativeEndian.AppendUint16(e.buf, flags)
	e.buf = binary.NativeEndian.AppendUint32(e.buf, uint32(e.n))
	e.buf = binary.NativeEndian.AppendUint32(e.buf, 0)
	// nfgenmsg: family, version, resource id (big endian)
	e.buf = append(e.buf, family, unix.NFNETLINK_V0, 0, 0)
	return start
}

func (e *batchEncoder) end(start int) {
	binary.NativeEndian.PutUint32(e.buf[start:], uint32(len(e.buf)-start))
	e.pad()
}

func (e *batchEncoder) pad() {
	for len(e.buf)%4 != 0 {
		e.buf = append(e.buf, 0)
	}
}

// raw appends a message built elsewhere (google/nftables) for operation op.
func (e *batchEncoder) raw(typ, flags uint16, data []byte, op int) {
	start := len(e.buf)
	e.n++
	e.buf = binary.NativeEndian.AppendUint32(e.buf, 0)
	e.buf = binary.NativeEndian.AppendUint16(e.buf, typ)
	e.buf = binary.NativeEndian.AppendUint16(e.buf, flags)
	e.buf = binary.NativeEndian.AppendUint32(e.buf, uint32(e.n))
	e.buf = binary.NativeEndian.AppendUint32(e.buf, 0)
	e.buf = append(e.buf, data...)
	e.end(start)
	if op >= 0 {
		e.owner = append(e.owner, op)
	}
}

func (e *batchEncoder) attr(typ uint16, data []byte) {
	e.buf = binary.NativeEndian.AppendUint16(e.buf, uint16(nlaHdrLen+len(data)))
	e.buf = binary.NativeEndian.AppendUint16(e.buf, typ)
	e.buf = append(e.buf, data...)
	e.pad()
}

func (e *batchEncoder) attrString(typ uint16, s string) {
	e.buf = binary.NativeEndian.AppendUint16(e.buf, uint16(nlaHdrLen+len(s)+1))
	e.buf = binary.NativeEndian.AppendUint16(e.buf, typ)
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, 0)
	e.pad()
}

func (e *batchEncoder) attrU32(typ uint16, v uint32) {
	e.buf = binary.NativeEndian.AppendUint16(e.buf, nlaHdrLen+4)
	e.buf = binary.NativeEndian.AppendUint16(e.buf, typ)
	e.buf = binary.BigEndian.AppendUint32(e.buf, v)
}

func (e *batchEncoder) nest(typ uint16) int {
	start := len(e.buf)
	e.buf = binary.NativeEndian.AppendUint16(e.buf, 0)
	e.buf = binary.NativeEndian.AppendUint16(e.buf, typ|unix.NLA_F_NESTED)
	return start
}

func (e *batchEncoder) endNest(start int) {
	binary.NativeEndian.PutUint16(e.buf[start:], uint16(len(e.buf)-start))
}

// fastOp encodes o when it is one of the bulk kinds, reporting false for the others.
func (e *batchEncoder) fastOp(o op, idx int, spec func() (SetSpec, error)) (bool, error) {
	fam := uint8(o.table.Family)
	e.opIndex = idx
	switch o.kind {
	case opAddChain:
		if o.chain.Base != nil {
			return false, nil
		}
		start := e.begin(nftSubsys|unix.NFT_MSG_NEWCHAIN, unix.NLM_F_REQUEST|unix.NLM_F_CREATE, fam)
		e.attrString(unix.NFTA_CHAIN_TABLE, o.table.Name)
		e.attrString(unix.NFTA_CHAIN_NAME, o.name)
		e.end(start)
	case opFlushChain:
		start := e.begin(nftSubsys|unix.NFT_MSG_DELRULE, unix.NLM_F_REQUEST, fam)
		e.attrString(unix.NFTA_RULE_TABLE, o.table.Name)
		e.attrString(unix.NFTA_RULE_CHAIN, o.name)
		e.end(start)
	case opDeleteChain:
		start := e.begin(nftSubsys|unix.NFT_MSG_DELCHAIN, unix.NLM_F_REQUEST, fam)
		e.attrString(unix.NFTA_CHAIN_TABLE, o.table.Name)
		e.attrString(unix.NFTA_CHAIN_NAME, o.name)
		e.end(start)
	case opAddRule, opInsertRule:
		for _, x := range o.rule {
			if _, anon := x.(NumgenVMap); anon {
				return false, nil // needs an anonymous set: the library's path
			}
		}
		exprs, err := compileRule(o.table.Family, o.rule, nil)
		if err != nil {
			return true, err
		}
		flags := uint16(unix.NLM_F_REQUEST | unix.NLM_F_CREATE | unix.NLM_F_APPEND)
		if o.kind == opInsertRule {
			flags &^= unix.NLM_F_APPEND // no position: the head of the chain
		}
		start := e.begin(nftSubsys|unix.NFT_MSG_NEWRULE, flags, fam)
		e.attrString(unix.NFTA_RULE_TABLE, o.table.Name)
		e.attrString(unix.NFTA_RULE_CHAIN, o.name)
		list := e.nest(unix.NFTA_RULE_EXPRESSIONS)
		for _, x := range exprs {
			b, err := expr.Marshal(fam, x)
			if err != nil {
				return true, err
			}
			e.attr(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, b)
		}
		e.endNest(list)
		e.end(start)
	case opAddElements, opDeleteElements:
		s, err := spec()
		if err != nil {
			return true, err
		}
		if s.Interval {
			return false, nil
		}
		return true, e.elements(o, s)
	default:
		return false, nil
	}
	e.owner = append(e.owner, idx)
	return true, nil
}

// elements encodes an element operation, as many messages as the list needs.
func (e *batchEncoder) elements(o op, s SetSpec) error {
	typ, flags := uint16(nftSubsys|unix.NFT_MSG_NEWSETELEM), uint16(unix.NLM_F_REQUEST|unix.NLM_F_CREATE)
	if o.kind == opDeleteElements {
		typ, flags = nftSubsys|unix.NFT_MSG_DELSETELEM, unix.NLM_F_REQUEST
	}
	var start, list int
	open := false
	closeMsg := func() {
		e.endNest(list)
		e.end(start)
		open = false
	}
	var key []byte
	for i, el := range o.elems {
		if !open {
			start = e.begin(typ, flags, uint8(o.table.Family))
			e.owner = append(e.owner, e.opIndex)
			e.attrString(unix.NFTA_SET_ELEM_LIST_TABLE, o.table.Name)
			e.attrString(unix.NFTA_SET_ELEM_LIST_SET, o.name)
			list = e.nest(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
			open = true
		}
		if len(el.Key) != len(s.Key) {
			return fmt.Errorf("set %s: element %s has %d key parts, set has %d", s.Name, ElementKey(s, el), len(el.Key), len(s.Key))
		}
		key = key[:0]
		for k, v := range el.Key {
			b, err := encodeValue(s.Key[k], v)
			if err != nil {
				return fmt.Errorf("set %s: element %s: %w", s.Name, ElementKey(s, el), err)
			}
			key = append(key, b...)
			if len(s.Key) > 1 {
				for len(key)%4 != 0 {
					key = append(key, 0)
				}
			}
		}
		item := e.nest(uint16(i%0x7fff + 1))
		k := e.nest(unix.NFTA_SET_ELEM_KEY)
		e.attr(unix.NFTA_DATA_VALUE, key)
		e.endNest(k)
		if o.kind == opAddElements {
			switch {
			case len(s.Data) > 0:
				if len(el.Data) != len(s.Data) {
					return fmt.Errorf("set %s: element %s has %d data parts, map has %d", s.Name, ElementKey(s, el), len(el.Data), len(s.Data))
				}
				d := e.nest(unix.NFTA_SET_ELEM_DATA)
				var val []byte
				for k, v := range el.Data {
					b, err := encodeValue(s.Data[k], v)
					if err != nil {
						return fmt.Errorf("set %s: element %s data: %w", s.Name, ElementKey(s, el), err)
					}
					val = append(val, b...)
					if len(s.Data) > 1 {
						for len(val)%4 != 0 {
							val = append(val, 0)
						}
					}
				}
				e.attr(unix.NFTA_DATA_VALUE, val)
				e.endNest(d)
			case el.Verdict != nil:
				v, err := verdictExpr(*el.Verdict)
				if err != nil {
					return err
				}
				d := e.nest(unix.NFTA_SET_ELEM_DATA)
				vd := e.nest(unix.NFTA_DATA_VERDICT)
				e.attrU32(unix.NFTA_VERDICT_CODE, uint32(int32(v.Kind)))
				if v.Chain != "" {
					e.attrString(unix.NFTA_VERDICT_CHAIN, v.Chain)
				}
				e.endNest(vd)
				e.endNest(d)
			}
		}
		e.endNest(item)
		if len(e.buf)-list > maxElemBytes {
			closeMsg()
		}
	}
	if open {
		closeMsg()
	}
	return nil
}
