// Package version holds the build's version string, stamped by the Makefile through
// -ldflags "-X github.com/plinth/plinth/internal/version.version=...".
//
// It owns nothing else and touches nothing.
package version

// version is written only by the linker; "v0.0.0-dev" marks an unstamped build.
var version = "v0.0.0-dev"

// String returns the version of this build, for example "v0.1.0" or "v0.1.0-3-gabc123".
func String() string { return version }
