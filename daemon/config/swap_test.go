package config

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"
)

func TestSwapDefaultsAndDropIns(t *testing.T) {
	d := Defaults()
	if !d.FailSwapOn || d.MemorySwap.SwapBehavior != NoSwap {
		t.Errorf("defaults: failSwapOn %v swapBehavior %q, want true and NoSwap (kubelet's)", d.FailSwapOn, d.MemorySwap.SwapBehavior)
	}
	dir := writeFiles(t, map[string]string{
		"plinthd.yaml":      "failSwapOn: false\n",
		"plinthd.d/10.yaml": "memorySwap:\n  swapBehavior: LimitedSwap\n",
	})
	c, _ := mustLoadDir(t, dir)
	if c.FailSwapOn || c.MemorySwap.SwapBehavior != LimitedSwap {
		t.Errorf("failSwapOn %v swapBehavior %q, want false and LimitedSwap", c.FailSwapOn, c.MemorySwap.SwapBehavior)
	}
	// A null brings the default back.
	dir = writeFiles(t, map[string]string{
		"plinthd.yaml":      "failSwapOn: false\nmemorySwap:\n  swapBehavior: LimitedSwap\n",
		"plinthd.d/10.yaml": "failSwapOn: null\nmemorySwap:\n  swapBehavior: null\n",
	})
	c, _ = mustLoadDir(t, dir)
	if !c.FailSwapOn || c.MemorySwap.SwapBehavior != NoSwap {
		t.Errorf("after null: failSwapOn %v swapBehavior %q", c.FailSwapOn, c.MemorySwap.SwapBehavior)
	}
}

func TestSwapErrorsNameFileFieldAndValue(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"memorySwap:\n  swapBehavior: UnlimitedSwap\n", `memorySwap.swapBehavior: Unsupported value: "UnlimitedSwap": supported values: "NoSwap", "LimitedSwap"`},
		{"memorySwap:\n  swapBehavior: noswap\n", `memorySwap.swapBehavior: Unsupported value: "noswap"`},
		{"memorySwap:\n  swapBehavior: ''\n", `memorySwap.swapBehavior: Unsupported value: ""`},
		{"failSwapOn: no-thanks\n", "failSwapOn"},
		{"memorySwap:\n  swapLimit: 1Gi\n", "memorySwap.swapLimit"},
	} {
		dir := writeFiles(t, map[string]string{"plinthd.yaml": tc.yaml})
		_, _, err := loadDir(t, dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plinthd.yaml") {
			t.Errorf("%q: error %v, want one naming plinthd.yaml and %q", tc.yaml, err, tc.want)
		}
	}
}

func TestFailSwapOnFlagOverridesFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{"plinthd.yaml": "failSwapOn: true\n"})
	fs := flag.NewFlagSet("plinthd", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"--config", filepath.Join(dir, "plinthd.yaml"), "--config-dir", "", "--fail-swap-on=false"}); err != nil {
		t.Fatal(err)
	}
	c, _, err := f.Load()
	if err != nil || c.FailSwapOn {
		t.Errorf("failSwapOn %v, %v; want the flag's false", c.FailSwapOn, err)
	}
}
