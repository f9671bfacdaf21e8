package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"syscall"
	"time"
)

// The attackers of issue 53, each from the room's own address (the one
// the participants behind a NAT share), so that what they do would fall
// on the room if the server let it.
const roomAddress = "127.0.6.1"

// The names the report gives the new attacks.
const (
	attackSlowExport    = "an export read at 2 KB/s"
	attackImportBomb    = "an import of a 3 s run with 2,000,000 samples"
	attackWrongToken    = "a wrong presenter token from the room's address"
	attackRightToken    = "the presenter's token from the room's address (must work)"
	attackWrongCode     = "a mistyped join code from the room's address"
	attackIdentityFlood = "a fresh identity joining from the room's address"
)

// latestRun is the newest ended run the history lists, if any: behind a
// full queue of the room's runs, it lies deep in the list.
func latestRun(ctx context.Context, base string) string {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/runs?limit=500", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	var list struct {
		Runs []struct {
			ID    string `json:"id"`
			Ended bool   `json:"ended"`
		} `json:"runs"`
	}
	_ = json.NewDecoder(res.Body).Decode(&list)
	for _, r := range list.Runs {
		if r.Ended {
			return r.ID
		}
	}
	return ""
}

// slowExport asks for a run's export from the room's address over a
// connection with a small receive buffer and reads it at 2 KB/s: the
// server must refuse it (429, too many exports at once) or cut it off
// below its floor. It returns the status, 0 when the server cut it off
// before the end, or -1 when it read the whole export.
func slowExport(ctx context.Context, base, id string) int {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(roomAddress)}, Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return -2
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Minute))
	fmt.Fprintf(conn, "GET /api/runs/%s/export HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", id)
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return res.StatusCode
	}
	buf := make([]byte, 2048)
	for ctx.Err() == nil {
		if _, err := io.ReadFull(res.Body, buf); err == io.EOF || err == io.ErrUnexpectedEOF {
			// The whole file came only if it ended cleanly.
			if err == io.EOF {
				return -1
			}
			return 0
		} else if err != nil {
			return 0
		}
		time.Sleep(time.Second)
	}
	return 0
}

// slowExporter reads exports slowly, again and again, for the soak.
func slowExporter(ctx context.Context, base string, r *report) {
	id := ""
	for jitter(ctx, 2*time.Second) {
		// One ended run is enough to read again and again.
		if id == "" {
			if id = latestRun(ctx, base); id == "" {
				continue
			}
		}
		start := time.Now()
		status := slowExport(ctx, base, id)
		if ctx.Err() != nil {
			return
		}
		r.hostile(attackSlowExport, status, status == 0 || status == http.StatusTooManyRequests, time.Since(start))
	}
}

// bomb is an export of a 3 s run whose stream holds one message of
// 2,000,000 samples (about 22 MB).
func bomb() []byte {
	var b bytes.Buffer
	b.WriteString(`{"format": "limitlab-run", "version": 1, "run": {"name": "bomb", "state": "done", "duration_seconds": 3,
		"spec": {"name": "bomb", "duration": "3s", "lanes": [{"name": "a", "workload": {"kind": "spin", "seconds": 3}}]},
		"lanes": [{"name": "a", "state": "exited"}]}, "stream": [{"type": "samples", "samples": [`)
	for i := range 2_000_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"lane":0}`)
	}
	b.WriteString(`]}]}`)
	return b.Bytes()
}

// importBomber joins from the room's address and imports the bomb every
// half minute: each must be refused (400), at once.
func importBomber(ctx context.Context, base string, r *report) {
	cl := client(roomAddress, true)
	if status, body, err := post(ctx, cl, base+"/api/join", `{"code": "`+joinCode+`"}`); err != nil || status != http.StatusOK {
		r.count("the import bomber could not join: " + reason(status, body))
		return
	}
	file := bomb()
	for jitter(ctx, 30*time.Second) {
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/runs/import", bytes.NewReader(file))
		req.Header.Set("Content-Type", "application/json")
		res, err := cl.Do(req)
		if err != nil {
			continue
		}
		res.Body.Close()
		r.hostile(attackImportBomb, res.StatusCode, res.StatusCode == http.StatusBadRequest, time.Since(start))
	}
}

// neighbour sends, from the room's address, wrong presenter tokens (one a
// second, a flood: slowed) and mistyped join codes (one every 4 s, a
// careless room: never throttled), and checks every 10 s that the
// presenter's own token from that address still works.
func neighbour(ctx context.Context, base string, r *report) {
	cl := client(roomAddress, false)
	check := func(token string) (int, time.Duration) {
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/presenter/check", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := cl.Do(req)
		if err != nil {
			return 0, 0
		}
		res.Body.Close()
		return res.StatusCode, time.Since(start)
	}
	for i := 0; jitter(ctx, time.Second); i++ {
		status, took := check(fmt.Sprintf("soak-guess-%06d-token", i))
		if ctx.Err() != nil {
			return
		}
		r.hostile(attackWrongToken, status, status == http.StatusUnauthorized || status == http.StatusTooManyRequests, took)
		if i%4 == 0 {
			start := time.Now()
			status, _, err := post(ctx, cl, base+"/api/join", fmt.Sprintf(`{"code": "soak-room-%04d"}`, i))
			if err == nil {
				r.hostile(attackWrongCode, status, status == http.StatusForbidden, time.Since(start))
			}
		}
		if i%10 == 0 {
			status, took := check(presenterToken)
			r.hostile(attackRightToken, status, status == http.StatusOK, took)
		}
	}
}

// identityFlood joins from the room's address with a fresh cookie jar
// every second, as one holder of the code making themselves a crowd
// would: past the room's arrival, the server slows it to one every 10 s.
func identityFlood(ctx context.Context, base string, r *report) {
	for jitter(ctx, time.Second) {
		cl := client(roomAddress, false)
		jar, _ := cookiejar.New(nil)
		cl.Jar = jar
		start := time.Now()
		status, _, err := post(ctx, cl, base+"/api/join", `{"code": "`+joinCode+`"}`)
		if err != nil {
			continue
		}
		r.hostile(attackIdentityFlood, status, status == http.StatusTooManyRequests || status == http.StatusOK, time.Since(start))
	}
}
