// Command plinthd is the Plinth node daemon.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/utils/clock"

	"github.com/plinth/plinth/daemon/config"
	"github.com/plinth/plinth/daemon/plinthd"
	"github.com/plinth/plinth/daemon/proxy/nftrules"
	"github.com/plinth/plinth/internal/version"
	"github.com/plinth/plinth/internal/watchdog"
	"github.com/plinth/plinth/kernel/nft"
)

func main() {
	fs := flag.NewFlagSet("plinthd", flag.ExitOnError)
	flags := config.BindFlags(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	cleanup := fs.Bool("cleanup", false, "remove the kernel state plinthd owns (the pod network bridge and masquerade table, empty pod cgroups under pods.cgroupParent, the Service proxy nftables tables) and exit")
	_ = fs.Parse(os.Args[1:])
	if *showVersion {
		fmt.Println("plinthd", version.String())
		return
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "plinthd: --log-level: %q is not debug, info, warn or error\n", *logLevel)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// The Service proxy's nftables rules, in plinthd's own network namespace.
	backends := plinthd.Backends{NewProxyRules: func(*slog.Logger) (plinthd.ProxyRules, error) {
		return nftrules.New(nft.NewNetlink(""), clock.RealClock{}), nil
	}}
	cfg, files, err := flags.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "plinthd:", err)
		os.Exit(2)
	}
	if *cleanup {
		if err := plinthd.Cleanup(context.Background(), cfg, backends, logger); err != nil {
			fmt.Fprintln(os.Stderr, "plinthd:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := plinthd.Run(ctx, cfg, files, watchdog.NewSystemdNotifier(), backends, logger); err != nil {
		fmt.Fprintln(os.Stderr, "plinthd:", err)
		os.Exit(1)
	}
}
