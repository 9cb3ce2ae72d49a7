// Package imagectl is `plinthctl image`: it imports image archives into the node's
// image store and lists the images there. It works on the store directly (as root on
// the node), so it needs no running plinthd; the store's file lock keeps it apart from
// plinthd's own pulls and image GC.
//
// It touches only the image store under --root.
package imagectl

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plinth/plinth/daemon/images"
)

const usage = `usage: plinthctl image COMMAND [flags]

commands:
  import [--root DIR] FILE...   store the images of docker-save or OCI layout archives
                                (tar, tar.gz, or an OCI layout directory)
  list [--root DIR]             list the stored images
`

// Command runs `plinthctl image ARGS...` and returns the exit code.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("plinthctl image "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", images.DefaultRoot, "the image store's directory")
	switch args[0] {
	case "import":
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			fmt.Fprintln(stderr, "plinthctl image import: name at least one archive")
			return 2
		}
		store, err := images.Open(images.Options{Root: *root})
		if err != nil {
			fmt.Fprintln(stderr, "plinthctl image import:", err)
			return 1
		}
		for _, path := range fs.Args() {
			imported, err := store.Import(ctx, path)
			if err != nil {
				fmt.Fprintln(stderr, "plinthctl image import:", err)
				return 1
			}
			for _, im := range imported {
				fmt.Fprintf(stdout, "imported %s %s\n", im.ID, strings.Join(im.RepoTags, " "))
			}
		}
		return 0
	case "list":
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		store, err := images.Open(images.Options{Root: *root})
		if err != nil {
			fmt.Fprintln(stderr, "plinthctl image list:", err)
			return 1
		}
		list, err := store.Images(nil)
		if err != nil {
			fmt.Fprintln(stderr, "plinthctl image list:", err)
			return 1
		}
		PrintList(stdout, list, time.Now())
		return 0
	}
	fmt.Fprintf(stderr, "plinthctl image: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// PrintList writes images as a table: ID (short), names, size, pulled and last used.
func PrintList(w io.Writer, list []images.ImageInfo, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE ID\tNAMES\tSIZE\tPULLED\tLAST USED")
	for _, im := range list {
		id := strings.TrimPrefix(im.ID, "sha256:")
		if len(id) > 12 {
			id = id[:12]
		}
		names := strings.Join(im.RepoTags, ",")
		if names == "" {
			names = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, names, humanBytes(im.Size), ago(now, im.PulledAt), ago(now, im.LastUsed))
	}
	tw.Flush()
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}
