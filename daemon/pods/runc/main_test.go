package runc

import (
	"os"
	"slices"
	"testing"

	"github.com/plinth/plinth/daemon/pods/shim"
)

// testShimEnv turns the re-executed test binary into a shim (see testShimCommand).
const testShimEnv = "PLINTH_RUNC_TEST_SHIM"

func TestMain(m *testing.M) {
	if os.Getenv(testShimEnv) == "1" {
		i := slices.Index(os.Args, "--")
		os.Exit(shim.Main(os.Args[i+1:]))
	}
	os.Exit(m.Run())
}
