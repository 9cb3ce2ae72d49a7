// Command plinthctl is the node-local operator tool for plinthd.
//
//	plinthctl status [--address 127.0.0.1:10248]   plinthd's health checks
//	plinthctl version
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/plinth/plinth/daemon/health"
	"github.com/plinth/plinth/internal/version"
)

const usage = `usage: plinthctl COMMAND [flags]

commands:
  status    show plinthd's health checks (exit 1 when one fails)
  version   print the version
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "version":
		fmt.Println("plinthctl", version.String())
	case "status":
		fs := flag.NewFlagSet("plinthctl status", flag.ExitOnError)
		addr := fs.String("address", "127.0.0.1:10248", "plinthd's healthzBindAddress")
		_ = fs.Parse(os.Args[2:])
		report, healthy, err := health.Fetch(*addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "plinthctl status:", err)
			os.Exit(1)
		}
		fmt.Print(report)
		if !healthy {
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "plinthctl: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}
