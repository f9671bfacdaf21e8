package workshop_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/workshop"
)

func TestRoomNamesAndItsBound(t *testing.T) {
	r := workshop.NewRoom()
	now := time.Now()
	if err := r.Join("a", "Ada", "", now); err != nil {
		t.Fatal(err)
	}
	if err := r.Join("b", " ADA ", "", now); !errors.Is(err, workshop.ErrNameTaken) {
		t.Errorf("a second Ada: %v", err)
	}
	if err := r.Join("a", "Ada L", "", now); err != nil {
		t.Errorf("Ada renaming herself: %v", err)
	}
	if err := r.Join("b", "Ada", "", now); err != nil {
		t.Errorf("Ada's old name, once free: %v", err)
	}
	r.Ran("c", "run1", now.Add(time.Second)) // a room without a code: seen with its run
	ms := r.Members()
	if len(ms) != 3 || ms[0].Name != "Ada L" || ms[1].Name != "Ada" || ms[2].Latest != "run1" || ms[2].Name != "" {
		t.Errorf("members %+v", ms)
	}
	for i := range workshop.MaxMembers - 3 {
		if err := r.Join(fmt.Sprint("p", i), "", "", now); err != nil {
			t.Fatalf("member %d: %v", i+4, err)
		}
	}
	// A full room takes newcomers in the places of those who came first
	// and never ran: Ada L, Ada, then p0 (c ran).
	for _, id := range []string{"new1", "new2", "new3"} {
		if err := r.Join(id, "", "", now); err != nil {
			t.Errorf("%s past %d members: %v", id, workshop.MaxMembers, err)
		}
	}
	ms = r.Members()
	if n := len(ms); n != workshop.MaxMembers {
		t.Errorf("%d members kept, want %d", n, workshop.MaxMembers)
	}
	if ms[0].ID != "c" || ms[1].ID != "p1" || ms[len(ms)-1].ID != "new3" {
		t.Errorf("a full room kept %s, %s ... %s first and last; want c, p1 ... new3", ms[0].ID, ms[1].ID, ms[len(ms)-1].ID)
	}
	if err := r.Join("d", "Ada", "", now); err != nil {
		t.Errorf("Ada's name, free once her place was taken: %v", err)
	}
	// The presenter removes a member by its ref: it leaves the room and
	// may not come back, by joining or by running.
	gone, err := r.Remove(ms[0].Ref)
	if err != nil || gone.ID != "c" {
		t.Fatalf("remove c by ref %q: %+v %v", ms[0].Ref, gone, err)
	}
	if !r.Removed("c") || r.Removed("p1") {
		t.Error("Removed should name c only")
	}
	if err := r.Join("c", "", "", now); !errors.Is(err, workshop.ErrRemoved) {
		t.Errorf("c joining again: %v", err)
	}
	r.Ran("c", "run2", now)
	for _, m := range r.Members() {
		if m.ID == "c" {
			t.Error("a removed participant came back by running")
		}
	}
	if _, err := r.Remove(ms[0].Ref); !errors.Is(err, workshop.ErrNoMember) {
		t.Errorf("removing c twice: %v", err)
	}
	for _, bad := range []string{"x\x00y", string([]byte{0xff}), "0123456789012345678901234567890123456789x"} {
		if _, err := workshop.CleanName(bad); err == nil {
			t.Errorf("name %q taken", bad)
		}
	}
	if n, err := workshop.CleanName("  Grace \t Hopper "); err != nil || n != "Grace Hopper" {
		t.Errorf("CleanName: %q %v", n, err)
	}
}

// A closed room keeps those in it and takes no one new; a removed
// participant stays out, closed or open; opening it again lets newcomers
// in.
func TestAClosedRoomTakesNoOneNew(t *testing.T) {
	r := workshop.NewRoom()
	now := time.Now()
	for _, id := range []string{"in", "out"} {
		if err := r.Join(id, "", "127.0.0.1", now); err != nil {
			t.Fatal(err)
		}
	}
	m := r.Members()[1]
	if _, err := r.Remove(m.Ref); err != nil {
		t.Fatal(err)
	}
	r.SetOpen(false)
	if r.Open() {
		t.Fatal("the room says it is open after SetOpen(false)")
	}
	if err := r.Join("in", "Ada", "127.0.0.1", now); err != nil {
		t.Errorf("one already in a closed room, renaming: %v", err)
	}
	if err := r.Join("new", "", "127.0.0.1", now); !errors.Is(err, workshop.ErrClosed) {
		t.Errorf("a newcomer to a closed room: %v, want ErrClosed", err)
	}
	if err := r.Join("out", "", "127.0.0.1", now); !errors.Is(err, workshop.ErrRemoved) {
		t.Errorf("the removed one, room closed: %v, want ErrRemoved", err)
	}
	r.SetOpen(true)
	if err := r.Join("new", "", "127.0.0.1", now); err != nil {
		t.Errorf("a newcomer once the room is open again: %v", err)
	}
	if err := r.Join("out", "", "127.0.0.1", now); !errors.Is(err, workshop.ErrRemoved) {
		t.Errorf("the removed one, room open: %v, want ErrRemoved", err)
	}
	if got := r.Members()[0].Address; got != "127.0.0.1" {
		t.Errorf("a member's address: %q", got)
	}
}
