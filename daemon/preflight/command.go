package preflight

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/kernel/features"
)

const commandUsage = `usage: plinthctl check [--config FILE] [--config-dir DIR] [-o text|json] [--root DIR]

Checks every kernel and system feature plinthd uses, as configured by plinthd's
configuration files, and prints PASS, WARN or FAIL with the reason for each.
Exit status: 0 without FAILs, 1 with one or more, 2 on bad flags or configuration.
`

// Command is `plinthctl check`. env is HostEnv() in plinthctl; --root replaces its
// System by one over a copy of /proc, /sys and /boot (for tests and for checking a
// saved tree), whose kernel-asking probes are then skipped.
func Command(ctx context.Context, env Env, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plinthctl check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, commandUsage); fs.PrintDefaults() }
	configFile := fs.String("config", config.DefaultConfigFile, "plinthd's configuration file; may be absent at the default path; empty for none")
	configDir := fs.String("config-dir", config.DefaultConfigDir, "plinthd's drop-in directory; may be absent; empty for none")
	output := fs.String("o", "text", "output format: text or json")
	root := fs.String("root", "", "probe the /proc, /sys and /boot under this directory instead of the running system's")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "plinthctl check: -o %q: want text or json\n", *output)
		return 2
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, _, err := config.Load(*configFile, explicit, *configDir)
	if err != nil {
		fmt.Fprintln(stderr, "plinthctl check:", err)
		return 2
	}
	if *root != "" {
		env.System = features.NewSystem(*root)
	}
	r := Run(ctx, env, NeedsOf(cfg))
	if *output == "json" {
		_, _ = stdout.Write(r.JSON())
	} else {
		fmt.Fprint(stdout, r.String())
	}
	if len(r.Failed()) > 0 {
		return 1
	}
	return 0
}
