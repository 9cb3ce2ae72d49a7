//go:build linux

package nft

import (
	"fmt"
	"net/netip"

	gnft "github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Registers: single loads use the legacy 16-byte register 1 (as nft does); the parts of
// a concatenation go to consecutive 32-bit registers from NFT_REG32_00, each part
// padded to 4 bytes.
const (
	reg1    = unix.NFT_REG_1
	reg2    = unix.NFT_REG_2
	reg3200 = unix.NFT_REG32_00
	ctNew   = 1 << 3 // NF_CT_STATE_BIT(IP_CT_NEW)
)

func loadField(f Family, fl Field, reg uint32) (expr.Any, error) {
	addrOff := func(saddr bool) (uint32, uint32) {
		if f == IPv6 {
			if saddr {
				return 8, 16
			}
			return 24, 16
		}
		if saddr {
			return 12, 4
		}
		return 16, 4
	}
	switch fl {
	case FieldSaddr, FieldDaddr:
		off, n := addrOff(fl == FieldSaddr)
		return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: n}, nil
	case FieldTHDport:
		return &expr.Payload{OperationType: expr.PayloadLoad, DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}, nil
	case FieldL4Proto:
		return &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg}, nil
	case FieldMark:
		return &expr.Meta{Key: expr.MetaKeyMARK, Register: reg}, nil
	case FieldFibDaddrType:
		return &expr.Fib{Register: reg, FlagDADDR: true, ResultADDRTYPE: true}, nil
	case FieldFibSaddrType:
		return &expr.Fib{Register: reg, FlagSADDR: true, ResultADDRTYPE: true}, nil
	}
	return nil, fmt.Errorf("unknown field %d", fl)
}

// encodeValue encodes v as type t (unpadded).
func encodeValue(t DataType, v Value) ([]byte, error) {
	switch t {
	case TypeIPv4Addr:
		if !v.Addr.Unmap().Is4() {
			return nil, fmt.Errorf("%v is not an IPv4 address", v.Addr)
		}
		b := v.Addr.Unmap().As4()
		return b[:], nil
	case TypeIPv6Addr:
		if !v.Addr.Is6() || v.Addr.Is4In6() {
			return nil, fmt.Errorf("%v is not an IPv6 address", v.Addr)
		}
		b := v.Addr.As16()
		return b[:], nil
	case TypeInetProto:
		return []byte{byte(v.Num)}, nil
	case TypeInetService:
		return binaryutil.BigEndian.PutUint16(uint16(v.Num)), nil
	case TypeMark, TypeInteger, TypeAddrType:
		return binaryutil.NativeEndian.PutUint32(v.Num), nil
	}
	return nil, fmt.Errorf("cannot encode type %s", t)
}

func pad4(b []byte) []byte {
	if r := len(b) % 4; r != 0 {
		b = append(b, make([]byte, 4-r)...)
	}
	return b
}

// loadFields loads a (possibly concatenated) key into registers and returns the first.
func loadFields(f Family, fields []Field) ([]expr.Any, uint32, error) {
	if len(fields) == 1 {
		e, err := loadField(f, fields[0], reg1)
		return []expr.Any{e}, reg1, err
	}
	var out []expr.Any
	reg := uint32(reg3200)
	for _, fl := range fields {
		e, err := loadField(f, fl, reg)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, e)
		reg += uint32((fl.Type(f).Size() + 3) / 4)
	}
	return out, reg3200, nil
}

func verdictExpr(v Verdict) (*expr.Verdict, error) {
	switch v.Kind {
	case VerdictAccept:
		return &expr.Verdict{Kind: expr.VerdictAccept}, nil
	case VerdictDrop:
		return &expr.Verdict{Kind: expr.VerdictDrop}, nil
	case VerdictReturn:
		return &expr.Verdict{Kind: expr.VerdictReturn}, nil
	case VerdictJump:
		return &expr.Verdict{Kind: expr.VerdictJump, Chain: v.Chain}, nil
	case VerdictGoto:
		return &expr.Verdict{Kind: expr.VerdictGoto, Chain: v.Chain}, nil
	}
	return nil, fmt.Errorf("unknown verdict kind %d", v.Kind)
}

