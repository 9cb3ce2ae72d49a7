package nftrules

import (
	"context"
	"fmt"
	"io"

	"github.com/plinth/plinth/daemon/proxy/desired"
	"github.com/plinth/plinth/kernel/nft"
)

// Dump prints the live plinth tables (ip, then ip6) as nft prints them, read back from
// the kernel through prog. A missing table is skipped; none at all says so.
func Dump(ctx context.Context, prog nft.Programmer, w io.Writer) error {
	found := false
	for _, fam := range []desired.Family{desired.IPv4, desired.IPv6} {
		t, ok, err := prog.List(ctx, tableRef(fam))
		if err != nil {
			return fmt.Errorf("reading table %s: %w", tableRef(fam), err)
		}
		if !ok {
			continue
		}
		found = true
		if _, err := io.WriteString(w, t.String()); err != nil {
			return err
		}
	}
	if !found {
		_, err := fmt.Fprintf(w, "# no %s tables: plinthd has not programmed Services on this node\n", TableName)
		return err
	}
	return nil
}
