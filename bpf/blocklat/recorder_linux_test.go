package blocklat

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plinth/plinth/bpf/attach"
	"github.com/plinth/plinth/internal/kerneltest"
)

var loopDevices = kerneltest.Feature{Name: "loop devices", Probe: func() error {
	_, err := os.Stat("/dev/loop-control")
	return err
}}

func testLogger(t testing.TB) *slog.Logger { return slog.New(slog.NewTextHandler(t.Output(), nil)) }

// Direct writes to a loop device are block requests on that device alone, whatever the
// file system under the test's temporary directory is, so each must land in its
// histogram.
func TestLoopDeviceWritesRecorded(t *testing.T) {
	kerneltest.Require(t, kerneltest.Root, kerneltest.BTF, loopDevices)
	for _, mode := range []attach.Mode{attach.BTF, attach.Tracepoints} {
		t.Run(mode.String(), func(t *testing.T) {
			r, err := Load(Options{Mode: mode, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Mode() != mode {
				t.Fatalf("Mode() = %v, want %v", r.Mode(), mode)
			}
			path, dev := newLoopDevice(t, 8<<20)
			before, err := r.BlockHistograms()
			if err != nil {
				t.Fatal(err)
			}

			const writes = 64
			directWrites(t, path, writes)

			after, err := r.BlockHistograms()
			if err != nil {
				t.Fatal(err)
			}
			h, was := after[dev], before[dev]
			if h.Count-was.Count < writes {
				t.Fatalf("%s (%s): %d requests recorded during %d direct writes; histograms: %v", path, dev, h.Count-was.Count, writes, after)
			}
			var inBuckets uint64
			for _, n := range h.Counts {
				inBuckets += n
			}
			if inBuckets != h.Count || h.Sum <= was.Sum {
				t.Errorf("%s: buckets hold %d of %d requests, sum %v (was %v)", dev, inBuckets, h.Count, h.Sum, was.Sum)
			}
			mean := (h.Sum - was.Sum) / time.Duration(h.Count-was.Count)
			t.Logf("%v: %s: %d requests, mean %v", mode, dev, h.Count-was.Count, mean)
			if n, err := r.Lost(); err != nil || n != 0 {
				t.Errorf("Lost() = %d, %v; want 0", n, err)
			}
		})
	}
}

// newLoopDevice attaches a fresh loop device to a sparse file of size bytes and
// returns its path and number; cleanup detaches it.
func newLoopDevice(t *testing.T, size int64) (string, Device) {
	t.Helper()
	backing, err := os.Create(filepath.Join(t.TempDir(), "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer backing.Close()
	if err := backing.Truncate(size); err != nil {
		t.Fatal(err)
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()

	// Another process may take the free device between the two ioctls: try again.
	for attempt := 0; attempt < 5; attempt++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			t.Fatalf("LOOP_CTL_GET_FREE: %v", err)
		}
		path := fmt.Sprintf("/dev/loop%d", n)
		loop, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_SET_FD, int(backing.Fd()))
		if errors.Is(err, unix.EBUSY) {
			loop.Close()
			continue
		}
		if err != nil {
			loop.Close()
			t.Fatalf("LOOP_SET_FD on %s: %v", path, err)
		}
		t.Cleanup(func() {
			if err := unix.IoctlSetInt(int(loop.Fd()), unix.LOOP_CLR_FD, 0); err != nil {
				t.Errorf("detach %s: %v", path, err)
			}
			loop.Close()
		})
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return path, Device{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}
	}
	t.Fatal("no free loop device after 5 attempts")
	return "", Device{}
}

// directWrites writes n 4 KiB blocks to path with O_DIRECT, each its own request
// waited for before the next.
func directWrites(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// O_DIRECT needs a block-aligned buffer: mmap gives a page.
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	for i := range n {
		buf[0] = byte(i)
		if _, err := f.WriteAt(buf, int64(i)*4096); err != nil {
			t.Fatalf("direct write %d to %s: %v", i, path, err)
		}
	}
}

func TestDeviceFromKernel(t *testing.T) {
	for _, c := range []struct {
		dev  uint32
		want Device
	}{
		{254<<20 | 0, Device{254, 0}},
		{8<<20 | 17, Device{8, 17}},
		{259<<20 | 1<<19, Device{259, 1 << 19}},
		{0, Device{0, 0}},
	} {
		if got := deviceFromKernel(c.dev); got != c.want {
			t.Errorf("deviceFromKernel(%#x) = %v, want %v", c.dev, got, c.want)
		}
	}
	if got := BucketBound(0); got != 2*time.Microsecond {
		t.Errorf("BucketBound(0) = %v, want 2µs", got)
	}
	if got := BucketBound(9); got != 1024*time.Microsecond {
		t.Errorf("BucketBound(9) = %v, want 1.024ms", got)
	}
}
