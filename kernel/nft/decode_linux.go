//go:build linux

package nft

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"sort"

	gnft "github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// elementVerdict reads a map element's verdict: google/nftables leaves it as the raw
// NFTA_DATA_VERDICT attributes in Val when it lists elements.
func elementVerdict(ge gnft.SetElement) (*Verdict, error) {
	if ge.VerdictData != nil {
		v, err := decodeVerdict(ge.VerdictData)
		return &v, err
	}
	if len(ge.Val) == 0 {
		return nil, nil
	}
	ad, err := netlink.NewAttributeDecoder(ge.Val)
	if err != nil {
		return nil, fmt.Errorf("map element data: %w", err)
	}
	ad.ByteOrder = binary.BigEndian
	var v expr.Verdict
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_VERDICT_CODE:
			v.Kind = expr.VerdictKind(int32(ad.Uint32()))
		case unix.NFTA_VERDICT_CHAIN:
			v.Chain = ad.String()
		}
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("map element data: %w", err)
	}
	out, err := decodeVerdict(&v)
	return &out, err
}

func nativeEndian() binaryutil.ByteOrder { return binaryutil.NativeEndian }

var typeByName = map[string]DataType{
	gnft.TypeIPAddr.Name: TypeIPv4Addr, gnft.TypeIP6Addr.Name: TypeIPv6Addr,
	gnft.TypeInetProto.Name: TypeInetProto, gnft.TypeInetService.Name: TypeInetService,
	gnft.TypeMark.Name: TypeMark, gnft.TypeInteger.Name: TypeInteger, gnft.TypeVerdict.Name: TypeVerdict,
}

func decodeSetSpec(s *gnft.Set) (SetSpec, error) {
	parts := []gnft.SetDatatype{s.KeyType}
	if s.Concatenation {
		parts = gnft.ConcatSetTypeElements(s.KeyType)
	}
	spec := SetSpec{Name: s.Name, Interval: s.Interval, Dynamic: s.Dynamic, Timeout: s.Timeout, IsMap: s.IsMap}
	for _, p := range parts {
		t, ok := typeByName[p.Name]
		if !ok {
			return SetSpec{}, fmt.Errorf("set %s: key type %q is not one this package writes", s.Name, p.Name)
		}
		spec.Key = append(spec.Key, t)
	}
	if s.IsMap && s.DataType.Name != gnft.TypeVerdict.Name {
		for _, p := range gnft.ConcatSetTypeElements(s.DataType) {
			t, ok := typeByName[p.Name]
			if !ok {
				return SetSpec{}, fmt.Errorf("set %s: data type %q is not one this package writes", s.Name, p.Name)
			}
			spec.Data = append(spec.Data, t)
		}
	}
	return spec, nil
}

func decodeValue(t DataType, b []byte) (Value, error) {
	if len(b) < t.Size() {
		return Value{}, fmt.Errorf("%d bytes is too short for %s", len(b), t)
	}
	b = b[:t.Size()]
	switch t {
	case TypeIPv4Addr, TypeIPv6Addr:
		a, _ := netip.AddrFromSlice(b)
		return AddrValue(a), nil
	case TypeInetProto:
		return NumValue(uint32(b[0])), nil
	case TypeInetService:
		return NumValue(uint32(binaryutil.BigEndian.Uint16(b))), nil
	}
	return NumValue(binaryutil.NativeEndian.Uint32(b)), nil
}

func decodeVerdict(v *expr.Verdict) (Verdict, error) {
	switch v.Kind {
	case expr.VerdictAccept:
		return Accept(), nil
	case expr.VerdictDrop:
		return Drop(), nil
	case expr.VerdictReturn:
		return Return(), nil
	case expr.VerdictJump:
		return Jump(v.Chain), nil
	case expr.VerdictGoto:
		return Goto(v.Chain), nil
	}
	return Verdict{}, fmt.Errorf("verdict kind %d is not one this package writes", v.Kind)
}

