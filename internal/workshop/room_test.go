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
	if err := r.Join("a", "Ada", now); err != nil {
		t.Fatal(err)
	}
	if err := r.Join("b", " ADA ", now); !errors.Is(err, workshop.ErrNameTaken) {
		t.Errorf("a second Ada: %v", err)
	}
	if err := r.Join("a", "Ada L", now); err != nil {
		t.Errorf("Ada renaming herself: %v", err)
	}
	if err := r.Join("b", "Ada", now); err != nil {
		t.Errorf("Ada's old name, once free: %v", err)
	}
	r.Ran("c", "run1", now.Add(time.Second)) // a room without a code: seen with its run
	ms := r.Members()
	if len(ms) != 3 || ms[0].Name != "Ada L" || ms[1].Name != "Ada" || ms[2].Latest != "run1" || ms[2].Name != "" {
		t.Errorf("members %+v", ms)
	}
	for i := range workshop.MaxMembers {
		_ = r.Join(fmt.Sprint("p", i), "", now)
	}
	if err := r.Join("one too many", "", now); !errors.Is(err, workshop.ErrRoomFull) {
		t.Errorf("past %d members: %v", workshop.MaxMembers, err)
	}
	if n := len(r.Members()); n != workshop.MaxMembers {
		t.Errorf("%d members kept, want %d", n, workshop.MaxMembers)
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
