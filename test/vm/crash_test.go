package vm

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPanicSummary(t *testing.T) {
	console := filepath.Join(t.TempDir(), "console.log")
	log := `plinth-vm: running daemon_pods_podcgroup.test
[  140.350001] BUG: kernel NULL pointer dereference, address: 0000000000000051
[  140.351341] Call Trace:
[  140.352346] RIP: 0010:__set_next_task_fair.part.0+0x28/0x1b0
[  140.352400] RIP: 0033:0x7fb2a02cb070
[  140.352576] Kernel panic - not syncing: Fatal exception in interrupt
`
	if err := os.WriteFile(console, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "BUG: kernel NULL pointer dereference, address: 0000000000000051; RIP: 0010:__set_next_task_fair.part.0+0x28/0x1b0; Kernel panic - not syncing: Fatal exception in interrupt"
	if got := panicSummary(console); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if err := os.WriteFile(console, []byte("plinth-vm: running x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := panicSummary(console); got == "" {
		t.Fatal("a console without a panic still needs saying so")
	}
}

func TestLastStartedTest(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.out")
	data := "\x16=== RUN   TestA\n\x16--- PASS: TestA (0.01s)\n\x16=== RUN   TestEnsureAndRemove\nsome output\n"
	if err := os.WriteFile(out, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lastStartedTest(out); got != "TestEnsureAndRemove" {
		t.Fatalf("got %q", got)
	}
}