func prefixMask(p netip.Prefix) []byte {
	n := p.Addr().BitLen() / 8
	m := make([]byte, n)
	bits := p.Bits()
	for i := range m {
		switch {
		case bits >= 8:
			m[i] = 0xff
			bits -= 8
		case bits > 0:
			m[i] = byte(0xff << (8 - bits))
			bits = 0
		}
	}
	return m
}

// anonMap is an anonymous constant verdict map a rule needs created just before it.
type anonMap struct {
	set   *gnft.Set
	elems []gnft.SetElement
}

// compileRule turns a rule into netlink expressions. newAnonMap creates the anonymous
// map a numgen vmap needs (it must be queued before the rule).
func compileRule(f Family, r Rule, newAnonMap func(elems []gnft.SetElement) (*gnft.Set, error)) ([]expr.Any, error) {
	var out []expr.Any
	cmpOp := func(neq bool) expr.CmpOp {
		if neq {
			return expr.CmpOpNeq
		}
		return expr.CmpOpEq
	}
	for _, e := range r {
		switch e := e.(type) {
		case Cmp:
			l, err := loadField(f, e.Field, reg1)
			if err != nil {
				return nil, err
			}
			data, err := encodeValue(e.Field.Type(f), e.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.text(f), err)
			}
			out = append(out, l, &expr.Cmp{Op: cmpOp(e.Neq), Register: reg1, Data: data})
		case PrefixCmp:
			if (f == IPv4) != e.Prefix.Addr().Is4() || (e.Field != FieldSaddr && e.Field != FieldDaddr) {
				return nil, fmt.Errorf("%s: prefix does not fit the field", e.text(f))
			}
			l, _ := loadField(f, e.Field, reg1)
			mask := prefixMask(e.Prefix)
			addr := e.Prefix.Masked().Addr().AsSlice()
			out = append(out, l,
				&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: uint32(len(mask)), Mask: mask, Xor: make([]byte, len(mask))},
				&expr.Cmp{Op: cmpOp(e.Neq), Register: reg1, Data: addr})
		case CtStateNew:
			out = append(out,
				&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
				&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(ctNew), Xor: make([]byte, 4)},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: make([]byte, 4)})
		case MarkBitClear:
			out = append(out,
				&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
				&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(e.Bits), Xor: make([]byte, 4)},
				&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: make([]byte, 4)})
		case Lookup, VMap:
			var fields []Field
			var set string
			var isMap, neq bool
			if l, ok := e.(Lookup); ok {
				fields, set, neq = l.Fields, l.Set, l.Neq
			} else {
				v := e.(VMap)
				fields, set, isMap = v.Fields, v.Map, true
			}
			loads, src, err := loadFields(f, fields)
			if err != nil {
				return nil, err
			}
			out = append(out, loads...)
			out = append(out, &expr.Lookup{SourceRegister: src, SetName: set, Invert: neq, IsDestRegSet: isMap, DestRegister: 0})
		case NumgenVMap:
			elems := make([]gnft.SetElement, len(e.Targets))
			for i, v := range e.Targets {
				ve, err := verdictExpr(v)
				if err != nil {
					return nil, err
				}
				elems[i] = gnft.SetElement{Key: binaryutil.NativeEndian.PutUint32(uint32(i)), VerdictData: ve}
			}
			s, err := newAnonMap(elems)
			if err != nil {
				return nil, err
			}
			out = append(out,
				&expr.Numgen{Register: reg1, Modulus: uint32(len(e.Targets)), Type: unix.NFT_NG_RANDOM},
				&expr.Lookup{SourceRegister: reg1, SetName: s.Name, SetID: s.ID, IsDestRegSet: true, DestRegister: 0})
		case NumgenCmp:
			if e.Mod == 0 || e.Value >= e.Mod {
				return nil, fmt.Errorf("%s: value outside the modulus", e.text(f))
			}
			out = append(out,
				&expr.Numgen{Register: reg1, Modulus: e.Mod, Type: unix.NFT_NG_RANDOM},
				&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(e.Value)})
		case NumgenDNAT:
			natFam, portReg := uint32(unix.NFPROTO_IPV4), uint32(unix.NFT_REG32_01)
			if f == IPv6 {
				natFam, portReg = unix.NFPROTO_IPV6, unix.NFT_REG32_04
			}
			out = append(out,
				&expr.Numgen{Register: reg1, Modulus: e.Mod, Type: unix.NFT_NG_RANDOM, Offset: e.Offset},
				&expr.Lookup{SourceRegister: reg1, SetName: e.Map, IsDestRegSet: true, DestRegister: reg1},
				&expr.NAT{Type: expr.NATTypeDestNAT, Family: natFam, RegAddrMin: reg1, RegProtoMin: portReg, Specified: true})
		case MarkOr, MarkXor:
			var mask, xor uint32
			if m, ok := e.(MarkOr); ok {
				mask, xor = ^m.Bits, m.Bits
			} else {
				mask, xor = 0xffffffff, e.(MarkXor).Bits
			}
			out = append(out,
				&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
				&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(mask), Xor: binaryutil.NativeEndian.PutUint32(xor)},
				&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1})
		case UpdateSet:
			l, err := loadField(f, e.Field, reg1)
			if err != nil {
				return nil, err
			}
			out = append(out, l, &expr.Dynset{SrcRegKey: reg1, SetName: e.Set, Operation: unix.NFT_DYNSET_OP_UPDATE})
		case DNAT:
			t := TypeIPv4Addr
			natFam := uint32(unix.NFPROTO_IPV4)
			if f == IPv6 {
				t, natFam = TypeIPv6Addr, unix.NFPROTO_IPV6
			}
			addr, err := encodeValue(t, AddrValue(e.Addr))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.text(f), err)
			}
			out = append(out,
				&expr.Immediate{Register: reg1, Data: addr},
				&expr.Immediate{Register: reg2, Data: binaryutil.BigEndian.PutUint16(e.Port)},
				&expr.NAT{Type: expr.NATTypeDestNAT, Family: natFam, RegAddrMin: reg1, RegProtoMin: reg2, Specified: true})
		case Masquerade:
			out = append(out, &expr.Masq{FullyRandom: e.FullyRandom})
		case Reject:
			switch {
			case e.TCPReset:
				out = append(out, &expr.Reject{Type: unix.NFT_REJECT_TCP_RST})
			case f == IPv6:
				out = append(out, &expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 4}) // ICMPV6_PORT_UNREACH
			default:
				out = append(out, &expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 3}) // ICMP_PORT_UNREACH
			}
		case Verdict:
			v, err := verdictExpr(e)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		default:
			return nil, fmt.Errorf("unsupported expression %T", e)
		}
	}
	return out, nil
}

