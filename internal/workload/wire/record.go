package wire

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"strconv"
	"time"
)

// ProgressPath is where a workload keeps its latest progress record when
// the server reads it there: the container's own tmpfs. The server reads
// it through /proc/<pid>/root, so that progress does not pass through the
// engine's log stream (its cost to the engine is what docs/benchmarks.md
// measures under "Limit Lab's own cost to the host").
const ProgressPath = "/tmp/limitlab-progress"

// BeginPath is the file that lanes beginning together wait for (in their
// tmpfs); BeginWait is how long they wait before beginning anyway.
const (
	BeginPath = "/tmp/limitlab-begin"
	BeginWait = 30 * time.Second
	// ReadyPath is written by a workload once it waits for BeginPath: the
	// server lets the lanes go only when every one of them is ready, so
	// that none is still starting (or throttled for its start) then.
	ReadyPath = "/tmp/limitlab-ready"
)

// FormatBegin is the begin file's content: the instant at which the
// lanes begin, in Unix nanoseconds on the host's clock.
func FormatBegin(at time.Time) []byte { return strconv.AppendInt(nil, at.UnixNano(), 10) }

// ParseBegin reads a begin file's instant. An empty or unreadable file,
// or an instant further than BeginWait from now, is no instant: the lane
// begins at once.
func ParseBegin(b []byte) time.Time {
	ns, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}
	}
	at := time.Unix(0, ns)
	if d := time.Until(at); d > BeginWait || d < -BeginWait {
		return time.Time{}
	}
	return at
}

// AppendRecord appends p as one progress record to b: its JSON, a tab, the
// JSON's CRC-32 in hex, and a newline. The workload rewrites the record at
// the file's start; the server may read it while it is being rewritten,
// and the checksum tells a torn record from a whole one.
func AppendRecord(b []byte, p Progress) []byte {
	j, _ := json.Marshal(p)
	b = append(b, j...)
	b = append(b, '\t')
	b = strconv.AppendUint(b, uint64(crc32.ChecksumIEEE(j)), 16)
	return append(b, '\n')
}

// ParseRecord reads the record at the start of b (what follows its newline
// is a longer, older record's tail). ok is false for a torn or partial one.
func ParseRecord(b []byte) (p Progress, ok bool) {
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		return Progress{}, false
	}
	j, sum, found := bytes.Cut(b[:end], []byte{'\t'})
	if !found {
		return Progress{}, false
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil || uint32(want) != crc32.ChecksumIEEE(j) {
		return Progress{}, false
	}
	if json.Unmarshal(j, &p) != nil {
		return Progress{}, false
	}
	return p, true
}
