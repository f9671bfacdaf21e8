package workshop

import (
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

// MaxMembers is how many participants a room remembers; past it, joins
// are refused, so that the room's memory has a bound whatever a client
// does.
const MaxMembers = 5000

// Errors of Room.Join, each about the name or the room.
var (
	ErrNameTaken = errors.New("that name is taken in this room: choose another")
	ErrRoomFull  = fmt.Errorf("this room has %d participants, the most it holds", MaxMembers)
)

// Member is one participant of the room: the name it gave (none: the page
// gives it an anonymous label), when it joined or was first seen, and its
// latest run.
type Member struct {
	ID     string
	Name   string
	Joined time.Time
	Latest string // the id of its latest run; "" before its first
}

// Room is who is in the workshop: the participants who joined with the
// code or submitted a run, in the order they came. It is safe for
// concurrent use.
type Room struct {
	mu      sync.Mutex
	members map[string]*Member
	order   []*Member
	names   map[string]string // folded name -> participant id
}

// NewRoom makes an empty room.
func NewRoom() *Room {
	return &Room{members: map[string]*Member{}, names: map[string]string{}}
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

// Join records a participant, with the name it gives (cleaned by
// CleanName; "" keeps the one it has). Joining again renames it.
func (r *Room) Join(id, name string, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name != "" {
		if other, ok := r.names[fold(name)]; ok && other != id {
			return ErrNameTaken
		}
	}
	m, err := r.memberLocked(id, at)
	if err != nil {
		return err
	}
	if name != "" {
		delete(r.names, fold(m.Name))
		m.Name = name
		r.names[fold(name)] = id
	}
	return nil
}

// Ran records a participant's latest run; one not yet in the room joins
// it now (a room without a join code has no joins).
func (r *Room) Ran(id, run string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, err := r.memberLocked(id, at); err == nil {
		m.Latest = run
	}
}

func (r *Room) memberLocked(id string, at time.Time) (*Member, error) {
	if m, ok := r.members[id]; ok {
		return m, nil
	}
	if len(r.order) >= MaxMembers {
		return nil, ErrRoomFull
	}
	m := &Member{ID: id, Joined: at}
	r.members[id] = m
	r.order = append(r.order, m)
	return m, nil
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
