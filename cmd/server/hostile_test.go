package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/web"
)

// The attacks of issue 53, each against the real server binary on the
// machine's engine: none of them takes the server's memory or locks
// anyone out.

// rssBound is the resident memory the server must stay under while 250
// clients read a 12-lane run's export at 2 KB/s (docs/workshops.md).
const rssBound = 300 // MiB

// slowReader asks for path over a connection whose receive buffer is
// small, reads at rate bytes a second, and returns how much it read and
// how its connection ended: the server's refusal (its status), EOF, or
// the server cutting it off.
func slowReader(addr, path string, rate int, within time.Duration) (status int, read int64, took time.Duration, err error) {
	start := time.Now()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(start.Add(within))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path)
	br := bufio.NewReaderSize(conn, 512)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, 0, time.Since(start), err
	}
	defer res.Body.Close()
	buf := make([]byte, rate)
	for {
		n, err := io.ReadFull(res.Body, buf)
		read += int64(n)
		if err != nil {
			return res.StatusCode, read, time.Since(start), err
		}
		time.Sleep(time.Second)
	}
}

// serverRSS is the server's resident memory now, in MiB.
func serverRSS(t testing.TB, pid int) float64 {
	rss, _ := procMemory(t, pid)
	return rss
}

// TestSlowExportReadersTakeNoMemory: a real 12-lane run of 30 s at 50 ms,
// then its JSON export asked for by 250 clients from one address, each
// reading 2 KB a second. The server sends a few at a time and refuses the
// rest at once (429); those it sends to are cut off for reading below
// the floor, well before the end of the file; its memory stays under
// rssBound throughout; and a client that reads at a normal pace gets the
// whole export afterwards.
func TestSlowExportReadersTakeNoMemory(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, base := startServer(t, bin, t.TempDir())
	pid := cmd.Process.Pid
	lanes := make([]string, 12)
	for i := range lanes {
		lanes[i] = `{"workload": {"kind": "spin", "seconds": 10}, "limits": {"cpus": "0.02"}}`
	}
	// Ten seconds make an export of some 1.5 MB, far more than a reader
	// at 2 KB/s takes before the server's deadline.
	id := submit(t, base, `{"name": "twelve lanes", "mode": "parallel", "duration": "10s", "interval": "50ms", "lanes": [`+strings.Join(lanes, ",")+`]}`)
	var v runner.RunView
	waitEnded(t, base, id, 3*time.Minute, &v)
	res, err := http.Get(base + "/api/runs/" + id + "/export")
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !json.Valid(whole) {
		t.Fatalf("the export: %d, %d bytes, valid JSON %v", res.StatusCode, len(whole), json.Valid(whole))
	}
	before := serverRSS(t, pid)
	t.Logf("a 12-lane run of 10 s at 50 ms: its export is %.1f MB; the server holds %.0f MiB", float64(len(whole))/1e6, before)

	addr := strings.TrimPrefix(base, "http://")
	type outcome struct {
		status int
		read   int64
		took   time.Duration
		err    error
	}
	outcomes := make(chan outcome, 250)
	var wg sync.WaitGroup
	for range 250 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, n, took, err := slowReader(addr, "/api/runs/"+id+"/export", 2048, 2*time.Minute)
			outcomes <- outcome{s, n, took, err}
		}()
	}
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		for {
			if rss := int64(serverRSS(t, pid)); rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	wg.Wait()
	close(done)
	close(outcomes)
	counts := map[int]int{}
	var sent, cut int
	for o := range outcomes {
		counts[o.status]++
		if o.status != http.StatusOK {
			continue
		}
		sent++
		switch {
		case o.read >= int64(len(whole)):
			t.Errorf("a reader at 2 KB/s read the whole export (%d bytes in %s): it was never cut off", o.read, o.took)
		case o.err != nil && !os.IsTimeout(o.err):
			cut++
			t.Logf("a slow reader was cut off after %s, %d bytes read: %v", o.took.Round(time.Second), o.read, o.err)
		default:
			t.Errorf("a slow reader was still being sent to after %s (%d bytes): %v", o.took.Round(time.Second), o.read, o.err)
		}
	}
	t.Logf("250 readers at 2 KB/s: statuses %v; %d sent to, %d cut off; the server's RSS %.0f MiB before, peak %d MiB", counts, sent, cut, before, peak.Load())
	if sent == 0 || sent > web.MaxExportsPerAddress || counts[http.StatusTooManyRequests] != 250-sent {
		t.Errorf("statuses %v: want at most %d exports sent to one address at once, the rest refused with 429", counts, web.MaxExportsPerAddress)
	}
	if peak.Load() > rssBound {
		t.Errorf("the server's RSS peaked at %d MiB under slow export readers, over the %d MiB bound", peak.Load(), rssBound)
	}
	res, err = http.Get(base + "/api/runs/" + id + "/export")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// The same file but for the time it was exported.
	fromRun := func(b []byte) []byte { return b[bytes.Index(b, []byte(`"run":`)):] }
	if res.StatusCode != http.StatusOK || !bytes.Equal(fromRun(again), fromRun(whole)) {
		t.Errorf("the export after the attack: %d, %d bytes, want 200 and the %d bytes of the first", res.StatusCode, len(again), len(whole))
	}
}

