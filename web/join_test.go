package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/limitlab/limitlab/internal/runner"
)

const strongCode = "limitlab-4242"

// TestGuessingTheJoinCodeFromOneAddress: the attack of issue 37, 301
// guesses from one address 32 at a time, finds no code. The address's
// bucket of wrong codes is judged; then its codes wait, with 429 and
// Retry-After, the right code included, but only for the seconds a token
// takes: no lockout. Another address joins as before.
func TestGuessingTheJoinCodeFromOneAddress(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = strongCode })
	start := time.Now()
	type answer struct {
		code, retry string
		status      int
	}
	guesses := make(chan string)
	answers := make(chan answer, 301)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range guesses {
				res, err := http.Post(srv.URL+"/api/join", "application/json", strings.NewReader(`{"code": "`+g+`"}`))
				if err != nil {
					t.Error(err)
					continue
				}
				res.Body.Close()
				answers <- answer{g, res.Header.Get("Retry-After"), res.StatusCode}
			}
		}()
	}
	for n := 4000; n <= 4300; n++ {
		guesses <- fmt.Sprintf("limitlab-%d", n)
	}
	close(guesses)
	wg.Wait()
	close(answers)
	counts := map[int]int{}
	for a := range answers {
		counts[a.status]++
		switch {
		case a.status == http.StatusOK:
			t.Errorf("guess %s was let in", a.code)
		case a.status == http.StatusTooManyRequests && a.retry == "":
			t.Errorf("guess %s refused with no Retry-After", a.code)
		}
	}
	judged := JoinWrongBurst + int(time.Since(start)/JoinWrongEvery) + 1
	t.Logf("301 guesses from one address in %s: %v", time.Since(start).Round(time.Millisecond), counts)
	if counts[http.StatusForbidden] > judged || counts[http.StatusTooManyRequests] != 301-counts[http.StatusForbidden] {
		t.Errorf("answers %v: want at most %d wrong codes judged, the rest refused with 429", counts, judged)
	}
	c := newJarClient()
	status, body := postWith(t, c, srv.URL+"/api/join", `{"code": "`+strongCode+`"}`)
	if status == http.StatusTooManyRequests {
		if !strings.Contains(body, `"field": "code"`) {
			t.Errorf("the right code from the throttled address: %d %s", status, body)
		}
		time.Sleep(JoinWrongEvery + 100*time.Millisecond)
		status, body = postWith(t, c, srv.URL+"/api/join", `{"code": "`+strongCode+`"}`)
	}
	if status != http.StatusOK {
		t.Errorf("the right code from the guessing address, a token later: %d %s, want 200", status, body)
	}
	if status, body := postWith(t, from("127.0.0.2", nil, true), srv.URL+"/api/join", `{"code": "`+strongCode+`"}`); status != http.StatusOK {
		t.Errorf("the right code from another address: %d %s", status, body)
	}
}

// TestRightAndWrongCodesTakeTheSameTime: each answers no sooner than
// JoinAnswerTime after it arrived, so the answer's timing says nothing of
// the code.
func TestRightAndWrongCodesTakeTheSameTime(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = strongCode })
	for i, code := range []string{strongCode, "limitlab-0000", strongCode, "x"} {
		start := time.Now()
		status, _ := postWith(t, from(fmt.Sprintf("127.0.0.%d", 10+i), nil, true), srv.URL+"/api/join", `{"code": "`+code+`"}`)
		if took := time.Since(start); took < JoinAnswerTime {
			t.Errorf("code %q answered %d in %s, before JoinAnswerTime (%s)", code, status, took, JoinAnswerTime)
		}
	}
}

