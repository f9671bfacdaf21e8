package main

import (
	"context"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/limitlab/limitlab/internal/runner"
)

// smallRun is what a participant submits: one or two short spin lanes.
func smallRun() string {
	lanes := []string{fmt.Sprintf(`{"name": "a", "workload": {"kind": "spin", "seconds": 2}, "limits": {"cpus": "0.%d", "memory": "32m"}}`, 2+rand.N(4))}
	if rand.N(2) == 0 {
		lanes = append(lanes, `{"name": "b", "workload": {"kind": "spin", "seconds": 2}, "limits": {"cpus": "0.1", "memory": "32m"}}`)
	}
	return `{"name": "soak", "duration": "20s", "lanes": [` + strings.Join(lanes, ",") + `]}`
}

// post sends JSON and returns the status and the reply.
func post(ctx context.Context, cl *http.Client, url, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := cl.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, b, nil
}

// reason names a refusal: the quota's scope and limit, or the status.
func reason(status int, body []byte) string {
	var q struct {
		Quota *struct{ Scope, Limit string } `json:"quota"`
	}
	if json.Unmarshal(body, &q) == nil && q.Quota != nil {
		return fmt.Sprintf("%d %s %s", status, q.Quota.Scope, q.Quota.Limit)
	}
	return strconv.Itoa(status) + " " + http.StatusText(status)
}

// participant is a browser: it keeps its cookie, joins with the code,
// submits a run, follows it to its end, thinks a little, and again. where
// says how it reaches the server.
func participant(ctx context.Context, cl *http.Client, base string, r *report, where string) {
	if res, err := cl.Get(base + "/"); err == nil {
		res.Body.Close()
	}
	for jitter(ctx, 2*time.Second) {
		status, body, err := post(ctx, cl, base+"/api/join", `{"code": "`+joinCode+`"}`)
		if err == nil && status == http.StatusOK {
			break
		}
		r.count("participant " + where + " could not join: " + reason(status, body))
	}
	for jitter(ctx, 2*time.Second) {
		status, body, err := post(ctx, cl, base+"/api/runs", smallRun())
		if err != nil {
			continue
		}
		if status != http.StatusCreated {
			r.count("participant " + where + " refused: " + reason(status, body))
			continue
		}
		r.count("participant runs accepted, " + where)
		var created struct{ ID string }
		_ = json.Unmarshal(body, &created)
		for jitter(ctx, time.Second) {
			res, err := cl.Get(base + "/api/runs/" + created.ID)
			if err != nil {
				continue
			}
			var v struct {
				State string
				Ended bool
			}
			_ = json.NewDecoder(res.Body).Decode(&v)
			res.Body.Close()
			if v.Ended {
				r.count("runs ended " + v.State)
				break
			}
		}
	}
}

// script submits without cookies: a new participant every time.
func script(ctx context.Context, cl *http.Client, base string, r *report) {
	for jitter(ctx, 2*time.Second) {
		status, body, err := post(ctx, cl, base+"/api/runs", smallRun())
		if err != nil {
			continue
		}
		if status == http.StatusCreated {
			r.count("script runs accepted")
		} else {
			r.count("script refused: " + reason(status, body))
		}
	}
}

// viewer watches the projector: the run the presenter features, its live
// stream until it ends, then the next; it records how long each batch of
// samples took to reach it.
func viewer(ctx context.Context, cl *http.Client, base string, r *report) {
	for jitter(ctx, time.Second) {
		res, err := cl.Get(base + "/api/featured")
		if err != nil {
			continue
		}
		var v struct {
			ID    string
			Ended bool
		}
		_ = json.NewDecoder(res.Body).Decode(&v)
		res.Body.Close()
		if v.ID == "" || v.Ended {
			continue
		}
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/runs/"+v.ID+"/live", &websocket.DialOptions{HTTPClient: cl})
		if err != nil {
			r.count("viewer refused")
			continue
		}
		c.SetReadLimit(16 << 20)
		r.count("viewer streams")
		// The history replayed on connect is old: only batches published
		// since count.
		since := time.Now().UnixMicro()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				break
			}
			if sent, ok := runner.SentUs(b); ok && sent >= since {
				r.latency(float64(time.Now().UnixMicro()-sent) / 1000)
			}
		}
		c.CloseNow()
	}
}

// presenter features whichever run is running, as a facilitator puts the
// current experiment on the projector.
func presenter(ctx context.Context, cl *http.Client, base string, r *report) {
	featured := ""
	for jitter(ctx, 2*time.Second) {
		res, err := cl.Get(base + "/api/runs?limit=200") // past the queue (at most 100) to the running run
		if err != nil {
			continue
		}
		var list struct {
			Runs []struct{ ID, State string }
		}
		_ = json.NewDecoder(res.Body).Decode(&list)
		res.Body.Close()
		for _, run := range list.Runs {
			if run.State != "running" || run.ID == featured {
				continue
			}
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/runs/"+run.ID+"/feature", nil)
			req.Header.Set("Authorization", "Bearer "+presenterToken)
			if res, err := cl.Do(req); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					featured = run.ID
					r.count("runs featured")
				}
			}
			break
		}
	}
}

// importAttack is refused as well by the import bound (5 a minute a
// participant) as by the import's checks: a hostile participant trying
// thirty a minute meets the bound first.
const importAttack = "an import with a planted command"

