//go:build !linux

package nftrules

import (
	"context"
	"fmt"
	"io"
)

// DumpCommand is `plinthctl proxy dump`; nftables exist only on Linux.
func DumpCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "plinthctl proxy dump: nftables needs Linux")
	return 1
}
