// Package nft is a small typed layer over nftables for what plinthd's Service proxy
// needs: tables, base and regular chains, named sets and verdict maps (plain, interval,
// dynamic with timeouts), and rules built from a fixed set of expressions (Cmp,
// PrefixCmp, CtStateNew, MarkBitClear, Lookup, VMap, NumgenVMap, MarkOr, MarkXor,
// UpdateSet, DNAT, Masquerade, Reject, Verdict).
//
// A Batch lists operations that a Programmer applies as ONE atomic nftables
// transaction. The kernel Programmer (NewNetlink, Linux only) speaks netlink through
// github.com/google/nftables, never the nft binary, and reads tables back into the same
// types (List), so a live table prints exactly as the generated one does. Recorder is
// the fake: it applies batches to an in-memory Table with the kernel's all-or-nothing
// semantics and prints it as nft-style text for golden tests. Table.String is that
// text; nftsim evaluates packets over a Table.
//
// It owns nothing but the netlink sockets it opens per call, and touches only the
// tables named in the batches it is given, in the network namespace it was created for.
package nft