func decodeElements(spec SetSpec, elems []gnft.SetElement) ([]Element, error) {
	if spec.Interval {
		return decodeIntervals(elems)
	}
	out := make([]Element, 0, len(elems))
	for _, ge := range elems {
		var e Element
		rest := ge.Key
		for _, t := range spec.Key {
			v, err := decodeValue(t, rest)
			if err != nil {
				return nil, fmt.Errorf("element key %x: %w", ge.Key, err)
			}
			e.Key = append(e.Key, v)
			n := t.Size()
			if len(spec.Key) > 1 {
				n = (n + 3) / 4 * 4
			}
			rest = rest[min(n, len(rest)):]
		}
		if len(spec.Data) > 0 {
			rest := ge.Val
			for _, t := range spec.Data {
				v, err := decodeValue(t, rest)
				if err != nil {
					return nil, fmt.Errorf("element data %x: %w", ge.Val, err)
				}
				e.Data = append(e.Data, v)
				n := t.Size()
				if len(spec.Data) > 1 {
					n = (n + 3) / 4 * 4
				}
				rest = rest[min(n, len(rest)):]
			}
			out = append(out, e)
			continue
		}
		v, err := elementVerdict(ge)
		if err != nil {
			return nil, err
		}
		e.Verdict = v
		out = append(out, e)
	}
	return out, nil
}

// decodeIntervals turns start/end element pairs back into prefixes.
func decodeIntervals(elems []gnft.SetElement) ([]Element, error) {
	type bound struct {
		a   netip.Addr
		end bool
	}
	var bs []bound
	for _, e := range elems {
		a, ok := netip.AddrFromSlice(e.Key)
		if !ok {
			return nil, fmt.Errorf("interval key %x is not an address", e.Key)
		}
		bs = append(bs, bound{a, e.IntervalEnd})
	}
	sort.Slice(bs, func(i, j int) bool {
		if c := bs[i].a.Compare(bs[j].a); c != 0 {
			return c < 0
		}
		return bs[i].end && !bs[j].end
	})
	var out []Element
	for i, b := range bs {
		if b.end {
			continue
		}
		var end netip.Addr
		if i+1 < len(bs) && bs[i+1].end {
			end = bs[i+1].a
		}
		p, err := rangeToPrefix(b.a, end)
		if err != nil {
			return nil, err
		}
		out = append(out, Element{Prefix: p})
	}
	return out, nil
}

