// Package store keeps runs beyond the server's life in an embedded SQLite
// database (modernc.org/sqlite: pure Go, so the binary stays static). It
// holds each run's row (what the history lists) and its live stream as it
// was published, so that a run page replays after the run, or the server,
// has ended, with the same messages a live viewer got.
//
// Writes go through one goroutine that batches them into transactions
// (writer.go).
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// FileName is the database's name in the data directory.
const FileName = "limitlab.db"

//go:embed migrations/*.sql
var migrations embed.FS

// ErrNotFound is returned for a run the store does not hold.
var ErrNotFound = errors.New("store: no such run")

// Run is a run's row: what the history lists, and its view as the API
// shows it (JSON, opaque to the store).
type Run struct {
	ID          string
	Participant string
	Lab         string
	Name        string
	State       string
	CreatedAt   time.Time
	Summary     string // the key result, one line
	Imported    bool
	FeaturedAt  time.Time // zero if never featured
	View        []byte
}

// Store is an open database. Its methods are safe for concurrent use.
type Store struct {
	db  *sql.DB
	log *slog.Logger
	dir string
	// insertMsg is prepared once: every sampling tick appends a message.
	insertMsg *sql.Stmt

	failed atomic.Pointer[error] // the last batch's error; nil once one commits

	mu     sync.RWMutex // guards closed against sends on ops
	closed bool
	ops    chan op
	done   chan struct{}
}