// TestAMintedIdentityGets403: ids and join proofs are the server's to
// issue. A cookie minted as the old proof was (an HMAC of a chosen id
// keyed with the code), one with a made-up signature, and a real join
// proof moved to another id all get 403, and start nothing.
func TestAMintedIdentityGets403(t *testing.T) {
	srv, m, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = strongCode })
	u, _ := url.Parse(srv.URL)
	runAs := func(participant, join string) (int, string) {
		c := newJarClient()
		c.Jar.SetCookies(u, []*http.Cookie{{Name: ParticipantCookie, Value: participant}, {Name: JoinCookie, Value: join}})
		return postWith(t, c, srv.URL+"/api/runs", roomSpec)
	}
	randomID := func() string {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	for i := range 8 {
		id := randomID()
		mac := hmac.New(sha256.New, []byte(strongCode))
		mac.Write([]byte(id))
		old := hex.EncodeToString(mac.Sum(nil))
		if status, body := runAs(id, old); status != http.StatusForbidden || !strings.Contains(body, `"field": "join_code"`) {
			t.Errorf("minted identity %d (openssl dgst -hmac over a chosen id): %d %s", i, status, body)
		}
		if status, body := runAs(id+"."+old, fmt.Sprint(time.Now().Add(time.Hour).Unix())+"."+old); status != http.StatusForbidden {
			t.Errorf("minted identity %d with a made-up signature: %d %s", i, status, body)
		}
	}
	// A real participant's join proof proves the code for its id only.
	ada := joinAs(t, srv.URL, strongCode, "Ada")
	var proof string
	for _, c := range ada.Jar.Cookies(u) {
		if c.Name == JoinCookie {
			proof = c.Value
		}
	}
	other := newJarClient()
	if status, _ := call(t, other, "GET", srv.URL+"/api/host", ""); status != http.StatusOK {
		t.Fatal("a new browser's first page")
	}
	other.Jar.SetCookies(u, []*http.Cookie{{Name: JoinCookie, Value: proof}})
	if status, body := postWith(t, other, srv.URL+"/api/runs", roomSpec); status != http.StatusForbidden {
		t.Errorf("Ada's join proof under another issued id: %d %s", status, body)
	}
	if n := len(m.Archive().List("", 100)); n != 0 {
		t.Errorf("%d runs recorded from minted identities", n)
	}
	if status, body := postWith(t, ada, srv.URL+"/api/runs", roomSpec); status != http.StatusCreated {
		t.Errorf("Ada herself: %d %s", status, body)
	}
}

// TestJoinProofsExpire: a proof says when it ends, and is worth nothing
// after, or for another id, or under another code.
func TestJoinProofsExpire(t *testing.T) {
	s := signer{key: []byte("the server's own secret, not the code")}
	now := time.Now()
	p := s.joinProof("aa", strongCode, now.Add(JoinTTL))
	for _, tc := range []struct {
		name, id, code string
		at             time.Time
		want           bool
	}{
		{"now", "aa", strongCode, now, true},
		{"just before it ends", "aa", strongCode, now.Add(JoinTTL - time.Second), true},
		{"once it ended", "aa", strongCode, now.Add(JoinTTL + time.Second), false},
		{"for another id", "ab", strongCode, now, false},
		{"under a new code", "aa", strongCode + "-2", now, false},
	} {
		if got := s.joined(tc.id, tc.code, p, tc.at); got != tc.want {
			t.Errorf("%s: joined %v, want %v", tc.name, got, tc.want)
		}
	}
	other := signer{key: []byte("another server's secret")}
	if other.joined("aa", strongCode, p, now) {
		t.Error("another server took this server's proof")
	}
	if _, ok := other.participantOf(s.participantCookie(strings.Repeat("ab", 16))); ok {
		t.Error("another server took this server's participant id")
	}
}

