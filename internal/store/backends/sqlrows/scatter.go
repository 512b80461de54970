package sqlrows

import (
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// ScatterCols are the columns ScanScatter reads, in order.
const ScatterCols = `version, active, record`

// InsertScatter creates a scatter's record at version 1 unless its id is
// taken (then it does nothing, and the caller says so).
const InsertScatter = `INSERT INTO scatters (scatter_id, version, active, record) VALUES (?, 1, ?, ?) ON CONFLICT (scatter_id) DO NOTHING`

// UpdateScatter is a compare-and-set on a scatter's version, in the
// statement itself, so no other write can come between the check and the
// change: arguments active, record, scatter_id, version.
const UpdateScatter = `UPDATE scatters SET version = version + 1, active = ?, record = ? WHERE scatter_id = ? AND version = ?`

// ScanScatter reads one row of ScatterCols.
func ScanScatter(sc Scanner) (*store.ScatterRecord, error) {
	var (
		version int64
		active  bool
		blob    []byte
	)
	if err := sc.Scan(&version, &active, &blob); err != nil {
		return nil, err
	}
	return storekit.DecodeScatter(blob, version, active)
}

// ListScattersQuery is ListScatters' query for f, reading n rows. Scatter
// ids are time ordered, so newest first is descending id, and a page
// starts below the last id of the one before: each page is a range of an
// index, whatever the number of scatters before it. The conditions are
// written out only when they apply: one condition that also held with no
// cursor ("the cursor is empty or scatter_id is below it") would keep the
// planner from bounding the index range. With f.Active, the "active" term
// matches the predicate of the partial index scatters_active, so the
// database may read that index.
func ListScattersQuery(f store.ScatterFilter, n int) (string, []any) {
	q := `SELECT ` + ScatterCols + ` FROM scatters WHERE 1 = 1`
	var args []any
	if f.Active {
		q += ` AND active`
	}
	if f.Cursor != "" {
		q += ` AND scatter_id < ?`
		args = append(args, f.Cursor)
	}
	return q + ` ORDER BY scatter_id DESC LIMIT ?`, append(args, n)
}

// NextScatters trims out, read with one row more than limit, to a page,
// and returns the cursor of the next page ("" when there is none): the
// last id of this one.
func NextScatters(out []*store.ScatterRecord, limit int) ([]*store.ScatterRecord, string) {
	if len(out) <= limit {
		return out, ""
	}
	out = out[:limit]
	return out, out[limit-1].Scatter.GetScatterId()
}
