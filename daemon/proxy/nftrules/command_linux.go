//go:build linux

package nftrules

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/plinth/plinth/kernel/nft"
)

// DumpCommand is `plinthctl proxy dump`: it prints the live plinth tables of this
// node (or of the network namespace given with --netns) as nft prints them, read
// through netlink, without the nft binary. It returns the exit code.
func DumpCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plinthctl proxy dump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	netns := fs.String("netns", "", "path of a network namespace to read (for example /run/netns/NAME); default: this one")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "plinthctl proxy dump: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := Dump(ctx, nft.NewNetlink(*netns), stdout); err != nil {
		fmt.Fprintln(stderr, "plinthctl proxy dump:", err)
		return 1
	}
	return 0
}
