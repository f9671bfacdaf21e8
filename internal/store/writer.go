package store

import (
	"database/sql"
	"errors"
	"log/slog"
	"time"
)

// Writes go through one goroutine, the writer, that batches them into
// transactions: the sampler hands a message over and moves on, and SQLite
// sees one writer.

type op struct {
	f      func(*sql.Tx) error
	result chan error // nil: nobody waits; a failure is logged
}

// batchMax bounds the operations written in one transaction.
const batchMax = 512

// coalesce is how long the writer gathers writes nobody waits for into one
// transaction: a live run's messages come a few a second, and a commit
// costs more than the inserts it holds. A write someone waits for (Sync,
// Import) commits what is gathered at once; a crash loses at most this
// much of a run that the next start marks interrupted anyway.
const coalesce = time.Second

// writer runs the queued writes in transactions of what has gathered.
func (s *Store) writer() {
	defer close(s.done)
	timer := time.NewTimer(coalesce)
	timer.Stop()
	for first := range s.ops {
		batch := []op{first}
		// While wait is set, the writer waits for more; once it is nil
		// (at the deadline, or a write someone waits for) it takes only
		// what is queued already.
		var wait <-chan time.Time
		if first.result == nil {
			timer.Reset(coalesce)
			wait = timer.C
		}
	gather:
		for len(batch) < batchMax {
			var o op
			var ok bool
			if wait == nil {
				select {
				case o, ok = <-s.ops:
				default:
					break gather
				}
			} else {
				select {
				case o, ok = <-s.ops:
				case <-wait:
					wait = nil
					continue
				}
			}
			if !ok {
				break
			}
			batch = append(batch, o)
			if o.result != nil {
				wait = nil
			}
		}
		timer.Stop()
		s.runBatch(batch)
	}
}

func (s *Store) runBatch(batch []op) {
	errs := make([]error, len(batch))
	tx, err := s.db.Begin()
	if err == nil {
		// A failed statement does not end an SQLite transaction: the
		// others in the batch still commit.
		for i, o := range batch {
			errs[i] = o.f(tx)
		}
		err = tx.Commit()
	}
	if err != nil {
		s.failed.Store(&err)
	} else {
		s.failed.Store(nil)
	}
	for i, o := range batch {
		if err != nil {
			errs[i] = err
		}
		if o.result != nil {
			o.result <- errs[i]
		} else if errs[i] != nil {
			s.log.Error("store: write failed", slog.Any("err", errs[i]))
		}
	}
}

var errClosed = errors.New("store: closed")

// enqueue hands f to the writer; with wait it returns f's outcome.
func (s *Store) enqueue(f func(*sql.Tx) error, wait bool) error {
	o := op{f: f}
	if wait {
		o.result = make(chan error, 1)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errClosed
	}
	s.ops <- o
	s.mu.RUnlock()
	if !wait {
		return nil
	}
	return <-o.result
}

// Sync waits until every write handed over before it is on disk.
func (s *Store) Sync() error {
	return s.enqueue(func(*sql.Tx) error { return nil }, true)
}
