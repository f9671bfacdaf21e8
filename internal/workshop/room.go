package workshop

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxNameRunes is the longest display name a participant may give.
const MaxNameRunes = 40

// MaxMembers is how many participants a room remembers: past it, a
// newcomer takes the place of the one who came first and never ran (or,
// if all have run, of the one who came first), so that the room's memory
// has a bound and no newcomer is locked out. MaxRemoved bounds the
// participants the presenter removed that it remembers.
const (
	MaxMembers = 5000
	MaxRemoved = 5000
)

// Errors of Room.Join, each about the name or the participant.
var (
	ErrNameTaken = errors.New("that name is taken in this room: choose another")
	ErrRemoved   = errors.New("the presenter removed you from this room")
	ErrNoMember  = errors.New("no such participant in this room")
	ErrClosed    = errors.New("the presenter has closed this room to new participants: ask them to open it")
)

// Member is one participant of the room: the name it gave (none: the page
// gives it an anonymous label), when it joined or was first seen, and its
// latest run.
type Member struct {
	ID string
	// Ref names the member to the presenter: it is not the id, which is
	// the participant's cookie.
	Ref    string
	Name   string
	Joined time.Time
	Latest string // the id of its latest run; "" before its first
	// Address is the client address it joined from (an IPv6 /64 as one):
	// the presenter sees how many identities each address holds.
	Address string
}

// Room is who is in the workshop: the participants who joined with the
// code or submitted a run, in the order they came. It is safe for
// concurrent use.
type Room struct {
	mu      sync.Mutex
	members map[string]*Member
	order   []*Member
	names   map[string]string // folded name -> participant id
	// removed are the ids the presenter removed, in the order removed:
	// they may not join again.
	removed     map[string]bool
	removedList []string
	// closed refuses joins of participants not yet in the room.
	closed bool
}

// NewRoom makes an empty room.
func NewRoom() *Room {
	return &Room{members: map[string]*Member{}, names: map[string]string{}, removed: map[string]bool{}}
}

// CleanName checks a display name: at most MaxNameRunes printable
// characters, spaces trimmed and runs of them made one. "" is no name.
func CleanName(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errors.New("a name must be UTF-8 text")
	}
	name := strings.Join(strings.Fields(s), " ")
	if n := utf8.RuneCountInString(name); n > MaxNameRunes {
		return "", fmt.Errorf("a name has at most %d characters; this one has %d", MaxNameRunes, n)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return "", fmt.Errorf("a name may hold only printable characters, not %U", r)
		}
	}
	return name, nil
}

// fold is the form two names are compared in: "Ada L" and "ada  l" are one.
func fold(name string) string {
	return strings.ToLower(strings.Join(strings.Fields(name), ""))
}

// Join records a participant, from a client address, with the name it
// gives (cleaned by CleanName; "" keeps the one it has). Joining again
// renames it. A closed room takes no one new.
func (r *Room) Join(id, name, address string, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed[id] {
		return ErrRemoved
	}
	if _, ok := r.members[id]; !ok && r.closed {
		return ErrClosed
	}
	if name != "" {
		if other, ok := r.names[fold(name)]; ok && other != id {
			return ErrNameTaken
		}
	}
	m := r.memberLocked(id, at)
	if address != "" {
		m.Address = address
	}
	if name != "" {
		delete(r.names, fold(m.Name))
		m.Name = name
		r.names[fold(name)] = id
	}
	return nil
}

// Ran records a participant's latest run; one not yet in the room joins
// it now (a room without a join code has no joins). A removed participant
// stays out.
func (r *Room) Ran(id, run string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.removed[id] {
		r.memberLocked(id, at).Latest = run
	}
}

func (r *Room) memberLocked(id string, at time.Time) *Member {
	if m, ok := r.members[id]; ok {
		return m
	}
	if len(r.order) >= MaxMembers {
		r.dropLocked(r.oldestIdleLocked())
	}
	ref := make([]byte, 6)
	_, _ = rand.Read(ref)
	m := &Member{ID: id, Ref: hex.EncodeToString(ref), Joined: at}
	r.members[id] = m
	r.order = append(r.order, m)
	return m
}

// oldestIdleLocked is the member whose place a newcomer takes in a full
// room: the first who never ran, or else the first.
func (r *Room) oldestIdleLocked() int {
	for i, m := range r.order {
		if m.Latest == "" {
			return i
		}
	}
	return 0
}

func (r *Room) dropLocked(i int) {
	m := r.order[i]
	delete(r.members, m.ID)
	if m.Name != "" && r.names[fold(m.Name)] == m.ID {
		delete(r.names, fold(m.Name))
	}
	r.order = slices.Delete(r.order, i, i+1)
}

// Remove takes the member with that ref out of the room for good: its
// join no longer counts, and it may not join again. It returns the
// member's id, whose queued runs the caller ends.
func (r *Room) Remove(ref string) (Member, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.order, func(m *Member) bool { return m.Ref == ref })
	if i < 0 {
		return Member{}, ErrNoMember
	}
	m := *r.order[i]
	r.dropLocked(i)
	if len(r.removedList) >= MaxRemoved {
		delete(r.removed, r.removedList[0])
		r.removedList = r.removedList[1:]
	}
	r.removed[m.ID] = true
	r.removedList = append(r.removedList, m.ID)
	return m, nil
}

// Removed says whether the presenter removed this participant.
func (r *Room) Removed(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed[id]
}

// Members are the room's participants in the order they came.
func (r *Room) Members() []Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Member, len(r.order))
	for i, m := range r.order {
		out[i] = *m
	}
	return slices.Clip(out)
}

// SetOpen opens the room to new participants, or closes it; those in it
// stay.
func (r *Room) SetOpen(open bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = !open
}

// Open says whether the room takes new participants.
func (r *Room) Open() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.closed
}

// Known says whether a participant is in the room.
func (r *Room) Known(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.members[id]
	return ok
}
