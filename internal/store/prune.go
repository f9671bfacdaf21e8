package store

import (
	"database/sql"
	"strings"
	"time"
)

// Prune removes runs made here (not imported), with their streams, beyond
// the newest keep (none if keep is 0) and those created before before
// (none if it is zero), oldest first; it never removes a run in one of
// the live states, nor the featured run. It says how many it removed.
// Imported runs have their own bound (PruneImported): however many are
// imported, and whatever times their files claim, they push no run made
// here out.
func (s *Store) Prune(keep int, before time.Time, live []string) (int, error) {
	if keep <= 0 && before.IsZero() {
		return 0, nil
	}
	// The candidates: ended runs, the featured one apart.
	placeholders := strings.TrimSuffix(strings.Repeat("?, ", len(live)), ", ")
	candidates := `SELECT id FROM runs WHERE imported = 0 AND state NOT IN (` + placeholders + `)
		AND id <> coalesce((SELECT id FROM runs WHERE featured_at IS NOT NULL ORDER BY featured_at DESC LIMIT 1), '')`
	var conds []string
	var args []any
	liveArgs := func() {
		for _, st := range live {
			args = append(args, st)
		}
	}
	if keep > 0 {
		conds = append(conds, `id IN (`+candidates+` ORDER BY created_at DESC LIMIT -1 OFFSET ?)`)
		liveArgs()
		args = append(args, keep)
	}
	if !before.IsZero() {
		conds = append(conds, `id IN (`+candidates+` AND created_at < ?)`)
		liveArgs()
		args = append(args, formatTime(before))
	}
	var removed int64
	err := s.enqueue(func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM runs WHERE `+strings.Join(conds, " OR "), args...)
		if err != nil {
			return err
		}
		removed, _ = res.RowsAffected()
		return nil
	}, true)
	return int(removed), err
}

// PruneImported removes imported runs beyond the newest keep, in the order
// they were imported (the time a file claims plays no part), never the
// featured run. It says how many it removed.
func (s *Store) PruneImported(keep int) (int, error) {
	if keep <= 0 {
		return 0, nil
	}
	var removed int64
	err := s.enqueue(func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE imported = 1
			AND id <> coalesce((SELECT id FROM runs WHERE featured_at IS NOT NULL ORDER BY featured_at DESC LIMIT 1), '')
			ORDER BY rowid DESC LIMIT -1 OFFSET ?)`, keep)
		if err != nil {
			return err
		}
		removed, _ = res.RowsAffected()
		return nil
	}, true)
	return int(removed), err
}