// hostile sends, in a bounded loop, the inputs a hostile participant
// would: each must be refused, and cheaply.
func hostile(ctx context.Context, cl *http.Client, base string, r *report) {
	var lanes []string
	for i := 0; len(strings.Join(lanes, ",")) < 63<<10; i++ {
		lanes = append(lanes, fmt.Sprintf(`{"name": "l%d", "workload": {"kind": "md5"}, "limits": {"cpus": "1e999999"}}`, i))
	}
	huge := `{"lanes": [` + strings.Join(lanes, ",") + `]}`
	planted := `{"format": "limitlab-run", "version": 1, "run": {"name": "x", "spec": {"lanes": [{"name": "a", "workload": {"kind": "md5"}}]},
		"state": "done", "lanes": [{"name": "a", "state": "exited", "docker_run": "docker run --privileged -v /:/host x"}],
		"changes": [{"lane": 7}]}, "stream": []}`
	// A cookie minted as the join proof once was: an HMAC of an id the
	// client chose, keyed with the code. The server signs the ids it
	// issues with a secret of its own, so this is nobody.
	minted := func() (int, []byte, error) {
		id := make([]byte, 16)
		_, _ = crand.Read(id)
		mac := hmac.New(sha256.New, []byte(joinCode))
		mac.Write([]byte(hex.EncodeToString(id)))
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/runs", strings.NewReader(smallRun()))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Cookie", "limitlab_participant="+hex.EncodeToString(id)+"; limitlab_join="+hex.EncodeToString(mac.Sum(nil)))
		res, err := (&http.Client{Timeout: cl.Timeout, Transport: cl.Transport}).Do(req)
		if err != nil {
			return 0, nil, err
		}
		res.Body.Close()
		return res.StatusCode, nil, nil
	}
	guesses := 0
	attacks := []struct {
		name string
		do   func() (int, []byte, error)
		want int
		// also is another answer that refuses as well: 429 once the
		// address is locked out for wrong secrets.
		also int
	}{
		{"64 KiB of --cpus 1e999999", func() (int, []byte, error) { return post(ctx, cl, base+"/api/runs", huge) }, http.StatusBadRequest, 0},
		{"two 16 GiB mem lanes", func() (int, []byte, error) {
			return post(ctx, cl, base+"/api/runs", `{"lanes": [{"name": "a", "workload": {"kind": "mem", "mb": 16384}}, {"name": "b", "workload": {"kind": "mem", "mb": 16384}}]}`)
		}, http.StatusBadRequest, 0},
		{"keys that differ by case", func() (int, []byte, error) {
			return post(ctx, cl, base+"/api/runs", `{"Lanes": [{"workload": {"kind": "md5"}}]}`)
		}, http.StatusBadRequest, 0},
		{importAttack, func() (int, []byte, error) { return post(ctx, cl, base+"/api/runs/import", planted) }, http.StatusBadRequest, http.StatusTooManyRequests},
		{"a form post without Origin", func() (int, []byte, error) {
			res, err := cl.Post(base+"/api/runs", "text/plain", strings.NewReader(smallRun()))
			if err != nil {
				return 0, nil, err
			}
			res.Body.Close()
			return res.StatusCode, nil, nil
		}, http.StatusForbidden, 0},
		{"a wrong presenter token", func() (int, []byte, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/queue/clear", nil)
			req.Header.Set("Authorization", "Bearer guess")
			res, err := cl.Do(req)
			if err != nil {
				return 0, nil, err
			}
			res.Body.Close()
			return res.StatusCode, nil, nil
		}, http.StatusUnauthorized, http.StatusTooManyRequests},
		{"a body that never arrives", func() (int, []byte, error) { return slowBody(ctx, base) }, 0, 0},
		// 429 once the address has made too many new participants.
		{"a minted identity", minted, http.StatusForbidden, http.StatusTooManyRequests},
		{"a guessed join code", func() (int, []byte, error) {
			guesses++
			return post(ctx, &http.Client{Timeout: cl.Timeout, Transport: cl.Transport}, base+"/api/join", fmt.Sprintf(`{"code": "soak-room-%04d"}`, guesses%10000))
		}, http.StatusForbidden, http.StatusTooManyRequests},
	}
	// A hostile participant is in the room: it has the join code, so its
	// inputs reach the checks they must fail.
	if status, body, err := post(ctx, cl, base+"/api/join", `{"code": "`+joinCode+`"}`); err != nil || status != http.StatusOK {
		r.count("hostile could not join: " + reason(status, body))
	}
	for i := 0; jitter(ctx, 200*time.Millisecond); i++ {
		a := attacks[i%len(attacks)]
		start := time.Now()
		status, _, err := a.do()
		if err != nil && ctx.Err() != nil {
			return
		}
		r.hostile(a.name, status, status == a.want || (a.also != 0 && status == a.also), time.Since(start))
	}
}

// slowBody announces a megabyte, sends ten bytes and waits: the server
// must cut it off. It returns 0 when the server closed the connection.
func slowBody(ctx context.Context, base string) (int, []byte, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.3.1")}}
	c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return -1, nil, err
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/runs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"lanes\":", strings.TrimPrefix(base, "http://"))
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return -1, nil, nil
		}
	}
	return 0, nil, nil
}