// TestAnImportBombIsRefusedAtOnce: a real run of 3 s, exported, with
// 2,000,000 samples of {"lane":0} added to a message of its stream (a
// 22 MB file), is refused with a 400 that names the stream message, in
// under a second, and the server's memory barely moves; the run as it was
// exported imports.
func TestAnImportBombIsRefusedAtOnce(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, base := startServer(t, bin, t.TempDir())
	id := submit(t, base, `{"name": "short", "duration": "3s", "lanes": [{"workload": {"kind": "spin", "seconds": 3}, "limits": {"cpus": "0.1"}}]}`)
	var v runner.RunView
	waitEnded(t, base, id, 2*time.Minute, &v)
	res, err := http.Get(base + "/api/runs/" + id + "/export")
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Format     string            `json:"format"`
		Version    int               `json:"version"`
		ExportedAt time.Time         `json:"exported_at"`
		Run        json.RawMessage   `json:"run"`
		Stream     []json.RawMessage `json:"stream"`
	}
	err = json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	post := func(body []byte) (int, string, time.Duration) {
		start := time.Now()
		res, err := http.Post(base+"/api/runs/import", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), time.Since(start)
	}
	plain, _ := json.Marshal(e)
	if status, body, _ := post(plain); status != http.StatusCreated {
		t.Fatalf("the run as exported: %d %s", status, body)
	}

	var bomb bytes.Buffer
	bomb.WriteString(`{"type":"samples","samples":[`)
	for i := range 2_000_000 {
		if i > 0 {
			bomb.WriteByte(',')
		}
		bomb.WriteString(`{"lane":0}`)
	}
	bomb.WriteString(`]}`)
	at := len(e.Stream) / 2
	e.Stream = append(e.Stream[:at], append([]json.RawMessage{bomb.Bytes()}, e.Stream[at:]...)...)
	file, _ := json.Marshal(e)
	before := serverRSS(t, cmd.Process.Pid)
	status, body, took := post(file)
	after := serverRSS(t, cmd.Process.Pid)
	t.Logf("a %.1f MB import bomb: %d in %s; the server's RSS %.0f MiB before, %.0f after: %s", float64(len(file))/1e6, status, took.Round(time.Millisecond), before, after, body)
	if status != http.StatusBadRequest || !strings.Contains(body, fmt.Sprintf("stream message %d", at)) {
		t.Errorf("the bomb: %d %s; want 400 naming stream message %d", status, body, at)
	}
	if took > time.Second {
		t.Errorf("the bomb was answered after %s, want under a second", took)
	}
	if after-before > 64 {
		t.Errorf("the bomb moved the server's RSS from %.0f to %.0f MiB", before, after)
	}
}

// TestNoNeighbourLocksTheRoomOut: on a server with a join code and a
// presenter token, from the room's one address: the presenter's token
// works after 100 wrong ones; 50 participants, 5 of whom mistype the code
// first, are all in within a minute; and once the presenter closes the
// room, neither a newcomer nor a removed participant's fresh identity
// gets in.
func TestNoNeighbourLocksTheRoomOut(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const token, code = "presenter-0123456789-token", "room-code-4242"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, base := startServer(t, bin, filepath.Join(dir, "data"), "-presenter-token-file", tokenFile, "-join-code", code)
	presenter := func(method, path, tok string) (int, string) {
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	wrong := map[int]int{}
	for i := range 100 {
		s, _ := presenter("GET", "/api/presenter/check", fmt.Sprintf("guess-%03d-of-the-token", i))
		wrong[s]++
	}
	if s, body := presenter("GET", "/api/presenter/check", token); s != http.StatusOK {
		t.Errorf("the presenter's token after 100 wrong ones (%v) from its address: %d %s", wrong, s, body)
	}
	t.Logf("100 wrong presenter tokens: %v; then the right one: 200", wrong)

	join := func(c *http.Client, code, name string) (int, string) {
		body, _ := json.Marshal(map[string]string{"code": code, "name": name})
		res, err := c.Post(base+"/api/join", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var in atomic.Int64
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := jarClient()
			if i%10 == 0 {
				join(c, "room-code-4243", "")
			}
			if s, body := join(c, code, fmt.Sprintf("attendee %d", i)); s == http.StatusOK {
				in.Add(1)
			} else {
				t.Errorf("attendee %d: %d %s", i, s, body)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("50 behind one address, 5 typos among them: %d in after %s", in.Load(), took.Round(time.Millisecond))
	if in.Load() != 50 || took > time.Minute {
		t.Errorf("%d of 50 in after %s, want all within a minute", in.Load(), took)
	}

	mallory := jarClient()
	if s, body := join(mallory, code, "Mallory"); s != http.StatusOK {
		t.Fatalf("Mallory joins: %d %s", s, body)
	}
	_, room := presenter("GET", "/api/presenter/room", token)
	var rb struct {
		Participants []struct{ Ref, Label string }
	}
	_ = json.Unmarshal([]byte(room), &rb)
	ref := ""
	for _, p := range rb.Participants {
		if p.Label == "Mallory" {
			ref = p.Ref
		}
	}
	if s, body := presenter("POST", "/api/presenter/room/"+ref+"/remove", token); s != http.StatusOK {
		t.Fatalf("removing Mallory: %d %s", s, body)
	}
	if s, body := presenter("POST", "/api/presenter/room/close", token); s != http.StatusOK {
		t.Fatalf("closing the room: %d %s", s, body)
	}
	for _, who := range []string{"Mallory again", "a latecomer"} {
		if s, body := join(jarClient(), code, ""); s != http.StatusForbidden || !strings.Contains(body, "closed") {
			t.Errorf("%s, the room closed: %d %s", who, s, body)
		}
	}
	if s, body := join(mallory, code, ""); s != http.StatusForbidden || !strings.Contains(body, "removed") {
		t.Errorf("Mallory's removed identity: %d %s", s, body)
	}
}

// jarClient is a browser's client: it keeps the cookies the server sets.
func jarClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}