// Open opens (creating it if need be) the database in dir and brings its
// schema up to date.
func Open(dir string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: data directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	boundPool(db)
	if err := migrate(context.Background(), db); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	insert, err := db.Prepare(`INSERT INTO messages (run_id, body) VALUES (?, ?)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{db: db, log: log, dir: dir, insertMsg: insert, ops: make(chan op, 4096), done: make(chan struct{})}
	// The writer lives until Close closes ops; Close waits for it.
	go s.writer()
	return s, nil
}

// The connection pool's bounds. Each SQLite connection keeps a page cache
// of its own, outside Go's heap and growing with the database: unbounded,
// a burst of readers (a room opening the history at once) leaves a
// connection per reader behind, and the server's memory grows with every
// run the room has stored. The writer holds one; readers share the rest.
const (
	MaxConns     = 6
	MaxIdleConns = 2
	ConnIdleTime = time.Minute
)

func boundPool(db *sql.DB) {
	db.SetMaxOpenConns(MaxConns)
	db.SetMaxIdleConns(MaxIdleConns)
	db.SetConnMaxIdleTime(ConnIdleTime)
}

// migrate applies, in order and each in a transaction, the migrations not
// yet recorded in schema_migrations. A migration's version is the number
// its file name starts with.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
		return err
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := filepath.Base(name)
		version, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with its version number", base)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", base, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			version, base, time.Now().UTC().Format(time.RFC3339)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Version is the newest migration applied.
func (s *Store) Version() (int, error) {
	var v int
	err := s.db.QueryRow(`SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// Close writes what is queued and closes the database.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.ops)
	s.mu.Unlock()
	<-s.done
	return errors.Join(s.insertMsg.Close(), s.db.Close())
}

const timeFormat = time.RFC3339Nano

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func upsertRun(tx *sql.Tx, r Run) error {
	var featured any
	if !r.FeaturedAt.IsZero() {
		featured = formatTime(r.FeaturedAt)
	}
	_, err := tx.Exec(`INSERT INTO runs (id, participant, lab, name, state, created_at, summary, imported, featured_at, view)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, summary = excluded.summary, view = excluded.view`,
		r.ID, r.Participant, r.Lab, r.Name, r.State, formatTime(r.CreatedAt), r.Summary, r.Imported, featured, r.View)
	return err
}

// SaveRun records a run's row, or its new state, summary and view; it
// returns at once and the write follows in order with the run's messages.
func (s *Store) SaveRun(r Run) {
	if err := s.enqueue(func(tx *sql.Tx) error { return upsertRun(tx, r) }, false); err != nil {
		s.log.Error("store: run not saved", slog.String("run", r.ID), slog.Any("err", err))
	}
}

// Append records a message of a run's live stream, after the ones before.
// The run's row must have been saved first.
func (s *Store) Append(runID string, msg []byte) {
	err := s.enqueue(func(tx *sql.Tx) error {
		_, err := tx.Stmt(s.insertMsg).Exec(runID, msg)
		return err
	}, false)
	if err != nil {
		s.log.Error("store: message not saved", slog.String("run", runID), slog.Any("err", err))
	}
}

// Import records a whole run at once: its row and its messages, or nothing.
func (s *Store) Import(r Run, msgs [][]byte) error {
	return s.enqueue(func(tx *sql.Tx) error {
		if _, err := tx.Exec(`SAVEPOINT import`); err != nil {
			return err
		}
		err := upsertRun(tx, r)
		for _, m := range msgs {
			if err != nil {
				break
			}
			_, err = tx.Stmt(s.insertMsg).Exec(r.ID, m)
		}
		if err != nil {
			_, _ = tx.Exec(`ROLLBACK TO import`)
			_, _ = tx.Exec(`RELEASE import`)
			return err
		}
		_, err = tx.Exec(`RELEASE import`)
		return err
	}, true)
}

// Feature marks a run as featured now; the featured run is the one marked
// last.
func (s *Store) Feature(id string, at time.Time) error {
	return s.enqueue(func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE runs SET featured_at = ? WHERE id = ?`, formatTime(at), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	}, true)
}

// Featured is the run featured last, if any.
func (s *Store) Featured() (string, bool, error) {
	var id string
	err := s.db.QueryRow(`SELECT id FROM runs WHERE featured_at IS NOT NULL ORDER BY featured_at DESC LIMIT 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

const runColumns = `id, participant, lab, name, state, created_at, summary, imported, coalesce(featured_at, ''), view`

func scanRun(row interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var created, featured string
	if err := row.Scan(&r.ID, &r.Participant, &r.Lab, &r.Name, &r.State, &created, &r.Summary, &r.Imported, &featured, &r.View); err != nil {
		return r, err
	}
	r.CreatedAt, _ = time.Parse(timeFormat, created)
	if featured != "" {
		r.FeaturedAt, _ = time.Parse(timeFormat, featured)
	}
	return r, nil
}

// Get returns a run's row.
func (s *Store) Get(id string) (Run, error) {
	r, err := scanRun(s.db.QueryRow(`SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

// Filter selects runs for List.
type Filter struct {
	Lab    string   // only this lab's runs, if set
	States []string // only runs in these states, if set
	Limit  int      // at most this many; 500 if zero
}

// List returns runs, newest first.
func (s *Store) List(f Filter) ([]Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs WHERE 1 = 1`
	var args []any
	if f.Lab != "" {
		q += ` AND lab = ?`
		args = append(args, f.Lab)
	}
	if len(f.States) > 0 {
		q += ` AND state IN (?` + strings.Repeat(`, ?`, len(f.States)-1) + `)`
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	if f.Limit <= 0 {
		f.Limit = 500
	}
	q += ` ORDER BY created_at DESC, rowid DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Messages returns a run's live stream as it was published, in order.
func (s *Store) Messages(id string) ([][]byte, error) {
	rows, err := s.db.Query(`SELECT body FROM messages WHERE run_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// messagePage is how many messages EachMessage reads per query: a
// query holds one of the pool's few connections only while it reads a
// page, so that a slow reader of a long export never keeps one.
const messagePage = 64

// EachMessage calls f with each of a run's messages, in order, reading
// them a page at a time: the caller holds one page, never the whole
// stream. f must not keep the slice it is given past its call unless it
// copies it. A run removed meanwhile ends the walk early.
func (s *Store) EachMessage(id string, f func([]byte) error) error {
	var after int64 = -1
	for {
		rows, err := s.db.Query(`SELECT seq, body FROM messages WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, id, after, messagePage)
		if err != nil {
			return err
		}
		var page [][]byte
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&after, &b); err != nil {
				rows.Close()
				return err
			}
			page = append(page, b)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
		for _, b := range page {
			if err := f(b); err != nil {
				return err
			}
		}
		if len(page) < messagePage {
			return nil
		}
	}
}
