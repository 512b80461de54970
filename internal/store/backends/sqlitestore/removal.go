package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// DeleteJob implements store.RemovalStore in one write transaction: the
// job's state is checked and its log, accepted events and row deleted
// (sqlrows.DeleteJob). Its followers are woken to find it gone.
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, n *notes) error {
		r, err := getRow(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := sqlrows.Deletable(r.Job); err != nil {
			return err
		}
		for _, q := range sqlrows.DeleteJob {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return sqliteErr(err, "delete job %s", id)
			}
		}
		n.job(id)
		return nil
	})
}

// EndedBefore implements store.RemovalStore with sqlrows.EndedBefore, from
// the reader pool.
func (s *Store) EndedBefore(ctx context.Context, t time.Time, limit int) ([]string, error) {
	var ids []string
	q, args := sqlrows.EndedBefore(t, limit)
	err := s.query(ctx, "find jobs that ended before "+t.String(), func(rows sqlrows.Rows) error {
		var err error
		ids, err = sqlrows.CollectEndedBefore(rows)
		return err
	}, q, args...)
	return ids, err
}

// ReclaimPages bounds the free pages one ReclaimSpace gives back: 2000
// pages (8 MiB of the default 4 KiB pages) move in one short write, so a
// sweep that freed much gives it back over several calls, none holding
// the writer for long, and none growing the WAL, which keeps its largest
// size, by more than that.
const ReclaimPages = 2000

// ReclaimSpace implements store.SpaceReclaimer: an incremental vacuum
// (the file is in auto_vacuum=INCREMENTAL mode: see Open) moves up to
// ReclaimPages pages from the file's end into free ones and cuts the end
// off. Then a passive checkpoint copies the change into the database
// file, which only then shrinks; it waits for no reader, and what it
// cannot copy now a later checkpoint does.
func (s *Store) ReclaimSpace(ctx context.Context) error {
	// The pragma yields a row for each page it frees, and frees the next
	// only when asked for the next row: every row must be read.
	rows, err := s.w.QueryContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, ReclaimPages))
	if err != nil {
		return sqliteErr(err, "reclaim free pages")
	}
	freed := 0
	for rows.Next() {
		freed++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sqliteErr(err, "reclaim free pages")
	}
	if freed == 0 {
		return nil
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		return sqliteErr(err, "checkpoint after reclaiming %d pages", freed)
	}
	return nil
}
