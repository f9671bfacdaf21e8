package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// JoinTTL is how long a join proves the code: a workshop's day. A
// participant who comes back later enters the code again.
const JoinTTL = 12 * time.Hour

// signer issues the server's proofs: a participant's id, and that this id
// entered the join code. It is keyed with the server's own secret, kept
// in its data directory, never with the join code, so that neither a
// client nor anyone who holds the code can make an id or a proof the
// server did not give.
type signer struct{ key []byte }

// mac is the HMAC of the parts, each ended by a NUL so that no two lists
// of parts read alike.
func (s signer) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// participantCookie is what the participant cookie holds for an id the
// server issues: the id and its signature.
func (s signer) participantCookie(id string) string {
	return id + "." + s.mac("participant", id)
}

// participantOf reads a participant cookie: the id, if the server signed
// it.
func (s signer) participantOf(cookie string) (string, bool) {
	id, sig, ok := strings.Cut(cookie, ".")
	if !ok || !validID(id) {
		return "", false
	}
	return id, hmac.Equal([]byte(sig), []byte(s.mac("participant", id)))
}

// joinProof is what the join cookie holds: when it expires, and a
// signature over the participant's id, that time and a digest of the code
// (a new code ends every earlier join).
func (s signer) joinProof(id, code string, expires time.Time) string {
	at := strconv.FormatInt(expires.Unix(), 10)
	return at + "." + s.mac("join", id, at, codeDigest(code))
}

// joined says whether a join cookie proves the code for this id, now.
func (s signer) joined(id, code, proof string, now time.Time) bool {
	at, sig, ok := strings.Cut(proof, ".")
	if !ok {
		return false
	}
	unix, err := strconv.ParseInt(at, 10, 64)
	if err != nil || !now.Before(time.Unix(unix, 0)) {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(s.mac("join", id, at, codeDigest(code))))
}

func codeDigest(code string) string {
	d := sha256.Sum256([]byte(code))
	return hex.EncodeToString(d[:])
}

// validID says whether s has the form of an id the server issues: 32 hex
// digits.
func validID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// MinJoinCode is the shortest join code the server takes: with the
// guard's lockouts, ten characters cannot be guessed in a workshop's day.
const MinJoinCode = 10

// joinAlphabet has no letters that read alike (0/o, 1/l/i), since a room
// copies the code from a projector.
const joinAlphabet = "23456789abcdefghjkmnpqrstuvwxyz"

// NewJoinCode makes a join code of three groups of four characters
// (about 59 bits), e.g. "k7m2-qx9p-w3dr".
func NewJoinCode() string {
	const n = 12
	var s strings.Builder
	b := make([]byte, 1)
	for i := 0; i < n; {
		_, _ = rand.Read(b)
		// Only bytes below a multiple of the alphabet's size, so that
		// every character is as likely.
		if int(b[0]) >= 256/len(joinAlphabet)*len(joinAlphabet) {
			continue
		}
		if i > 0 && i%4 == 0 {
			s.WriteByte('-')
		}
		s.WriteByte(joinAlphabet[int(b[0])%len(joinAlphabet)])
		i++
	}
	return s.String()
}