func setDatatype(t DataType) (gnft.SetDatatype, error) {
	switch t {
	case TypeIPv4Addr:
		return gnft.TypeIPAddr, nil
	case TypeIPv6Addr:
		return gnft.TypeIP6Addr, nil
	case TypeInetProto:
		return gnft.TypeInetProto, nil
	case TypeInetService:
		return gnft.TypeInetService, nil
	case TypeMark:
		return gnft.TypeMark, nil
	case TypeInteger:
		return gnft.TypeInteger, nil
	case TypeVerdict:
		return gnft.TypeVerdict, nil
	}
	return gnft.SetDatatype{}, fmt.Errorf("type %s cannot key a set", t)
}

// gnftSet describes a named set for google/nftables.
func gnftSet(table *gnft.Table, s SetSpec) (*gnft.Set, error) {
	parts := make([]gnft.SetDatatype, len(s.Key))
	for i, k := range s.Key {
		dt, err := setDatatype(k)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		parts[i] = dt
	}
	key := parts[0]
	if len(parts) > 1 {
		var err error
		if key, err = gnft.ConcatSetType(parts...); err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
	}
	out := &gnft.Set{
		Table: table, Name: s.Name, KeyType: key, Concatenation: len(parts) > 1,
		Interval: s.Interval, Dynamic: s.Dynamic, HasTimeout: s.Timeout > 0, Timeout: s.Timeout,
	}
	if len(parts) == 1 && (s.Key[0] == TypeMark || s.Key[0] == TypeInteger) {
		out.KeyByteOrder = binaryutil.NativeEndian
	}
	switch {
	case len(s.Data) > 0:
		data := make([]gnft.SetDatatype, len(s.Data))
		for i, d := range s.Data {
			dt, err := setDatatype(d)
			if err != nil {
				return nil, fmt.Errorf("set %s data: %w", s.Name, err)
			}
			data[i] = dt
		}
		dt := data[0]
		if len(data) > 1 {
			var err error
			if dt, err = gnft.ConcatSetType(data...); err != nil {
				return nil, fmt.Errorf("set %s data: %w", s.Name, err)
			}
		}
		out.IsMap, out.DataType = true, dt
	case s.IsMap:
		out.IsMap, out.DataType = true, gnft.TypeVerdict
	}
	return out, nil
}

