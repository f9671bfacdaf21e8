package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// alignedBuf returns a page-aligned buffer for O_DIRECT, mapped without
// transparent huge pages: the kernel splits a direct IO into requests of at
// most max_segments pages unless they happen to be physically contiguous,
// which a huge page makes them. Without it a 1 MiB write splits as it does
// in most programs, and the IOPS throttle lab is repeatable.
func alignedBuf(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err) // out of address space: nothing sensible to do
	}
	_ = syscall.Madvise(b, unix.MADV_NOHUGEPAGE)
	for i := range b {
		b[i] = byte(i) // real pages, as a program's data would be
	}
	return b
}

// diskWriteWork writes mb MiB in blocks of bs bytes with O_DIRECT, like
// `dd if=/dev/zero of=f bs=1M count=N oflag=direct` at depth 1, or like
// `fio --rw=write --direct=1 --iodepth=depth` with depth writes in flight
// from as many goroutines, each taking the next block: the page cache is
// bypassed, so the device's speed, and its throttle or weight, is what is
// measured. The counter counts MiB; ops counts write calls.
func diskWriteWork(dir string, bs, mb, depth int, c, ops *counter) (string, error) {
	f, err := os.OpenFile(filepath.Join(dir, "write.out"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_DIRECT, 0o600)
	if err != nil {
		return "", fmt.Errorf("open with O_DIRECT: %w", err)
	}
	defer f.Close()
	blocks := (int64(mb) << 20) / int64(bs)
	var next atomic.Int64
	errc := make(chan error, depth)
	for range depth {
		// Each writer lives until the blocks are all taken, the workload
		// is stopped, or a write fails. It keeps to one OS thread, so that
		// the kernel sees one IO context per writer, as fio's jobs are: a
		// goroutine that moved between threads would reach the IO
		// scheduler as a new queue at each write, and BFQ would not share
		// the disk by weight.
		go func() {
			runtime.LockOSThread()
			buf := alignedBuf(bs)
			for !stopping.Load() {
				k := next.Add(1) - 1
				if k >= blocks {
					break
				}
				if _, err := f.WriteAt(buf, k*int64(bs)); err != nil {
					errc <- err
					return
				}
				c.add(float64(bs) / (1 << 20))
				ops.add(1)
			}
			errc <- nil
		}()
	}
	for range depth {
		if e := <-errc; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return "", err
	}
	if depth > 1 {
		return fmt.Sprintf("wrote %d MiB in %d-byte blocks, %d in flight", mb, bs, depth), nil
	}
	return fmt.Sprintf("wrote %d MiB in %d-byte blocks", mb, bs), nil
}

// diskReadWork reads, from the file of mb MiB that layOut wrote before the
// measurement started, random
// blocks of bs bytes with O_DIRECT from depth goroutines for the
// given seconds, like `fio --rw=randread --direct=1 --iodepth=depth`. The
// counter counts MiB; ops counts reads.
func diskReadWork(dir string, bs, mb, depth int, seconds float64, c, ops *counter) (string, error) {
	path := filepath.Join(dir, "read.dat")
	blocks := (int64(mb) << 20) / int64(bs)
	if blocks < 1 {
		return "", errors.New("the file is smaller than one block")
	}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	errc := make(chan error, depth)
	for range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				errc <- err
				return
			}
			defer f.Close()
			buf := alignedBuf(bs)
			for time.Now().Before(deadline) && !stopping.Load() {
				if _, err := f.ReadAt(buf, rand.Int64N(blocks)*int64(bs)); err != nil {
					errc <- err
					return
				}
				c.add(float64(bs) / (1 << 20))
				ops.add(1)
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return "", err
	}
	return fmt.Sprintf("random %d-byte reads at depth %d over %d MiB", bs, depth, mb), nil
}

// layOut writes the file a read workload reads, in 1 MiB direct writes.
func layOut(path string, mb int) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_DIRECT, 0o600)
	if err != nil {
		return fmt.Errorf("open with O_DIRECT: %w", err)
	}
	defer f.Close()
	buf := alignedBuf(1 << 20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for range mb {
		if _, err := f.Write(buf); err != nil {
			return err
		}
	}
	return f.Sync()
}