// TestThePresenterRemovesAParticipant: the presenter takes a participant
// out of the room by the ref the room view gives; its queued runs end, and
// it may neither run nor join again under that identity.
func TestThePresenterRemovesAParticipant(t *testing.T) {
	srv, _, fake := newFakeServer(t, func(d *Deps) { d.JoinCode = strongCode; d.PresenterToken = presenterToken })
	fake.Runtime = time.Minute
	grace := joinAs(t, srv.URL, strongCode, "Grace")
	if status, body := postWith(t, grace, srv.URL+"/api/runs", roomSpec); status != http.StatusCreated {
		t.Fatalf("Grace's run: %d %s", status, body)
	}
	ada := joinAs(t, srv.URL, strongCode, "Ada")
	status, body := postWith(t, ada, srv.URL+"/api/runs", roomSpec)
	if status != http.StatusCreated {
		t.Fatalf("Ada's run: %d %s", status, body)
	}
	var queued struct{ ID string }
	_ = json.Unmarshal([]byte(body), &queued)
	_, roomBody := call(t, http.DefaultClient, "GET", srv.URL+"/api/presenter/room", presenterToken)
	var room struct{ Participants []RoomRow }
	_ = json.Unmarshal([]byte(roomBody), &room)
	ref := ""
	for _, p := range room.Participants {
		if p.Label == "Ada" {
			ref = p.Ref
		}
	}
	if ref == "" {
		t.Fatalf("no ref for Ada in the room view: %s", roomBody)
	}
	if status, body := call(t, http.DefaultClient, "POST", srv.URL+"/api/presenter/room/"+ref+"/remove", ""); status != http.StatusUnauthorized {
		t.Errorf("removing without the token: %d %s", status, body)
	}
	if status, body := call(t, http.DefaultClient, "POST", srv.URL+"/api/presenter/room/"+ref+"/remove", presenterToken); status != http.StatusOK || !strings.Contains(body, `"queued_runs_ended": 1`) {
		t.Errorf("removing Ada: %d %s", status, body)
	}
	if v := waitEnded(t, srv.URL, queued.ID); v.State != runner.StateStopped || !strings.Contains(v.Error, "removed") {
		t.Errorf("Ada's queued run: %s %q", v.State, v.Error)
	}
	if status, body := postWith(t, ada, srv.URL+"/api/runs", roomSpec); status != http.StatusForbidden {
		t.Errorf("Ada running after her removal: %d %s", status, body)
	}
	if status, body := postWith(t, ada, srv.URL+"/api/join", `{"code": "`+strongCode+`"}`); status != http.StatusForbidden || !strings.Contains(body, "removed") {
		t.Errorf("Ada joining again: %d %s", status, body)
	}
	if status, body := call(t, http.DefaultClient, "POST", srv.URL+"/api/presenter/room/"+ref+"/remove", presenterToken); status != http.StatusNotFound {
		t.Errorf("removing Ada twice: %d %s", status, body)
	}
	_, roomBody = call(t, http.DefaultClient, "GET", srv.URL+"/api/presenter/room", presenterToken)
	if strings.Contains(roomBody, `"Ada"`) || !strings.Contains(roomBody, `"Grace"`) {
		t.Errorf("the room after Ada's removal: %s", roomBody)
	}
}

// TestTheRoomStreamTakesItsTokenFirst: a wrong token closes the socket at
// once, counted against its address, whose wrong tokens past its bucket
// are closed as "try again later"; the right token streams the room all
// along.
func TestTheRoomStreamTakesItsTokenFirst(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = strongCode; d.PresenterToken = presenterToken })
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/presenter/room/live"
	dial := func(c *http.Client, token string) (websocket.StatusCode, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, res, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: c})
		if err != nil {
			if res != nil {
				return 0, res.Status, err
			}
			return 0, "", err
		}
		defer conn.CloseNow()
		_ = conn.Write(ctx, websocket.MessageText, []byte(token))
		_, msg, err := conn.Read(ctx)
		return websocket.CloseStatus(err), string(msg), err
	}
	if _, msg, err := dial(http.DefaultClient, presenterToken); err != nil || !strings.Contains(msg, "participants") {
		t.Fatalf("the right token: %q %v", msg, err)
	}
	for i := range PresenterWrongBurst + 1 {
		start := time.Now()
		status, _, err := dial(http.DefaultClient, "wrong")
		want := websocket.StatusPolicyViolation
		if i == PresenterWrongBurst {
			want = websocket.StatusTryAgainLater
		}
		if status != want {
			t.Errorf("wrong token %d: %v, want %v", i, err, want)
		}
		if took := time.Since(start); took > RoomTokenWait {
			t.Errorf("wrong token %d closed after %s: it waited", i, took)
		}
	}
	if _, msg, err := dial(http.DefaultClient, presenterToken); err != nil || !strings.Contains(msg, "participants") {
		t.Errorf("the right token from the address of the wrong ones: %q %v", msg, err)
	}
	if _, msg, err := dial(from("127.0.0.2", nil, false), presenterToken); err != nil || !strings.Contains(msg, "participants") {
		t.Errorf("the right token from another address: %q %v", msg, err)
	}
}