// gnftElements encodes elements of a set with spec s. Interval elements become a start
// and an end (first address after the prefix) unless the prefix reaches the top of the
// address space.
func gnftElements(s SetSpec, elems []Element) ([]gnft.SetElement, error) {
	out := make([]gnft.SetElement, 0, len(elems))
	for _, e := range elems {
		if s.Interval {
			p := e.Prefix.Masked()
			start := p.Addr().AsSlice()
			out = append(out, gnft.SetElement{Key: start})
			if end, ok := prefixEnd(p); ok {
				out = append(out, gnft.SetElement{Key: end.AsSlice(), IntervalEnd: true})
			}
			continue
		}
		if len(e.Key) != len(s.Key) {
			return nil, fmt.Errorf("set %s: element has %d key parts, set has %d", s.Name, len(e.Key), len(s.Key))
		}
		var key []byte
		for i, v := range e.Key {
			b, err := encodeValue(s.Key[i], v)
			if err != nil {
				return nil, fmt.Errorf("set %s: element %s: %w", s.Name, ElementKey(s, e), err)
			}
			if len(s.Key) > 1 {
				b = pad4(b)
			}
			key = append(key, b...)
		}
		ge := gnft.SetElement{Key: key}
		if len(s.Data) > 0 {
			if len(e.Data) != len(s.Data) {
				return nil, fmt.Errorf("set %s: element %s has %d data parts, map has %d", s.Name, ElementKey(s, e), len(e.Data), len(s.Data))
			}
			for i, v := range e.Data {
				b, err := encodeValue(s.Data[i], v)
				if err != nil {
					return nil, fmt.Errorf("set %s: element %s data: %w", s.Name, ElementKey(s, e), err)
				}
				if len(s.Data) > 1 {
					b = pad4(b)
				}
				ge.Val = append(ge.Val, b...)
			}
		}
		if e.Verdict != nil {
			v, err := verdictExpr(*e.Verdict)
			if err != nil {
				return nil, err
			}
			ge.VerdictData = v
		}
		out = append(out, ge)
	}
	return out, nil
}

// prefixEnd is the first address after p, false when p ends at the top of the space.
func prefixEnd(p netip.Prefix) (netip.Addr, bool) {
	b := p.Addr().AsSlice()
	host := p.Addr().BitLen() - p.Bits()
	// Set the host bits, then add one.
	for i := len(b) - 1; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			a, _ := netip.AddrFromSlice(b)
			return a, true
		}
	}
	return netip.Addr{}, false
}