// rangeToPrefix finds the prefix covering exactly [start, end); an invalid end means
// the top of the address space.
func rangeToPrefix(start, end netip.Addr) (netip.Prefix, error) {
	for b := start.BitLen(); b >= 0; b-- {
		p := netip.PrefixFrom(start, b)
		if p.Masked().Addr() != start {
			break
		}
		e, ok := prefixEnd(p)
		if ok == end.IsValid() && (!ok || e == end) {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("interval [%s, %s) is not a prefix", start, end)
}

type regContent struct {
	field    Field
	dataMap  string // loaded by a lookup in a data map keyed by numgen
	offset   uint32
	numgen   uint32 // modulus when loaded by numgen
	mask     []byte // after a bitwise
	xor      []byte
	data     []byte // immediate
	isCt     bool
	hasField bool
}

// decodeRule turns kernel expressions back into this package's expressions. It knows
// exactly the shapes compileRule writes and rejects anything else, naming it.
func decodeRule(f Family, exprs []expr.Any, anon map[string][]gnft.SetElement) (Rule, error) {
	var out Rule
	regs := map[uint32]*regContent{}
	var loads []Field // fields loaded since the last consumer, in order
	set := func(reg uint32, c *regContent) {
		regs[reg] = c
		if c.hasField {
			loads = append(loads, c.field)
		}
	}
	for _, e := range exprs {
		switch e := e.(type) {
		case *expr.Payload:
			if e.OperationType != expr.PayloadLoad {
				return nil, fmt.Errorf("payload write is not supported")
			}
			fl, err := payloadField(f, e)
			if err != nil {
				return nil, err
			}
			set(e.DestRegister, &regContent{field: fl, hasField: true})
		case *expr.Meta:
			if e.SourceRegister {
				r := regs[e.Register]
				if e.Key != expr.MetaKeyMARK || r == nil || r.mask == nil {
					return nil, fmt.Errorf("meta set of key %d is not supported", e.Key)
				}
				mask := binaryutil.NativeEndian.Uint32(r.mask)
				xor := binaryutil.NativeEndian.Uint32(r.xor)
				switch {
				case mask == 0xffffffff:
					out = append(out, MarkXor{Bits: xor})
				case mask == ^xor:
					out = append(out, MarkOr{Bits: xor})
				default:
					return nil, fmt.Errorf("meta mark set with mask %#x xor %#x is not supported", mask, xor)
				}
				loads = nil
				continue
			}
			switch e.Key {
			case expr.MetaKeyL4PROTO:
				set(e.Register, &regContent{field: FieldL4Proto, hasField: true})
			case expr.MetaKeyMARK:
				set(e.Register, &regContent{field: FieldMark, hasField: true})
			default:
				return nil, fmt.Errorf("meta key %d is not supported", e.Key)
			}
		case *expr.Fib:
			switch {
			case e.ResultADDRTYPE && e.FlagDADDR:
				set(e.Register, &regContent{field: FieldFibDaddrType, hasField: true})
			case e.ResultADDRTYPE && e.FlagSADDR:
				set(e.Register, &regContent{field: FieldFibSaddrType, hasField: true})
			default:
				return nil, fmt.Errorf("fib lookup %+v is not supported", *e)
			}
		case *expr.Ct:
			if e.Key != expr.CtKeySTATE || e.SourceRegister {
				return nil, fmt.Errorf("ct key %d is not supported", e.Key)
			}
			regs[e.Register] = &regContent{isCt: true}
		case *expr.Numgen:
			if e.Type != unix.NFT_NG_RANDOM {
				return nil, fmt.Errorf("numgen type %d is not supported", e.Type)
			}
			regs[e.Register] = &regContent{numgen: e.Modulus, offset: e.Offset}
		case *expr.Bitwise:
			r := regs[e.SourceRegister]
			if r == nil {
				return nil, fmt.Errorf("bitwise on an empty register")
			}
			c := *r
			c.mask, c.xor = e.Mask, e.Xor
			regs[e.DestRegister] = &c
		case *expr.Cmp:
			r := regs[e.Register]
			if r == nil {
				return nil, fmt.Errorf("cmp on an empty register")
			}
			x, err := decodeCmp(f, r, e)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
			loads = nil
		case *expr.Lookup:
			r := regs[e.SourceRegister]
			if r != nil && r.numgen > 0 && e.IsDestRegSet && e.DestRegister != 0 {
				regs[e.DestRegister] = &regContent{dataMap: e.SetName, numgen: r.numgen, offset: r.offset}
				continue
			}
			if r != nil && r.numgen > 0 {
				elems, ok := anon[e.SetName]
				if !ok {
					return nil, fmt.Errorf("numgen map %s not found", e.SetName)
				}
				targets := make([]Verdict, r.numgen)
				for _, ge := range elems {
					i := binaryutil.NativeEndian.Uint32(ge.Key)
					if i >= r.numgen {
						return nil, fmt.Errorf("numgen map %s: element %d outside mod %d", e.SetName, i, r.numgen)
					}
					v, err := elementVerdict(ge)
					if err != nil || v == nil {
						return nil, fmt.Errorf("numgen map %s element %d: no verdict (%v)", e.SetName, i, err)
					}
					targets[i] = *v
				}
				out = append(out, NumgenVMap{Targets: targets})
			} else if e.IsDestRegSet {
				out = append(out, VMap{Fields: loads, Map: e.SetName})
			} else {
				out = append(out, Lookup{Fields: loads, Set: e.SetName, Neq: e.Invert})
			}
			loads = nil
		case *expr.Dynset:
			r := regs[e.SrcRegKey]
			if r == nil || !r.hasField || e.Operation != unix.NFT_DYNSET_OP_UPDATE {
				return nil, fmt.Errorf("dynset operation %d is not supported", e.Operation)
			}
			out = append(out, UpdateSet{Set: e.SetName, Field: r.field})
			loads = nil
		case *expr.Immediate:
			regs[e.Register] = &regContent{data: e.Data}
		case *expr.NAT:
			if r := regs[e.RegAddrMin]; r != nil && r.dataMap != "" && e.Type == expr.NATTypeDestNAT {
				out = append(out, NumgenDNAT{Mod: r.numgen, Offset: r.offset, Map: r.dataMap})
				continue
			}
			if e.Type != expr.NATTypeDestNAT || regs[e.RegAddrMin] == nil || regs[e.RegProtoMin] == nil {
				return nil, fmt.Errorf("nat type %d is not supported", e.Type)
			}
			a, ok := netip.AddrFromSlice(regs[e.RegAddrMin].data)
			port := regs[e.RegProtoMin].data
			if !ok || len(port) != 2 {
				return nil, fmt.Errorf("dnat operands are not an address and a port")
			}
			out = append(out, DNAT{Addr: a.Unmap(), Port: binaryutil.BigEndian.Uint16(port)})
		case *expr.Masq:
			out = append(out, Masquerade{FullyRandom: e.FullyRandom})
		case *expr.Reject:
			out = append(out, Reject{TCPReset: e.Type == unix.NFT_REJECT_TCP_RST})
		case *expr.Verdict:
			v, err := decodeVerdict(e)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		default:
			return nil, fmt.Errorf("expression %T is not one this package writes", e)
		}
	}
	return out, nil
}

func decodeCmp(f Family, r *regContent, e *expr.Cmp) (Expr, error) {
	neq := e.Op == expr.CmpOpNeq
	if !neq && e.Op != expr.CmpOpEq {
		return nil, fmt.Errorf("cmp operator %d is not supported", e.Op)
	}
	zero := bytes.Equal(e.Data, make([]byte, len(e.Data)))
	switch {
	case r.numgen > 0:
		if neq || len(e.Data) != 4 {
			return nil, fmt.Errorf("numgen match is not 'numgen random mod N V'")
		}
		return NumgenCmp{Mod: r.numgen, Value: binaryutil.NativeEndian.Uint32(e.Data)}, nil
	case r.isCt:
		if r.mask == nil || binaryutil.NativeEndian.Uint32(r.mask) != ctNew || !neq || !zero {
			return nil, fmt.Errorf("ct state match is not 'ct state new'")
		}
		return CtStateNew{}, nil
	case r.mask != nil && r.field == FieldMark:
		if neq || !zero {
			return nil, fmt.Errorf("mark test is not 'mark & bits == 0'")
		}
		return MarkBitClear{Bits: binaryutil.NativeEndian.Uint32(r.mask)}, nil
	case r.mask != nil && (r.field == FieldSaddr || r.field == FieldDaddr):
		ones := 0
		for _, b := range r.mask {
			ones += bits.OnesCount8(b)
		}
		a, ok := netip.AddrFromSlice(e.Data)
		if !ok {
			return nil, fmt.Errorf("prefix match operand %x is not an address", e.Data)
		}
		return PrefixCmp{Field: r.field, Neq: neq, Prefix: netip.PrefixFrom(a, ones)}, nil
	case r.hasField && r.mask == nil:
		v, err := decodeValue(r.field.Type(f), e.Data)
		if err != nil {
			return nil, err
		}
		return Cmp{Field: r.field, Neq: neq, Value: v}, nil
	}
	return nil, fmt.Errorf("cmp shape is not one this package writes")
}

func payloadField(f Family, p *expr.Payload) (Field, error) {
	switch p.Base {
	case expr.PayloadBaseTransportHeader:
		if p.Offset == 2 && p.Len == 2 {
			return FieldTHDport, nil
		}
	case expr.PayloadBaseNetworkHeader:
		switch {
		case f == IPv4 && p.Offset == 12 && p.Len == 4, f == IPv6 && p.Offset == 8 && p.Len == 16:
			return FieldSaddr, nil
		case f == IPv4 && p.Offset == 16 && p.Len == 4, f == IPv6 && p.Offset == 24 && p.Len == 16:
			return FieldDaddr, nil
		}
	}
	return 0, fmt.Errorf("payload load base %d offset %d len %d is not supported", p.Base, p.Offset, p.Len)
}