// TestTheFacilitatorClosesTheRoom: closed through the API, the room
// refuses a newcomer with the right code and a removed participant who
// comes back with a fresh identity, says so in its view, keeps those in
// it, and takes newcomers again once opened.
func TestTheFacilitatorClosesTheRoom(t *testing.T) {
	srv, _, _ := newFakeServer(t, func(d *Deps) { d.JoinCode = strongCode; d.PresenterToken = presenterToken })
	ada := joinAs(t, srv.URL, strongCode, "Ada")
	joinAs(t, srv.URL, strongCode, "Mallory")
	var room roomBody
	_, body := call(t, http.DefaultClient, "GET", srv.URL+"/api/presenter/room", presenterToken)
	if err := json.Unmarshal([]byte(body), &room); err != nil || len(room.Participants) != 2 || !room.Open {
		t.Fatalf("the room: %s", body)
	}
	for _, p := range room.Participants {
		if p.Address != "127.0.0.1" || p.Identities != 2 {
			t.Errorf("%s: from %q with %d identities, want 127.0.0.1 with 2", p.Label, p.Address, p.Identities)
		}
	}
	if status, body := call(t, http.DefaultClient, "POST", srv.URL+"/api/presenter/room/close", ""); status != http.StatusUnauthorized {
		t.Errorf("closing the room without the token: %d %s", status, body)
	}
	if status, body := call(t, http.DefaultClient, "POST", srv.URL+"/api/presenter/room/"+room.Participants[1].Ref+"/remove", presenterToken); status != http.StatusOK {
		t.Fatalf("removing Mallory: %d %s", status, body)
	}
	if status, body := call(t, http.DefaultClient, "POST", srv.URL+"/api/presenter/room/close", presenterToken); status != http.StatusOK || !strings.Contains(body, `"open": false`) {
		t.Fatalf("closing the room: %d %s", status, body)
	}
	// Mallory again, as a new identity, and a newcomer: both refused.
	for _, who := range []string{"Mallory", "Grace"} {
		status, body := postWith(t, newJarClient(), srv.URL+"/api/join", `{"code": "`+strongCode+`", "name": "`+who+`"}`)
		if status != http.StatusForbidden || !strings.Contains(body, `"field": "room"`) || !strings.Contains(body, "closed") {
			t.Errorf("%s joining the closed room: %d %s", who, status, body)
		}
	}
	if status, body := postWith(t, ada, srv.URL+"/api/join", `{"code": "`+strongCode+`", "name": "Ada L"}`); status != http.StatusOK {
		t.Errorf("Ada, in the room, renaming while it is closed: %d %s", status, body)
	}
	_, body = call(t, http.DefaultClient, "GET", srv.URL+"/api/presenter/room", presenterToken)
	if !strings.Contains(body, `"open": false`) {
		t.Errorf("the closed room's view: %s", body)
	}
	if status, body := call(t, http.DefaultClient, "POST", srv.URL+"/api/presenter/room/open", presenterToken); status != http.StatusOK || !strings.Contains(body, `"open": true`) {
		t.Fatalf("opening the room: %d %s", status, body)
	}
	joinAs(t, srv.URL, strongCode, "Grace")
}
